"""`colltune advise --measure`: benchmark exactly the application's points the database lacks.

One quick run of the bench runner (colltune.measure.runner, its public API) per (collective,
process count), with the sizes of that collective's missing bins only (the mean size the
application used in each bin), the default, every mock-up and the library algorithms, launches
interleaved as `colltune bench` does. Runs go in the order of the points given (analyze ranks them
by the profile: the most own cost first), so an interrupted --measure has measured what matters.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from colltune.advise.points import AppPoint
from colltune.measure import runner
from colltune.measure.settings import BenchSettings


def measure_missing(points: list[AppPoint], db: Path, mpi: str | None, launches: int = 3) -> list[str]:
    """Run ids of the runs that measured `points` into `db`."""
    groups: dict[tuple[str, int], set[int]] = defaultdict(set)   # insertion order: the ranking
    for p in points:
        size = p.mean_bytes if p.mean_bytes.bit_length() - 1 == p.bin else 1 << p.bin
        groups[(p.collective, p.nprocs)].add(size)
    runs = []
    for (coll, nprocs), sizes in groups.items():
        settings = BenchSettings.from_preset("quick", mpi=mpi, collectives=[coll], sizes=sorted(sizes),
                                             nprocs=[nprocs], launches=launches, library_algorithms=True)
        runs.append(runner.run(settings, db, command=f"colltune advise --measure ({coll}, {nprocs} ranks)",
                               kind="bench"))
    return runs
