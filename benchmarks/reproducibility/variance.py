"""Where a quick check's per-launch variance comes from, from its stored launches (issue 36).

    python benchmarks/reproducibility/variance.py /tmp/repro.duckdb

For the complete runs of a results database (independent `colltune check --preset quick -n 4`):

1. the variance of the per-launch log-ratio default/variant when each launch keeps only its first
   r repetitions (r = 10, 20, 30, 40), median over the A/A and over the pattern comparisons: the
   A/A part is the noise within a launch (falls as 1/r), the rest of a pattern comparison's lies
   between launches;
2. what a launch costs: least squares of each launch's duration on its repetitions;
3. the comparisons the adaptive rounds measured again whose per-launch log-ratio scatters most
   (sd > 0.2 in a run of >= 16 launches), with their
   launch modes (colltune.verify.stats.launch_modes) per run;
4. the same comparison in the first launches (every job) and in the adaptive rounds' launches
   (only the pair compared before issue 36's session 2, the whole job since): how many
   comparisons the rounds put above the first launches, the median shift, and the mean
   per-launch ratio of each, over the runs whose rounds measured it, largest shifts first.

Pure reading: measures nothing. docs/measurement.md ("Why verdicts split between runs") quotes it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from colltune.verify import stats

SIDE = ["run_id", "launch_idx", "collective", "variant", "msg_bytes"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--nprocs", type=int, default=4)
    args = ap.parse_args()
    with duckdb.connect(str(args.db), read_only=True) as con:
        m = con.execute("SELECT m.run_id, m.launch_idx, m.collective, m.variant, m.msg_bytes, m.rep, m.runtime_s "
                        "FROM measurements m JOIN runs r USING (run_id) WHERE r.status = 'complete' AND m.valid "
                        "AND NOT m.warmup AND m.nprocs = ? AND m.collective <> 'barrier'", [args.nprocs]).fetchdf()
        rounds = dict(((r, int(i)), int(v)) for r, i, v in con.execute(
            "SELECT run_id, launch_idx, value FROM environment WHERE key = 'round'").fetchall())
        launches = con.execute(
            "SELECT l.run_id, l.launch_idx, epoch(l.finished) - epoch(l.started) AS seconds, count(m.rep) AS reps "
            "FROM launches l JOIN measurements m USING (run_id, launch_idx) GROUP BY 1, 2, 3").fetchdf()
    m = m.sort_values([*SIDE, "rep"])
    m["k"] = m.groupby(SIDE).cumcount()
    print(f"{m['run_id'].nunique()} runs, {len(launches)} launches")

    rows = []
    for r in (10, 20, 30, 40):
        med = m[m["k"] < r].groupby(SIDE)["runtime_s"].median().unstack("variant")
        for var in med.columns.drop("default"):
            d = np.log(med["default"] / med[var]).dropna()
            for (rid, coll, size), g in d.groupby(level=["run_id", "collective", "msg_bytes"]):
                if g.size >= 8:
                    rows.append({"reps": r, "kind": "A/A" if var == "default#aa" else "pattern", "run": rid,
                                 "comparison": f"{coll} {var} {size} B", "var": float(g.var(ddof=1)),
                                 "d": g.to_numpy()})
    df = pd.DataFrame(rows)
    print("\n1. variance of the per-launch log-ratio (median over comparisons) by repetitions kept")
    print(df.groupby(["kind", "reps"])["var"].median().unstack("reps").round(4).to_string())

    slope, intercept = np.polyfit(launches["reps"], launches["seconds"], 1)
    corr = np.corrcoef(launches["reps"], launches["seconds"])[0, 1]
    print(f"\n2. a launch costs {intercept:.3f} s + {slope * 1e3:.3f} ms per repetition (r = {corr:.2f})")

    full = df[(df["reps"] == 40) & (df["kind"] == "pattern")]
    # the comparisons the adaptive rounds kept measuring (>= 16 launches in some run)
    wide = full[full["d"].map(len) >= 16].groupby("comparison")["var"].max()
    print("\n3. comparisons still open after the first look whose per-launch log-ratio scatters by sd > 0.2")
    for comp in wide[wide > 0.04].index:
        print(f"  {comp}")
        for r in full[full["comparison"] == comp].itertuples():
            modes = stats.launch_modes(r.d)
            shown = (f"{modes.low} launches at {modes.low_ratio:.2f}x, {modes.high} at {modes.high_ratio:.2f}x"
                     if modes else "one mode")
            print(f"    run {r.run[-6:]}: {r.d.size} launches, sd {np.sqrt(r.var):.2f}, {shown}")

    med = m.groupby(SIDE)["runtime_s"].median().unstack("variant")
    shifts = []
    for var in med.columns.drop("default"):
        d = np.log(med["default"] / med[var]).dropna()
        for (coll, size), g in d.groupby(level=["collective", "msg_bytes"]):
            in_round = np.array([rounds.get((r, int(i)), 0) > 0 for r, i in
                                 zip(g.index.get_level_values("run_id"), g.index.get_level_values("launch_idx"))])
            runs = g[in_round].index.get_level_values("run_id").unique()
            first = g[~in_round & g.index.get_level_values("run_id").isin(runs)]
            if len(runs) >= 3:
                shifts.append((f"{coll} {var} {size} B", len(runs), first.size, float(first.mean()),
                               int(in_round.sum()), float(g[in_round].mean())))
    print("\n4. first launches vs the rounds' launches (runs whose rounds measured it): mean ratio default/variant")
    if shifts:
        shift = np.array([m1 - m0 for *_, m0, _, m1 in shifts])
        print(f"  {len(shifts)} comparisons in the rounds of >= 3 runs; rounds above the first launches in "
              f"{int((shift > 0).sum())}; mean shift {shift.mean():+.4f} in log (median {np.median(shift):+.4f})")
    for name, runs_, n0, m0, n1, m1 in sorted(shifts, key=lambda x: -abs(x[5] - x[3]))[:12]:
        print(f"  {name}: {runs_} runs; first launches {np.exp(m0):.3f}x ({n0}), rounds {np.exp(m1):.3f}x ({n1})")


if __name__ == "__main__":
    main()
