"""`colltune advise --measure`: benchmark exactly the application's points the database lacks.

One run per (collective, process count), with the sizes of that collective's missing bins only
(the mean size the application used in each bin), the default, every mock-up and the library
algorithms, measured and judged as `colltune check` does (colltune.verify.adaptive): the first
launches, then adaptive rounds that measure again only the comparisons still undecided, so the
medians the advice compares rest on as many launches as it takes to tell the members apart (within
the rounds' budget). The verdicts are not stored: `colltune tune` takes the most recently judged
run of the database, which must stay the user's own check, not a run of a few points. Runs go in
the order of the points given (analyze ranks them by the profiling run: the most own cost first),
so an interrupted --measure has measured what matters.

A call pattern's calls (the pair and the fused call) are timed back to back instead (`--sync none`,
kind "loop": as a loop of dependent calls runs them, what fusing saves there), the default and the
mock-up that is the pair only, in runs of their own: no synchronized run, `colltune learn` or
`tune` takes those figures for a call's own cost.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from colltune.advise.points import AppPoint
from colltune.measure.settings import BenchSettings
from colltune.verify import adaptive, check

PRESET = "quick"


def plan(points: list[AppPoint], mpi: str | None) -> list[BenchSettings]:
    """The runs that measure `points`: one per (collective, process count, back to back or not),
    in the points' order, with check's quick measurement and its adaptive rounds."""
    groups: dict[tuple[str, int, bool], set[int]] = defaultdict(set)   # insertion order: the ranking
    for p in points:
        size = p.mean_bytes if p.mean_bytes.bit_length() - 1 == p.bin else 1 << p.bin
        groups[(p.collective, p.nprocs, p.loop)].add(size)
    stop = adaptive.measurement_defaults(PRESET)
    launches = stop.pop("launches")
    return [adaptive.plan_rounds(BenchSettings.from_preset(
                PRESET, mpi=mpi, collectives=[coll], sizes=sorted(sizes), nprocs=[nprocs], launches=launches,
                stop=stop, **(_loop(coll) if loop else {"library_algorithms": True})))
            for (coll, nprocs, loop), sizes in groups.items()]


def _loop(collective: str) -> dict[str, object]:
    """A pattern's calls back to back: the library's call and, for MPI_Allreduce, the mock-up that
    is the Reduce + Bcast pair; no barrier series (its noise warning is about synchronized starts)."""
    pair = ["allreduce_as_reduce_bcast"] if collective == "allreduce" else []
    return {"sync": "none", "variants": ["default", *pair], "barrier": False}


def kind_of(bench: BenchSettings) -> str:
    return "loop" if bench.sync == "none" else "bench"


def measure_missing(points: list[AppPoint], db: Path, mpi: str | None,
                    on_round: Callable[[adaptive.RoundEvent], None] | None = None) -> list[check.CheckResult]:
    """Measure and judge `points` into `db`; the results of the runs, in order."""
    results = []
    for bench in plan(points, mpi):
        what = f"{bench.collectives[0]}, {bench.nprocs[0]} ranks{', back to back' if bench.sync == 'none' else ''}"
        results.append(adaptive.measure_and_judge(bench, db, check.CheckSettings(), save=False, kind=kind_of(bench),
                                                  command=f"colltune advise --measure ({what})",
                                                  on_round=on_round))
    return results
