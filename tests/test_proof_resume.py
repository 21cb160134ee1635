"""A member launch that crashes or hangs (measure/proof.py `_isolate`): run again class by class
in one launch (the driver's `--by-class`, each class's verdict printed when it is done), the class
it dies in failed with the launch's evidence, the next launch resuming after it; a hang is a
silence (MEMBER_IDLE_S without a line from a driver that ticks while cases end), shorter
(MEMBER_HUNG_IDLE_S) for a member that hung once. Before (session 10), each class had a launch of
its own and a hanging class the whole 60 s: MPICH's persistent proof took ~14 min quiet."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import pytest

from colltune.measure import proof
from colltune.measure import selftest as st
from colltune.mpi import build
from colltune.mpi.libraries import MpiLibrary


def test_class_progress_names_the_class_a_launch_died_in():
    lines = ['{"type":"start"}\n', '{"type":"class","class":"a/b/c/0-15B"}\n', '{"type":"tick"}\n',
             '{"type":"proof","member":"m","tested":["a/b/c/0-15B"],"failed":[]}\n',
             '{"type":"class_done","class":"a/b/c/0-15B"}\n',
             '{"type":"class","class":"a/b/c/16-2047B"}\n', "Abort(1) on node 0\n"]
    assert proof.class_progress(lines) == (["a/b/c/0-15B"], "a/b/c/16-2047B")
    assert proof.class_progress(lines[:5]) == (["a/b/c/0-15B"], None)
    assert proof.class_progress(lines[:1]) == ([], None)


def _verdict(lines: Sequence[str], member: str) -> tuple[set[str], set[str]]:
    members: dict[str, proof.MemberProof] = {}
    proof.absorb(lines, members, lambda _n: member.split(":")[1], [], proof.Format())
    return members[member].tested, members[member].failed


def test_by_class_gives_the_whole_launchs_verdicts(openmpi: MpiLibrary):
    """Open MPI's sparbit allgather (in place refused: tests/test_proof.py), proven in one pass
    and class by class: the same classes tested and failed; one `class` and one `class_done`
    line per class, in the order of the driver's `classes` line."""
    member = "lib:allgather:sparbit"
    argv = st.driver_argv(build.ensure_built(openmpi)) + ["--sweep", "--member", member]
    whole = st.run_launch_lines(openmpi, 3, argv, proof.MEMBER_TIMEOUT_S, idle=proof.MEMBER_IDLE_S)
    classes = next(json.loads(line)["classes"] for line in whole if '"type":"classes"' in line)
    assert classes == ["separate/none/any/0-15B", "separate/none/any/16-2047B",
                       "separate/none/any/2048-65535B", "separate/none/any/65536B+",
                       "in_place/none/any/0-15B", "in_place/none/any/16-2047B",
                       "in_place/none/any/2048-65535B", "in_place/none/any/65536B+"]
    by_class = st.run_launch_lines(openmpi, 3, argv + ["--by-class", classes[0]],
                                   proof.MEMBER_TIMEOUT_S, idle=proof.MEMBER_IDLE_S)
    assert proof.class_progress(by_class) == (classes, None)
    started = [json.loads(line)["class"] for line in by_class if '"type":"class"' in line]
    assert started == classes
    tested, failed = _verdict(by_class, member)
    assert (tested, failed) == _verdict(whole, member)
    assert tested == set(classes)
    assert failed == {c for c in classes if c.startswith("in_place/")}
    # resumed after the fourth class: only the in-place ones
    rest = st.run_launch_lines(openmpi, 3, argv + ["--by-class", classes[4]],
                               proof.MEMBER_TIMEOUT_S, idle=proof.MEMBER_IDLE_S)
    assert proof.class_progress(rest) == (classes[4:], None)
    assert _verdict(rest, member) == (set(classes[4:]), set(classes[4:]))


class _Spy:
    """The real launches, recorded: each member launch's arguments after the member and the
    silence it was allowed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, member: str) -> None:
        self.member, self.launches = member, []
        self.real = st.run_launch_lines
        monkeypatch.setattr(st, "run_launch_lines", self)

    def __call__(self, lib, nprocs, argv, timeout, on_progress=None, launch_env=None, idle=None):
        if self.member in argv:
            self.launches.append((list(argv[argv.index(self.member) + 1:]), idle))
        return self.real(lib, nprocs, argv, timeout, on_progress, launch_env, idle)


@pytest.mark.mpich
def test_a_hanging_member_is_judged_by_its_silence_and_resumed(mpich: MpiLibrary, monkeypatch):
    """MPICH 5.0.2's persistent bcast tsp_scatterv_ring_allgatherv: MPI_Wait fails on one rank,
    the other waits forever, in each class below 64 KiB; from 64 KiB on it gives the default's
    bytes. Its launch is stopped after MEMBER_IDLE_S of silence, its classes are then run in
    order, each hung class stopped after MEMBER_HUNG_IDLE_S and the next launch starting after
    it: 5 launches (before: 1 + 4, each hung one 60 s)."""
    member = "lib:bcast:tsp_scatterv_ring_allgatherv#persistent"
    spy = _Spy(monkeypatch, member)
    result = proof.prove(mpich, only=[member])
    m = result.members[member]
    assert m.passed == ["separate/none/any/65536B+"]
    assert sorted(m.failed) == ["separate/none/any/0-15B", "separate/none/any/16-2047B",
                                "separate/none/any/2048-65535B"]
    for cls in m.failed:
        assert m.evidence[cls].startswith("hung on 2 ranks: "), m.evidence[cls]
        assert "; first: refused on rank " in m.evidence[cls]
    assert spy.launches == [
        ([], proof.MEMBER_IDLE_S),
        (["--by-class", "separate/none/any/0-15B"], proof.MEMBER_HUNG_IDLE_S),
        (["--by-class", "separate/none/any/16-2047B"], proof.MEMBER_HUNG_IDLE_S),
        (["--by-class", "separate/none/any/2048-65535B"], proof.MEMBER_HUNG_IDLE_S),
        (["--by-class", "separate/none/any/65536B+"], proof.MEMBER_HUNG_IDLE_S)]


@pytest.mark.mpich
def test_a_crashing_member_resumes_after_the_class_it_crashed_in(mpich: MpiLibrary, monkeypatch):
    """MPICH 5.0.2's persistent reduce tsp_tree aborts ("Internal error", gentran) in 46 of its
    72 tested classes: one launch per crashed class plus the first and the last (before: one per
    class, 120), and the verdicts a launch per class gives (checked for two classes)."""
    member = "lib:reduce:tsp_tree#persistent"
    spy = _Spy(monkeypatch, member)
    result = proof.prove(mpich, only=[member])
    m = result.members[member]
    bands = result.fmt.bands
    assert sorted(proof.compress(m.failed, bands)) == [
        "in_place/builtin/float", "in_place/builtin/int/0-15B", "in_place/builtin/int/16-2047B",
        "in_place/builtin/int/2048-65535B", "in_place/builtin/int16", "in_place/builtin/int8",
        "in_place/builtin/other/0-15B", "in_place/builtin/other/16-2047B",
        "in_place/user_commutative/int/0-15B", "in_place/user_commutative/int/16-2047B",
        "in_place/user_commutative/int/2048-65535B", "in_place/user_commutative/other/0-15B",
        "in_place/user_commutative/other/16-2047B", "in_place/user_commutative/other/2048-65535B",
        "separate/builtin/float", "separate/builtin/int/0-15B", "separate/builtin/int/16-2047B",
        "separate/builtin/int/2048-65535B", "separate/builtin/int16", "separate/builtin/int8",
        "separate/builtin/other/0-15B", "separate/builtin/other/16-2047B",
        "separate/user_commutative/int/0-15B", "separate/user_commutative/int/16-2047B",
        "separate/user_commutative/int/2048-65535B", "separate/user_commutative/other/0-15B",
        "separate/user_commutative/other/16-2047B", "separate/user_commutative/other/2048-65535B"]
    assert sorted(proof.compress(m.passed, bands)) == [
        "in_place/builtin/int/65536B+", "in_place/builtin/other/2048-65535B",
        "in_place/builtin/other/65536B+", "in_place/user_commutative/int/65536B+",
        "in_place/user_commutative/other/65536B+", "in_place/user_noncommutative/int",
        "in_place/user_noncommutative/other", "separate/builtin/int/65536B+",
        "separate/builtin/other/2048-65535B", "separate/builtin/other/65536B+",
        "separate/user_commutative/int/65536B+", "separate/user_commutative/other/65536B+",
        "separate/user_noncommutative/int", "separate/user_noncommutative/other"]
    assert len(m.failed) == 46 and len(m.tested) == 72
    assert re.fullmatch(r"crashed on 2 ranks: Abort\(1\) on node [01]: Internal error",
                        m.evidence["separate/builtin/int8/0-15B"])
    classes = proof._classes_of(mpich, st.driver_argv(build.ensure_built(mpich)), member)
    crashed = [c for c in classes if m.evidence.get(c, "").startswith("crashed on 2 ranks")]
    assert crashed == [c for c in classes if c in m.failed]
    resumed = [classes[0]] + [classes[classes.index(c) + 1] for c in crashed
                              if c != classes[-1]]
    assert spy.launches == [([], proof.MEMBER_IDLE_S)] + [
        (["--by-class", c], proof.MEMBER_IDLE_S) for c in resumed]
    # the old way, a launch for one class: the same verdicts
    argv = st.driver_argv(build.ensure_built(mpich)) + ["--sweep", "--member", member]
    with pytest.raises(st.SelftestError) as crash:
        spy.real(mpich, 2, argv + ["--classes", "separate/builtin/int/0-15B"],
                 proof.MEMBER_TIMEOUT_S, idle=proof.MEMBER_IDLE_S)
    assert not crash.value.hung
    alone = spy.real(mpich, 2, argv + ["--classes", "separate/builtin/int/65536B+"],
                     proof.MEMBER_TIMEOUT_S, idle=proof.MEMBER_IDLE_S)
    assert _verdict(alone, member) == ({"separate/builtin/int/65536B+"}, set())
