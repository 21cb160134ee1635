#!/usr/bin/env python3
"""Where HPCC's wall-time difference under the preload is: HPCC's own per-phase figures
(hpccoutf.txt) of plain runs, runs preloaded with libcolltune and profiling off (pass), and
profiled runs, in a fresh random order per round (seeded); per phase the median of each mode
and the median per-round ratio to plain. Same input and launch as overhead.py's HPCC (N=2000,
Debian Open MPI 4.1.4, 2 ranks).

    nice -n 5 .venv/bin/python benchmarks/advise/phases.py OUT --rounds 12
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import overhead  # noqa: E402

apps = overhead.apps
PHASES = ("HPL_time", "MPIRandomAccess_time", "MPIRandomAccess_CheckTime", "MPIRandomAccess_LCG_time",
          "MPIRandomAccess_LCG_CheckTime", "PTRANS_time", "MPIFFT_Gflops", "StarDGEMM_Gflops",
          "StarSTREAM_Triad")
MODES = ("plain", "pass", "profiled")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    app, prepare = overhead.hpcc(out)
    so = apps.after_build(overhead.debian_ompi())
    rng = random.Random(args.seed)
    runs = []
    for r in range(args.rounds):
        for mode in rng.sample(MODES, len(MODES)):
            env = ({} if mode == "plain" else {"LD_PRELOAD": str(so)} if mode == "pass"
                   else overhead.profiled_env(so, out, "phases"))
            try:
                res = overhead.run_once(app, prepare, env)
            finally:
                if "COLLTUNE_PROFILE_RUN" in env:
                    shutil.rmtree(env["COLLTUNE_PROFILE_RUN"], ignore_errors=True)
            text = (app.work / "hpccoutf.txt").read_text()
            phases = {k: float(m[1]) for k in PHASES if (m := re.search(rf"^{k}=(\S+)", text, re.M))}
            runs.append({"round": r, "mode": mode, "wall_s": res["wall_s"], "load": res["load"], **phases})
            print(f"  round {r} {mode:8s} {res['wall_s']:.3f} s", flush=True)
    summary = {}
    for k in ("wall_s", *PHASES):
        by = {m: {x["round"]: x[k] for x in runs if x["mode"] == m} for m in MODES}
        summary[k] = {**{m: statistics.median(by[m].values()) for m in MODES},
                      **{f"{m}/plain": statistics.median(by[m][r] / by["plain"][r] for r in by["plain"])
                         for m in ("pass", "profiled")}}
        s = summary[k]
        print(f"{k:30s} plain {s['plain']:.4f}  pass {s['pass']:.4f}  profiled {s['profiled']:.4f}  "
              f"paired pass/plain {s['pass/plain']:.3f}  profiled/plain {s['profiled/plain']:.3f}")
    (out / "phases-hpcc.json").write_text(json.dumps({"runs": runs, "summary": summary}, indent=1) + "\n")


if __name__ == "__main__":
    main()
