"""Does a call's time depend on the variants interleaved with it? (issue 36)

    python benchmarks/reproducibility/company.py --db /tmp/company.duckdb --blocks 4 --launches 4

MPI_Allgather vs its Alltoall mock-up at 1 KiB, 4 ranks, the quick check's stopping rule
(<= 40 repetitions, 0.1 s per job, RSE 2.5%, 2 warm-up), in three kinds of launches, measured
in alternating blocks so that the machine's load falls on all three alike:

* full: a quick check's first launch (every job of the preset, every variant);
* job: only the Allgather 1 KiB job, all six variants (what an adaptive round measures since
  issue 36);
* pair: only the default and the Alltoall mock-up (what a round measured before).

Prints, per kind, the launches, the mean per-launch ratio default/mock-up, its sd and standard
error. Records /proc/loadavg before and after.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

COLLTUNE = str(Path(sys.executable).parent / "colltune")
STOP = ["--stop", "rse", "--min-reps", "10", "--max-reps", "40", "--warmup", "2", "--time-budget", "0.1", "-n", "4"]
JOB = ["-c", "allgather", "-s", "1024", "--no-barrier"]
KINDS = {
    "full": ["--preset", "quick"],
    "job": [*JOB, "--variants", "default,allgather_as_alltoall,allgather_as_gather_bcast,allgather_as_allreduce,"
            "allgather_as_allgatherv,default#aa"],
    "pair": [*JOB, "--variants", "default,allgather_as_alltoall"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=Path("/tmp/colltune-company.duckdb"))
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--launches", type=int, default=4, help="launches per kind and block")
    ap.add_argument("--reuse", action="store_true", help="analyse --db only")
    args = ap.parse_args()
    if not args.reuse:
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, loadavg {Path('/proc/loadavg').read_text().strip()}")
        for block in range(args.blocks):
            for i, (kind, opts) in enumerate(KINDS.items()):
                subprocess.run([COLLTUNE, "bench", *opts, *STOP, "-R", str(args.launches), "--db", str(args.db),
                                "--seed", str(100 * block + i + 1), "--quiet"], check=True, capture_output=True)
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, loadavg {Path('/proc/loadavg').read_text().strip()}")
    with duckdb.connect(str(args.db), read_only=True) as con:
        m = con.execute("SELECT run_id, launch_idx, variant, median(runtime_s) AS med FROM measurements "
                        "WHERE NOT warmup AND valid AND collective = 'allgather' AND msg_bytes = 1024 "
                        "GROUP BY ALL").fetchdf()
        jobs = dict(con.execute("SELECT run_id, count(DISTINCT collective || msg_bytes) FROM jobs GROUP BY 1")
                    .fetchall())
    variants = m.groupby("run_id")["variant"].nunique()
    kind = {r: "full" if jobs[r] > 1 else ("job" if variants[r] > 2 else "pair") for r in variants.index}
    wide = m.pivot_table(index=["run_id", "launch_idx"], columns="variant", values="med")
    d = np.log(wide["default"] / wide["allgather_as_alltoall"]).rename("d").reset_index()
    d["kind"] = d["run_id"].map(kind)
    g = d.groupby("kind")["d"]
    print(pd.DataFrame({"launches": g.size(), "ratio": np.exp(g.mean()), "sd": g.std(),
                        "se": g.std() / np.sqrt(g.size())}).round(3).to_string())


if __name__ == "__main__":
    main()
