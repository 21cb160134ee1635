"""Stability of three-way verdicts: independent `colltune check --preset quick -n 4` runs.

Per pair of runs: overlap of the violation sets (|A and B| / |A or B|: a violation in one run
that the other left undecided counts against it), the same restricted to the comparisons both
runs decided, decided verdicts that flip (violation in one run, no violation in the other, among
comparisons decided in both) and the comparisons behind each difference; per run: share
undecided/untested, wall time, load average. Usage (README.md):

    python benchmarks/verdicts/verdicts.py --runs 5 --db /tmp/verdicts.duckdb
    python benchmarks/verdicts/verdicts.py --runs 5 --db /tmp/verdicts.duckdb --reuse   # re-analyse
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd

from colltune.verify import check

HERE = Path(__file__).resolve().parent
COLLTUNE = str(Path(sys.executable).parent / "colltune")


def measure(db: Path, runs: int, first_seed: int, extra: list[str]) -> list[dict[str, object]]:
    out = []
    for i in range(runs):
        load = Path("/proc/loadavg").read_text().split()[0]
        start = time.strftime("%H:%M:%S", time.gmtime())
        epoch = time.time()
        t0 = time.monotonic()
        proc = subprocess.run([COLLTUNE, "check", "--preset", "quick", "-n", "4", "--db", str(db), "--quiet",
                               "--seed", str(first_seed + i), *extra], capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        if proc.returncode not in (0, 1, 3):
            raise SystemExit(f"run {i} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        after = Path("/proc/loadavg").read_text().split()[0]
        out.append({"run": i, "started_utc": start, "started_epoch": epoch, "wall_s": round(wall, 1),
                    "exit": proc.returncode,
                    "loadavg_before": float(load), "loadavg_after": float(after)})
        print(f"run {i}: {wall:.1f} s, exit {proc.returncode}, load {load}", flush=True)
    return out


def key(r: pd.Series) -> tuple[object, ...]:
    # split rows keep only the smallest violating k per size, which may differ between runs
    ref = r["ref_bytes"] if r["kind"] == "monotony" else None
    return (int(r["nprocs"]), r["kind"], r["collective"], r["variant"], int(r["msg_bytes"]), ref)


def parts(db: Path, run_id: str, started_epoch: float, wall_s: float) -> dict[str, float]:
    """Where a run's wall time went: launches, storing between them, judging before each round
    and at the end, the rest (imports, storing verdicts, output), from the stored timestamps."""
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute(
        "SELECT l.started, l.finished, coalesce(e.value, '0') FROM launches l LEFT JOIN environment e "
        "ON e.run_id = l.run_id AND e.launch_idx = l.launch_idx AND e.key = 'round' WHERE l.run_id = ? "
        "ORDER BY l.launch_idx", [run_id]).fetchall()
    judged = con.execute("SELECT max(judged_at) FROM verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
    con.close()
    start = dt.datetime.fromtimestamp(started_epoch, dt.UTC).replace(tzinfo=None)
    gaps = [((b[0] - a[1]).total_seconds(), a[2] != b[2]) for a, b in itertools.pairwise(rows)]
    out = {"before_first_launch_s": (rows[0][0] - start).total_seconds(),
           "launches": len(rows), "launches_s": sum((f - s).total_seconds() for s, f, _ in rows),
           "storing_between_launches_s": sum(g for g, new_round in gaps if not new_round),
           "judging_for_rounds_s": sum(g for g, new_round in gaps if new_round),
           "final_judging_s": (judged - rows[-1][1]).total_seconds()}
    out["after_judging_s"] = wall_s - (judged - start).total_seconds()
    return {k: round(v, 2) for k, v in out.items()}


def analyse(db: Path) -> dict[str, object]:
    con = duckdb.connect(str(db), read_only=True)
    ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created").fetchall()]
    con.close()
    per_run = {}
    rows = []
    for rid in ids:
        v = check.load_verdicts(db, rid)
        v = v[v["kind"].isin(check.GUIDELINE_KINDS)]
        per_run[rid] = {key(r): r["verdict"] for _, r in v.iterrows()}
        n = len(v)
        looks = v["look"].value_counts().sort_index().to_dict()
        rows.append({"run_id": rid, "comparisons": n, "violations": int((v["verdict"] == "violation").sum()),
                     "no_violation": int((v["verdict"] == "no violation").sum()),
                     "undecided": int((v["verdict"] == "undecided").sum()),
                     "untested": int((v["verdict"] == "untested").sum()),
                     "decided_at_look": {int(k): int(c) for k, c in looks.items()},
                     "tests": sorted(set(v["test"]))})
    pairs = []
    for a, b in itertools.combinations(ids, 2):
        va = {k for k, x in per_run[a].items() if x == "violation"}
        vb = {k for k, x in per_run[b].items() if x == "violation"}
        both = [k for k in per_run[a].keys() & per_run[b].keys()
                if per_run[a][k] in ("violation", "no violation") and per_run[b][k] in ("violation", "no violation")]
        flips = [k for k in both if per_run[a][k] != per_run[b][k]]
        da, db = va & set(both), vb & set(both)
        pairs.append({"a": a, "b": b, "overlap": len(va & vb) / len(va | vb) if va | vb else 1.0,
                      "overlap_decided_in_both": len(da & db) / len(da | db) if da | db else 1.0,
                      "decided_in_both": len(both), "flips": len(flips), "flipped": [list(map(str, k)) for k in flips],
                      "violation_vs_undecided": [[str(x) for x in k] + [per_run[a].get(k, "-"), per_run[b].get(k, "-")]
                                                 for k in sorted(va ^ vb, key=str)]})
    return {"runs": rows, "pairs": pairs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--db", type=Path, default=Path("/tmp/verdicts.duckdb"))
    ap.add_argument("--reuse", action="store_true", help="analyse the runs already in --db")
    ap.add_argument("--tag", default="quick")
    ap.add_argument("--first-seed", type=int, default=100,
                    help="seed of the first run (+1 per run); runs added to a database need new seeds")
    args, extra = ap.parse_known_args()
    timing = [] if args.reuse else measure(args.db, args.runs, args.first_seed, extra)
    res = analyse(args.db)
    res["timing"] = timing
    for t, r in zip(timing, res["runs"][-len(timing):] if timing else [], strict=True):
        t["parts"] = parts(args.db, str(r["run_id"]), t["started_epoch"], t["wall_s"])
    out = HERE / f"results_{args.tag}.json"
    if timing or not out.exists():
        out.write_text(json.dumps(res, indent=1) + "\n")
    ov = [p["overlap"] for p in res["pairs"]]
    od = [p["overlap_decided_in_both"] for p in res["pairs"]]
    fl = [p["flips"] / p["decided_in_both"] for p in res["pairs"] if p["decided_in_both"]]
    und = [(r["undecided"] + r["untested"]) / r["comparisons"] for r in res["runs"]]
    print(f"{len(res['runs'])} runs, {len(res['pairs'])} pairs")
    if not ov:
        ov = od = [math.nan]
    if not fl:
        fl = [math.nan]
    print(f"violation-set overlap: mean {sum(ov) / len(ov):.1%}, min {min(ov):.1%}, max {max(ov):.1%}")
    print(f"  among comparisons decided in both runs: mean {sum(od) / len(od):.1%}, min {min(od):.1%}")
    print(f"decided verdicts flipping: mean {sum(fl) / len(fl):.2%}, max {max(fl):.2%}")
    print(f"undecided or untested: {min(und):.1%}-{max(und):.1%} of comparisons per run")
    for r in res["runs"]:
        print(f"  {r['run_id']}: {r['violations']} violations, {r['no_violation']} no violation, "
              f"{r['undecided']} undecided, {r['untested']} untested of {r['comparisons']}; "
              f"decided at look {r['decided_at_look']}")
    for t in timing:
        print(f"  run {t['run']}: {t['wall_s']} s from {t['started_utc']} UTC (load average {t['loadavg_before']} "
              f"before, {t['loadavg_after']} after): {t['parts']}")


if __name__ == "__main__":
    main()
