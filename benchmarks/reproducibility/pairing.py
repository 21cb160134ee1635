"""How much of a comparison's launch-to-launch scatter a finer pairing removes (issue 36, session 14).

    python benchmarks/reproducibility/pairing.py /tmp/verd36/s13/w2_quiet.duckdb /tmp/verd36/s13/w1_quiet.duckdb \
        /tmp/verd36/s13/w1_quiet2.duckdb /tmp/verd36/s12/w2_quiet.duckdb /tmp/verd36/s12/w2_quiet2.duckdb

A check's paired test already takes one value per launch from both sides of a comparison measured
in that launch: log(median of the default's repetitions / median of the variant's), so what shifts
a whole launch (the ranks' placement, the frequency, the VM's steal) cancels. The two variants of one
job are also interleaved within the launch: every round runs each variant once, so repetition r of
both ran microseconds apart. Per launch, over every stored launch of the databases given (4 ranks,
the warm-up and invalid repetitions left out), for the comparisons that split quiet checks and two
A/A copies, this prints the geometric mean and the standard deviation over launches of

  ratio of medians             log(median alt / median ref): what the check tests (pairing "launch")
  median of paired ratios      median over the launch's rounds of log(alt_r / ref_r) (pairing "repetition")
  mean log                     mean log(alt) - mean log(ref)
  lower halves                 the means of each side's faster half (another estimand)

alt / ref < 1 is the variant faster (a violation's side). Pure reading: measures nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb
import numpy as np

CASES = (("allgather", 1024, "allgather_as_alltoall"), ("reduce_scatter", 1024, "reducescatter_as_reduce_scatterv"),
         ("scatter", 8, "scatter_as_scatterv"), ("gather", 8, "gather_as_gatherv"),
         ("allgather", 1024, "default#aa"), ("scatter", 8, "default#aa"))


def per_launch(dbs: list[Path], coll: str, size: int, alt: str) -> tuple[dict[str, list[float]], list[int]]:
    stats: dict[str, list[float]] = {"ratio of medians": [], "median of paired ratios": [], "mean log": [],
                                     "lower halves": []}
    reps: list[int] = []
    for db in dbs:
        with duckdb.connect(str(db), read_only=True) as con:
            rows = con.execute(
                "SELECT run_id, launch_idx, variant, rep, runtime_s FROM measurements WHERE collective = ? AND "
                "msg_bytes = ? AND variant IN ('default', ?) AND nprocs = 4 AND NOT coalesce(warmup, FALSE) AND "
                "coalesce(valid, TRUE) AND runtime_s > 0", [coll, size, alt]).fetchall()
        by: dict[tuple[str, int], dict[str, dict[int, float]]] = {}
        for run, launch, variant, rep, runtime in rows:
            by.setdefault((run, launch), {}).setdefault(variant, {})[rep] = runtime
        for sides in by.values():
            if "default" not in sides or alt not in sides:
                continue
            common = sorted(set(sides["default"]) & set(sides[alt]))
            if len(common) < 5:
                continue
            r = np.array([sides["default"][i] for i in common])
            a = np.array([sides[alt][i] for i in common])
            stats["ratio of medians"].append(float(np.log(np.median(a) / np.median(r))))
            stats["median of paired ratios"].append(float(np.median(np.log(a) - np.log(r))))
            stats["mean log"].append(float(np.mean(np.log(a)) - np.mean(np.log(r))))
            half = max(1, len(common) // 2)
            stats["lower halves"].append(float(np.log(np.sort(a)[:half].mean() / np.sort(r)[:half].mean())))
            reps.append(len(common))
    return stats, reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dbs", type=Path, nargs="+")
    args = ap.parse_args()
    for coll, size, alt in CASES:
        stats, reps = per_launch(args.dbs, coll, size, alt)
        if not reps:
            continue
        print(f"{coll} {size} B, {alt} / default: {len(reps)} launches, median {int(np.median(reps))} repetitions")
        for name, values in stats.items():
            v = np.array(values)
            print(f"  {name:>24}: {np.exp(v.mean()):.3f}x, sd {v.std(ddof=1):.3f} in log")


if __name__ == "__main__":
    main()
