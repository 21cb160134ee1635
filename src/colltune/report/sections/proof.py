"""Report section "Proof": the library algorithms this run measured, against the proof of the
build that measured them (docs/select.md, "The proof"). A check may measure an algorithm in
every kind of call; the interposer serves it only in the classes it passed, and `export
--native` leaves it out if it failed any: the page says which, so that a fast algorithm is not
mistaken for a usable one."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from colltune import catalog
from colltune.measure import proof
from colltune.report.html import ReportContext, Section


def _proof_file(ctx: ReportContext) -> Path | None:
    env = ctx.store.environment(ctx.run_id)
    return proof.proof_of_run(dict(zip(env["key"], env["value"], strict=True)))


def render(ctx: ReportContext) -> str | None:
    # the blocking calls' algorithms: those of the other forms are measured, never served
    measured = sorted({str(v) for v in ctx.verdicts.get("variant", pd.Series(dtype=str))
                       if str(v).startswith("lib:") and catalog.form_of(str(v)) == "blocking"})
    if not measured:
        return None
    path = _proof_file(ctx)
    if path is None or not path.exists():
        return ('<p class="warn">The library algorithms of this run are <b>unproven</b>: the build '
                "that measured them has no proof (any more). Run <code>colltune selftest</code> "
                "before serving or exporting them.</p>")
    refused = proof.refusals(measured, path)
    passed = proof.read_passed(path)
    table = pd.DataFrame([{"algorithm": m, "proven classes": len(passed.get(m, ())),
                           "refused classes": ", ".join(refused.get(m, []))} for m in measured])
    lead = (f"{len(measured)} library algorithms measured; {len(refused)} of them are refused in "
            f"some kind of call by the proof of <code>{html.escape(str(path))}</code>: the "
            "interposer serves the library there instead, and <code>export --native</code> leaves "
            "them out.")
    return f'<p class="{"warn" if refused else "lead"}">{lead}</p>' + ctx.table(
        table, row_class=lambda r: "bad" if r["refused classes"] else "")


SECTIONS = [Section(id="proof", title="Proof of the library algorithms", render=render, order=57)]
