"""The table's later rows (Barrier, Exscan, Reduce_local and the irregular forms) under the
interposer: tests/programs/ct_irregular.c checks every result itself (irregular and zero counts,
gaps between blocks, MPI_IN_PLACE, a datatype with gaps, every root) and reports its calls."""

from __future__ import annotations

from collections import Counter

import pytest
from interposer_support import Run, compile_programs, run_mpi

from colltune.mpi import runenv

# ct_irregular's calls per run on any number of ranks p: 3 shapes x 2 datatypes x 2 (in place)
# per rooted collective and root, Alltoall(v|w) without in place for the irregular shape.
def expected_calls(p: int) -> dict[str, int]:
    return {"barrier": 2, "exscan": 16, "reduce_local": 8, "gatherv": 12 * p, "scatterv": 12 * p,
            "allgatherv": 12, "alltoallv": 10, "alltoallw": 10}


@pytest.fixture(scope="module")
def programs(openmpi, tmp_path_factory):
    return compile_programs(openmpi, tmp_path_factory.mktemp("programs"))


def irregular(openmpi, build, programs, nprocs: int, repeat: int = 1, **env) -> Run:
    run = run_mpi(openmpi, nprocs, [programs["ct_irregular"], "-r", str(repeat)],
                  runenv.rank_environment(openmpi, build, verbose=True, **env), timeout=240)
    assert run.returncode == 0 and not run.timed_out and "FAIL" not in run.stderr, run.describe()
    want = {c: {"all": n * repeat} for c, n in expected_calls(nprocs).items()}
    assert run.program_calls == want, run.describe()
    return run


def served(run: Run, collective: str) -> Counter[tuple[str, str]]:
    return Counter({(k[2], k[3]): n for k, n in run.counts.items() if k[0] == collective})


def test_counting(openmpi, openmpi_build, programs):
    """COLLTUNE_VERBOSE alone: the counting mode, every call to the library, each counted."""
    run = irregular(openmpi, openmpi_build, programs, 3)
    assert run.counts == {(c, "none", "library", "library"): n for c, n in expected_calls(3).items()}


def test_forced_mockups_are_exact(openmpi, openmpi_build, programs):
    """CT1-CT4 forced: applied wherever their rules allow (CT3: the equal-count and all-zero
    shapes; CT4: MPI_SUM on ints, not the non-commutative user op), the library elsewhere."""
    run = irregular(openmpi, openmpi_build, programs, 3,
                    force="barrier=barrier_as_allreduce,allgatherv=allgatherv_as_allgather,"
                          "exscan=exscan_as_scan")
    assert served(run, "barrier") == {("barrier_as_allreduce", "applied"): 2}, run.describe()
    assert served(run, "allgatherv") == {("allgatherv_as_allgather", "applied"): 8,
                                         ("allgatherv_as_allgather", "not-applicable:size"): 4}, run.describe()
    assert served(run, "exscan") == {("exscan_as_scan", "applied"): 8,
                                     ("exscan_as_scan", "not-applicable:op"): 8}, run.describe()
    run = irregular(openmpi, openmpi_build, programs, 4, force="allgatherv=allgatherv_as_gatherv_bcast")
    assert served(run, "allgatherv") == {("allgatherv_as_gatherv_bcast", "applied"): 12}, run.describe()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_learning_explores_every_member_exactly(openmpi, openmpi_build, programs, seed):
    """`--learn -` with every call exploring (budgets 10^9): the members of the new rows are
    drawn, proven ones serve, and every result stays exact (the program checks them)."""
    big = str(10**9)
    run = irregular(openmpi, openmpi_build, programs, 3, repeat=10, learn="-",
                    extra={"COLLTUNE_SELECT_SEED": str(seed), "COLLTUNE_SELECT_BUDGET": big,
                           "COLLTUNE_SELECT_CELL_BUDGET": big})
    served: dict[str, set[str]] = {}
    for (coll, mode, member, outcome), n in run.counts.items():
        assert mode == "explore", run.describe()
        if outcome == "applied" and n > 0:
            served.setdefault(coll, set()).add(member)
    # Open MPI's members of these rows: CT1 and 6 barrier algorithms, CT4 and 2 of Exscan, CT2
    # and CT3, 2 of Alltoallv; at least two of each serve in 20-160 calls
    for coll in ("barrier", "exscan", "allgatherv", "alltoallv"):
        assert len(served.get(coll, ())) >= 2, (coll, served, run.describe())


# ---- the preset and the guidelines between collectives (no MPI) -------------------------------

def test_quick_preset_measures_what_it_did():
    from colltune.measure.settings import GUIDELINE_COLLECTIVES, BenchSettings
    assert BenchSettings.from_preset("quick").collectives == list(GUIDELINE_COLLECTIVES)
    assert BenchSettings().collectives == list(GUIDELINE_COLLECTIVES)


def test_irregular_preset_plan():
    from colltune.measure.planning import plan_jobs
    from colltune.measure.settings import BenchSettings
    settings = BenchSettings.from_preset("irregular")
    plan = plan_jobs(settings, 4, "openmpi")
    jobs = {(j.collective, j.msg_bytes): j.variants for j in plan.jobs}
    assert [k for k in jobs if k[0] == "barrier"] == [("barrier", 0)]   # once, not twice
    assert jobs[("barrier", 0)] == ("default", "default#aa", "barrier_as_allreduce")
    assert jobs[("allgatherv", 1024)] == ("default", "default#aa", "allgatherv_as_gatherv_bcast",
                                          "allgatherv_as_allgather")
    assert jobs[("exscan", 32768)] == ("default", "default#aa", "exscan_as_scan")
    assert jobs[("alltoallw", 1)] == ("default", "default#aa")
    assert jobs[("allreduce", 1)] == ("default", "default#aa")
    assert len(plan.jobs) == 12 * 3 + 1
    libs = plan_jobs(BenchSettings.from_preset("irregular", library_algorithms=True), 4, "mpich")
    assert {j.collective: j.variants for j in libs.jobs if j.msg_bytes in (0, 1)}["gatherv"] == (
        "default", "default#aa", "lib:gatherv:linear")


def _side(medians: list[float]):
    import numpy as np
    from colltune.verify.comparisons import Side
    return Side(np.arange(len(medians)), np.array(medians), np.array(medians))


def test_form_comparisons_pair_the_two_collectives():
    from colltune.verify.comparisons import comparisons
    import pandas as pd
    by_side = {(4, "allgather", "default", 64): _side([1.0, 2.0]),
               (4, "allgatherv", "default", 64): _side([3.0, 4.0]),
               (4, "allgatherv", "default", 128): _side([5.0, 6.0]),
               (4, "barrier", "default", 0): _side([0.5, 0.5]),
               (4, "allreduce", "default", 1): _side([0.7, 0.8]),
               (4, "exscan", "default", 8): _side([1.0, 1.0])}
    messages: list[str] = []
    forms = [c for c in comparisons(pd.DataFrame(), by_side, 64, messages)
             if c.guideline in ("GL4", "F2", "F3")]
    got = sorted((c.collective, c.variant, c.guideline, c.msg_bytes, c.lhs, c.rhs,
                  tuple(c.ref.launch_medians), tuple(c.alt.launch_medians)) for c in forms)
    assert got == [
        ("allgather", "allgatherv", "GL4", 64, "MPI_Allgather(64 B)", "MPI_Allgatherv(64 B)",
         (1.0, 2.0), (3.0, 4.0)),
        ("barrier", "allreduce", "F3", 0, "MPI_Barrier(0 B)", "MPI_Allreduce(1 B)", (0.5, 0.5),
         (0.7, 0.8)),
    ]   # no F2: Scan was not measured


def test_learning_decides_allgatherv_on_its_mean_block(openmpi, openmpi_build, programs, tmp_path):
    """The learning mode's size of an MPI_Allgatherv is the table's `sum(recvcounts) *
    size(recvtype) / p` (learn.c computes it inline, ct_bytes_forms' CT_BYTES_MEAN): on 3 ranks
    ct_irregular's equal counts (5 each) give 20 bytes, its irregular ones (0, 8, 4) 16, its zero
    ones 0, for MPI_INT and for the vector type (4 bytes of data each), in place or not."""
    from colltune import catalog
    from colltune.learn import traces
    # no warm-up: every call of the run is decided and traced
    run = irregular(openmpi, openmpi_build, programs, 3, learn="-", trace_dir=tmp_path,
                    extra={"COLLTUNE_LIBRARY_WARMUP": "0"})
    index = catalog.load().collective_names().index("allgatherv")
    for rank in range(3):
        records = traces.read_trace(tmp_path / f"rank-{rank}.cttrace").records
        sizes = Counter(int(r["msg_bytes"]) for r in records if int(r["collective"]) == index)
        assert sizes == {20: 4, 16: 4, 0: 4}, (rank, sizes)


# ---- MPI_Alltoallw's library members (MPICH 5.0.2; Open MPI 5.0.11 has no variable for it) ------

# MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM and MPIR_CVAR_IALLTOALLW_INTRA_ALGORITHM: each member
# ct_irregular forces, with the classes MPICH runs it in (it refuses the others: `scattered`
# and the nonblocking ones in place, `pairwise_sendrecv_replace` anything but in place).
ALLTOALLW_MEMBERS = {
    ("blocking", "lib:alltoallw:scattered"): {"separate"},
    ("blocking", "lib:alltoallw:pairwise_sendrecv_replace"): {"in_place"},
    ("blocking", "lib:alltoallw:nb"): {"separate", "in_place"},
    ("nonblocking", "lib:alltoallw:sched_blocked#nonblocking"): {"separate"},
    ("nonblocking", "lib:alltoallw:tsp_blocked#nonblocking"): {"separate"},
    ("persistent", "lib:alltoallw:sched_blocked#persistent"): {"separate", "in_place"},
    ("persistent", "lib:alltoallw:tsp_blocked#persistent"): {"separate", "in_place"},
}
# ct_irregular's Alltoallw calls per run: 6 with separate buffers, 4 in place (at any p)
ALLTOALLW_CALLS = {"separate": 6, "in_place": 4}


@pytest.fixture(scope="module")
def mpich_alltoallw_proof(mpich, tmp_path_factory):
    """A proof of just the Alltoallw members, made here (st_case.c's Alltoallw geometry: irregular
    and zero counts, byte displacements with gaps, per-rank datatypes, in place) on 3 ranks; the
    build without the whole proof (the tests pass this one as COLLTUNE_PROOF)."""
    from colltune.measure import proof
    from colltune.mpi import build
    made = proof.prove(mpich, (3,), only=[m for _f, m in ALLTOALLW_MEMBERS])
    path = tmp_path_factory.mktemp("proof") / "proof.txt"
    path.write_text(proof.render(made))
    return made, path, build.ensure_built(mpich)


@pytest.mark.mpich
def test_mpich_alltoallw_members_are_proven_where_mpich_runs_them(mpich_alltoallw_proof):
    made = mpich_alltoallw_proof[0]
    for (_form, member), modes in ALLTOALLW_MEMBERS.items():
        m = made.member(member)
        assert m is not None and not m.failed, (member, m)
        assert {c.split("/")[0] for c in m.passed} == modes, (member, m.passed, m.evidence)


@pytest.mark.mpich
@pytest.mark.parametrize("form,member", list(ALLTOALLW_MEMBERS))
def test_mpich_alltoallw_member_serves_exactly(mpich, mpich_alltoallw_proof, tmp_path, form, member):
    """Each member forced on 3 ranks of ct_irregular (which checks every value: irregular and zero
    counts, gaps, in place, ints and the vector alternating per peer and between the sides) in
    its form: served in the classes it passed, the library elsewhere."""
    programs = compile_programs(mpich, tmp_path)
    _made, path, artifacts = mpich_alltoallw_proof
    env = runenv.rank_environment(mpich, artifacts, verbose=True, force=f"alltoallw={member}",
                                  library_members=[m for _f, m in ALLTOALLW_MEMBERS])
    env["COLLTUNE_PROOF"] = str(path)
    run = run_mpi(mpich, 3, [programs["ct_irregular"], "-f", form], env, timeout=240)
    assert run.returncode == 0 and not run.timed_out and "FAIL" not in run.stderr, run.describe()
    assert run.program_calls == {c: {"all": n} for c, n in expected_calls(3).items()}, run.describe()
    modes = ALLTOALLW_MEMBERS[form, member]
    want: Counter[str] = Counter()
    for mode, n in ALLTOALLW_CALLS.items():
        want["applied" if mode in modes else "not-applicable:unproven"] += n
    got = Counter({outcome: n for (coll, mode, variant, outcome), n in run.counts.items()
                   if coll == "alltoallw" and variant == member and mode == "force"})
    assert got == want, run.describe()
