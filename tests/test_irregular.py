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


def test_pass_through_and_counting(openmpi, openmpi_build, programs):
    run = irregular(openmpi, openmpi_build, programs, 3)
    assert not run.counts   # nothing active: no table


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
    """`--learn -` with every call exploring (budgets 10^9): every member of the new rows is
    drawn, proven ones serve, and every result stays exact."""
    big = str(10**9)
    run = irregular(openmpi, openmpi_build, programs, 3, repeat=5, learn="-",
                    extra={"COLLTUNE_SELECT_SEED": str(seed), "COLLTUNE_SELECT_BUDGET": big,
                           "COLLTUNE_SELECT_CELL_BUDGET": big})
    drawn = {(k[0], k[2]) for k in run.counts if k[1] == "explore"}
    for member in ("barrier_as_allreduce", "lib:barrier:bruck", "lib:exscan:recursive_doubling",
                   "exscan_as_scan", "allgatherv_as_gatherv_bcast", "lib:alltoallv:pairwise"):
        assert any(m == member for _, m in drawn), (member, run.describe())
