"""The proof gate (issue 22): nothing serves a call before it passed, on this library, in that
kind of call. Regression tests of the two Open MPI 5.0.11 bugs an application met under the
learning mode (in-place allgather by sparbit; 8-bit sums that differ by algorithm), and the
mechanism on MPICH."""

from __future__ import annotations

from pathlib import Path

import pytest

from colltune import interposer
from colltune.measure import proof
from colltune.mpi import build, runenv

from interposer_support import run_mpi

PROGRAM = Path(__file__).parent / "programs" / "proof_calls.c"
HASHES = Path(__file__).parent / "programs" / "reduction_hashes.c"


def _proof(art: build.Artifacts) -> Path:
    return art.dir / proof.PROOF_FILE


def test_sparbit_refused_in_place_only(openmpi_build):
    passed = proof.read_passed(_proof(openmpi_build))
    failed = proof.failed_members(_proof(openmpi_build))
    assert failed["lib:allgather:sparbit"] == ["in_place/none/any"]
    assert passed["lib:allgather:sparbit"] == {"separate/none/any"}
    assert passed["lib:allgather:ring"] == {"separate/none/any", "in_place/none/any"}
    text = _proof(openmpi_build).read_text()
    assert "fail lib:allgather:sparbit in_place/none/any result on rank" in text
    assert "# library finding: 8-bit MPI_SUM does not wrap modulo 256" in text


def test_integer_members_refused_for_8bit_sums(openmpi_build):
    failed = proof.failed_members(_proof(openmpi_build))
    passed = proof.read_passed(_proof(openmpi_build))
    text = _proof(openmpi_build).read_text()
    assert "# library finding: 16-bit MPI_SUM does not wrap modulo 65536" in text
    assert "\nsizes 1,2,3\n" in text
    # ring and rabenseifner split the vector otherwise than the default: refused for 8-bit sums
    # from 16 bytes on (op/avx's vector loops), proven below that and for wider integers.
    for member in ("lib:allreduce:ring", "lib:allreduce:rabenseifner"):
        assert "separate/builtin/int8/16-2047B" in failed[member]
        assert "separate/builtin/int8/0-15B" in passed[member]
        assert "separate/builtin/int" in passed[member]
    # the 16 members issue 37 found passed for 8-bit sums differ from 16 bytes on
    assert "separate/builtin/int8/16-2047B" in failed["allreduce_as_reduce_bcast"]
    assert "separate/builtin/int8/16-2047B" in failed["lib:reduce:binomial"]


def test_proof_format_is_checked(openmpi_build, tmp_path):
    assert proof.is_current(_proof(openmpi_build))
    old = tmp_path / "proof.txt"
    old.write_text("colltune-proof 1\nmember lib:allreduce:ring passed separate/builtin/int8\n")
    assert not proof.is_current(old)


def test_compress_drops_a_band_only_when_all_passed():
    bands = ["0-15B", "16-2047B", "2048-65535B", "65536B+"]
    full = [f"separate/builtin/int/{b}" for b in bands]
    out = proof.compress([*full, "in_place/builtin/int8/0-15B"], bands)
    assert out == {"in_place/builtin/int8/0-15B": ["in_place/builtin/int8/0-15B"],
                   "separate/builtin/int": sorted(full)}


def _hashes(out: str) -> set[str]:
    return {line.split()[3] for line in out.splitlines() if line.startswith("rank ")}


def _errors(out: str) -> list[int]:
    return [int(line.split()[5]) for line in out.splitlines() if line.startswith("rank ")]


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_learning_with_every_call_exploring_keeps_results(openmpi, openmpi_build, tmp_path, seed):
    exe = build.compile_program(openmpi, [PROGRAM], tmp_path / "proof_calls")
    plain = run_mpi(openmpi, 4, [exe], {})
    assert plain.returncode == 0, plain.describe()
    env = runenv.rank_environment(openmpi, openmpi_build, verbose=True)
    env.update(COLLTUNE_SELECT="-", COLLTUNE_SELECT_SEED=seed,
               COLLTUNE_SELECT_BUDGET="1000000000", COLLTUNE_SELECT_CELL_BUDGET="1000000000")
    learned = run_mpi(openmpi, 4, [exe], env)
    assert learned.returncode == 0, learned.describe()
    assert len(_hashes(plain.stdout)) == 1
    assert _hashes(learned.stdout) == _hashes(plain.stdout), learned.describe()
    assert _errors(learned.stdout) == [0, 0, 0, 0]
    # library members were still drawn where proven; draws of an unproven (member, class) pair
    # were drawn again (sparbit for in-place allgathers), so no explored call was refused
    rows = [line.split()[1:] for line in learned.stderr.splitlines()
            if line.startswith("colltune:   ")]
    served = {(r[0], r[2]) for r in rows if r[1] == "explore" and r[3] == "applied"}
    assert ("allgather", "lib:allgather:sparbit") in served
    assert ["allgather", "explore", "lib:allgather:sparbit", "redrawn:unproven"] in [r[:4] for r in rows]
    assert not [r for r in rows if r[1] == "explore" and r[3] == "not-applicable:unproven"]


def test_reduction_hashes_under_every_call_exploring(openmpi, openmpi_build, tmp_path):
    """Issue 37's program, short: 8-bit, int and float reductions of overflowing and rounding
    data at counts 1-70,000, separate and in place, hashed per call: identical to a plain run
    with every call exploring (benchmarks/proof/README.md has 240 rounds, seeds 1-3, 3-5 ranks)."""
    exe = build.compile_program(openmpi, [HASHES], tmp_path / "reduction_hashes")
    plain = run_mpi(openmpi, 4, [exe, "40", "7"], {})
    assert plain.returncode == 0, plain.describe()
    env = runenv.rank_environment(openmpi, openmpi_build, verbose=True)
    env.update(COLLTUNE_SELECT="-", COLLTUNE_SELECT_SEED="2",
               COLLTUNE_SELECT_BUDGET="1000000000", COLLTUNE_SELECT_CELL_BUDGET="1000000000")
    learned = run_mpi(openmpi, 4, [exe, "40", "7"], env)
    assert learned.returncode == 0, learned.describe()
    calls = [line for line in plain.stdout.splitlines() if line.startswith("call ")]
    assert len(calls) == 200
    assert [line for line in learned.stdout.splitlines() if line.startswith("call ")] == calls
    assert sorted(line for line in learned.stdout.splitlines() if line.startswith("rank ")) == \
        sorted(line for line in plain.stdout.splitlines() if line.startswith("rank "))
    rows = _rows(learned.stderr)
    # members still served reductions (the wide-integer classes they are proven in)
    assert [r for r in rows if r[1] == "explore" and r[2].startswith("lib:") and r[3] == "applied"]


def test_fuzzer_finds_differences_only_where_the_proof_refuses(openmpi, openmpi_build):
    """The differential fuzzer, briefly: seeded random cases of the mock-ups and two library
    algorithms against the default; every difference it finds is in a class the proof refused
    (a hole would be a case for the proof's matrix: benchmarks/proof/fuzz.py runs it longer)."""
    report = proof.fuzz(openmpi, seed=5, cases=150, nprocs=3,
                        only=["lib:allreduce:ring", "lib:allgather:sparbit"])
    assert report.launches == 3 and report.tried == 450
    found = report.differences()
    assert "lib:allreduce:ring" in found   # 8-bit, 16-bit and float sums: another order
    assert report.holes(proof.read_passed(_proof(openmpi_build))) == {}


def test_no_proof_means_pass_through(openmpi, openmpi_build, tmp_path):
    exe = build.compile_program(openmpi, [PROGRAM], tmp_path / "proof_calls")
    env = runenv.rank_environment(openmpi, openmpi_build, verbose=True,
                                  force="allgather=allgather_as_allgatherv")
    env["COLLTUNE_PROOF"] = str(tmp_path / "missing.txt")
    run = run_mpi(openmpi, 2, [exe], env)
    assert run.returncode == 0, run.describe()
    assert "warning: no proof for this library" in run.stderr
    assert "allgather_as_allgatherv is not proven on this library" in run.stderr
    assert "applied" not in [line.split()[-1] for line in run.stderr.splitlines()
                             if "allgather_as_allgatherv" in line and "applied" in line]


@pytest.mark.mpich
def test_mpich_proof_names_its_failures(mpich_build):
    failed = proof.failed_members(_proof(mpich_build))
    passed = proof.read_passed(_proof(mpich_build))
    # MPICH 5.0.2's k_brucks alltoall loses data when ranks pass different layouts of one
    # signature (the vector on even ranks, 2 ints on odd ones): refused there in every band; in
    # place proven below 16 bytes (above, MPICH itself refuses the forced algorithm in place).
    assert failed["lib:alltoall:k_brucks"] == ["separate/none/any"]
    assert passed["lib:alltoall:k_brucks"] == {"in_place/none/any/0-15B"}
    assert passed["lib:allreduce:recursive_doubling"]


@pytest.mark.mpich
def test_selftest_command_lists_members_with_refused_classes(mpich_build):
    from click.testing import CliRunner

    from colltune.cli import main

    result = CliRunner().invoke(main, ["selftest", "--mpi", "mpich", "-n", "2", "--quiet",
                                       "--no-big"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "proof: MPICH 5.0.2, ranks 2" in result.output
    row = next(line for line in result.output.splitlines() if "lib:alltoall:k_brucks" in line)
    assert "separate/none/any" in row
    assert "result on rank" in result.output
    assert f"proof written to {mpich_build.dir / proof.PROOF_FILE}" in result.output.replace("\n", "")


def _rows(stderr: str) -> list[list[str]]:
    return [line.split()[1:] for line in stderr.splitlines() if line.startswith("colltune:   ")]


def test_forced_library_member_serves_only_where_proven(openmpi, openmpi_build, tmp_path):
    """COLLTUNE_FORCE names a library algorithm (issue 22: a user reproduces any member): sparbit
    serves the separate-buffer allgathers, the in-place ones go to the library (results as
    plain), and the 8-bit sums forced to ring go to the library too."""
    exe = build.compile_program(openmpi, [PROGRAM], tmp_path / "proof_calls")
    plain = run_mpi(openmpi, 4, [exe], {})
    env = interposer.rank_environment(openmpi, openmpi_build, verbose=True,
                                      force="allgather=lib:allgather:sparbit,"
                                            "allreduce=lib:allreduce:ring")
    forced = run_mpi(openmpi, 4, [exe], env)
    assert forced.returncode == 0, forced.describe()
    assert _hashes(forced.stdout) == _hashes(plain.stdout)
    assert _errors(forced.stdout) == [0, 0, 0, 0]
    rows = [r[:5] for r in _rows(forced.stderr)]
    assert ["allgather", "force", "lib:allgather:sparbit", "applied", "50"] in rows
    assert ["allgather", "force", "lib:allgather:sparbit", "not-applicable:unproven", "50"] in rows
    assert ["allreduce", "force", "lib:allreduce:ring", "not-applicable:unproven", "200"] in rows
    assert "lib:allgather:sparbit is not proven on this library for in_place/none/any/" \
        in forced.stderr


def test_force_of_unknown_library_member_names_the_choices(openmpi, openmpi_build):
    from colltune.mpi.libraries import MpiError

    with pytest.raises(MpiError, match=r"unknown variant 'lib:allgather:nope'.*lib:allgather:ring"):
        interposer.rank_environment(openmpi, openmpi_build, force="allgather=lib:allgather:nope")


def test_runtime_refuses_unknown_library_member(openmpi, openmpi_build, tmp_path):
    exe = build.compile_program(openmpi, [PROGRAM], tmp_path / "proof_calls")
    env = runenv.rank_environment(openmpi, openmpi_build)
    env["COLLTUNE_FORCE"] = "bcast=lib:bcast:nope"
    run = run_mpi(openmpi, 2, [exe], env)
    assert run.returncode != 0
    assert "COLLTUNE_FORCE: unknown variant 'lib:bcast:nope' for bcast" in run.stderr
    assert "lib:bcast:binomial" in run.stderr


@pytest.mark.mpich
def test_forced_library_member_on_mpich(mpich, mpich_build, tmp_path):
    exe = build.compile_program(mpich, [PROGRAM], tmp_path / "proof_calls")
    plain = run_mpi(mpich, 2, [exe], {})
    env = interposer.rank_environment(mpich, mpich_build, verbose=True,
                                      force="allgather=lib:allgather:ring,allreduce=lib:allreduce:ring")
    forced = run_mpi(mpich, 2, [exe], env)
    assert forced.returncode == 0, forced.describe()
    assert _hashes(forced.stdout) == _hashes(plain.stdout)
    assert _errors(forced.stdout) == [0, 0]
    rows = [r[:5] for r in _rows(forced.stderr)]
    assert ["allgather", "force", "lib:allgather:ring", "applied", "100"] in rows
    assert ["allreduce", "force", "lib:allreduce:ring", "applied", "200"] in rows


@pytest.mark.mpich
def test_preloaded_library_leaves_mpich_float_sums_alone(mpich, mpich_build, tmp_path):
    """MPICH 5.0.2 switches a communicator's node-level algorithms after 5 collective calls
    (MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD), which changes the bits of float sums: libcolltune's
    own agreement at MPI_Init ran on MPI_COMM_WORLD and made the application's switch come a
    call early (calls 5 and 15 of this program differed at 4 ranks, pass-through alone). It now
    runs on a private duplicate, so every call's hash is the plain run's."""
    exe = build.compile_program(mpich, [HASHES], tmp_path / "reduction_hashes")
    plain = run_mpi(mpich, 4, [exe, "20", "1"], {})
    assert plain.returncode == 0, plain.describe()
    preloaded = run_mpi(mpich, 4, [exe, "20", "1"],
                        runenv.rank_environment(mpich, mpich_build, verbose=True))
    assert preloaded.returncode == 0, preloaded.describe()
    calls = [line for line in plain.stdout.splitlines() if line.startswith("call ")]
    assert len(calls) == 100
    assert [line for line in preloaded.stdout.splitlines() if line.startswith("call ")] == calls


@pytest.mark.mpich
def test_learning_on_mpich_waits_for_the_library_warmup(mpich, mpich_build, tmp_path):
    """Issue 37: under every-call exploration (seed 2, 4 ranks) members served among the first
    calls moved MPICH's count of node-level collectives (MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD), so
    call 15, an Allreduce of 505 floats that the library served itself, took the other algorithm
    than in the plain run. With the warm-up every call's hash is the plain run's; without it
    (COLLTUNE_LIBRARY_WARMUP=0) that call differs again, so the test can fail."""
    exe = build.compile_program(mpich, [HASHES], tmp_path / "reduction_hashes")
    plain = run_mpi(mpich, 4, [exe, "40", "1"], {})
    assert plain.returncode == 0, plain.describe()
    calls = [line for line in plain.stdout.splitlines() if line.startswith("call ")]
    assert len(calls) == 200

    def explored(warmup: str) -> list[str]:
        env = runenv.rank_environment(mpich, mpich_build, verbose=True)
        env.update(COLLTUNE_SELECT="-", COLLTUNE_SELECT_SEED="2", COLLTUNE_SELECT_BUDGET="1000000000",
                   COLLTUNE_SELECT_CELL_BUDGET="1000000000", COLLTUNE_LIBRARY_WARMUP=warmup)
        run = run_mpi(mpich, 4, [exe, "40", "1"], env)
        assert run.returncode == 0, run.describe()
        if warmup == "auto":  # the first 5 counted calls on MPI_COMM_WORLD, and what lies between
            assert run.counts["allreduce", "none", "library", "library:warmup"] == 3, run.describe()
            assert run.counts["reduce", "none", "library", "library:warmup"] == 2, run.describe()
            assert run.counts["allgather", "none", "library", "library:warmup"] == 2, run.describe()
        return [line for line in run.stdout.splitlines() if line.startswith("call ")]

    assert explored("auto") == calls
    without = explored("0")
    assert [(a, b) for a, b in zip(without, calls, strict=True) if a != b][0][1].startswith(
        "call 15 allreduce float 505 ")
