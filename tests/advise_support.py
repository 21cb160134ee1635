"""Helpers of the advise tests: build tests/programs/advise_*.c, run one under profiling mode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from interposer_support import Run, run_mpi

from colltune.mpi import build, runenv
from colltune.mpi.libraries import MpiLibrary

PROGRAMS = Path(__file__).resolve().parent / "programs"


def compile_advise_programs(lib: MpiLibrary, outdir: Path) -> dict[str, Path]:
    return {src.stem: build.compile_program(lib, [src], outdir / lib.name / src.stem, ["-g", "-Wextra"])
            for src in sorted(PROGRAMS.glob("advise_*.c"))}


def profiled(lib: MpiLibrary, art: build.Artifacts, nprocs: int, argv: Sequence[Path | str],
             directory: Path, extra: Mapping[str, str] | None = None, **kw) -> Run:
    env = dict(runenv.rank_environment(lib, art, **kw))
    env["COLLTUNE_PROFILE_RUN"] = str(directory)
    # every call recorded at its site (the exact path these tests count), unless a test asks for
    # the light path (tests/test_advise_light_run.py)
    env["COLLTUNE_PROFILE_RUN_LIGHT"] = "0"
    env.update(extra or {})
    run = run_mpi(lib, nprocs, [str(a) for a in argv], env)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    return run
