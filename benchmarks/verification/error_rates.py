"""Error rates of the whole check procedure on synthetic runs with known truth.

    python benchmarks/verification/error_rates.py --trials 200

Each trial is one synthetic run judged by colltune.verify.check.judge exactly as `colltune check`
judges a real one: MPI_Bcast at 4 sizes with default, default#aa (A/A), a mock-up identical to
the default (null), a mock-up 25% faster at every size, R launches, a multiplicative launch effect
shared by all variants of a launch (lognormal, sigma = launch noise) and 10% per-repetition noise.
Reported per configuration and test: share of runs with any A/A violation and with any null
violation (both must stay <= alpha), share of the 25%-faster comparisons detected (power).
Writes error_rates.json next to this script; docs/statistics.md quotes the table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from check_synth import Truth, simulate  # noqa: E402

from colltune.verify import (
    check,  # noqa: E402
    stats,  # noqa: E402
)

SIZES = [8, 1024, 65536, 1048576]
PLAN = {"bcast": ["default", "default#aa", "bcast_as_allgatherv", "bcast_as_scatter_allgather"]}
TRUTH = Truth(factors={("bcast", "bcast_as_scatter_allgather"): 0.75})


def trial(seed: int, launches: int, launch_sigma: float, settings: check.CheckSettings,
          ratio_sigma: float = 0.0) -> tuple[bool, bool, int]:
    m = simulate(TRUTH, PLAN, SIZES, launches=launches, reps=5, launch_sigma=launch_sigma, seed=seed, barrier_s=None,
                 variant_launch_sigma=ratio_sigma)
    run = check.RunData(Path("memory"), f"t{seed}", {"status": "complete"}, {}, pd.DataFrame(), pd.DataFrame(), m)
    v = check.judge(run, settings).verdicts
    aa = bool(v[v["kind"] == "aa"]["violation"].any())
    null = bool(v[v["variant"] == "bcast_as_allgatherv"]["violation"].any())
    hits = int(v[v["variant"] == "bcast_as_scatter_allgather"]["violation"].sum())
    return aa, null, hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--ratio-noise", type=float, default=0.0,
                    help="per-(launch, variant) noise not shared within a launch (0.25 ~ this machine)")
    args = ap.parse_args()
    rows = []
    tests = (stats.Test.PAIRED_T, stats.Test.SIGNED_RANK, stats.Test.MWU) if not args.ratio_noise else (
        stats.Test.PAIRED_T, stats.Test.MWU)
    for launches in (10, 20):
        for sigma in (0.05, 0.3):
            for test in tests:
                settings = check.CheckSettings(test=test, n_resamples=200)
                t0 = time.time()
                aa = null = hits = 0
                for seed in range(args.trials):
                    a, n, h = trial(seed, launches, sigma, settings, args.ratio_noise)
                    aa, null, hits = aa + a, null + n, hits + h
                row = {"launches": launches, "launch_noise": sigma, "ratio_noise": args.ratio_noise,
                       "test": str(test), "trials": args.trials,
                       "aa_runs_flagged": aa / args.trials, "null_runs_flagged": null / args.trials,
                       "power_25pct": hits / (args.trials * len(SIZES))}
                rows.append(row)
                print(f"R={launches:2d} launch noise {sigma:.2f} {test!s:12s} A/A {row['aa_runs_flagged']:.3f} "
                      f"null {row['null_runs_flagged']:.3f} power {row['power_25pct']:.3f} "
                      f"({time.time() - t0:.0f} s)", flush=True)
    name = f"error_rates_ratio{args.ratio_noise:g}.json" if args.ratio_noise else "error_rates.json"
    (HERE / name).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
