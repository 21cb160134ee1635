#!/usr/bin/env python3
"""Instructions per call of the wrappers issue 33 added (callgrind, the method of run.py): the
watched nonblocking (MPI_Iallreduce), persistent (MPI_Start of an MPI_Allreduce_init request) and
neighborhood (MPI_Neighbor_allgather) functions and MPI_Wait, with nothing set (pass-through)
and while counting (COLLTUNE_VERBOSE=1: counted, requests followed to their completion).

    .venv/bin/python benchmarks/passthrough/forms.py [--mpi openmpi|mpich] [--calls 20000] [--learning] [--case TEXT]

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
# The learning mode (`--learn -`): with the build's proof, which proves no member of the
# nonblocking form, it decides no MPI_I<coll> (their pass-through, and Wait's, unchanged); with
# NB_MEMBER proven it decides every MPI_Iallreduce (every call explores until the budget of 1000
# explored calls is spent, then takes the default), and on a tracing rank follows its request
# to the MPI_Wait that completes it (the reward).
# (per library; the labels name Open MPI's)
NB_MEMBERS = {"openmpi": "lib:allreduce:recursive_doubling#nonblocking",
              "mpich": "lib:allreduce:sched_recursive_doubling#nonblocking"}
NB_MEMBER = NB_MEMBERS["openmpi"]
LEARNING = {"learning (--learn -), no nonblocking member proven": {"COLLTUNE_SELECT": "-"},
            f"learning, {NB_MEMBER} proven": {"COLLTUNE_SELECT": "-", "COLLTUNE_PROOF": "@proof"},
            f"learning, {NB_MEMBER} proven, tracing": {"COLLTUNE_SELECT": "-", "COLLTUNE_PROOF": "@proof",
                                                       "COLLTUNE_TRACE_DIR": "@traces"}}
# The learning mode's cost per decided call once nothing is explored (budget 0: every cell picks
# without a draw, as an exploit table's do), blocking against started: forms_loop.c makes only
# MPI_Allreduce, or only MPI_Iallreduce + MPI_Wait (FORMS_LOOP_ONLY).
SPENT = {"COLLTUNE_SELECT": "-", "COLLTUNE_PROOF": "@proof", "COLLTUNE_SELECT_BUDGET": "0"}
LEARNING_SPENT = {"learning, budget spent: MPI_Allreduce only": {**SPENT, "FORMS_LOOP_ONLY": "allreduce"},
                  "learning, budget spent: MPI_Iallreduce + MPI_Wait only": {**SPENT, "FORMS_LOOP_ONLY": "iallreduce"}}
# the same through the large-count bindings, where the library declares them (MPI 4: MPICH)
LEARNING_SPENT_LARGE = {
    "learning, budget spent: MPI_Allreduce_c only": {**SPENT, "FORMS_LOOP_ONLY": "allreduce_c"},
    "learning, budget spent: MPI_Iallreduce_c + MPI_Wait only": {**SPENT, "FORMS_LOOP_ONLY": "iallreduce_c"}}
# A persistent request the learning mode decided at its MPI_Allreduce_init (P_MEMBER proven),
# started CALLS times (FORMS_LOOP_ONLY=start): MPI_Start and MPI_Wait against the same loop with
# nothing set; a tracing rank follows the request (its reward: the mean over its starts).
P_MEMBERS = {"openmpi": "lib:allreduce:recursive_doubling#persistent",
             "mpich": "lib:allreduce:sched_recursive_doubling#persistent"}
P_MEMBER = P_MEMBERS["openmpi"]
PERSISTENT_STARTS = {
    "persistent starts: MPI_Start + MPI_Wait only, nothing set": {"FORMS_LOOP_ONLY": "start"},
    f"persistent starts: MPI_Start + MPI_Wait only, learning, {P_MEMBER} proven":
        {"COLLTUNE_SELECT": "-", "COLLTUNE_PROOF": "@proof", "FORMS_LOOP_ONLY": "start"},
    f"persistent starts: MPI_Start + MPI_Wait only, learning, {P_MEMBER} proven, tracing":
        {"COLLTUNE_SELECT": "-", "COLLTUNE_PROOF": "@proof", "COLLTUNE_TRACE_DIR": "@traces",
         "FORMS_LOOP_ONLY": "start"}}
# The wrappers with arguments on the stack (10 and 11 arguments), with nothing set: their
# pass-through is an assembly stub on x86-64 (native/gen/gen_forms.py STUB_PRELUDE).
STACK = {"stack arguments: MPI_I{gatherv,scatterv,alltoallv,alltoallw} and their *_init, nothing set":
         {"FORMS_LOOP_ONLY": "stack"}}
# counted only inside the loop's calls: MPI_Init's one-off work (the proof's reading) left out
LOOP_CALLS = ("MPI_Allreduce", "MPI_Iallreduce", "MPI_Allreduce_c", "MPI_Iallreduce_c", "MPI_Wait",
              "MPI_Start", "MPI_Allreduce_init")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--learning", action="store_true",
                    help="also the learning mode's cases (proves an algorithm of MPI_Iallreduce, "
                         f"{NB_MEMBER} on Open MPI: one selftest launch)")
    ap.add_argument("--case", action="append", default=[], metavar="TEXT",
                    help="only the cases whose label contains TEXT (repeatable)")
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    with tempfile.TemporaryDirectory() as tmp:
        exe = build.compile_program(lib, [HERE / "forms_loop.c"], Path(tmp) / "forms_loop")
        print(f"{lib.name} ({lib.short_version}): instructions per iteration in libcolltune.so "
              f"(rank 0, exclusive, {args.calls} iterations)")
        cases = {**CASES, **STACK}
        if args.learning:
            from colltune.measure import proof

            proven = Path(tmp) / "proof.txt"
            proven.write_text(proof.merged(proof.ensure_proven(lib).read_text(), proof.prove(
                lib, only=[NB_MEMBERS[lib.family], P_MEMBERS[lib.family]])))
            (Path(tmp) / "traces").mkdir()
            at = {"@proof": str(proven), "@traces": str(Path(tmp) / "traces")}
            spent = {**LEARNING_SPENT, **(LEARNING_SPENT_LARGE if lib.family == "mpich" else {})}
            cases.update({label: {k: at.get(v, v) for k, v in extra.items()}
                          for label, extra in {**LEARNING, **spent, **PERSISTENT_STARTS}.items()})
        for label, extra in cases.items():
            if args.case and not any(text in label for text in args.case):
                continue
            costs = callgrind(lib, art, exe, args.calls, extra,
                              collect=LOOP_CALLS if "budget spent" in label or "persistent" in label else ())
            print(f"  {label}: {sum(costs.values()):.1f} in all")
            for func, ir in sorted(costs.items(), key=lambda kv: -kv[1]):
                print(f"    {ir:8.2f}  {func}")


if __name__ == "__main__":
    main()
