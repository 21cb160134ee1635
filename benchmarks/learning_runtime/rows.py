#!/usr/bin/env python3
"""Per-call cost of the wrappers of every collective the decision point serves, the rows issue 33
added next to the ten first ones: instructions executed in libcolltune.so per call, callgrind on
rank 0 of a 2-rank loop (collective_loop.c), collecting only inside the collective (a
nonblocking row: inside MPI_I<coll> and its MPI_Wait; a persistent row: MPI_Start and MPI_Wait,
the request made once before the loop). Three modes:

- pass-through: preloaded, nothing set;
- learning, exploit table: cells that never explore (`unlisted exploit`: the short path of
  learn.c, member `default`), and a portfolio listed for each started row's collective (a started
  form is decided only when the table lists it or explores, and some member of it is proven);
- learning, uniform table (`-`) whose budget is spent (`COLLTUNE_SELECT_BUDGET=0`): issue 33's
  last point, it must cost what the exploit table costs.

The learning modes read a proof of one library algorithm per started row's collective and form
(`proof.prove(..., only=...)`, one launch each; `--proof PATH` keeps it for the next run): with
no proven member of a form, the learning mode leaves that form's calls to the library
unwatched. The blocking rows serve `default` in both tables, which needs no proof.

A started row named `<row>@fresh` (`iallreduce@fresh`) runs without the loop's first blocking
MPI_Barrier on each communicator: its calls run on a communicator that has no learning state,
which the library serves (learn.c keeps "no state" per thread in its one-entry cache).

    .venv/bin/python benchmarks/learning_runtime/rows.py [--mpi openmpi|mpich] [--collectives a,b]
        [--calls N] [--proof PATH] [--split]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CALLS, callgrind  # noqa: E402  (this directory's measuring helper)

from colltune.measure import proof as proofs  # noqa: E402
from colltune.mpi import algorithms, build  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

HERE = Path(__file__).resolve().parent
# the ten first rows' references, then the rows of issue 33: blocking, neighborhood (on a ring),
# nonblocking (+ MPI_Wait), persistent (MPI_Start + MPI_Wait)
COLLECTIVES = ("allreduce", "bcast", "reduce", "allgather", "gather", "scatter", "alltoall",
               "exscan", "barrier", "allgatherv", "gatherv", "scatterv", "alltoallv", "alltoallw",
               "neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
               "neighbor_alltoallw",
               "iallreduce", "ibcast", "iallgather", "iallgatherv", "ialltoallv", "ibarrier",
               "ineighbor_allgather",
               "allreduce_init", "bcast_init", "allgather_init", "allgatherv_init", "alltoallv_init")
# Each new row's reference among the ten first collectives: its own blocking form, the regular
# form of a v/w or neighborhood collective, MPI_Allreduce for Barrier and Exscan.
REFERENCE = {"allgatherv": "allgather", "gatherv": "gather", "scatterv": "scatter",
             "alltoallv": "alltoall", "alltoallw": "alltoall", "barrier": "allreduce",
             "exscan": "allreduce", "neighbor_allgather": "allgather",
             "neighbor_allgatherv": "allgather", "neighbor_alltoall": "alltoall",
             "neighbor_alltoallv": "alltoall", "neighbor_alltoallw": "alltoall"}
# The decision path's own queries outside libcolltune. Not clock_gettime, which run.py counts
# for its traced rows: no row here traces, and the library's progress engine calls it inside
# some collectives (1 per MPI_Allgather call on Open MPI 5.0.11, in pass-through too).
QUERY = re.compile(r"^P?MPI_(Comm_size|Comm_rank|Comm_test_inter|Comm_get_attr|Op_commutative|Type_\w+)$")


def loop_args(row: str, calls: int) -> tuple[str, ...]:
    """collective_loop's arguments for a row (`@fresh`: without the first blocking calls)."""
    name, _, fresh = row.partition("@")
    return (name, str(calls), *(("fresh",) if fresh == "fresh" else ()))


def form_of(row: str) -> tuple[str, str]:
    """(collective, form) of a row name."""
    row = row.partition("@")[0]
    if row.endswith("_init"):
        return row[:-5], "persistent"
    if row.startswith("i"):   # no blocking collective's name starts with i
        return row[1:], "nonblocking"
    return row, "blocking"


def functions(row: str) -> tuple[str, ...]:
    """The functions collected per call of the row."""
    coll, form = form_of(row)
    row = row.partition("@")[0]
    if form == "persistent":
        return ("MPI_Start", "MPI_Wait")
    if form == "nonblocking":
        return ("MPI_" + row.capitalize(), "MPI_Wait")
    return ("MPI_" + coll.capitalize(),)


def started_members(lib: mpi.MpiLibrary, rows: list[str]) -> list[str]:
    """One library algorithm (the first listed) per started row's collective and form."""
    out = []
    for row in rows:
        coll, form = form_of(row)
        algs = algorithms.started_algorithms(lib.family, coll, form) if form != "blocking" else ()
        if algs and f"lib:{coll}:{algs[0]}#{form}" not in out:
            out.append(f"lib:{coll}:{algs[0]}#{form}")
    return out


def exploit_table(members: list[str]) -> str:
    """`unlisted exploit`, and each member's portfolio listed with one exploit cell of `default`
    (any cell: an unlisted cell of a listed portfolio exploits `default` too)."""
    lines = ["colltune-select 1", "unlisted exploit"]
    for m in members:
        coll, form = m.split(":")[1], m.split("#")[1]
        lines += [f"collective {coll}#{form}", f"  members default {m}", "  cell 3 0 1 exploit 1 0"]
    return "\n".join(lines + ["end", ""])


def proof_of(lib: mpi.MpiLibrary, members: list[str], path: Path | None, tmp: Path) -> Path:
    """A proof of `members` (kept at `path` if given and reused while it names them all)."""
    if path is not None and path.exists() and set(members) <= set(proofs.read_passed(path)):
        return path
    out = path or tmp / "proof.txt"
    out.write_text(proofs.render(proofs.prove(lib, only=members)) if members else proofs.HEADER + "\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None, help="MPI library (colltune mpi list); default: the embedded one")
    ap.add_argument("--collectives", default=",".join(COLLECTIVES), help="comma-separated (default: %(default)s)")
    ap.add_argument("--calls", type=int, default=CALLS, help="calls per run (default: %(default)s)")
    ap.add_argument("--proof", type=Path, default=None,
                    help="the started members' proof: reused if it names them, else made and kept there")
    ap.add_argument("--split", action="store_true", help="also print where each row's instructions run")
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    rows = args.collectives.split(",")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        exe = build.compile_program(lib, [HERE / "collective_loop.c"], tmp / "collective_loop")
        members = started_members(lib, rows)
        proof = proof_of(lib, members, args.proof, tmp)
        table = tmp / "exploit.select"
        table.write_text(exploit_table(members))
        # No warm-up: MPICH's (warmup.c) counts only Barrier, Bcast, Reduce and Allreduce calls,
        # so a loop of another collective would measure the warm-up's path, not the decision's.
        learning = {"COLLTUNE_LIBRARY_WARMUP": "0", "COLLTUNE_PROOF": str(proof)}
        modes = {"pass-through": {},
                 "learning, exploit table": {"COLLTUNE_SELECT": str(table), **learning},
                 "learning, uniform spent": {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_BUDGET": "0", **learning}}
        print(f"instructions in libcolltune.so per call, {lib.name}, rank 0 of 2, {args.calls} calls, one int; "
              f"started members proven: {', '.join(members) or '-'}")
        print(f"{'collective':<22}" + "".join(f"{m:>26}" for m in modes))
        table: dict[str, list[float]] = {}
        for row in rows:
            values, splits = [], []
            for extra in modes.values():
                try:
                    costs = callgrind(lib, art, exe, extra, loop_args(row, args.calls), functions(row), QUERY,
                                      args.calls)
                except subprocess.CalledProcessError as exc:   # say which, measure the others
                    print(f"{row}: the run failed ({exc.returncode}): {exc.stderr.strip()[-300:]}", flush=True)
                    break
                per_call = {k: v for k, v in costs.items() if not k.startswith("(once)")}
                values.append(sum(per_call.values()))
                splits.append(", ".join(f"{k} {v:.0f}" for k, v in sorted(per_call.items(), key=lambda kv: -kv[1])))
            if len(values) < len(modes):
                continue
            table[row] = values
            print(f"{row:<22}" + "".join(f"{v:>26.1f}" for v in values), flush=True)
            for mode, split in zip(modes, splits) if args.split else ():
                print(f"    {mode}: {split}", flush=True)
        print("\nagainst the reference (the blocking row of the same or the regular collective): "
              "learning, exploit table; and the spent uniform table against the exploit table")
        for row, (passthrough, exploit, spent) in table.items():
            base = form_of(row)[0]
            ref = REFERENCE.get(base, base)
            vs = (f"{100 * (exploit / table[ref][1] - 1):+.1f}% vs {ref}" if ref in table and ref != row
                  else "(reference)" if ref == row else "-")
            # a started row against its own blocking row too (issue 33's bar for those forms)
            if base != row and base != ref and base in table:
                vs += f", {100 * (exploit / table[base][1] - 1):+.1f}% vs {base}"
            print(f"  {row:<22} pass-through {passthrough:4.1f}  learning {vs:<40} "
                  f"uniform spent {100 * (spent / exploit - 1):+.1f}%")


if __name__ == "__main__":
    main()
