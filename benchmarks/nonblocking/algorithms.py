"""The libraries' own algorithms of the nonblocking form against the library's own choice:
`colltune check --preset nonblocking` restricted to `default#nonblocking` and every
`lib:<coll>:<alg>#nonblocking` of colltune.mpi.algorithms.NONBLOCKING_ALGORITHMS (check's kind
"library": is the library's choice for MPI_I<coll> slower than one of its own algorithms?).

    .venv/bin/python benchmarks/nonblocking/algorithms.py openmpi 4    (from the repository root)
    .venv/bin/python benchmarks/nonblocking/algorithms.py mpich 2

Writes benchmarks/nonblocking/algorithms-<library>-<ranks>.duckdb and its report (not
committed) and algorithms_<library>_<ranks>.json (committed): the load before and after, the
wall time, every library verdict with its slowdown (default#nonblocking / algorithm), and the
variants skipped with their reasons.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from colltune.mpi.algorithms import NONBLOCKING_ALGORITHMS

HERE = Path(__file__).parent
# the six collectives libnbc has a variable for; MPICH's other rows have one too, but six keep the
# run near a minute on two cores
COLLECTIVES = ("allgather", "allreduce", "bcast", "exscan", "reduce", "scan")


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def summary(db: Path) -> dict[str, object]:
    con = duckdb.connect(str(db), read_only=True)
    run_id = con.execute("select run_id from runs order by created desc limit 1").fetchone()[0]
    v = con.execute("select * from verdicts where run_id = ? and kind = 'library'", [run_id]).df()
    skipped = con.execute("select variant, skip_reason, count(*) from jobs where run_id = ? and "
                          "stop_reason = 'skipped' group by 1, 2 order by 1", [run_id]).fetchall()
    rows = [{"collective": r.collective, "msg_bytes": int(r.msg_bytes), "algorithm": r.variant.split(":")[2],
             "slowdown": round(float(r.slowdown), 3), "verdict": r.verdict,
             "within_barrier": bool(r.barrier_warning)}
            for r in v.sort_values(["collective", "msg_bytes", "variant"]).itertuples()]
    counts = {str(k): int(n) for k, n in v["verdict"].value_counts().items()}
    return {"run_id": run_id, "verdicts": counts, "library": rows,
            "skipped": [{"variant": v, "reason": r, "jobs": int(n)} for v, r, n in skipped]}


def main(lib: str, ranks: int) -> None:
    variants = ["default#nonblocking", *(f"lib:{c}:{a}#nonblocking" for c in COLLECTIVES
                                         for a in NONBLOCKING_ALGORITHMS[lib].get(c, ()))]
    db = HERE / f"algorithms-{lib}-{ranks}.duckdb"
    before, start = loadavg(), time.time()
    proc = subprocess.run([".venv/bin/colltune", "check", "--preset", "nonblocking", "--mpi", lib, "-n", str(ranks),
                           "-c", ",".join(COLLECTIVES), "--variants", ",".join(variants),
                           "--db", str(db), "--out", str(HERE / f"report-algorithms-{lib}-{ranks}")], check=False)
    if proc.returncode not in (0, 1, 3):   # violations (1) and undecided points (3) are results
        sys.exit(proc.returncode)
    result = {"command": f".venv/bin/python benchmarks/nonblocking/algorithms.py {lib} {ranks}",
              "load_before": before, "load_after": loadavg(), "wall_s": round(time.time() - start, 1),
              **summary(db)}
    (HERE / f"algorithms_{lib}_{ranks}.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
