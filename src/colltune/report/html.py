"""Self-contained HTML report of a check: one file, plots embedded as base64 PNG, no server.

The page is a list of sections. The check's own sections live in colltune.report.check_sections;
other modules add theirs without editing this file: put a module in the package
`colltune.report.sections` that defines

    SECTIONS = [Section(id="tuned", title="Tuned vs default", render=my_render, order=55)]

where ``my_render(ctx: ReportContext) -> str | None`` returns an HTML fragment (None: skip the
section). ``ctx.figure(fig, alt)`` embeds a matplotlib figure, ``ctx.table(df)`` renders a
DataFrame, ``ctx.db_path``/``ctx.run_id`` locate the data. Built-in orders are multiples of 10.
"""

from __future__ import annotations

import base64
import html
import importlib
import io
import math
import pkgutil
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, never a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from colltune import __version__  # noqa: E402
from colltune.paths import writable_dir
from colltune.verify import (
    check,  # noqa: E402
    )


@dataclass
class ReportContext:
    db_path: Path
    result: check.CheckResult
    stored: bool  # verdicts came from the database (else judged now with default settings)
    figures: int = 0

    @property
    def run_id(self) -> str:
        return self.result.run.run_id

    @property
    def verdicts(self) -> pd.DataFrame:
        return self.result.verdicts

    @property
    def summary(self) -> pd.DataFrame:
        return self.result.summary

    @property
    def info(self) -> dict[str, Any]:
        return self.result.run.info

    def figure(self, fig: Any, alt: str) -> str:
        """Embed a matplotlib figure as a PNG data URI and close it."""
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.figures += 1
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        return f'<img class="plot" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'

    def table(self, df: pd.DataFrame, formats: dict[str, Callable[[Any], str]] | None = None,
              row_class: Callable[[pd.Series], str] | None = None) -> str:
        formats = formats or {}
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
        body = []
        for _, r in df.iterrows():
            cells = "".join(
                f"<td>{html.escape(formats[c](r[c]) if c in formats else _cell(r[c]))}</td>" for c in df.columns
            )
            cls = f' class="{row_class(r)}"' if row_class else ""
            body.append(f"<tr{cls}>{cells}</tr>")
        return f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _cell(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else ""
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    render: Callable[[ReportContext], str | None]
    order: int = 100


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
table{border-collapse:collapse;font-size:13px;margin:8px 0;font-variant-numeric:tabular-nums}
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
"""


def render_html(ctx: ReportContext, sections: Sequence[Section] | None = None) -> str:
    sections = list(sections) if sections is not None else discover_sections()
    body, nav = [], []
    for s in sections:
        fragment = s.render(ctx)
        if fragment is None:
            continue
        nav.append(f'<a href="#{s.id}">{html.escape(s.title)}</a>')
        body.append(f'<section id="{s.id}"><h2>{html.escape(s.title)}</h2>{fragment}</section>')
    info = ctx.info
    lib = short_library_name(info)
    procs = ", ".join(map(str, sorted(ctx.verdicts["nprocs"].unique()))) if len(ctx.verdicts) else "?"
    title = f"colltune check: {lib}, {procs} processes"
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


def build_context(db_path: str | Path, run_id: str | None = None) -> ReportContext:
    """Stored verdicts when the run was judged, else judge now (not stored) with default settings."""
    db_path = Path(db_path)
    run = check.load_run(db_path, run_id)
    stored = check.load_verdicts(db_path, run.run_id)
    if stored.empty:
        return ReportContext(db_path, check.judge(run), stored=False)
    first = stored.iloc[0]
    settings = check.CheckSettings(test=first["test"], correction=first["correction"], alpha=float(first["alpha"]),
                                   tolerance=float(first["tolerance"]))
    # Judging is deterministic (seeded bootstrap): re-judging with the stored settings gives the
    # stored verdicts back, plus the notes on the data that are not stored.
    return ReportContext(db_path, check.judge(run, settings), stored=True)


def write_report(db_path: str | Path, out_dir: str | Path, run_id: str | None = None,
                 sections: Sequence[Section] | None = None) -> Path:
    ctx = build_context(db_path, run_id)
    return write_report_for(ctx, out_dir, sections)


def write_report_for(ctx: ReportContext, out_dir: str | Path, sections: Sequence[Section] | None = None) -> Path:
    path = writable_dir(out_dir, "report") / "report.html"
    path.write_text(render_html(ctx, sections), encoding="utf-8")
    return path


# The check's own sections register themselves on import (they need ReportContext from here).
from colltune.report import check_sections  # noqa: E402, F401
