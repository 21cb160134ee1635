#!/usr/bin/env python3
"""The hand-fused confirmation of advise's reduce_bcast pattern on ExaML (issue 23): is the saving
advise predicts for "MPI_Reduce then MPI_Bcast of its result -> one MPI_Allreduce" what the
application gains when the pairs are fused?

    bash benchmarks/advise/install.sh
    .venv/bin/python benchmarks/advise/fuse.py OUT --runs 9            # plain vs fused, alternating
    .venv/bin/python benchmarks/advise/fuse.py OUT --advise             # advise's prediction (--measure)

Fused: fuse_shim.c (this folder, built here with Debian's mpicc.openmpi) preloaded alone serves
each MPI_Reduce that an MPI_Bcast of its result directly follows as one MPI_Allreduce (the root
checks that it broadcasts that result unchanged, else the run aborts). Per round one plain and one
fused run in a fresh random order (seeded); the likelihood must be identical and every MPI_Reduce
fused. Reported: medians with distribution-free ~95% intervals, the paired per-round difference
(plain - fused) and ratio with theirs, the load before each run. `--advise` runs `colltune advise
--measure` on ExaML with a fresh database (the application's points and the fused call measured
on this machine) and records the predicted saving per pair and in total.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import overhead  # noqa: E402

from overhead import apps  # noqa: E402

MPICC = "/usr/bin/mpicc.openmpi"


def build_shim(out: Path) -> Path:
    so = out / "libfuse.so"
    subprocess.run([MPICC, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", str(HERE / "fuse_shim.c"), "-o", str(so)],
                   check=True)
    return so


def timing(out: Path, runs: int, seed: int) -> dict:
    app, prepare = overhead.examl(out)
    shim = build_shim(out)
    rng = random.Random(seed)
    rows = []
    for r in range(runs):
        order = ["plain", "fused"]
        rng.shuffle(order)
        for mode in order:
            env = {} if mode == "plain" else {"LD_PRELOAD": str(shim), "COLLTUNE_FUSE_REPORT": "1"}
            res = overhead.run_once(app, prepare, env)
            fused = [line for line in res["stderr"] if line.startswith("fuse_shim:")]
            rows.append({"round": r, "mode": mode, **res, "fuse_report": fused})
            print(f"  round {r} {mode:5s} {res['wall_s']:7.3f} s  load {res['load'][0]:.2f}  result {res['result']!r}  "
                  f"{' / '.join(fused)}", flush=True)
    plain = {x["round"]: x for x in rows if x["mode"] == "plain"}
    fused = {x["round"]: x for x in rows if x["mode"] == "fused"}
    diff = [plain[r]["wall_s"] - fused[r]["wall_s"] for r in plain]
    ratio = [fused[r]["wall_s"] / plain[r]["wall_s"] for r in plain]
    summary = {"runs": runs}
    for name, xs in (("plain_s", [x["wall_s"] for x in plain.values()]),
                     ("fused_s", [x["wall_s"] for x in fused.values()]),
                     ("saving_s", diff), ("fused_over_plain", ratio)):
        med, lo, hi = apps.median_interval(xs)
        summary[name] = {"median": med, "lo": lo, "hi": hi}
    summary["load_median"] = sorted(x["load"][0] for x in rows)[len(rows) // 2]
    summary["results_identical"] = len({x["result"] for x in rows}) == 1
    return {"app": "examl", "mpi": app.lib.version, "runs": rows, "summary": summary}


def prediction(out: Path) -> dict:
    """`colltune advise --measure` on ExaML: its reduce_bcast patterns and their predicted saving."""
    app, prepare = overhead.examl(out)
    prepare()
    name = f"advise-{os.getpid()}"
    argv = apps.launch_argv(app, {}, name)
    db, adv = out / "fuse-advise.duckdb", out / "fuse-advise"
    for p in (db, adv):
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
    colltune = str(Path(sys.executable).with_name("colltune"))
    proc = subprocess.run([colltune, "advise", "--mpi", MPICC, "--db", str(db), "--out", str(adv), "--measure",
                           "--", *argv], cwd=app.work, capture_output=True, text=True, timeout=3600)
    print(proc.stdout[-6000:], proc.stderr[-2000:], flush=True)
    if proc.returncode != 0:
        raise SystemExit("colltune advise failed")
    report = json.loads((adv / "advise.json").read_text())
    wall = report["where"]["wall_s"]
    pats = [{k: p.get(k) for k in ("name", "first", "second", "pairs", "mean_bytes", "saving_per_pair_s", "saving_s",
                                    "basis")} for p in report["patterns"] if p["name"] == "reduce_bcast"]
    return {"profiled_wall_s": wall, "patterns": pats,
            "predicted_saving_s": sum(p["saving_s"] or 0.0 for p in pats),
            "stdout": proc.stdout.splitlines()[:60]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--advise", action="store_true", help="advise's prediction instead of the timing")
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.advise:
        res = prediction(out)
        (out / "fuse-prediction-examl.json").write_text(json.dumps(res, indent=1) + "\n")
        print(json.dumps({k: v for k, v in res.items() if k != "stdout"}, indent=1))
        return
    res = timing(out, args.runs, args.seed)
    (out / "fuse-timing-examl.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res["summary"], indent=1))


if __name__ == "__main__":
    main()
