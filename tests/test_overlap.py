"""A nonblocking collective is never made blocking (issue 33): tests/programs/ct_overlap.c starts
MPI_Ibarrier, MPI_Iallreduce, MPI_Ibcast and persistent MPI_Barrier_init, MPI_Allreduce_init and
MPI_Bcast_init requests and lets an
MPI_Ssend from the last rank overtake each (it completes only if rank 0 returned from its start),
runs a blocking MPI_Allreduce while an MPI_Iallreduce is pending, and completes by Wait, a Test
loop and mixed Waitalls. Under every mode of the interposer it must finish, with exact results
and the plain run's output, and the counting table must hold every start and completion."""

from __future__ import annotations

from pathlib import Path

import pytest
from interposer_support import PROGRAMS, force_rounds, force_spec, nbmember_sums, run_mpi
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


# ct_overlap's Ibcast: MPI_Ibcast_c where the library is MPI-4 (MPICH 5.0.2; Open MPI 5.0.11
# declares MPI 3.1), served and decided as the int binding (docs/select.md "Large-count calls")
IBCAST = {"openmpi": "MPI_Ibcast", "mpich": "MPI_Ibcast_c"}


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
    # every start completed once per round: Ibarrier by Wait, Iallreduce by Test, Ibcast (its
    # large-count binding where the library declares it) by Waitall, the persistent requests by
    # Start + Wait (their _init once)
    want = {"MPI_Ibarrier": (ROUNDS, ROUNDS, ROUNDS), "MPI_Iallreduce": (ROUNDS, ROUNDS, ROUNDS),
            IBCAST[lib.family]: (ROUNDS, ROUNDS, ROUNDS), "MPI_Allreduce_init": (1, ROUNDS, ROUNDS),
            "MPI_Barrier_init": (1, ROUNDS, ROUNDS), "MPI_Bcast_init": (1, ROUNDS, ROUNDS)}
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


# Algorithms of the nonblocking forms forced on MPI_I<coll> and of the persistent forms forced
# on MPI_<Coll>_init (COLLTUNE_FORCE), proven here first. Open MPI's libnbc has no ibarrier
# variable: its Barrier_init is the library's.
NB_MEMBERS = {
    "openmpi": ("lib:allreduce:ring#nonblocking", "lib:bcast:binomial#nonblocking"),
    "mpich": ("lib:barrier:tsp_recexch#nonblocking", "lib:allreduce:tsp_ring#nonblocking",
              "lib:bcast:tsp_tree#nonblocking"),
}
PERSISTENT_MEMBERS = {
    "openmpi": ("lib:allreduce:ring#persistent", "lib:bcast:binomial#persistent"),
    "mpich": ("lib:barrier:tsp_recexch#persistent", "lib:allreduce:tsp_ring#persistent",
              "lib:bcast:tsp_tree#persistent"),
}
RING = {"openmpi": "lib:allreduce:ring", "mpich": "lib:allreduce:tsp_ring"}


def started_proof(lib: mpi.MpiLibrary, tmp_path, members) -> Path:
    """The build's proof with `members` proven (one launch each) and added."""
    from colltune.measure import proof
    extra = proof.prove(lib, only=members)
    path = tmp_path / "proof.txt"
    path.write_text(proof.merged(proof.ensure_proven(lib).read_text(), extra))
    return path


def force_env(lib, art, members, proof_path) -> dict[str, str]:
    force = ",".join(f"{m.split(':')[1]}={m}" for m in members)
    return runenv.rank_environment(lib, art, force=force, verbose=True, library_members=members,
                                   extra={"COLLTUNE_PROOF": str(proof_path)})


@pytest.fixture(scope="module")
def started_members(overlap, tmp_path_factory):
    """The members of both started forms and the build's proof with them proven (one launch each)."""
    lib, _, _ = overlap
    members = NB_MEMBERS[lib.family] + PERSISTENT_MEMBERS[lib.family]
    return members, started_proof(lib, tmp_path_factory.mktemp(f"proof-{lib.family}"), members)


def test_forced_started_members_start_without_blocking(overlap, started_members):
    """Every MPI_Ibarrier (MPICH), MPI_Iallreduce and MPI_Ibcast of ct_overlap started by a forced
    algorithm of its nonblocking form, and its MPI_Barrier_init (MPICH), MPI_Allreduce_init and
    MPI_Bcast_init requests made by one of the persistent form and started every round: the sends still
    overtake them, the results are the plain run's, and the blocking MPI_Allreduce is not
    touched by the members of the other forms."""
    lib, art, exe = overlap
    members, path = started_members
    from colltune.measure import proof
    passed = proof.read_passed(path)
    assert all(passed.get(m) for m in members), {m: passed.get(m) for m in members}
    argv = [exe, "-r", str(ROUNDS)]
    plain = run_mpi(lib, NPROCS[lib.family], argv, {}, timeout=60)
    run = run_mpi(lib, NPROCS[lib.family], argv, force_env(lib, art, members, path), timeout=60)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert run.stdout == plain.stdout and f"{ROUNDS} rounds" in run.stdout, run.describe()
    served = {k: n for k, n in run.counts.items() if k[1] == "force"}
    # a persistent member serves the one MPI_<Coll>_init; its MPI_Start calls are the library's
    assert served == {(m.split(":")[1], "force", m, "applied"): 1 if m.endswith("#persistent") else ROUNDS
                      for m in members}, run.describe()
    seen = functions_section(run.stderr)
    assert seen["MPI_Allreduce"][0] == ROUNDS + 1 and seen["MPI_Iallreduce"][0] == ROUNDS, run.describe()
    assert all(seen[f"MPI_{c}_init"][::2] == (1, ROUNDS) for c in ("Allreduce", "Barrier", "Bcast")), run.describe()


def test_learning_decides_nonblocking_and_persistent_calls(overlap, started_members, tmp_path):
    """Every call exploring (`--learn -`, budgets 10^9) with the nonblocking and persistent members
    proven: each MPI_Ibarrier, MPI_Iallreduce and MPI_Ibcast of ct_overlap after the
    communicator's first blocking collective is drawn at its start (before it the ranks have not
    agreed on the communicator's state, and making it there would block: the library starts
    those), and each persistent request at its MPI_<Coll>_init, for all its starts (MPI orders the
    inits across ranks, not the starts). The sends still overtake them, the output is the plain
    run's on seeds 1-3, the proven members serve, and each rank's trace holds every such start
    and init in call order: rewarded where MPI_Wait or a Test loop completed the request alone
    (a persistent request: the mean of its starts), without a reward (NaN, counted) where
    MPI_Waitall completed it with point-to-point requests (the Bcast_init request's every start);
    ingesting keeps those out of training."""
    lib, art, exe = overlap
    members, path = started_members
    from colltune.learn import traces
    from colltune.store.database import Store
    p, argv = NPROCS[lib.family], [exe, "-r", str(ROUNDS)]
    plain = run_mpi(lib, p, argv, {}, timeout=60)
    served: set[str] = set()
    for seed in (1, 2, 3):
        tdir = tmp_path / f"traces-{seed}"
        env = runenv.rank_environment(lib, art, learn="-", trace_dir=tdir, verbose=True, extra={
            "COLLTUNE_PROOF": str(path), "COLLTUNE_SELECT_SEED": str(seed), "COLLTUNE_LIBRARY_WARMUP": "0",
            "COLLTUNE_SELECT_BUDGET": "1000000000", "COLLTUNE_SELECT_CELL_BUDGET": "1000000000"})
        run = run_mpi(lib, p, argv, env, timeout=60)
        assert run.returncode == 0 and not run.timed_out and run.stdout == plain.stdout, run.describe()
        applied = {k[2]: n for k, n in run.counts.items() if "#" in k[2] and k[3] == "applied"}
        served |= set(applied)
        for rank in range(p):
            trace = traces.read_trace(tdir / f"rank-{rank}.cttrace")
            calls, _ = traces.calls_frame([trace])
            started = calls[calls["collective"].str.contains("#")]
            assert started.groupby("collective").size().to_dict() == {
                "barrier#nonblocking": ROUNDS - 1, "allreduce#nonblocking": ROUNDS - 1,
                "bcast#nonblocking": ROUNDS, "barrier#persistent": 1, "allreduce#persistent": 1,
                "bcast#persistent": 1}, (seed, rank, started)
            assert (started["mode"] == "explore").all()
            assert (started["runtime_s"].isna() == started["collective"].str.startswith("bcast#")).all(), started
            assert trace.unrewarded == ROUNDS + 1
            if rank == 0:   # the counting table (rank 0's) names the members the trace names
                kept = started[started["collective"].str.endswith("#persistent")]
                assert {m: 1 for m in kept["member"] if m != "default"} == {
                    m: n for m, n in applied.items() if m.endswith("#persistent")}, (seed, kept, applied)
        with Store(tmp_path / f"t{seed}.duckdb") as store:
            res = traces.ingest(tdir, store)
            assert res.unrewarded == ROUNDS + 1
            trained = set(store.trace_points(None, explored_only=True)["collective"])
        assert trained >= {"allreduce#nonblocking", "barrier#nonblocking", "allreduce#persistent",
                           "barrier#persistent"} and not {"bcast#nonblocking", "bcast#persistent"} & trained
    # the members of ct_overlap's collectives (int sums, every size of the proof's classes): every
    # nonblocking one (ROUNDS draws each per seed), persistent ones where their one init per seed
    # drew them
    nonblocking = {m for m in members if m.endswith("#nonblocking")}
    assert nonblocking <= served <= set(members) and served - nonblocking, served


def test_forced_started_members_serve_only_where_proven(overlap, tmp_path):
    """ct_nbmember's double sums (MPI_Iallreduce, then an MPI_Allreduce_init request started
    twice) round by the algorithm's order, its int ones do not (3 ranks: two summands would
    commute exactly). Under the real proof the ring algorithms of the nonblocking and the
    persistent form are refused the double sum (Open MPI: libnbc's ring gives other bits than its
    binomial default; MPICH: proven at 2 ranks only) and serve the int sum: the plain run's
    output. Under a proof that claims the double sum too, the hashes change and the int sums do
    not: the forced algorithms really run, the persistent one at init."""
    lib, art, _ = overlap
    exe = build.compile_program(lib, [PROGRAMS / "ct_nbmember.c"], tmp_path / "ct_nbmember", ["-Wextra"])
    rings = [RING[lib.family] + "#nonblocking", RING[lib.family] + "#persistent"]
    plain = run_mpi(lib, 3, [exe], {}, timeout=60)
    assert plain.returncode == 0 and set(nbmember_sums(plain.stdout)) == {"nbmember", "persistent"}, plain.describe()
    gated = run_mpi(lib, 3, [exe], force_env(lib, art, rings, started_proof(lib, tmp_path, rings)), timeout=60)
    assert gated.stdout == plain.stdout, gated.describe()
    assert {k: n for k, n in gated.counts.items() if k[1] == "force"} == {
        ("allreduce", "force", ring, why): 1 for ring in rings
        for why in ("applied", "not-applicable:unproven")}, gated.describe()
    claimed = tmp_path / "claimed.txt"
    claimed.write_text("colltune-proof 2\nsizes 1,2,3\n" + "".join(
        f"member {ring} passed separate/builtin/int,separate/builtin/float\n" for ring in rings))
    forced = run_mpi(lib, 3, [exe], force_env(lib, art, rings, claimed), timeout=60)
    assert forced.returncode == 0, forced.describe()
    got, want = nbmember_sums(forced.stdout), nbmember_sums(plain.stdout)
    for form in want:
        assert got[form][1] == want[form][1] and got[form][0] != want[form][0], (plain.stdout, forced.describe())
    assert all(forced.counts[("allreduce", "force", ring, "applied")] == 2 for ring in rings), forced.describe()


def test_force_names_each_form_once() -> None:
    """`--force` takes a collective once per form: the nonblocking and the persistent form's
    members have slots of their own, reach the ranks under the collective's name, and one the
    proof lacks names the fix."""
    ring, kept = "lib:allreduce:ring#nonblocking", "lib:allreduce:ring#persistent"
    chosen = runenv.parse_force(f"allreduce={ring},allreduce=allreduce_as_reduce_bcast,allreduce={kept}",
                                [ring, kept])
    assert chosen == {"allreduce#nonblocking": ring, "allreduce": "allreduce_as_reduce_bcast",
                      "allreduce#persistent": kept}
    with pytest.raises(mpi.MpiError, match="given twice with a member of the nonblocking form"):
        runenv.parse_force(f"allreduce={ring},allreduce={ring}", [ring])
    with pytest.raises(mpi.MpiError, match="given twice with a member of the persistent form"):
        runenv.parse_force(f"allreduce={kept},allreduce={kept}", [kept])
    with pytest.raises(mpi.MpiError, match=r"proven by `colltune selftest --nonblocking`"):
        runenv.parse_force(f"allreduce={ring}", ["lib:allreduce:ring"])
    with pytest.raises(mpi.MpiError, match=r"proven by `colltune selftest --persistent`"):
        runenv.parse_force(f"allreduce={kept}", ["lib:allreduce:ring", ring])
