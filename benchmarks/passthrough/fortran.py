#!/usr/bin/env python3
"""Pass-through cost of the Fortran entries (issue 33: < 10 instructions a call), on Debian's
Open MPI 4.1.4, the one library here with Fortran bindings (make setup-fortran).

    .venv/bin/python benchmarks/passthrough/fortran.py [--calls 20000] [--build DIR]

fortran_loop.f90 (`use mpi`) and fortran_loop_f08.f90 (`use mpi_f08`, ierror omitted) run one
rank (a singleton: no polling, so the count is exact) under callgrind, at 1,000 and 1,000 +
CALLS iterations, without and with LD_PRELOAD=libcolltune.so (nothing set). Instructions per
iteration = the difference of the two runs' totals / CALLS; an iteration makes four calls
(MPI_Allreduce, MPI_Alltoallv, MPI_Iallreduce, MPI_Wait). The preload's cost is the difference
between the two columns: everything the process executes, the library's own binding included.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from colltune.mpi import build
from colltune.mpi import libraries as mpi

HERE = Path(__file__).resolve().parent
MPICC = Path("/usr/bin/mpicc.openmpi")
MPIFORT = Path("/usr/bin/mpifort.openmpi")
BASE = 1000
CALLS_PER_ITERATION = 4


def total(exe: Path, n: int, preload: Path | None, work: Path) -> int:
    out = work / f"cg.{exe.name}.{n}.{preload is not None}"
    env = {**os.environ, "OMPI_MCA_btl": "self"}
    env.pop("LD_PRELOAD", None)
    if preload is not None:
        env["LD_PRELOAD"] = str(preload)
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe), str(n)],
                   env=env, check=True, capture_output=True, cwd=work)
    m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    if m is None:
        raise SystemExit(f"no total in {out}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000, help="extra iterations of the second run")
    ap.add_argument("--build", type=Path, help="a libcolltune build dir (default: colltune's cache)")
    args = ap.parse_args()
    for tool in (MPICC, MPIFORT):
        if not tool.exists():
            raise SystemExit(f"{tool} is missing: make setup-fortran (Debian's Open MPI and gfortran)")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is missing: make setup-valgrind")
    so = (args.build / "libcolltune.so" if args.build
          else Path(build.ensure_built(mpi.identify(MPICC)).libcolltune))
    print(f"libcolltune: {so}")
    print(f"| program | plain | preloaded, nothing set | preload's cost per call |")
    print("| --- | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for src in ("fortran_loop.f90", "fortran_loop_f08.f90"):
            exe = work / src.removesuffix(".f90")
            subprocess.run([str(MPIFORT), "-O1", "-J", str(work), "-o", str(exe), str(HERE / src)], check=True)
            per = {}
            for preload in (None, so):
                lo, hi = total(exe, BASE, preload, work), total(exe, BASE + args.calls, preload, work)
                per[preload is not None] = (hi - lo) / args.calls
            cost = (per[True] - per[False]) / CALLS_PER_ITERATION
            print(f"| {src} | {per[False]:.1f} | {per[True]:.1f} | {cost:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
