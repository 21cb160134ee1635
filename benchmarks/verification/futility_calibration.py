"""Error rates of a quick check's three looks under the futility rule before and after session 5 of
issue 36, on synthetic runs with known truth.

    python benchmarks/verification/futility_calibration.py --trials 200

rule_calibration.py judges runs with one look, where no comparison is ever stopped. Here every
trial is a run of 32 launches laid out as a quick check measures them (8 first launches, then
adaptive rounds of 8 and 16, the plan stored with the run, so each look is judged at its share of
alpha and the futility rule applies after 16 launches), judged with the futility rule on the
estimate (decide.FUTILITY_Z = 0, before) and one standard error optimistic (FUTILITY_Z = 1, now).
The synthetic run is rule_calibration.py's (MPI_Bcast at 8 B, 1 KiB and 32 KiB: default, A/A copy,
a null mock-up, a planted gain, a mock-up twice as slow) in its "this machine" configurations
with 32 launches: all variants share one job, so every launch measures every comparison, and a
stopped comparison keeps its undecided row of the look that stopped it, as the check keeps it
whatever its job measures later. Reported per rule: the rates of rule_calibration.py and the
share of planted comparisons stopped. Writes futility_calibration.json next to this script.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd
from rule_calibration import CONFIGS, PLAN, PLANTED, SIZES, SLOW, Truth, simulate

from colltune.verify import check, decide

HERE = Path(__file__).resolve().parent
PLANNED = {"launches": 8, "rounds": 2, "round_launches": 8}
ROUNDS = {i: 1 for i in range(8, 16)} | {i: 2 for i in range(16, 32)}
RULES = {"futility on the estimate (before)": 0.0, "futility one standard error optimistic (now)": 1.0}


def trial(seed: int, shared: float, unshared: float, factor: float) -> dict[str, dict[str, float]]:
    truth = Truth(factors={("bcast", PLANTED): factor, ("bcast", SLOW): 2.0})
    m = simulate(truth, PLAN, SIZES, launches=32, reps=10, launch_sigma=shared, seed=seed, barrier_s=None,
                 variant_launch_sigma=unshared)
    run = check.RunData(Path("memory"), f"t{seed}", {"status": "complete", "settings": PLANNED}, {},
                        pd.DataFrame(), pd.DataFrame(), m, rounds=dict(ROUNDS))
    out = {}
    for rule, z in RULES.items():
        decide.FUTILITY_Z = z
        v = check.judge(run, check.CheckSettings(n_resamples=100), details=False).verdicts
        guide = v[v["kind"].isin(decide.GUIDELINE_KINDS)]
        planted = guide["variant"] == PLANTED
        out[rule] = {"aa_flagged": float(v[v["kind"] == "aa"]["violation"].any()),
                     "null_flagged": float((guide[~planted]["verdict"] == decide.VIOLATION).any()),
                     "false_no_violation": float((guide[planted]["verdict"] == decide.NO_VIOLATION).any()),
                     "power": float((guide[planted]["verdict"] == decide.VIOLATION).mean()),
                     "undecided": float((guide["verdict"] == decide.UNDECIDED).mean()),
                     # stopped: kept undecided from look 1 (the rounds' first look), never judged at the last
                     "planted_stopped": float(((guide[planted]["verdict"] == decide.UNDECIDED)
                                               & (guide[planted]["look"] == 1)).mean())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=200)
    args = ap.parse_args()
    rows = []
    for name, launches, shared, unshared, factor in CONFIGS:
        if launches != 32:
            continue
        t0 = time.monotonic()
        results = [trial(seed, shared, unshared, factor) for seed in range(args.trials)]
        for rule in RULES:
            rates = {k: sum(r[rule][k] for r in results) / len(results) for k in results[0][rule]}
            rows.append({"configuration": name.replace("32 launches", "8 + 8 + 16 launches, 3 looks"),
                         "rule": rule, "trials": args.trials, **rates})
            print(f"{name:50s} {rule:45s} " + "  ".join(f"{k} {v:.3f}" for k, v in rates.items()), flush=True)
        print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
    (HERE / "futility_calibration.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
