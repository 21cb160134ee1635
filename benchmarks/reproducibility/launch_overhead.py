"""How much of a quick check's launches is measuring, and how much starting and ending MPI (issue 36).

    python benchmarks/reproducibility/launch_overhead.py /tmp/repro-verd36-s6.duckdb

Per complete run of DB and look (the first launches, each adaptive round): the launches' summed
duration as the runner saw them (process start to end), the part between the first repetition's
start and the last repetition's end of each launch (rank 0's clock: what the driver measured,
warm-up included), and the rest: starting 4 ranks of MPI, MPI_Init, the clock synchronisation,
reading the job file, MPI_Finalize and the exit. Medians over the runs, and the whole check's
totals. Pure reading: what a quick check cannot lose without fewer launches is the rest.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import duckdb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    args = ap.parse_args()
    with duckdb.connect(str(args.db), read_only=True) as con:
        rows = con.execute(
            "SELECT l.run_id, coalesce(TRY_CAST(e.value AS INTEGER), 0) AS look, count(*), "
            "sum(epoch(l.finished) - epoch(l.started)), sum(m.span) "
            "FROM launches l JOIN runs r USING (run_id) "
            "JOIN (SELECT run_id, launch_idx, max(end_s) - min(start_s) AS span FROM measurements "
            "      GROUP BY ALL) m USING (run_id, launch_idx) "
            "LEFT JOIN environment e ON e.run_id = l.run_id AND e.launch_idx = l.launch_idx AND e.key = 'round' "
            "WHERE r.status = 'complete' AND l.status = 'ok' GROUP BY ALL ORDER BY 1, 2").fetchall()
    looks: dict[int, list[tuple[int, float, float]]] = {}
    totals: dict[str, list[tuple[int, float, float]]] = {}
    for run_id, look, n, duration, span in rows:
        looks.setdefault(int(look), []).append((int(n), float(duration), float(span)))
        run = totals.setdefault(run_id, [])
        run.append((int(n), float(duration), float(span)))
    print(f"{len(totals)} runs; medians over them")
    print(f"{'look':>6} {'launches':>8} {'duration s':>10} {'measuring s':>11} {'start+end s':>11} {'per launch s':>12}")
    for look, per_run in sorted(looks.items()):
        n = statistics.median(r[0] for r in per_run)
        d = statistics.median(r[1] for r in per_run)
        s = statistics.median(r[2] for r in per_run)
        o = statistics.median((r[1] - r[2]) / r[0] for r in per_run)
        print(f"{look:>6} {n:>8g} {d:>10.2f} {s:>11.2f} {d - s:>11.2f} {o:>12.3f}")
    whole = [(sum(r[0] for r in v), sum(r[1] for r in v), sum(r[2] for r in v)) for v in totals.values()]
    n = statistics.median(r[0] for r in whole)
    d = statistics.median(r[1] for r in whole)
    s = statistics.median(r[2] for r in whole)
    o = statistics.median((r[1] - r[2]) / r[0] for r in whole)
    print(f"{'check':>6} {n:>8g} {d:>10.2f} {s:>11.2f} {d - s:>11.2f} {o:>12.3f}")


if __name__ == "__main__":
    main()
