"""`colltune run` sits in front of every launch: it imports only what it needs and checks the
build without reading the sources (issue 14, defect 6; timings in benchmarks/frontend_start)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from colltune import paths
from colltune.mpi import build
from colltune.mpi import libraries as mpi

HEAVY = ("pandas", "duckdb", "scipy", "matplotlib", "pydantic", "numpy", "rich")


def test_run_imports_no_heavy_package(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                      tmp_path: Path) -> None:
    """The whole `colltune run --dry-run` path, in a fresh interpreter, as the entry point runs it."""
    code = (
        "import sys\n"
        "from colltune.cli import main\n"
        f"main(['run', '--dry-run', '--', {str(openmpi.mpiexec)!r}, '-n', '2', './app'], standalone_mode=False)\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(build.__file__).parents[2])})
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith(f"{openmpi.mpiexec} -x LD_PRELOAD={openmpi_build.libcolltune.resolve()}")
    assert lines[-1] == "[]"


def test_help_still_lists_every_subcommand() -> None:
    from click.testing import CliRunner

    from colltune.cli import SUBCOMMANDS, main

    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].strip().splitlines()]
    # a name whose module this checkout lacks (being written elsewhere) is not listed
    commands = Path(build.__file__).parents[1] / "commands"
    assert listed == [name for name in SUBCOMMANDS if (commands / f"{name}.py").exists()]
    assert {"check", "bench", "run", "mpi"} <= set(listed)


@pytest.fixture
def native_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of native/ and an empty cache, so touching files disturbs no one."""
    copy = tmp_path / "native"
    shutil.copytree(paths.native_dir(), copy)
    monkeypatch.setattr(build, "native_dir", lambda: copy)
    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path / "cache"))
    return copy


def _fake_build(lib: mpi.MpiLibrary, **info: str) -> Path:
    directory = build.build_dir(lib)
    directory.mkdir(parents=True)
    (directory / "build.json").write_text(json.dumps({"family": lib.family, **info}))
    return directory / "build.json"


def test_build_check_reads_no_source_when_the_stamp_matches(
        openmpi: mpi.MpiLibrary, native_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = _fake_build(openmpi, source_hash=build.source_hash())
    assert build.current(openmpi) == build._artifacts(build.build_dir(openmpi), "openmpi")
    assert json.loads(info.read_text())["source_stamp"] == build.source_stamp()

    def no_reading(self: Path) -> bytes:
        raise AssertionError(f"read {self}")

    monkeypatch.setattr(Path, "read_bytes", no_reading)
    assert build.current(openmpi) is not None


def test_touched_sources_keep_the_build_and_changed_ones_do_not(
        openmpi: mpi.MpiLibrary, native_copy: Path) -> None:
    info = _fake_build(openmpi, source_hash=build.source_hash(), source_stamp="stale")
    header = native_copy / "include" / "colltune.h"
    os.utime(header, ns=(1, 1))  # same bytes, new time: same hash, new stamp
    assert build.current(openmpi) is not None
    assert json.loads(info.read_text())["source_stamp"] == build.source_stamp()
    header.write_text(header.read_text() + "\n/* changed */\n")
    assert build.current(openmpi) is None
