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
error ("power" then counts false violations), and a loaded machine's: one (launch, variant, size)
in 20 measured with a descheduled rank (16x slower: the wild launches of
benchmarks/reproducibility/wild_launches.py). Writes rule_calibration.json next to this script
(`--only 3` reruns one configuration and keeps the others' rows); docs/measurement.md quotes it.
`--tests trimmed-t,screened-t` judges with those tests under the directional rule instead of both
rules with the trimmed t (issue 36, session 6: the screened t replaced the trimmed t):

    python benchmarks/verification/rule_calibration.py --trials 100 --only 0 1 2 4 --tests screened-t
    python benchmarks/verification/rule_calibration.py --trials 300 --only 3 4 --tests trimmed-t,screened-t
    python benchmarks/verification/rule_calibration.py --trials 300 --only 5 6 --tests screened-t
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
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
    # a loaded machine: one (launch, variant, size) in 20 has a descheduled rank (16x)
    ("under load: 32 launches, 10% gain, 1 in 20 wild", 32, 0.3, 0.085, 0.90),
    # issue 36, session 8: a quick check's plan of 8 + 10 + 20 launches, judged at once
    ("this machine: 38 launches, 10% gain", 38, 0.3, 0.085, 0.90),
    ("this machine: 38 launches, gain on the tolerance", 38, 0.3, 0.085, 0.95),
]
WILD_SHARE, WILD_SLOWDOWN = 0.05, 16.0
# (rule, test) pairs judged; the rows before session 6 are the trimmed t's under both rules
JUDGED = [("separate", "trimmed-t"), ("directional", "trimmed-t")]


def with_wild_launches(m: pd.DataFrame, seed: int) -> pd.DataFrame:
    """`m` with WILD_SHARE of its (launch, variant, size) measurements WILD_SLOWDOWN times slower."""
    keys = m[["launch_idx", "variant", "msg_bytes"]].drop_duplicates()
    wild = keys[np.random.default_rng(10_000 + seed).random(len(keys)) < WILD_SHARE]
    hit = m.merge(wild.assign(wild=True), how="left", on=["launch_idx", "variant", "msg_bytes"])["wild"].notna()
    return m.assign(runtime_s=np.where(hit.to_numpy(), m["runtime_s"] * WILD_SLOWDOWN, m["runtime_s"]))


def trial(seed: int, config: tuple[str, int, float, float, float],
          judged: list[tuple[str, str]]) -> dict[str, dict[str, float]]:
    name, launches, shared, unshared, factor = config
    truth = Truth(factors={("bcast", PLANTED): factor, ("bcast", SLOW): 2.0})
    m = simulate(truth, PLAN, SIZES, launches=launches, reps=10, launch_sigma=shared, seed=seed, barrier_s=None,
                 variant_launch_sigma=unshared)
    if "wild" in name:
        m = with_wild_launches(m, seed)
    run = check.RunData(Path("memory"), f"t{seed}", {"status": "complete"}, {}, pd.DataFrame(), pd.DataFrame(), m)
    out = {}
    for rule, test in judged:
        v = check.judge(run, check.CheckSettings(rule=rule, test=test, n_resamples=100), details=False).verdicts
        guide = v[v["kind"].isin(decide.GUIDELINE_KINDS)]
        planted = guide[guide["variant"] == PLANTED]
        null = guide[guide["variant"] != PLANTED]
        out[f"{rule} {test}"] = {"aa_flagged": float(v[v["kind"] == "aa"]["violation"].any()),
                     "null_flagged": float((null["verdict"] == decide.VIOLATION).any()),
                     "false_no_violation": float((planted["verdict"] == decide.NO_VIOLATION).any()),
                     "power": float((planted["verdict"] == decide.VIOLATION).mean()),
                     "undecided": float((guide["verdict"] == decide.UNDECIDED).mean())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--only", type=int, nargs="*", help="configurations to run (indices); the others' rows are kept")
    ap.add_argument("--tests", help="judge with these tests (comma-separated, e.g. trimmed-t,screened-t) under the "
                                    "directional rule only, instead of both rules with the trimmed t")
    args = ap.parse_args()
    judged = [("directional", t) for t in args.tests.split(",")] if args.tests else JUDGED
    out = HERE / "rule_calibration.json"
    chosen = set(range(len(CONFIGS)) if args.only is None else args.only)
    names = {CONFIGS[i][0] for i in chosen}
    redone = {(name, rule, test) for name in names for rule, test in judged}
    rows = [r for r in json.loads(out.read_text())
            if (r["configuration"], r["rule"], r.get("test", "trimmed-t")) not in redone] if out.exists() else []
    for config in (CONFIGS[i] for i in sorted(chosen)):
        t0 = time.monotonic()
        results = [trial(seed, config, judged) for seed in range(args.trials)]
        for rule, test in judged:
            key = f"{rule} {test}"
            rates = {k: sum(r[key][k] for r in results) / len(results) for k in results[0][key]}
            rows.append({"configuration": config[0], "rule": rule, "test": test, "trials": args.trials, **rates})
            print(f"{config[0]:48s} {key:24s} " + "  ".join(f"{k} {v:.3f}" for k, v in rates.items()), flush=True)
        print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
    order = [c[0] for c in CONFIGS]
    rows.sort(key=lambda r: (order.index(r["configuration"]) if r["configuration"] in order else len(order),
                             r["rule"] != "separate", r.get("test", "trimmed-t") != "trimmed-t"))
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
