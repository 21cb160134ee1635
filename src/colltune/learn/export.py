"""The exploit-only result of `colltune learn` as an ordinary tuning profile (docs/profile.md).

A profile is keyed by communicator size and message bytes (and optionally layout); a selection
table by message-size bin, nodes and processes per node. For each collective, each communicator
size the traces (and bench/check launches) saw becomes a `procs N N` block, read through the
layout (nodes, ppn) it ran with most often, or, where cells of several layouts of that size were
exploited, one `nodes N ppn P` block per layout (to_profile); each of its exploit cells whose best member is a mock-up becomes a `bytes`
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
from colltune.tune.profile_model import MAX_BYTES, Block, Profile, Rule, Section


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


def _chosen(by_cell: dict, coll: str, bins: tuple[int, int, int], nodes: int, ppn: int
            ) -> tuple[dict[int, str], bool, int]:
    """The mock-up of each exploit cell of one layout, whether any cell of it is exploited (its
    answer is known, `default` included), and its cells whose best is a library member."""
    nb, pb = count_bin(nodes, bins[1]), count_bin(ppn, bins[2])
    chosen: dict[int, str] = {}
    known, lib_cells = False, 0
    for s in range(bins[0]):
        r = by_cell.get((coll, (s, nb, pb)))
        if r is None or r.mode != "exploit":
            continue
        known = True
        if r.best == catalog.DEFAULT:
            continue
        if r.best.startswith(catalog.LIB_PREFIX):
            lib_cells += 1
            continue
        chosen[s] = r.best
    return chosen, known, lib_cells


def to_profile(reports: list[CellReport], layouts: pd.DataFrame, bins: tuple[int, int, int], *,
               mpi: str, source: str) -> ExportResult:
    """`layouts`: collective, comm_size, nodes, ppn, calls (Store.trace_layouts and bench launches).

    A communicator size seen on one layout gets a `procs N N` block, as a profile without layouts.
    A size whose cells were exploited on several layouts gets one `nodes N ppn P` block per layout
    with rules (docs/profile.md "Layouts"), as `colltune tune` writes several layouts' checks: the
    interposer then picks by each communicator's own layout, and a layout without a block (none
    learned, or `default` best throughout) uses the library."""
    by_cell = {(r.collective, r.bins): r for r in reports}
    sections, lib_cells, nrules = [], 0, 0
    explore = sum(1 for r in reports if r.mode != "exploit")
    for coll in sorted({r.collective for r in reports}):
        mine = layouts[layouts["collective"] == coll]
        plain, per_layout = [], []
        for size, grp in mine.groupby("comm_size", sort=True):
            seen = (grp.groupby(["nodes", "ppn"], sort=False)["calls"].sum()
                    .sort_values(ascending=False, kind="stable"))
            learned = [((int(n), int(p)), *_chosen(by_cell, coll, bins, int(n), int(p))) for n, p in seen.index]
            if sum(1 for _, _, known, _ in learned if known) > 1:
                for (n, p), chosen, known, libs in learned:
                    lib_cells += libs if known else 0
                    if chosen:
                        rules = _rules(chosen, bins[0])
                        nrules += len(rules)
                        per_layout.append(Block(nodes=n, ppn=p, rules=tuple(rules)))
                continue
            # one layout learned (or none): read the size through its most frequent layout
            _, chosen, _, libs = learned[0]
            lib_cells += libs
            if chosen:
                rules = _rules(chosen, bins[0])
                nrules += len(rules)
                plain.append(Block(procs_lo=int(size), procs_hi=int(size), rules=tuple(rules)))
        if plain or per_layout:   # layout-free blocks first (the grammar's order)
            sections.append(Section(collective=coll, blocks=tuple(plain + per_layout)))
    provenance = {"generator": f"colltune {__version__}", "source": source, "mpi": mpi,
                  "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    provenance = {k: v for k, v in provenance.items() if v.strip()}
    return ExportResult(Profile(provenance=provenance, sections=tuple(sections)), nrules, lib_cells, explore)
