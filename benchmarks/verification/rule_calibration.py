"""Error rates of the verdict rule before and after issue 36, on synthetic runs with known truth.

    python benchmarks/verification/rule_calibration.py --trials 300

Every trial is one synthetic run (tests/check_synth.py: a launch effect shared by all variants of
a launch, per-(launch, variant) noise that is not shared, per-repetition noise) judged by
colltune.verify.check.judge twice, with the rule of one correction per test ("separate", before
issue 36) and with one directional correction over the comparisons ("directional", now). MPI_Bcast
at 8 B, 1 KiB and 32 KiB with default, default#aa (A/A), a mock-up identical to the default
(null), a mock-up with a planted gain, and a mock-up twice as slow. Reported per configuration
and rule:

* A/A runs flagged: share of runs with any A/A violation (must be <= alpha);
* null runs flagged: share of runs with any false violation among the guideline comparisons whose
  truth is no violation (null mock-up, slower mock-up, monotony, split; must be <= alpha);
* false "no violation": share of runs that called a planted gain (beyond the tolerance)
  equivalent (must be <= alpha);
* power: share of the planted comparisons decided a violation; undecided: share of all guideline
  comparisons left undecided.

Configurations: the test suite's (tests/test_check.py::test_error_rates_of_the_full_check: 10
launches, 10% launch noise, 25% gain) and this machine's (per-launch ratios scattering by 0.12 in
log, as the pattern comparisons of a quick check do under load, a planted 10% gain, 16 and 32
launches), and a planted gain exactly on the tolerance (5%), where either decision about it is an
error ("power" then counts false violations). Writes rule_calibration.json next to this script
(`--only 3` reruns one configuration and keeps the others' rows); docs/measurement.md quotes it.
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

from colltune.verify import check, decide  # noqa: E402

SIZES = [8, 1024, 32768]
NULL, PLANTED, SLOW = "bcast_as_allgatherv", "bcast_as_scatter_allgather", "bcast_as_scatter_ring_allgather"
PLAN = {"bcast": ["default", "default#aa", NULL, PLANTED, SLOW]}
CONFIGS = [
    # name, launches, shared launch noise, unshared per-(launch, variant) noise, planted factor
    ("test suite: 10 launches, 25% gain", 10, 0.1, 0.0, 0.75),
    ("this machine: 16 launches, 10% gain", 16, 0.3, 0.085, 0.90),
    ("this machine: 32 launches, 10% gain", 32, 0.3, 0.085, 0.90),
    # on the boundary itself (5%): either decision about the planted mock-up is then an error
    ("this machine: 32 launches, gain on the tolerance", 32, 0.3, 0.085, 0.95),
]


def trial(seed: int, launches: int, shared: float, unshared: float, factor: float) -> dict[str, dict[str, float]]:
    truth = Truth(factors={("bcast", PLANTED): factor, ("bcast", SLOW): 2.0})
    m = simulate(truth, PLAN, SIZES, launches=launches, reps=10, launch_sigma=shared, seed=seed, barrier_s=None,
                 variant_launch_sigma=unshared)
    run = check.RunData(Path("memory"), f"t{seed}", {"status": "complete"}, {}, pd.DataFrame(), pd.DataFrame(), m)
    out = {}
    for rule in ("separate", "directional"):
        v = check.judge(run, check.CheckSettings(rule=rule, n_resamples=100), details=False).verdicts
        guide = v[v["kind"].isin(decide.GUIDELINE_KINDS)]
        planted = guide[guide["variant"] == PLANTED]
        null = guide[guide["variant"] != PLANTED]
        out[rule] = {"aa_flagged": float(v[v["kind"] == "aa"]["violation"].any()),
                     "null_flagged": float((null["verdict"] == decide.VIOLATION).any()),
                     "false_no_violation": float((planted["verdict"] == decide.NO_VIOLATION).any()),
                     "power": float((planted["verdict"] == decide.VIOLATION).mean()),
                     "undecided": float((guide["verdict"] == decide.UNDECIDED).mean())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--only", type=int, nargs="*", help="configurations to run (indices); the others' rows are kept")
    args = ap.parse_args()
    out = HERE / "rule_calibration.json"
    chosen = set(range(len(CONFIGS)) if args.only is None else args.only)
    names = {CONFIGS[i][0] for i in chosen}
    rows = [r for r in json.loads(out.read_text()) if r["configuration"] not in names] if out.exists() else []
    for name, launches, shared, unshared, factor in (CONFIGS[i] for i in sorted(chosen)):
        t0 = time.monotonic()
        results = [trial(seed, launches, shared, unshared, factor) for seed in range(args.trials)]
        for rule in ("separate", "directional"):
            rates = {k: sum(r[rule][k] for r in results) / len(results) for k in results[0][rule]}
            rows.append({"configuration": name, "rule": rule, "trials": args.trials, **rates})
            print(f"{name:40s} {rule:12s} " + "  ".join(f"{k} {v:.3f}" for k, v in rates.items()), flush=True)
        print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
    order = [c[0] for c in CONFIGS]
    rows.sort(key=lambda r: (order.index(r["configuration"]) if r["configuration"] in order else len(order),
                             r["rule"] != "separate"))
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
