#!/usr/bin/env python3
"""Instructions per call of the wrappers issue 33 added (callgrind, the method of run.py): the
watched nonblocking (MPI_Iallreduce), persistent (MPI_Start of an MPI_Allreduce_init request) and
neighborhood (MPI_Neighbor_allgather) functions and MPI_Wait, with nothing set (pass-through)
and while counting (COLLTUNE_VERBOSE=1: counted, requests followed to their completion).

    .venv/bin/python benchmarks/passthrough/forms.py [--mpi openmpi|mpich] [--calls 20000]

Rank 0 under valgrind, rank 1 native; exclusive instructions executed in libcolltune.so per loop
iteration of forms_loop.c (each function once), by function, plus the MPI queries the counting
path makes (PMPI_Type_size, PMPI_Comm_size).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from run import callgrind

from colltune.mpi import build
from colltune.mpi import libraries as mpi

HERE = Path(__file__).resolve().parent
CASES = {"pass-through (nothing set)": {}, "counting (COLLTUNE_VERBOSE=1)": {"COLLTUNE_VERBOSE": "1"}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--calls", type=int, default=20_000)
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    with tempfile.TemporaryDirectory() as tmp:
        exe = build.compile_program(lib, [HERE / "forms_loop.c"], Path(tmp) / "forms_loop")
        print(f"{lib.name} ({lib.short_version}): instructions per iteration in libcolltune.so "
              f"(rank 0, exclusive, {args.calls} iterations)")
        for label, extra in CASES.items():
            costs = callgrind(lib, art, exe, args.calls, extra)
            print(f"  {label}: {sum(costs.values()):.1f} in all")
            for func, ir in sorted(costs.items(), key=lambda kv: -kv[1]):
                print(f"    {ir:8.2f}  {func}")


if __name__ == "__main__":
    main()
