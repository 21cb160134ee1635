"""The front end's own cost in a quick check, in CPU seconds (issue 36: <= 10 s a check).

    python benchmarks/reproducibility/frontend_cost.py /tmp/repro-s3.duckdb [--base /tmp/base/src] [--repeat 5] [--runs 3]

CPU time, not wall time, so that figures taken on the shared machine under other helpers' load
still compare (the load is printed too): per repeat, in a fresh interpreter each, (1) importing
`colltune.commands.check` (what `colltune check` imports before its first launch), (2) judging
each stored complete run of DB as a check does: the looks that choose a round's jobs
(`details=False`, on the launches up to that look) and the last judgement (`details=True`), and
whether scipy.stats got imported on the way. With `--base SRC` the same is measured, interleaved
repeat by repeat, on another source tree (e.g. `git archive main src | tar -x -C /tmp/base`),
so the two see the same load. Measures nothing with MPI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
t0 = time.process_time()
import colltune.commands.check  # noqa: F401
t_import = time.process_time() - t0
from colltune.verify import check
db = sys.argv[1]
import duckdb
with duckdb.connect(db, read_only=True) as con:
    ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created").fetchall()]
ids = ids[-int(sys.argv[2]):]
looks, last = [], []
for run_id in ids:
    run = check.load_run(db, run_id)
    rounds = sorted(set(run.rounds.values()) | {0})
    for k in rounds[:-1]:
        keep = {i for i, r in run.rounds.items() if r <= k} | {i for i in run.measurements["launch_idx"].unique()
                                                              if int(i) not in run.rounds}
        part = check.RunData(**{**run.__dict__, "measurements": run.measurements[run.measurements["launch_idx"].isin(keep)]})
        t0 = time.process_time()
        check.judge(part, details=False)
        looks.append(time.process_time() - t0)
    t0 = time.process_time()
    check.judge(run, details=True)
    last.append(time.process_time() - t0)
print(json.dumps({"import_s": t_import, "look_s": looks, "last_s": last, "runs": len(ids),
                  "scipy_stats": "scipy.stats" in sys.modules}))
"""


def measure(db: Path, runs: int, src: Path | None) -> dict[str, object]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(db), str(runs)], env=env, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise SystemExit(f"judging under {src or 'this tree'} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--base", type=Path, help="another source tree (its src/ directory) to measure interleaved")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3, help="judge the last N complete runs of DB")
    args = ap.parse_args()
    trees = {"this tree": None, **({"base": args.base} if args.base else {})}
    results: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
    print("loadavg before:", Path("/proc/loadavg").read_text().strip())
    for _ in range(args.repeat):
        for name, src in trees.items():
            results[name].append(measure(args.db, args.runs, src))
    print("loadavg after: ", Path("/proc/loadavg").read_text().strip())
    for name, rs in results.items():
        imports = [float(r["import_s"]) for r in rs]
        look = [statistics.median(r["look_s"]) for r in rs if r["look_s"]]  # type: ignore[arg-type]
        last = [statistics.median(r["last_s"]) for r in rs]  # type: ignore[arg-type]
        print(f"{name}: {rs[0]['runs']} runs, scipy.stats imported: {rs[0]['scipy_stats']}; CPU s, median of "
              f"{len(rs)} repeats: import {statistics.median(imports):.3f}, a round look "
              f"{statistics.median(look) if look else float('nan'):.3f}, the last judgement {statistics.median(last):.3f} "
              f"(a quick check: import + 2 round looks + the last = "
              f"{statistics.median(imports) + 2 * (statistics.median(look) if look else 0) + statistics.median(last):.2f})")


if __name__ == "__main__":
    main()
