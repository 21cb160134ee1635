#!/usr/bin/env python3
"""Per-call cost of the profiling mode, measured inside one process (resolves what wall time of
whole application runs cannot on a shared machine).

benchmarks/passthrough/allreduce_loop.c alternates blocks of MPI_Allreduce (the interposer's
wrapper) and PMPI_Allreduce (the library); with COLLTUNE_PROFILE_RUN set, the difference per call
is the profiling mode's cost including its sampled barriers. Built against Debian's Open MPI
(the one hpcc and lammps use). Prints the median over blocks; run.py's applications' call counts
times this cost, over their wall time, bound the overhead from below the timing noise.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MPICC = "/usr/bin/mpicc.openmpi"


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"),
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "allreduce_loop"
        subprocess.run([MPICC, "-O2", str(REPO / "benchmarks/passthrough/allreduce_loop.c"), "-o", str(exe)],
                       check=True)
        out = {}
        prof = ["-x", f"COLLTUNE_PROFILE_RUN={tmp}/prof"]
        for label, extra in (("off", []), ("profiling", prof),
                             ("profiling, sample 1/128", prof + ["-x", "COLLTUNE_PROFILE_RUN_SAMPLE=128"]),
                             ("profiling, no sampling", prof + ["-x", "COLLTUNE_PROFILE_RUN_SAMPLE=0"])):
            dry = subprocess.run([str(REPO / ".venv/bin/colltune"), "run", "--mpi", MPICC, "--dry-run", "--",
                                  "/usr/bin/mpiexec.openmpi", "-n", "2", "--bind-to", "core", str(exe), "2000", "60"],
                                 env=env, capture_output=True, text=True, check=True).stdout.split()
            res = subprocess.run(dry[:1] + extra + dry[1:], env=env, capture_output=True, text=True, check=True)
            diffs = [float(f[3]) - float(f[5]) for f in (line.split() for line in res.stdout.splitlines())
                     if len(f) == 6 and f[0] == "block"]
            out[label] = {"median_ns": statistics.median(diffs), "blocks": len(diffs)}
            print(f"{label}: MPI - PMPI per 8-byte Allreduce, median over {len(diffs)} blocks: "
                  f"{out[label]['median_ns']:+.1f} ns", flush=True)
    (HERE / "percall.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
