"""How many wild launches the stored quick checks hold (issue 36): the protection a paired test needs.

    python benchmarks/reproducibility/wild_launches.py /tmp/repro-s4.duckdb /tmp/repro-s4b.duckdb ...

A launch is wild in a comparison when its log-ratio lies more than a factor (4, and 2 for
contrast) from the comparison's median per-launch ratio in that check: a rank descheduled during
one side's job (ratios of 15-19 among 1.0-1.8 under load), not a placement mode (1.5-2x). Per
database: the paired comparisons judged (every comparison of every complete run, all its
launches), how many of them hold wild launches, and the most wild launches at one end of one
comparison: a trimmed t that cuts g launches from each end absorbs up to g of them. Pure reading.
"""

from __future__ import annotations

import argparse
import collections
import math
from pathlib import Path

import duckdb
import numpy as np

from colltune.verify import check, decide


def wild_counts(db: Path, factor: float) -> tuple[int, collections.Counter[int], list[str]]:
    """Comparisons judged, a histogram of the most wild launches at one end per comparison, and
    the comparisons with two or more at one end."""
    with duckdb.connect(str(db), read_only=True) as con:
        ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created")
               .fetchall()]
    settings = decide.CheckSettings()
    judged, most, many = 0, collections.Counter[int](), []
    for run_id in ids:
        run = check.load_run(db, run_id)
        _, effects = decide.judge_look(run_id, run.variants, True, run.measurements, settings, settings.alpha, [])
        for c, e in effects:
            if not e.test_used.paired or e.n < 2:
                continue
            d = np.log(e.x) - np.log(e.y)
            center = float(np.median(d))
            worst = max(int((d > center + math.log(factor)).sum()), int((d < center - math.log(factor)).sum()))
            judged += 1
            most[worst] += 1
            if worst >= 2:
                many.append(f"{run_id[-6:]} {c.collective} {c.variant} {c.msg_bytes} B ({c.kind}): {worst} of {e.n}")
    return judged, most, many


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dbs", type=Path, nargs="+")
    args = ap.parse_args()
    for db in args.dbs:
        with duckdb.connect(str(db), read_only=True) as con:
            load = con.execute("SELECT count(*) FROM runs WHERE status = 'complete'").fetchone()
        for factor in (4.0, 2.0):
            judged, most, many = wild_counts(db, factor)
            hist = ", ".join(f"{k}: {v}" for k, v in sorted(most.items()))
            print(f"{db} ({load[0] if load else 0} checks), beyond {factor:g}x of the median ratio: {judged} paired "
                  f"comparisons; most wild launches at one end -> comparisons {{{hist}}}")
            for line in many[:12]:
                print(f"    {line}")
            if len(many) > 12:
                print(f"    ... {len(many) - 12} more")


if __name__ == "__main__":
    main()
