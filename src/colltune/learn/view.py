"""Rich views of `colltune learn`: a selection table's cells and the loop's progress."""

from __future__ import annotations

from rich.table import Table

from colltune import catalog
from colltune.learn.loop import BatchResult
from colltune.learn.selection import CellReport
from colltune.learn.table import bin_range


def _span(axis: str, b: int, nbins: int, unit: str = "") -> str:
    lo, hi = bin_range(axis, b, nbins)
    if hi is None:
        return f">= {lo}{unit}"
    return f"{lo}{unit}" if lo == hi else f"{lo}-{hi}{unit}"


def cells_table(reports: list[CellReport], bins: tuple[int, int, int], title: str) -> Table:
    """One row per listed cell: where it is, its mode, the member it would exploit, the predicted
    gain of that member over the default, the evidence (calls of each member there), and why a
    guard kept the default where the models favour another member."""
    t = Table(title=title, title_justify="left")
    for col, just in (("collective", "left"), ("bytes", "right"), ("nodes", "right"), ("ppn", "right"),
                      ("mode", "left"), ("member", "left"), ("gain vs default", "right"),
                      ("evidence n (best / fewest / cell)", "right"), ("note", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in sorted(reports, key=lambda r: (r.collective, r.bins)):
        gain = r.gain
        style = "bold green" if r.mode == "exploit" and r.best != catalog.DEFAULT else ""
        t.add_row(r.collective, _span("size", r.bins[0], bins[0], " B"), _span("nodes", r.bins[1], bins[1]),
                  _span("ppn", r.bins[2], bins[2]), r.mode, r.best,
                  "-" if gain is None else f"{gain:.2f}x",
                  f"{r.evidence.get(r.best, 0)} / {min(r.evidence.values())} / {r.calls}",
                  f"held: {r.why}" if r.held else "", style=style)
    return t


def progress_table(results: list[BatchResult]) -> Table:
    t = Table(title="colltune learn run", title_justify="left")
    for col in ("batch", "wall s", "traced", "explored", "collective s", "exploit cells", "est. gain",
                "regret"):
        t.add_column(col, justify="right")
    for r in results:
        row = r.row
        exploit = sum(1 for c in r.reports if c.mode == "exploit")
        gain, regret = row["est_gain"], row["regret"]
        t.add_row(str(r.batch), f"{float(row['wall_s']):.3f}", str(row["traced_calls"]), str(row["explored_calls"]),
                  f"{float(row['collective_s']):.4f}", f"{exploit}/{len(r.reports)}",
                  "-" if gain is None else f"{float(gain):.3f}x",  # type: ignore[arg-type]
                  "-" if regret is None else f"{100 * float(regret):.2f}%")  # type: ignore[arg-type]
    return t
