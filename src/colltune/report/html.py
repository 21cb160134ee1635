"""Self-contained HTML report of a run: one file, plots embedded as base64 PNG, no server.

The page is a list of sections. The check's own sections live in colltune.report.check_sections;
other modules add theirs without editing this file: put a module in the package
`colltune.report.sections` that defines

    SECTIONS = [Section(id="tuned", title="Tuned vs default", render=my_render, order=55)]

where ``my_render(ctx: ReportContext) -> str | None`` returns an HTML fragment (None: skip the
section). ``ctx.figure(fig, alt)`` embeds a matplotlib figure, ``ctx.table(df)`` renders a
DataFrame, ``ctx.db_path``/``ctx.run_id`` locate the data. Built-in orders are multiples of 10.
A section appears on the pages of the run kinds it names (``kinds``; default: checked runs, see
colltune.report.context), so that a run is rendered as what it is: a check's page shows its
verdicts, a validation's page the tuned-vs-default comparison.
"""

from __future__ import annotations

import html
import importlib
import pkgutil
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from colltune import __version__
from colltune.paths import writable_dir
from colltune.report import check_sections
from colltune.report.context import CHECKED_KINDS, ReportContext, Section
from colltune.store.database import Store
from colltune.verify import check

__all__ = ["CHECKED_KINDS", "ReportContext", "Section", "build_context", "discover_sections", "latest_run_of_kind",
           "register_section", "render_html", "short_library_name", "write_report", "write_report_for"]

SECTIONS: list[Section] = []


def register_section(section: Section) -> Section:
    SECTIONS[:] = [s for s in SECTIONS if s.id != section.id] + [section]
    return section


def _section(id_: str, title: str, order: int) -> Callable[[Callable[[ReportContext], str | None]],
                                                             Callable[[ReportContext], str | None]]:
    def deco(fn: Callable[[ReportContext], str | None]) -> Callable[[ReportContext], str | None]:
        register_section(Section(id_, title, fn, order))
        return fn
    return deco


for _builtin in check_sections.SECTIONS:
    register_section(_builtin)


def discover_sections() -> list[Section]:
    """Built-in sections plus those of every module in colltune.report.sections."""
    try:
        pkg = importlib.import_module("colltune.report.sections")
    except ModuleNotFoundError:
        return sorted(SECTIONS, key=lambda s: s.order)
    for mod in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
        module = importlib.import_module(mod.name)
        for s in getattr(module, "SECTIONS", []):
            register_section(s)
    return sorted(SECTIONS, key=lambda s: s.order)


# ---------------------------------------------------------------------------------------------
# Page

CSS = """
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1d1d1f;margin:0;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px 32px 64px;background:#fff;min-height:100vh}
h1{font-size:26px;margin:8px 0 2px} h2{font-size:20px;margin:36px 0 10px;border-bottom:2px solid #e3e6ea;padding-bottom:4px}
h3{font-size:16px;margin:20px 0 6px}
.sub{color:#666;margin:0 0 12px} nav a{margin-right:14px;color:#1565c0;text-decoration:none;font-size:14px}
table{border-collapse:collapse;font-size:13px;margin:8px 0;font-variant-numeric:tabular-nums;
  display:block;max-width:100%;overflow-x:auto}
th,td{padding:4px 10px;border-bottom:1px solid #eceff1;text-align:left;vertical-align:top}
th{background:#f1f3f5;font-weight:600;position:sticky;top:0}
tr.violation td{background:#ffebee} tr.warnrow td{background:#fff8e1}
.cards{display:flex;gap:16px;flex-wrap:wrap;margin:12px 0}
.card{border:1px solid #e0e3e7;border-radius:10px;padding:12px 20px;min-width:180px;text-align:center;color:#555}
.big{font-size:34px;font-weight:700;color:#1d1d1f} .ok{color:#2e7d32} .bad{color:#c62828} .na{color:#888}
.lead{font-size:17px} .warn{background:#fff8e1;border-left:4px solid #f9a825;padding:8px 12px}
code{background:#f1f3f5;padding:1px 5px;border-radius:4px;font-size:13px}
.advice li{margin-bottom:8px} img.plot{max-width:100%;margin:6px 0 14px;display:block}
.sev{display:inline-block;padding:0 6px;margin:0 3px;border-radius:3px;font-size:12px}
.scroll{overflow-x:auto;max-height:640px} details summary{cursor:pointer;color:#1565c0}
footer{margin-top:48px;color:#888;font-size:12px}
code{overflow-wrap:anywhere} nav{display:flex;flex-wrap:wrap}
@media (max-width:700px){main{padding:12px}}
"""


# The section a page of a run kind opens with (before the environment), where it is not the
# check's summary.
LEAD_SECTION = {"validate": "tuned"}


def render_html(ctx: ReportContext, sections: Sequence[Section] | None = None) -> str:
    sections = list(sections) if sections is not None else discover_sections()
    lead = LEAD_SECTION.get(ctx.kind)
    sections = sorted((s for s in sections if s.shown_on(ctx.kind)), key=lambda s: (s.id != lead, s.order))
    body, nav = [], []
    for s in sections:
        fragment = s.render(ctx)
        if fragment is None:
            continue
        nav.append(f'<a href="#{s.id}">{html.escape(s.title)}</a>')
        body.append(f'<section id="{s.id}"><h2>{html.escape(s.title)}</h2>{fragment}</section>')
    info = ctx.info
    lib = short_library_name(info)
    procs = ", ".join(map(str, ctx.nprocs)) or "?"
    title = f"colltune {ctx.kind}: {lib}, {procs} processes"
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body><main><h1>{html.escape(title)}</h1>"
            f'<p class=sub>run {html.escape(ctx.run_id)} &middot; {html.escape(str(info.get("created", "")))} '
            f"&middot; {html.escape(str(ctx.db_path))}</p><nav>{''.join(nav)}</nav>{''.join(body)}"
            f"<footer>colltune {__version__}</footer></main></body></html>")


def short_library_name(info: dict[str, Any]) -> str:
    """'Open MPI 5.0.11' from the long version strings MPI_Get_library_version gives."""
    name = str(info.get("mpi_name") or "").strip()
    version = str(info.get("mpi_version") or "")
    m = re.search(r"v?(\d+\.\d+(?:\.\d+)?)", version)
    pretty = {"openmpi": "Open MPI", "mpich": "MPICH", "intel": "Intel MPI"}.get(name, name)
    return f"{pretty} {m.group(1)}".strip() if m else (pretty or "unknown MPI library")


def latest_run_of_kind(store: Store, kind: str) -> str | None:
    """The newest run of `kind` that has measurements (None: there is none)."""
    if not store.has_table("runs") or not store.has_table("measurements"):
        return None
    runs = store.runs()
    for run_id in runs[runs["kind"] == kind].sort_values("created", ascending=False)["run_id"]:
        if store.run_counts(str(run_id))["repetitions"]:
            return str(run_id)
    return None


def build_context(db_path: str | Path, run_id: str | None = None, kind: str = "check") -> ReportContext:
    """The page of run `run_id`, else of the newest run of `kind` (else the newest run with
    measurements). A checked run's stored verdicts when it was judged, else judged now (not
    stored) with the default settings; a validation run is not judged as a check. The database
    is opened once, for this and for the sections (the context closes it: write_report_for)."""
    store = check.open_store(db_path, read_only=True)
    try:
        return _context(store, run_id, kind)
    except BaseException:
        store.close()
        raise


def _context(store: Store, run_id: str | None, kind: str) -> ReportContext:
    run = check.run_of(store, run_id or latest_run_of_kind(store, kind))
    if str(run.info.get("kind") or "check") not in CHECKED_KINDS:
        return ReportContext(store.path, None, stored=False, run=run, open_store=store)
    stored = check.verdicts_of(store, run.run_id)
    if stored.empty:
        return ReportContext(store.path, check.judge(run), stored=False, open_store=store)
    first = stored.iloc[0]
    # verdicts stored before the equivalence margin (NULL) were judged without one
    margin = first.get("margin")
    settings = check.CheckSettings(test=first["test"], correction=first["correction"], alpha=float(first["alpha"]),
                                   tolerance=float(first["tolerance"]),
                                   margin=0.0 if margin is None or margin != margin else float(margin))
    # Judging is deterministic (seeded bootstrap): re-judging with the stored settings gives the
    # stored verdicts back, plus the notes on the data that are not stored.
    return ReportContext(store.path, check.judge(run, settings), stored=True, open_store=store)


def write_report(db_path: str | Path, out_dir: str | Path, run_id: str | None = None,
                 sections: Sequence[Section] | None = None, kind: str = "check") -> Path:
    ctx = build_context(db_path, run_id, kind)
    return write_report_for(ctx, out_dir, sections)


def write_report_for(ctx: ReportContext, out_dir: str | Path, sections: Sequence[Section] | None = None) -> Path:
    """Render and write the page; the context's database is closed after it."""
    try:
        path = writable_dir(out_dir, "report") / "report.html"
        path.write_text(render_html(ctx, sections), encoding="utf-8")
    finally:
        ctx.close()
    return path
