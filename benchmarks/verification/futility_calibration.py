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

`--test screened-t` (or trimmed-t) judges with that test and the futility rule of now only, and
writes futility_calibration_<test>.json (issue 36, session 6: the screened t replaced the trimmed
t); the configuration "under load" has one (launch, variant, size) in 20 wild (rule_calibration.py):

    python benchmarks/verification/futility_calibration.py --trials 100 --test screened-t

`--two-modes median|mean` judges with that slowdown for launches in two modes (decide.two_modes_slowdown,
issue 36 session 9) and adds two configurations whose planted mock-up is bimodal by launch: "two
modes on the tolerance" (a third of the launches at 1.35x, the rest at 0.93x: geometric mean
exactly on the tolerance, so a violation is a false one) and "two modes, 1.18x" (a third at 1.65x,
the rest at 1.0x, like MPI_Scatter vs Scatterv at 8 B); writes futility_calibration_<test>_<plan>_two_modes_<m>.json:

    python benchmarks/verification/futility_calibration.py --trials 200 --test screened-t --plan 8,10,20 --two-modes mean

`--plan 8,10,20` lays the runs out as that plan (first launches, then each round; issue 36, session 8:
the quick check's rounds of 10 and 20 launches) and writes futility_calibration_<test>_<plan>.json:

    python benchmarks/verification/futility_calibration.py --trials 400 --test screened-t --plan 8,10,20
    python benchmarks/verification/futility_calibration.py --trials 400 --test screened-t --plan 8,8,16

`--variance-prior P` judges with that weight of the family's typical variance under each paired
t-test's own (decide.VARIANCE_PRIOR, stats.variance_floor; 0: none, the rule before session 10 of
issue 36) and adds the configuration "modes held over a look": the planted mock-up runs the
default's own code path (its per-launch ratio scatters by 0.03 in log within a mode) but a third
of its launches are at 1.0x and two thirds at 1.35x (geometric mean 1.22x, a violation, like
MPI_Gather vs Gatherv at 8 B under load), and with probability 1/2 a look's launches all share one
mode (a state lasting a look's few seconds: at load ~2 one quick check's first 8 launches lay at
0.91-0.99x, and it was called "no violation"). Writes ..._variance_prior_<P>.json:

    python benchmarks/verification/futility_calibration.py --trials 200 --test screened-t --plan 8,10,20 --variance-prior 0
    python benchmarks/verification/futility_calibration.py --trials 200 --test screened-t --plan 8,10,20 --variance-prior 4

`--margin M` judges with that equivalence margin (decide.MARGIN, issue 36 session 13; 0: none, the
rule before): a violation must be shown beyond the tolerance's boundary 1/0.95 widened by M, and a
comparison shown below that is "no practical violation" (false where its truth lies beyond the
widened boundary: column false_no_practical). Adds the configuration "gain on the margin": the
planted ratio exactly on the widened boundary, where a violation and "no practical violation" are
both errors. Writes ..._margin_<M>.json:

    python benchmarks/verification/futility_calibration.py --trials 200 --test screened-t --plan 8,10,20 --margin 0
    python benchmarks/verification/futility_calibration.py --trials 200 --test screened-t --plan 8,10,20 --margin 0.03
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from rule_calibration import CONFIGS, PLAN, PLANTED, SIZES, SLOW, Truth, simulate, with_wild_launches

from colltune.verify import check, decide

HERE = Path(__file__).resolve().parent
DEFAULT_PLAN = (8, 8, 16)


def planned(plan: tuple[int, ...]) -> dict[str, int]:
    """The run settings of `plan` (first launches, then rounds doubling: decide.round_launches)."""
    return {"launches": plan[0], "rounds": len(plan) - 1, "round_launches": plan[1]}


def rounds_of(plan: tuple[int, ...]) -> dict[int, int]:
    """launch index -> adaptive round for `plan`."""
    bounds = np.cumsum(plan)
    return {i: k for k in range(1, len(plan)) for i in range(int(bounds[k - 1]), int(bounds[k]))}

RULES = {"futility on the estimate (before)": 0.0, "futility one standard error optimistic (now)": 1.0}


# Planted mock-ups bimodal by launch (--two-modes): name, share of launches in the high mode, the
# ratio default / mock-up in the high mode and in the low mode.
TOLERANCE_LOG = -math.log(0.95)
TWO_MODE_CONFIGS = [
    ("this machine: 32 launches, two modes on the tolerance", 1 / 3, 1.35,
     math.exp((3 * TOLERANCE_LOG - math.log(1.35)) / 2)),
    ("this machine: 32 launches, two modes, 1.18x", 1 / 3, 1.65, 1.0),
]


TWO_MODE_SIGMA = 0.04


def with_two_modes(m: pd.DataFrame, seed: int, share: float, high: float, low: float) -> pd.DataFrame:
    """`m` with the planted mock-up's time divided, per (launch, size), by `high` in `share` of them
    and by `low` in the rest (its truth factor is 1: the ratio default / mock-up is then high or low)."""
    keys = m.loc[m["variant"] == PLANTED, ["launch_idx", "msg_bytes"]].drop_duplicates()
    ratio = np.where(np.random.default_rng(20_000 + seed).random(len(keys)) < share, high, low)
    keyed = keys.assign(ratio=ratio)
    hit = m.merge(keyed, how="left", on=["launch_idx", "msg_bytes"])["ratio"].to_numpy()
    planted = (m["variant"] == PLANTED).to_numpy()
    return m.assign(runtime_s=np.where(planted, m["runtime_s"] / np.nan_to_num(hit, nan=1.0), m["runtime_s"]))


# "Modes held over a look" (--variance-prior): share of launches in the high mode, the two modes'
# ratios default / mock-up, the chance that a look's launches all share one mode, and the scatter
# of the mock-up's own time about the default's within a mode (it runs the same code path).
HELD = ("this machine: 32 launches, modes held over a look, 1.22x", 2 / 3, 1.35, 1.0, 0.5, 0.02)


def with_held_modes(m: pd.DataFrame, seed: int, plan: tuple[int, ...], share: float, high: float, low: float,
                    hold: float, sigma: float) -> pd.DataFrame:
    """`m` with the planted mock-up's time the default's of the same (launch, size, repetition)
    divided by `high` or `low` (per (launch, size), `high` with probability `share`) and by a
    lognormal factor of `sigma` per (launch, size); with probability `hold` every launch of a look
    (plan) takes that look's one draw at a size."""
    rng = np.random.default_rng(30_000 + seed)
    bounds = np.concatenate([[0], np.cumsum(plan)])
    ratio: dict[tuple[int, int], float] = {}
    for size in SIZES:
        for k in range(len(plan)):
            held = rng.random() < hold
            mode = rng.random() < share
            for i in range(int(bounds[k]), int(bounds[k + 1])):
                up = mode if held else rng.random() < share
                ratio[(i, size)] = (high if up else low) * float(np.exp(rng.normal(0.0, sigma)))
    default = m[m["variant"] == "default"].set_index(["launch_idx", "msg_bytes", "rep"])["runtime_s"]
    planted = (m["variant"] == PLANTED).to_numpy()
    keys = pd.MultiIndex.from_frame(m.loc[planted, ["launch_idx", "msg_bytes", "rep"]])
    divide = np.array([ratio[(int(i), int(n))] for i, n, _ in keys])
    runtime = m["runtime_s"].to_numpy(copy=True)
    runtime[planted] = default.reindex(keys).to_numpy() / divide
    return m.assign(runtime_s=runtime)


def trial(seed: int, config: tuple[str, int, float, float, float], rules: dict[str, float],
          test: str | None, plan: tuple[int, ...] = DEFAULT_PLAN, two_modes: str | None = None,
          modes: tuple[str, float, float, float] | None = None,
          variance_prior: float | None = None, margin: float | None = None) -> dict[str, dict[str, float]]:
    name, _, shared, unshared, factor = config
    truth = Truth(factors={("bcast", PLANTED): 1.0 if modes else factor, ("bcast", SLOW): 2.0})
    m = simulate(truth, PLAN, SIZES, launches=sum(plan), reps=10, launch_sigma=shared, seed=seed, barrier_s=None,
                 variant_launch_sigma=unshared)
    if "wild" in name:
        m = with_wild_launches(m, seed)
    if modes:
        m = with_two_modes(m, seed, *modes[1:])
    if name == HELD[0]:
        m = with_held_modes(m, seed, plan, *HELD[1:])
    run = check.RunData(Path("memory"), f"t{seed}", {"status": "complete", "settings": planned(plan)}, {},
                        pd.DataFrame(), pd.DataFrame(), m, rounds=rounds_of(plan))
    settings = check.CheckSettings(n_resamples=100, **({"test": test} if test else {}),
                                   **({"two_modes": two_modes} if two_modes else {}),
                                   **({"variance_prior": variance_prior} if variance_prior is not None else {}),
                                   **({"margin": margin} if margin is not None else {}))
    out = {}
    for rule, z in rules.items():
        decide.FUTILITY_Z = z
        v = check.judge(run, settings, details=False).verdicts
        guide = v[v["kind"].isin(decide.GUIDELINE_KINDS)]
        planted = guide["variant"] == PLANTED
        out[rule] = {"aa_flagged": float(v[v["kind"] == "aa"]["violation"].any()),
                     "null_flagged": float((guide[~planted]["verdict"] == decide.VIOLATION).any()),
                     "false_no_violation": float((guide[planted]["verdict"] == decide.NO_VIOLATION).any()),
                     # "no practical violation" of the planted mock-up (an error where its truth lies beyond
                     # the tolerance's boundary widened by the margin: every configuration but "on the tolerance")
                     "no_practical": float((guide[planted]["verdict"] == decide.NO_PRACTICAL).any()),
                     "power": float((guide[planted]["verdict"] == decide.VIOLATION).mean()),
                     "undecided": float((guide["verdict"] == decide.UNDECIDED).mean()),
                     # stopped: kept undecided from look 1 (the rounds' first look), never judged at the last
                     "planted_stopped": float(((guide[planted]["verdict"] == decide.UNDECIDED)
                                               & (guide[planted]["look"] == 1)).mean())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--test", help="judge with this test, futility of now only (futility_calibration_<test>.json)")
    ap.add_argument("--two-modes", choices=["median", "mean", "tested"],
                    help="judge with this slowdown for launches in two modes; adds the bimodal configurations")
    ap.add_argument("--plan", help="launches of the first look and of each round (doubling), e.g. 8,10,20 "
                                    "[default: 8,8,16]; given, the json's name ends in _<plan>")
    ap.add_argument("--variance-prior", type=float,
                    help="judge with this weight of the family's typical variance (decide.VARIANCE_PRIOR; 0: none); "
                         "adds the configuration with modes held over a look")
    ap.add_argument("--margin", type=float,
                    help="judge with this equivalence margin (decide.MARGIN; 0: none); adds the configuration with "
                         "the planted gain on the widened boundary")
    args = ap.parse_args()
    plan = tuple(int(x) for x in args.plan.split(",")) if args.plan else DEFAULT_PLAN
    if plan[0] <= 0 or len(plan) < 2 or any(plan[k] != plan[1] * 2 ** (k - 1) for k in range(1, len(plan))):
        ap.error(f"--plan {args.plan}: rounds double (decide.round_launches), e.g. 8,10,20")
    rules = {k: v for k, v in RULES.items() if v == 1.0} if args.test else RULES
    rows = []
    configs: list[tuple[tuple[str, int, float, float, float], tuple[str, float, float, float] | None]]
    configs = [(c, None) for c in CONFIGS]
    if args.two_modes:
        base = next(c for c in CONFIGS if c[0] == "this machine: 32 launches, 10% gain")
        # within a mode the launches scatter less than the 10% configurations' (0.04 per variant, ~0.06
        # in the log-ratio): so that stats.launch_modes sees the two modes, the case the rule is about
        configs += [((m[0], 32, base[2], TWO_MODE_SIGMA, 1.0), m) for m in TWO_MODE_CONFIGS]
    if args.variance_prior is not None:
        base = next(c for c in CONFIGS if c[0] == "this machine: 32 launches, 10% gain")
        configs.append(((HELD[0], 32, base[2], base[3], 1.0), None))
    if args.margin is not None:
        base = next(c for c in CONFIGS if c[0] == "this machine: 32 launches, 10% gain")
        on_margin = (1.0 - 0.05) / (1.0 + (args.margin if args.margin > 0 else decide.MARGIN))
        configs.append((("this machine: 32 launches, gain on the margin", 32, base[2], base[3], on_margin), None))
    for config, modes in configs:
        name, launches = config[0], config[1]
        if launches != 32 or ("wild" in name and not args.test):
            continue
        t0 = time.monotonic()
        results = [trial(seed, config, rules, args.test, plan, args.two_modes, modes, args.variance_prior, args.margin)
                   for seed in range(args.trials)]
        for rule in rules:
            rates = {k: sum(r[rule][k] for r in results) / len(results) for k in results[0][rule]}
            rows.append({"configuration": name.replace("32 launches", " + ".join(map(str, plan))
                                                           + f" launches, {len(plan)} looks"),
                         "rule": rule, **({"test": args.test} if args.test else {}), "trials": args.trials, **rates})
            print(f"{name:50s} {rule:45s} " + "  ".join(f"{k} {v:.3f}" for k, v in rates.items()), flush=True)
        print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
    out = f"futility_calibration_{args.test}.json" if args.test else "futility_calibration.json"
    if args.plan:
        out = out.replace(".json", f"_{'_'.join(map(str, plan))}.json")
    if args.two_modes:
        out = out.replace(".json", f"_two_modes_{args.two_modes}.json")
    if args.variance_prior is not None:
        out = out.replace(".json", f"_variance_prior_{args.variance_prior:g}.json")
    if args.margin is not None:
        out = out.replace(".json", f"_margin_{args.margin:g}.json")
    (HERE / out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
