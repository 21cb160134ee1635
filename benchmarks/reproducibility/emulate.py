"""Adaptive rounds in the first launches' company, emulated offline from stored checks (issue 36).

    python benchmarks/reproducibility/emulate.py /tmp/repro.duckdb

Whole-job rounds change what is measured, so re-judging stored runs cannot show them. This
emulates them from launches that all share one company: the first launches of the stored quick
checks (every job, every variant). Emulated run i keeps the 8 first launches of stored run i and
takes its rounds' launches, 8 then 16, at random without replacement from the other runs' first
launches; each round keeps, of its launches, only the jobs `decide.selection` chooses after the
previous look (whole jobs, futility stopping), exactly as `colltune check` would; then the run is
judged as the check judges it. Caveat: the runs draw their rounds from one pool (72 launches), so
two of them share about a third of their round launches: their agreement is somewhat
optimistic. Pure reading: measures nothing. Writes results_<tag>_emulated[_seedN].json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from colltune.verify import check, decide
from reproducibility import HERE, TARGETS, agreement, keyed


def with_launches(run: check.RunData, measurements: pd.DataFrame, rounds: dict[int, int]) -> check.RunData:
    fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(check.RunData)}
    ids = sorted(int(i) for i in measurements["launch_idx"].unique())
    fields.update(measurements=measurements, rounds=rounds, launches=pd.DataFrame(
        {"launch_idx": ids, "nprocs": 4, "status": "ok", "repetition": ids}))
    return check.RunData(**fields)


def emulate(runs: dict[str, check.RunData], rid: str, seed: int, plan: tuple[int, ...]) -> pd.DataFrame:
    first = {r: run.measurements[run.measurements["launch_idx"].map(lambda i, run=run: run.rounds.get(int(i), 0)) == 0]
             for r, run in runs.items()}
    pool = [(r, int(i)) for r, m in first.items() if r != rid for i in sorted(m["launch_idx"].unique())]
    rng = np.random.default_rng(seed)
    drawn = [pool[j] for j in rng.choice(len(pool), size=sum(plan), replace=False)]
    run = runs[rid]
    measured = first[rid]
    rounds: dict[int, int] = {}
    next_idx = int(measured["launch_idx"].max()) + 1
    for k, n in enumerate(plan, start=1):
        part = with_launches(run, measured, dict(rounds))
        result = check.judge(part, details=False)
        todo = decide.selection(result.verdicts, part.measurements, result.futile)
        if not todo:
            break
        keep = todo.get(4, frozenset())
        for src, idx in drawn[:n]:
            m = first[src][first[src]["launch_idx"] == idx]
            m = m[[(c, int(s), v) in keep for c, s, v in m[["collective", "msg_bytes", "variant"]].itertuples(
                index=False, name=None)]]
            measured = pd.concat([measured, m.assign(launch_idx=next_idx)], ignore_index=True)
            rounds[next_idx] = k
            next_idx += 1
        drawn = drawn[n:]
    return check.judge(with_launches(run, measured, rounds)).verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--tag", default="quiet")
    ap.add_argument("--rounds", default="8,16", help="launches of each emulated round")
    ap.add_argument("--seed", type=int, default=0, help="draw of the rounds' launches (run i: seed + i)")
    args = ap.parse_args()
    plan = tuple(int(x) for x in args.rounds.split(","))
    with duckdb.connect(str(args.db), read_only=True) as con:
        ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created")
               .fetchall()]
    runs = {rid: check.load_run(args.db, rid) for rid in ids}
    verdicts = {rid: keyed(emulate(runs, rid, args.seed + i, plan)) for i, rid in enumerate(ids)}
    res = agreement(verdicts)
    overlaps = [p["overlap"] for p in res["pairs"]]
    undecided = [(r["undecided"] + r["untested"]) / r["comparisons"] for r in res["runs"]]
    summary = {"runs": len(ids), "overlap_mean": statistics.fmean(overlaps), "overlap_min": min(overlaps),
               "flips": sum(len(p["flips"]) for p in res["pairs"]), "undecided_max": max(undecided),
               "violations_per_run": [r["violations"] for r in res["runs"]], "rounds": list(plan),
               "seed": args.seed}
    out = HERE / f"results_{args.tag}_emulated{f'_seed{args.seed}' if args.seed else ''}.json"
    out.write_text(json.dumps({"summary": summary, "targets": TARGETS, **res}, indent=1) + "\n")
    print(f"{len(ids)} emulated runs; violations per run {summary['violations_per_run']}")
    for name in ("overlap_mean", "overlap_min", "flips", "undecided_max"):
        print(f"  {name}: {summary[name] if isinstance(summary[name], int) else round(summary[name], 3)}")
    for k, per_run in res["differing"].items():
        print(f"  differs: {k}: {per_run}")


if __name__ == "__main__":
    main()
