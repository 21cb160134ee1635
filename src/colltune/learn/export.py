"""The exploit-only result of `colltune learn` as an ordinary tuning profile (docs/profile.md).

A profile is keyed by communicator size and message bytes; a selection table by message-size
bin, nodes and processes per node. For each collective, each communicator size the traces (and
bench/check launches) saw becomes a `procs N N` block, read through the layout (nodes, ppn) it
ran with most often; each of its exploit cells whose best member is a mock-up becomes a `bytes`
rule over the cell's byte range (neighbouring bins with the same mock-up merged, the open last
bin up to the largest size). Cells whose best member is `default` need no rule; `lib:` members
cannot be applied by the interposer (docs/profile.md) and are counted, not written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from colltune import __version__, catalog
from colltune.learn.selection import CellReport
from colltune.learn.table import bin_range, count_bin
from colltune.tune.profile import MAX_BYTES, Block, Profile, Rule, Section


@dataclass
class ExportResult:
    profile: Profile
    rules: int
    library_cells: int  # exploit cells whose best member is a library algorithm (not expressible)
    explore_cells: int  # cells still exploring (not exported)


def _rules(cells: dict[int, str], nbins: int) -> list[Rule]:
    rules: list[Rule] = []
    for b in sorted(cells):
        lo, hi = bin_range("size", b, nbins)
        hi = MAX_BYTES if hi is None else hi
        if rules and rules[-1].variant == cells[b] and rules[-1].hi + 1 == lo:
            rules[-1] = Rule(lo=rules[-1].lo, hi=hi, variant=cells[b])
        else:
            rules.append(Rule(lo=lo, hi=hi, variant=cells[b]))
    return rules


def to_profile(reports: list[CellReport], layouts: pd.DataFrame, bins: tuple[int, int, int], *,
               mpi: str, source: str) -> ExportResult:
    """`layouts`: collective, comm_size, nodes, ppn, calls (Store.trace_layouts and bench launches)."""
    by_cell = {(r.collective, r.bins): r for r in reports}
    sections, lib_cells, nrules = [], 0, 0
    explore = sum(1 for r in reports if r.mode != "exploit")
    for coll in sorted({r.collective for r in reports}):
        mine = layouts[layouts["collective"] == coll]
        blocks = []
        for size, grp in mine.groupby("comm_size", sort=True):
            top = grp.sort_values("calls", ascending=False).iloc[0]
            nb, pb = count_bin(int(top["nodes"]), bins[1]), count_bin(int(top["ppn"]), bins[2])
            chosen: dict[int, str] = {}
            for s in range(bins[0]):
                r = by_cell.get((coll, (s, nb, pb)))
                if r is None or r.mode != "exploit" or r.best == catalog.DEFAULT:
                    continue
                if r.best.startswith(catalog.LIB_PREFIX):
                    lib_cells += 1
                    continue
                chosen[s] = r.best
            if chosen:
                rules = _rules(chosen, bins[0])
                nrules += len(rules)
                blocks.append(Block(procs_lo=int(size), procs_hi=int(size), rules=tuple(rules)))
        if blocks:
            sections.append(Section(collective=coll, blocks=tuple(blocks)))
    provenance = {"generator": f"colltune {__version__}", "source": source, "mpi": mpi,
                  "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    provenance = {k: v for k, v in provenance.items() if v.strip()}
    return ExportResult(Profile(provenance=provenance, sections=tuple(sections)), nrules, lib_cells, explore)
