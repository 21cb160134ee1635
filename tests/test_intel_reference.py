"""Where the proof of an algorithm fixed per launch (Intel MPI) keeps the library's results.

Such a member is proven in two launches: one without its setting writes the library's results,
a file per rank (--reference-out), the one with it reads them back (--reference-in). Each rank
opens its own file wherever it runs, so on several nodes the directory must be one they share:
the build's directory by default (every rank already runs the driver from it), else
`colltune selftest --reference-dir` or COLLTUNE_REFERENCE_DIR; never the front end's /tmp. A
directory that cannot be written is a clear error before any launch, and a rank that cannot
open its file says so with its rank and host instead of failing the member.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from colltune.commands import selftest as selftest_cmd
from colltune.measure import proof
from colltune.measure import selftest as st
from colltune.mpi import build, launch
from colltune.mpi import libraries as mpi

MEMBER = "lib:barrier:1"


def _unwritable(tmp_path: Path) -> Path:
    """A directory no one can make, root included: its parent is a file."""
    (tmp_path / "a-file").write_text("")
    return tmp_path / "a-file" / "reference"


def test_an_unwritable_reference_directory_is_refused_with_the_fix(openmpi: mpi.MpiLibrary,
                                                                   tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bad = _unwritable(tmp_path)
    with pytest.raises(proof.ReferenceDirError) as given:
        proof.reference_root(openmpi, bad)
    text = str(given.value)
    assert text.startswith(f"cannot write the reference directory {bad} (Not a directory): ")
    assert "`colltune selftest --reference-dir DIR` (or COLLTUNE_REFERENCE_DIR=DIR)" in text
    assert "a file system they share" in text
    monkeypatch.setenv(proof.REFERENCE_DIR_ENV, str(bad))
    with pytest.raises(proof.ReferenceDirError):
        proof.reference_root(openmpi)
    good = tmp_path / "shared" / "ref"
    monkeypatch.setenv(proof.REFERENCE_DIR_ENV, str(good))
    assert proof.reference_root(openmpi) == good and good.is_dir() and not any(good.iterdir())


def test_selftest_refuses_an_unwritable_reference_dir_before_any_launch(openmpi: mpi.MpiLibrary,
                                                                       tmp_path: Path) -> None:
    bad = _unwritable(tmp_path)
    result = CliRunner().invoke(selftest_cmd.command, ["--reference-dir", str(bad), "--quiet"])
    assert result.exit_code == 2, result.output
    assert f"error: cannot write the reference directory {bad} (Not a directory)" in result.output
    assert "colltune selftest:" not in result.output   # the matrix never ran


def test_the_default_is_the_build_directory_not_tmp(openmpi: mpi.MpiLibrary,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(proof.REFERENCE_DIR_ENV, raising=False)
    assert proof.reference_root(openmpi) == build.ensure_built(openmpi).dir / "reference"



def test_an_intel_member_passes_its_results_through_the_directory_given(intel: mpi.MpiLibrary,
                                                                        tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Both launches name files in the directory given, and it is left empty."""
    launched: list[list[str]] = []
    real = st.run_launch_lines

    def recording(lib: mpi.MpiLibrary, n: int, argv: list[str], *args: Any, **kwargs: Any) -> list[str]:
        launched.append(list(argv))
        return real(lib, n, argv, *args, **kwargs)

    monkeypatch.setattr(st, "run_launch_lines", recording)
    shared = tmp_path / "shared"
    made = proof.prove(intel, (2,), only=[MEMBER], reference_dir=shared)
    assert made.members[MEMBER].tested and not made.members[MEMBER].failed, made.members[MEMBER]
    files = [argv[argv.index(flag) + 1] for argv in launched
             for flag in ("--reference-out", "--reference-in") if flag in argv]
    assert len(files) == 2 and files[0] == files[1], launched
    assert Path(files[0]).parent.parent == shared
    assert shared.is_dir() and not any(shared.iterdir())


def test_a_rank_that_cannot_open_its_file_says_which_and_where(intel: mpi.MpiLibrary, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """As a rank on another node would find no such directory: every rank names itself and its
    host, and the proof takes it for the directory's fault, not the member's."""
    art = build.ensure_built(intel)
    missing = tmp_path / "not-on-this-node" / "library"
    out = launch.run(intel, 2, [str(art.selftest), "--sweep", "--member", MEMBER,
                                "--reference-out", str(missing)], timeout=300)
    assert out.returncode != 0
    lines = [x for x in out.stderr.splitlines() if proof.REFERENCE_UNOPENED in x]
    assert lines and all(x.startswith("colltune-selftest: rank ") for x in lines), out.stderr
    rank = int(lines[0].split()[2])
    assert f"--reference-out {missing}.{rank}: No such file or directory: " in lines[0], out.stderr
    # the proof's side: the reference launch's file moved where no directory is (another node's
    # view of it) is the directory's error, with the fix, not a verdict on the member
    real = st.run_launch_lines

    def elsewhere(lib: mpi.MpiLibrary, n: int, argv: list[str], *args: Any, **kwargs: Any) -> list[str]:
        argv = [str(missing) if a.endswith("/library") else a for a in argv]
        return real(lib, n, argv, *args, **kwargs)

    monkeypatch.setattr(st, "run_launch_lines", elsewhere)
    with pytest.raises(proof.ReferenceDirError, match="a rank could not write its reference file in "):
        proof.prove(intel, (2,), only=[MEMBER], reference_dir=tmp_path / "shared")
