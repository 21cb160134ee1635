#!/usr/bin/env python3
"""Per-call cost of the learning mode when every call explores (`colltune run --learn -`, budgets
10^9): instructions in libcolltune.so per 8-byte MPI_Allreduce on rank 0 of 2 (callgrind, run.py's
reading), the members' own work included, and the part of it that asks the proof whether the
drawn member may serve the call (runtime/proof.c, core/proof.c).

    .venv/bin/python benchmarks/learning_runtime/explore.py [--mpi openmpi] [--proof FILE]

`--proof`: the proof file the runtime reads (COLLTUNE_PROOF); default the build's own, which
`colltune selftest` writes. The uniform draw over MPI_Allreduce's whole portfolio is seeded
alike in every run (COLLTUNE_SELECT_SEED), so two builds draw the same members.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CALLS, LOOP, callgrind  # noqa: E402  (this directory's measuring helper)

from colltune.mpi import build  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

PROOF_FUNCTIONS = ("ct_proven", "ct_proof_check", "ct_proof_passes", "ct_proof_meets_need",
                   "ct_proof_need_fill", "ct_proof_required",
                   "ct_proof_class")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None, help="MPI library (colltune mpi list); default: the embedded one")
    ap.add_argument("--proof", type=Path, default=None, help="proof file (default: the build's)")
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    env = {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_BUDGET": "1000000000",
           "COLLTUNE_SELECT_CELL_BUDGET": "1000000000", "COLLTUNE_SELECT_SEED": "1",
           "COLLTUNE_LIBRARY_WARMUP": "0"}
    if args.proof is not None:
        env["COLLTUNE_PROOF"] = str(args.proof.resolve())
    with tempfile.TemporaryDirectory() as t:
        exe = build.compile_program(lib, [LOOP], Path(t) / "allreduce_loop")
        costs = callgrind(lib, art, exe, env)
    per_call = {k: v for k, v in costs.items() if not k.startswith("(once)")}
    proof = sum(v for k, v in per_call.items() if k in PROOF_FUNCTIONS)
    print(f"instructions per call, {lib.name}, every call exploring, rank 0 of 2, {CALLS} calls, 8 bytes")
    for name, value in sorted(per_call.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {value:10.1f}  {name}")
    print(f"  {sum(per_call.values()):10.1f}  in all (libcolltune.so and the queries it makes)")
    print(f"  {proof:10.1f}  of which the proof's answer ({', '.join(PROOF_FUNCTIONS)})")


if __name__ == "__main__":
    main()
