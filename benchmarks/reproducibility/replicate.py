"""Many quick checks replicated offline from the stored first launches of quiet batches (issue 36).

    python benchmarks/reproducibility/replicate.py /tmp/repro-s4.duckdb /tmp/repro-s3.duckdb --checks 20
    python benchmarks/reproducibility/replicate.py DB... --checks 20 --futility-factor inf --test paired-t

A stored batch is 10 checks: one draw. This replays a quick check many times from one pool of
launches that all share one company: the first launches (every job, every variant) of every
complete run in the databases given. Replicated check j draws, without replacement, its 8 first
launches and then its rounds' 8 and 16 launches from that pool (seeded: the same draws for every
setting compared, so settings are compared on the same launches); each round keeps only the jobs
`decide.selection` chooses after the previous look (whole jobs, futility stopping), as `colltune
check` does; each look is judged as the check judges it. Reported: the issue's agreement figures
over every pair of replicated checks, how many checks needed each round (wall time: a round is
8 or 16 launches of ~0.2 s), and per comparison that differs, in how many checks it was a
violation. Caveats: two checks share on average sum(plan)^2 / pool launches (32^2 / 320: ~3 of
32); launches of different batches are pooled as if from one machine state. Pure reading:
measures nothing. Writes results_replicated_<tag>.json.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import statistics
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from colltune.verify import check, decide
from reproducibility import HERE, TARGETS, _PlannedRun, agreement, keyed

Launch = tuple[int, int]  # (index of its source run, launch_idx there)


def first_launches(dbs: list[Path]) -> tuple[list[check.RunData], dict[Launch, pd.DataFrame]]:
    runs: list[check.RunData] = []
    pool: dict[Launch, pd.DataFrame] = {}
    for db in dbs:
        with duckdb.connect(str(db), read_only=True) as con:
            ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created")
                   .fetchall()]
        for rid in ids:
            run = check.load_run(db, rid)
            m = run.measurements
            first = m[[run.rounds.get(int(i), 0) == 0 for i in m["launch_idx"]]]
            for idx, part in first.groupby("launch_idx", sort=True):
                pool[(len(runs), int(idx))] = part
            runs.append(run)
    return runs, pool


def with_launches(run: check.RunData, measurements: pd.DataFrame, rounds: dict[int, int],
                  plan: list[int]) -> check.RunData:
    """`run` (its settings, variants) holding `measurements`, its looks planned for `plan` launches."""
    fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(check.RunData)}
    ids = sorted(int(i) for i in measurements["launch_idx"].unique())
    fields.update(measurements=measurements, rounds=rounds, launches=pd.DataFrame(
        {"launch_idx": ids, "nprocs": 4, "status": "ok", "repetition": ids}))
    return _PlannedRun(**fields, plan=plan)


def replicate(template: check.RunData, pool: dict[Launch, pd.DataFrame], drawn: list[Launch], r0: int,
              plan: tuple[int, ...], settings: check.CheckSettings) -> tuple[pd.DataFrame, list[int]]:
    """One quick check from launches `drawn` (first r0, then each round's): its verdicts and the
    launches each of its rounds measured."""
    parts = [pool[d].assign(launch_idx=i) for i, d in enumerate(drawn[:r0])]
    rounds: dict[int, int] = {}
    measured_rounds: list[int] = []
    nxt, rest = r0, drawn[r0:]
    for k, n in enumerate(plan, start=1):
        part = with_launches(template, pd.concat(parts, ignore_index=True), dict(rounds), [r0, *plan])
        result = check.judge(part, settings, details=False)
        todo = decide.selection(result.verdicts, part.measurements, result.futile)
        if not todo:
            break
        keep = todo.get(4, frozenset())
        for d in rest[:n]:
            m = pool[d]
            m = m[[(c, int(s), v) in keep for c, s, v in m[["collective", "msg_bytes", "variant"]].itertuples(
                index=False, name=None)]]
            parts.append(m.assign(launch_idx=nxt))
            rounds[nxt] = k
            nxt += 1
        measured_rounds.append(n)
        rest = rest[n:]
    final = with_launches(template, pd.concat(parts, ignore_index=True), rounds, [r0, *plan])
    return check.judge(final, settings, details=False).verdicts, measured_rounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dbs", type=Path, nargs="+")
    ap.add_argument("--checks", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--first", type=int, default=8, help="first launches (every job)")
    ap.add_argument("--rounds", default="8,16", help="launches of each round")
    ap.add_argument("--test", help="the check's test (default: CheckSettings'); see colltune check --help")
    ap.add_argument("--futility-factor", type=float, help=f"decide.FUTILITY_FACTOR [{decide.FUTILITY_FACTOR}]; inf: "
                                                          "no futility stopping")
    ap.add_argument("--futility-z", type=float, help=f"decide.FUTILITY_Z [{decide.FUTILITY_Z}]")
    ap.add_argument("--margin", type=float, help=f"CheckSettings.margin [{decide.MARGIN}]; 0: none")
    ap.add_argument("--pairing", choices=["launch", "repetition"],
                    help="a launch's value in a paired test of two variants of one job (CheckSettings.pairing: "
                         "needs pairing_by_repetition.patch applied; without it the check pairs by launch)")
    ap.add_argument("--two-modes", choices=["median", "mean", "tested"],
                    help="CheckSettings.two_modes: the slowdown of launches in two modes or skewed across the "
                         "tolerance (decide.two_modes_slowdown, decide.straddling_slowdown)")
    ap.add_argument("--tag", help="results_replicated_<tag>.json [settings]")
    args = ap.parse_args()
    if args.pairing and "pairing" not in check.CheckSettings.model_fields:
        raise SystemExit("--pairing: this tree's check pairs by launch only; apply "
                         "benchmarks/reproducibility/pairing_by_repetition.patch first (`patch -p1 < ...`)")
    plan = tuple(int(x) for x in args.rounds.split(","))
    if args.futility_factor is not None:
        decide.FUTILITY_FACTOR = args.futility_factor  # type: ignore[assignment]
    if args.futility_z is not None:
        decide.FUTILITY_Z = args.futility_z
    settings = check.CheckSettings(**({"test": args.test} if args.test else {}),
                                   **({"margin": args.margin} if args.margin is not None else {}),
                                   **({"pairing": args.pairing} if args.pairing else {}),
                                   **({"two_modes": args.two_modes} if args.two_modes else {}))
    runs, pool = first_launches(args.dbs)
    keys = sorted(pool)
    rng = np.random.default_rng(args.seed)
    r0 = args.first
    verdicts: dict[str, dict[str, tuple[str, str]]] = {}
    needed: list[list[int]] = []
    for j in range(args.checks):
        drawn = [keys[i] for i in rng.choice(len(keys), size=r0 + sum(plan), replace=False)]
        v, measured = replicate(runs[j % len(runs)], pool, drawn, r0, plan, settings)
        verdicts[f"check{j:03d}"] = keyed(v)
        needed.append(measured)
        print(f"check {j}: rounds {measured}, {int((v['verdict'] == decide.VIOLATION).sum())} violations", flush=True)
    res = agreement(verdicts)
    overlaps = [p["overlap"] for p in res["pairs"]]
    undecided = [(r["undecided"] + r["untested"]) / r["comparisons"] for r in res["runs"]]
    share = {k: sum(x == decide.VIOLATION for x in per.values()) / len(per) for k, per in res["differing"].items()}
    launches = [r0 + sum(m) for m in needed]
    summary = {"checks": args.checks, "pool_launches": len(pool), "source_runs": len(runs),
               "dbs": [str(d) for d in args.dbs], "seed": args.seed, "plan": [r0, *plan],
               "test": str(settings.test), "margin": settings.margin, "pairing": getattr(settings, "pairing", "launch"),
               "two_modes": settings.two_modes, "futility_factor": decide.FUTILITY_FACTOR, "futility_z": decide.FUTILITY_Z,
               "overlap_mean": statistics.fmean(overlaps), "overlap_min": min(overlaps),
               "overlap_p10": float(np.percentile(overlaps, 10)),
               "pairs_below_90": sum(o < 0.9 for o in overlaps) / len(overlaps),
               "flips": sum(len(p["flips"]) for p in res["pairs"]), "undecided_max": max(undecided),
               "undecided_mean": statistics.fmean(undecided),
               "violations_per_check": [r["violations"] for r in res["runs"]],
               "rounds_measured": collections.Counter(len(m) for m in needed),
               "launches_mean": statistics.fmean(launches),
               "violation_share_of_differing": share}
    tag = args.tag or (f"{settings.test}_ff{decide.FUTILITY_FACTOR:g}_z{decide.FUTILITY_Z:g}_{r0}_{'_'.join(map(str, plan))}"
                       f"_margin{settings.margin:g}" + (f"_pairing_{args.pairing}" if args.pairing not in (None, "launch")
                                                        else "")
                       + (f"_two_modes_{settings.two_modes}" if args.two_modes else ""))
    out = HERE / f"results_replicated_{tag}.json"
    out.write_text(json.dumps({"summary": summary, "targets": TARGETS, **res}, indent=1, default=str) + "\n")
    print(json.dumps({k: summary[k] for k in summary if k not in ("violations_per_check", "dbs")}, indent=1,
                     default=str))


if __name__ == "__main__":
    main()
