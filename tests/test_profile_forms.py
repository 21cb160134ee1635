"""Tuning profiles for the nonblocking and persistent forms (issue 33, docs/profile.md
"Nonblocking and persistent forms"): a section `collective allreduce#nonblocking` names the
library's algorithms of that form, the interposer resolves them at MPI_Init and serves
MPI_Iallreduce (MPI_Allreduce_init) with them as COLLTUNE_FORCE and the learning mode do
(modes.c ct_dispatch_form -> libalg_online.c ct_libalg_start), behind the proof gate.

tests/programs/ct_nbmember.c: an MPI_Iallreduce of doubles whose sum rounds by the algorithm's
order and one of ints (exact in any order), then the same two as persistent requests started
twice; rank 0 prints per form a hash of the double sums and the int sum.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from interposer_support import PROGRAMS, nbmember_sums, run_mpi

from colltune.mpi import build, runenv
from colltune.mpi import libraries as mpi
from colltune.tune import profile as prof

RING = {"openmpi": "lib:allreduce:ring", "mpich": "lib:allreduce:tsp_ring"}


@pytest.fixture(scope="module", params=["openmpi", "mpich"])
def nbmember(request, tmp_path_factory):
    try:
        lib = mpi.resolve(request.param)
    except mpi.MpiError as exc:
        pytest.skip(f"{request.param} not installed: {exc}")
    art = build.ensure_built(lib)
    exe = build.compile_program(lib, [PROGRAMS / "ct_nbmember.c"],
                                tmp_path_factory.mktemp(request.param) / "ct_nbmember", ["-Wextra"])
    return lib, art, exe


def _profile(tmp_path: Path, ring: str, alg_nb: str, alg_p: str) -> Path:
    """A profile serving every MPI_Iallreduce with `alg_nb` and every MPI_Allreduce_init with
    `alg_p` (ct_nbmember's 1000 doubles and ints: 8000 and 4000 bytes)."""
    text = (f"colltune-profile 1\ncollective allreduce#nonblocking\n  procs 1 64\n    bytes 0 1000000 {alg_nb}\n"
            f"collective allreduce#persistent\n  procs 1 64\n    bytes 0 1000000 {alg_p}\nend\n")
    path = tmp_path / "forms.prof"
    path.write_text(text)
    p = prof.read_profile(path)   # the Python reader takes it as the C parser will
    assert [s.collective for s in p.sections] == ["allreduce#nonblocking", "allreduce#persistent"]
    return path


def _claimed(tmp_path: Path, members: list[str]) -> Path:
    """A proof that claims the double and the int sum for `members` (nothing else proven)."""
    path = tmp_path / "claimed.txt"
    path.write_text("colltune-proof 2\nsizes 1,2,3\n" + "".join(
        f"member {m} passed separate/builtin/int,separate/builtin/float\n" for m in members))
    return path


def test_profile_serves_the_started_forms(nbmember, tmp_path):
    """Under a proof that claims the ring algorithms of both started forms, the profile's rules
    serve every MPI_Iallreduce and MPI_Allreduce_init of ct_nbmember: the double sums' bits
    change (the ring's order, as when forced), the int sums do not, each call is counted under
    the profile mode (2 Iallreduce, 2 Allreduce_init); without a proof, nothing is served and
    the output is the plain run's."""
    lib, art, exe = nbmember
    ring = RING[lib.family]
    members = [ring + "#nonblocking", ring + "#persistent"]
    profile = _profile(tmp_path, ring, *members)
    plain = run_mpi(lib, 3, [exe], {}, timeout=60)
    assert plain.returncode == 0 and set(nbmember_sums(plain.stdout)) == {"nbmember", "persistent"}, plain.describe()
    env = runenv.rank_environment(lib, art, profile=profile, verbose=True,
                                  extra={"COLLTUNE_PROOF": str(_claimed(tmp_path, members))})
    served = run_mpi(lib, 3, [exe], env, timeout=60)
    assert served.returncode == 0, served.describe()
    got, want = nbmember_sums(served.stdout), nbmember_sums(plain.stdout)
    for form in want:
        assert got[form][1] == want[form][1] and got[form][0] != want[form][0], (plain.stdout, served.describe())
    assert {k: n for k, n in served.counts.items() if k[1] == "profile"} == {
        ("allreduce", "profile", m, "applied"): 2 for m in members}, served.describe()
    # unproven (an empty proof): the library serves, counted as such, bits unchanged
    empty = tmp_path / "empty.txt"
    empty.write_text("colltune-proof 2\nsizes 1,2,3\n")
    gated = run_mpi(lib, 3, [exe], runenv.rank_environment(lib, art, profile=profile, verbose=True,
                                                            extra={"COLLTUNE_PROOF": str(empty)}), timeout=60)
    assert gated.stdout == plain.stdout, gated.describe()
    assert {k: n for k, n in gated.counts.items() if k[1] == "profile"} == {
        ("allreduce", "profile", m, "not-applicable:unproven"): 2 for m in members}, gated.describe()


def test_profile_names_an_algorithm_the_library_lacks(nbmember, tmp_path):
    """A rule naming an algorithm this library does not offer: one warning naming it, the calls
    go to the library (the plain run's output), nothing aborts."""
    lib, art, exe = nbmember
    missing = "lib:allreduce:no_such_algorithm"
    profile = _profile(tmp_path, RING[lib.family], missing + "#nonblocking", missing + "#persistent")
    plain = run_mpi(lib, 3, [exe], {}, timeout=60)
    run = run_mpi(lib, 3, [exe], runenv.rank_environment(lib, art, profile=profile, verbose=True), timeout=60)
    assert run.returncode == 0 and run.stdout == plain.stdout, run.describe()
    assert (f"names library algorithms this MPI library does not offer ({missing}#nonblocking, "
            f"{missing}#persistent): their rules leave those calls to the library") in run.stderr, run.describe()
    assert not [k for k in run.counts if k[1] == "profile"], run.describe()


def test_malformed_started_section_is_refused_with_its_line(nbmember, tmp_path):
    """A profile whose nonblocking section names a mock-up: the interposer's one warning names
    the file, the line and the fix, and the run is the plain one (profile mode off)."""
    lib, art, exe = nbmember
    path = tmp_path / "bad.prof"
    path.write_text("colltune-profile 1\ncollective allreduce#nonblocking\n  procs 1 64\n"
                    "    bytes 0 64 allreduce_as_reduce_bcast\nend\n")
    with pytest.raises(prof.ProfileError) as info:
        prof.read_profile(path)
    message = (f"{path}:4: 'allreduce_as_reduce_bcast' cannot serve allreduce#nonblocking: its rules name the "
               "library's algorithms of that form, lib:allreduce:<algorithm>#nonblocking (the started forms have "
               "no mock-ups)")
    assert str(info.value) == message
    plain = run_mpi(lib, 3, [exe], {}, timeout=60)
    run = run_mpi(lib, 3, [exe], runenv.rank_environment(lib, art, profile=path, verbose=True), timeout=60)
    assert run.returncode == 0 and run.stdout == plain.stdout, run.describe()
    assert message in run.stderr, run.describe()
