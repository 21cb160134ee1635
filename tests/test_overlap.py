"""A nonblocking collective is never made blocking (issue 33): tests/programs/ct_overlap.c starts
MPI_Ibarrier, MPI_Iallreduce, MPI_Ibcast and a persistent MPI_Allreduce_init request and lets an
MPI_Ssend from the last rank overtake each (it completes only if rank 0 returned from its start),
runs a blocking MPI_Allreduce while an MPI_Iallreduce is pending, and completes by Wait, a Test
loop and a mixed Waitall. Under every mode of the interposer it must finish, with exact results
and the plain run's output, and the counting table must hold every start and completion."""

from __future__ import annotations

import pytest
from interposer_support import PROGRAMS, force_rounds, force_spec, run_mpi
from test_every import functions_section

from colltune.mpi import build, runenv
from colltune.mpi import libraries as mpi

ROUNDS = 4
NPROCS = {"openmpi": 3, "mpich": 2}


@pytest.fixture(scope="module", params=["openmpi", "mpich"])
def overlap(request, tmp_path_factory):
    try:
        lib = mpi.resolve(request.param)
    except mpi.MpiError as exc:
        pytest.skip(f"{request.param} not installed: {exc}")
    from colltune.measure import proof
    proof.ensure_proven(lib)
    art = build.ensure_built(lib)
    exe = build.compile_program(lib, [PROGRAMS / "ct_overlap.c"],
                                tmp_path_factory.mktemp(request.param) / "ct_overlap", ["-Wextra"])
    return lib, art, exe


def test_nonblocking_collectives_overtaken_by_p2p_in_every_mode(overlap, tmp_path):
    lib, art, exe = overlap
    p = NPROCS[lib.family]
    argv = [exe, "-r", str(ROUNDS)]
    plain = run_mpi(lib, p, argv, {}, timeout=60)
    assert plain.returncode == 0 and not plain.timed_out, plain.describe()
    assert f"overlap: {ROUNDS} rounds, persistent 1, 0 failures" in plain.stdout   # both are MPI-4
    envs = {
        "pass-through": runenv.rank_environment(lib, art),
        "counting": runenv.rank_environment(lib, art, verbose=True),
        "profiling": runenv.rank_environment(lib, art, extra={"COLLTUNE_PROFILE_RUN": str(tmp_path / "prof")}),
        "force": runenv.rank_environment(lib, art, force=force_spec(force_rounds()[0]), verbose=True),
        "learning": runenv.rank_environment(lib, art, learn="-", trace_dir=tmp_path / "traces", verbose=True),
    }
    # every start completed once per round: Ibarrier by Wait, Iallreduce by Test, Ibcast by
    # Waitall, the persistent request by Start + Wait (its _init once)
    want = {"MPI_Ibarrier": (ROUNDS, ROUNDS, ROUNDS), "MPI_Iallreduce": (ROUNDS, ROUNDS, ROUNDS),
            "MPI_Ibcast": (ROUNDS, ROUNDS, ROUNDS), "MPI_Allreduce_init": (1, ROUNDS, ROUNDS)}
    runs = {}
    for mode, env in envs.items():
        run = runs[mode] = run_mpi(lib, p, argv, env, timeout=60)
        assert run.returncode == 0 and not run.timed_out, (mode, run.describe())
        assert run.stdout == plain.stdout, (mode, run.describe())
        if mode in ("counting", "force", "learning"):
            seen = functions_section(run.stderr)
            assert {fn: (c, s, d) for fn, (c, _, s, d) in seen.items() if fn in want} == want, (mode, run.describe())
    from colltune.advise import profile_run, where
    rows = {r.name: (r.calls, r.completed) for r in where.rows(profile_run.read(tmp_path / "prof")) if r.kind == "coll"}
    assert {k: rows.get(k) for k in want} == {k: (c, d) for k, (c, _, d) in want.items()}
    # every blocking Allreduce (ROUNDS with an Iallreduce pending, the final one) served
    first = force_rounds()[0]["allreduce"]
    assert runs["force"].counts[("allreduce", "force", first, "applied")] == ROUNDS + 1, runs["force"].describe()
    explored = {k: n for k, n in runs["learning"].counts.items() if k[0] == "allreduce"}
    assert {k[1] for k in explored} == {"explore"} and sum(explored.values()) == ROUNDS + 1
