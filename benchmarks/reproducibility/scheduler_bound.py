"""Which stored checks were scheduler-bound (issue 36): the rule of stats.scheduler_bound, per run.

    python benchmarks/reproducibility/scheduler_bound.py DB [DB ...]

Per complete run of each database: its measurements (collective, variant, size) after the check's
own thin-launch rule, how many have their median launch at >= stats.SCHEDULER_RATIO x their fastest
repetition, the median of that ratio, and whether the run counts as scheduler-bound (the check then
says so in a note and in the report). Reads only; measures nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb
import numpy as np

from colltune.verify import check, comparisons, stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path, nargs="+")
    args = ap.parse_args()
    print(f"rule: >= {stats.SCHEDULER_SHARE:.0%} of the measurements at >= {stats.SCHEDULER_RATIO:g}x "
          f"(median launch / fastest repetition)")
    for db in args.db:
        with duckdb.connect(str(db), read_only=True) as con:
            ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' "
                                             "ORDER BY created").fetchall()]
        flagged = 0
        for run_id in ids:
            run = check.load_run(db, run_id)
            settings = check.CheckSettings()
            meas = check._well_sampled(run.measurements, min(settings.min_reps, run.min_reps), [])
            sides = list(comparisons.sides(meas).values())
            medians = [s.launch_medians for s in sides]
            fastest = [float(np.min(s.raw)) for s in sides]
            ratios = np.array([stats.median(m) / f for m, f in zip(medians, fastest, strict=True) if f > 0])
            bound = stats.scheduler_bound(medians, fastest)
            flagged += bound is not None
            print(f"{db.name} {run_id}: {len(ratios)} measurements, {np.count_nonzero(ratios >= stats.SCHEDULER_RATIO)} "
                  f"at >= {stats.SCHEDULER_RATIO:g}x ({np.mean(ratios >= stats.SCHEDULER_RATIO):.0%}), median ratio "
                  f"{np.median(ratios):.1f}x, median launch {np.median([stats.median(m) for m in medians]) * 1e6:.1f} us"
                  f" -> {'SCHEDULER-BOUND' if bound else 'not bound'}")
        print(f"{db}: {flagged} of {len(ids)} runs scheduler-bound")


if __name__ == "__main__":
    main()
