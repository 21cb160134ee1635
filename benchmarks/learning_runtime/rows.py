#!/usr/bin/env python3
"""Per-call cost of the wrappers of every collective the decision point serves, the rows issue 33
added next to the ten first ones: instructions executed in libcolltune.so per call, pass-through
(preloaded, nothing set) and learning mode on a table whose cells never explore (`unlisted
exploit`: the short path of learn.c, member `default`), callgrind on rank 0 of a 2-rank loop
(collective_loop.c), collecting only inside the collective.

    .venv/bin/python benchmarks/learning_runtime/rows.py [--mpi openmpi|mpich] [--collectives a,b]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CALLS, callgrind  # noqa: E402  (this directory's measuring helper)

from colltune.mpi import build  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

HERE = Path(__file__).resolve().parent
# the ten first rows' references, then the rows of issue 33 (blocking, served)
COLLECTIVES = ("allreduce", "bcast", "reduce", "allgather",
               "barrier", "allgatherv", "gatherv", "scatterv", "alltoallv", "alltoallw", "exscan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None, help="MPI library (colltune mpi list); default: the embedded one")
    ap.add_argument("--collectives", default=",".join(COLLECTIVES), help="comma-separated (default: %(default)s)")
    ap.add_argument("--split", action="store_true", help="also print where each row's instructions run")
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        exe = build.compile_program(lib, [HERE / "collective_loop.c"], tmp / "collective_loop")
        table = tmp / "fixed.select"
        table.write_text("colltune-select 1\nunlisted exploit\nend\n")
        # No warm-up: MPICH's (warmup.c) counts only Barrier, Bcast, Reduce and Allreduce calls,
        # so a loop of another collective would measure the warm-up's path, not the decision's.
        modes = {"pass-through": {},
                 "learning (unlisted exploit)": {"COLLTUNE_SELECT": str(table), "COLLTUNE_LIBRARY_WARMUP": "0"}}
        print(f"instructions in libcolltune.so per call, {lib.name}, rank 0 of 2, {CALLS} calls, one int")
        print(f"{'collective':<12}" + "".join(f"{m:>30}" for m in modes))
        for coll in args.collectives.split(","):
            function = "MPI_" + coll.capitalize()
            row, splits = [], []
            for extra in modes.values():
                costs = callgrind(lib, art, exe, extra, (coll, str(CALLS)), function)
                per_call = {k: v for k, v in costs.items() if not k.startswith("(once)")}
                row.append(sum(per_call.values()))
                splits.append(", ".join(f"{k} {v:.0f}" for k, v in sorted(per_call.items(), key=lambda kv: -kv[1])))
            print(f"{coll:<12}" + "".join(f"{v:>30.1f}" for v in row), flush=True)
            for mode, split in zip(modes, splits) if args.split else ():
                print(f"    {mode}: {split}", flush=True)


if __name__ == "__main__":
    main()
