"""The neighborhood collectives served by the library's own algorithms (MPICH 5.0.2:
MPIR_CVAR_NEIGHBOR_<COLL>_INTRA_ALGORITHM `nb`, MPIR_CVAR_INEIGHBOR_<COLL>_INTRA_ALGORITHM
`sched_linear`, `tsp_linear` for the nonblocking and persistent forms; Open MPI 5.0.11 has no
variable for any of them): proven by the selftest on its topology communicators (st_case.c,
selftest.c st_topology), then forced on tests/programs/ct_neighbor.c, which checks every value."""

from __future__ import annotations

from collections import Counter

import pytest
from interposer_support import compile_programs, run_mpi

from colltune.mpi import runenv

ROWS = ("neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
        "neighbor_alltoallw")
MEMBERS = {("blocking", f"lib:{r}:nb") for r in ROWS} | {
    (form, f"lib:{r}:{alg}#{form}") for r in ROWS for alg in ("sched_linear", "tsp_linear")
    for form in ("nonblocking", "persistent")}
# ct_neighbor's calls per collective: 2 sizes x 2 topologies
CALLS = 4


@pytest.fixture(scope="module")
def neighbor_proof(mpich, tmp_path_factory):
    from colltune.measure import proof
    from colltune.mpi import build
    made = proof.prove(mpich, (3,), only=sorted(m for _f, m in MEMBERS))
    path = tmp_path_factory.mktemp("proof") / "proof.txt"
    path.write_text(proof.render(made))
    return made, path, build.ensure_built(mpich)


@pytest.mark.mpich
def test_mpich_neighbor_members_are_proven(neighbor_proof):
    made = neighbor_proof[0]
    for _form, member in sorted(MEMBERS):
        m = made.member(member)
        assert m is not None and m.passed == ["separate/none/any/0-15B"] and not m.failed, (member, m)


@pytest.mark.mpich
@pytest.mark.parametrize("form,member", sorted(MEMBERS))
def test_mpich_neighbor_member_serves_exactly(mpich, neighbor_proof, tmp_path, form, member):
    _made, path, artifacts = neighbor_proof
    coll = member.split(":")[1]
    exe = compile_programs(mpich, tmp_path)["ct_neighbor"]
    env = runenv.rank_environment(mpich, artifacts, verbose=True, force=f"{coll}={member}",
                                  library_members=[m for _f, m in MEMBERS])
    env["COLLTUNE_PROOF"] = str(path)
    run = run_mpi(mpich, 3, [exe, "-f", form], env, timeout=240)
    assert run.returncode == 0 and "FAIL" not in run.stderr, run.describe()
    assert run.program_calls == {r: {"all": CALLS} for r in ROWS}, run.describe()
    got = Counter({o: n for (c, mode, v, o), n in run.counts.items() if c == coll and v == member})
    assert got == {"applied": CALLS}, run.describe()
