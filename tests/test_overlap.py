"""A nonblocking collective is never made blocking (issue 33): tests/programs/ct_overlap.c starts
MPI_Ibarrier, MPI_Iallreduce, MPI_Ibcast and a persistent MPI_Allreduce_init request and lets an
MPI_Ssend from the last rank overtake each (it completes only if rank 0 returned from its start),
runs a blocking MPI_Allreduce while an MPI_Iallreduce is pending, and completes by Wait, a Test
loop and a mixed Waitall. Under every mode of the interposer it must finish, with exact results
and the plain run's output, and the counting table must hold every start and completion."""

from __future__ import annotations

from pathlib import Path

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


# Algorithms of the nonblocking forms forced on MPI_I<coll> (COLLTUNE_FORCE), proven here first.
NB_MEMBERS = {
    "openmpi": ("lib:allreduce:ring#nonblocking", "lib:bcast:binomial#nonblocking"),  # libnbc: no ibarrier variable
    "mpich": ("lib:barrier:tsp_recexch#nonblocking", "lib:allreduce:tsp_ring#nonblocking",
              "lib:bcast:tsp_tree#nonblocking"),
}
RING = {"openmpi": "lib:allreduce:ring#nonblocking", "mpich": "lib:allreduce:tsp_ring#nonblocking"}


def nonblocking_proof(lib: mpi.MpiLibrary, tmp_path) -> Path:
    """The build's proof with NB_MEMBERS proven (one launch each) and added."""
    from colltune.measure import proof
    extra = proof.prove(lib, only=NB_MEMBERS[lib.family])
    path = tmp_path / "proof.txt"
    path.write_text(proof.merged(proof.ensure_proven(lib).read_text(), extra))
    return path


def force_env(lib, art, members, proof_path) -> dict[str, str]:
    force = ",".join(f"{m.split(':')[1]}={m}" for m in members)
    return runenv.rank_environment(lib, art, force=force, verbose=True, library_members=members,
                                   extra={"COLLTUNE_PROOF": str(proof_path)})


def test_forced_nonblocking_members_start_without_blocking(overlap, tmp_path):
    """Every MPI_Ibarrier (MPICH), MPI_Iallreduce and MPI_Ibcast of ct_overlap started by a forced
    algorithm of its nonblocking form: the sends still overtake them, the results are the plain
    run's, and the blocking MPI_Allreduce is not touched by the nonblocking form's member."""
    lib, art, exe = overlap
    members = NB_MEMBERS[lib.family]
    path = nonblocking_proof(lib, tmp_path)
    from colltune.measure import proof
    passed = proof.read_passed(path)
    assert all(passed.get(m) for m in members), {m: passed.get(m) for m in members}
    argv = [exe, "-r", str(ROUNDS)]
    plain = run_mpi(lib, NPROCS[lib.family], argv, {}, timeout=60)
    run = run_mpi(lib, NPROCS[lib.family], argv, force_env(lib, art, members, path), timeout=60)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert run.stdout == plain.stdout and f"{ROUNDS} rounds" in run.stdout, run.describe()
    served = {k: n for k, n in run.counts.items() if k[1] == "force"}
    assert served == {(m.split(":")[1], "force", m, "applied"): ROUNDS for m in members}, run.describe()
    seen = functions_section(run.stderr)
    assert seen["MPI_Allreduce"][0] == ROUNDS + 1 and seen["MPI_Iallreduce"][0] == ROUNDS, run.describe()


def test_forced_nonblocking_member_serves_only_where_proven(overlap, tmp_path):
    """ct_nbmember's double MPI_Iallreduce rounds by the algorithm's order, its int one does not
    (3 ranks: two summands would commute exactly). Under the real proof the ring algorithm of the
    nonblocking form is refused the double sum (Open MPI: libnbc's ring gives other bits than its
    binomial default; MPICH: proven at 2 ranks only) and serves the int sum: the plain run's output.
    Under a proof that claims the double sum too, the hash changes and the int sum does not: the
    forced algorithm really runs."""
    lib, art, _ = overlap
    exe = build.compile_program(lib, [PROGRAMS / "ct_nbmember.c"], tmp_path / "ct_nbmember", ["-Wextra"])
    ring = RING[lib.family]
    plain = run_mpi(lib, 3, [exe], {}, timeout=60)
    assert plain.returncode == 0, plain.describe()
    gated = run_mpi(lib, 3, [exe], force_env(lib, art, [ring], nonblocking_proof(lib, tmp_path)), timeout=60)
    assert gated.stdout == plain.stdout, gated.describe()
    assert {k: n for k, n in gated.counts.items() if k[1] == "force"} == {
        ("allreduce", "force", ring, "applied"): 1,
        ("allreduce", "force", ring, "not-applicable:unproven"): 1}, gated.describe()
    claimed = tmp_path / "claimed.txt"
    claimed.write_text(f"colltune-proof 2\nsizes 1,2,3\nmember {ring} passed separate/builtin/int,"
                       "separate/builtin/float\n")
    forced = run_mpi(lib, 3, [exe], force_env(lib, art, [ring], claimed), timeout=60)
    assert forced.returncode == 0, forced.describe()
    assert forced.stdout.split("int sum")[1] == plain.stdout.split("int sum")[1], forced.describe()
    assert forced.stdout.split(",")[0] != plain.stdout.split(",")[0], (plain.stdout, forced.describe())
    assert forced.counts[("allreduce", "force", ring, "applied")] == 2, forced.describe()


def test_force_names_each_form_once() -> None:
    """`--force` takes a collective once per form: the nonblocking form's member has a slot of its
    own, reaches the ranks under the collective's name, and one the proof lacks names the fix."""
    ring = "lib:allreduce:ring#nonblocking"
    chosen = runenv.parse_force(f"allreduce={ring},allreduce=allreduce_as_reduce_bcast", [ring])
    assert chosen == {"allreduce#nonblocking": ring, "allreduce": "allreduce_as_reduce_bcast"}
    with pytest.raises(mpi.MpiError, match="given twice with a member of the nonblocking form"):
        runenv.parse_force(f"allreduce={ring},allreduce={ring}", [ring])
    with pytest.raises(mpi.MpiError, match=r"proven by `colltune selftest --nonblocking`"):
        runenv.parse_force(f"allreduce={ring}", ["lib:allreduce:ring"])
