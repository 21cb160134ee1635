"""Could fewer, longer launches replace launches? Between- and within-launch variance (issue 36).

    python benchmarks/reproducibility/between_within.py /tmp/verd36/s10w1_quiet2.duckdb

For every (collective, size, mock-up) that a batch's checks measured in their last adaptive round
(the comparisons that need the most launches), over all launches of all runs in the database: the
per-launch log-ratio d = log(median of the mock-up / median of the default) at 4 ranks, its
variance between launches within a run (pooled over runs), and the part of it that comes from the
repetitions inside a launch, estimated by splitting each launch's repetitions into its even and odd
ones: var(d_even - d_odd) / 4 is about the variance of d from a launch's own repetitions (each
half has half of them). Longer launches (more repetitions) can shrink only that part; when it is a
small share, a launch cannot stand in for another. Pure reading: measures nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb
import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--round", type=int, default=2, help="the round whose comparisons are shown")
    args = ap.parse_args()
    with duckdb.connect(str(args.db), read_only=True) as con:
        df = con.execute(
            "SELECT m.run_id, m.launch_idx, m.collective, m.msg_bytes, m.variant, m.rep, m.runtime_s, "
            "coalesce(TRY_CAST(r.value AS INTEGER), 0) AS rnd FROM measurements m LEFT JOIN environment r "
            "ON r.run_id = m.run_id AND r.launch_idx = m.launch_idx AND r.key = 'round' "
            "WHERE NOT coalesce(m.warmup, FALSE) AND coalesce(m.valid, TRUE) AND m.nprocs = 4").df()
    shown = df[(df["rnd"] == args.round) & ~df["variant"].str.startswith("default")][
        ["collective", "msg_bytes", "variant"]].drop_duplicates()
    medians: dict[tuple[object, ...], tuple[float, float, float]] = {}
    for key, sub in df.groupby(["run_id", "launch_idx", "collective", "msg_bytes", "variant"]):
        x = sub.sort_values("rep")["runtime_s"].to_numpy()
        if x.size >= 4:
            medians[key] = (float(np.median(x)), float(np.median(x[0::2])), float(np.median(x[1::2])))
    per: dict[tuple[object, ...], tuple[list[float], list[float], list[str]]] = {}
    for (run, launch, coll, size, var), (m, even, odd) in medians.items():
        ref = medians.get((run, launch, coll, size, "default"))
        if var.startswith("default") or ref is None:
            continue
        d, halves, runs = per.setdefault((coll, size, var), ([], [], []))
        d.append(float(np.log(m / ref[0])))
        halves.append(float(np.log(even / ref[1]) - np.log(odd / ref[2])))
        runs.append(str(run))
    print(f"{'collective':>22} {'bytes':>6} {'mock-up':<42} {'launches':>8} {'sd d':>6} {'sd within':>9} {'share':>6}")
    for row in shown.sort_values(["collective", "msg_bytes", "variant"]).itertuples(index=False):
        key = (row.collective, row.msg_bytes, row.variant)
        if key not in per:
            continue
        d, halves, runs = (np.asarray(v) for v in per[key])
        between = [np.var(d[runs == r], ddof=1) for r in set(runs.tolist()) if (runs == r).sum() > 2]
        total, within = float(np.mean(between)), float(np.var(halves, ddof=1) / 4)
        print(f"{row.collective:>22} {row.msg_bytes:>6} {row.variant:<42} {d.size:>8} {total ** 0.5:6.3f} "
              f"{within ** 0.5:9.3f} {within / total:6.2f}")


if __name__ == "__main__":
    main()
