"""Run the application once under libcolltune's profiling mode (or with settings, for --verify)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from colltune.errors import ColltuneError
from colltune.mpi import build as build_mod
from colltune.mpi import launch, runenv
from colltune.mpi.libraries import MpiLibrary


class AdviseError(ColltuneError):
    """The application could not be profiled; the message says why and what to do."""


@dataclass(frozen=True)
class AppRun:
    returncode: int
    seconds: float        # launcher wall time (what --verify compares)


def run_app(lib: MpiLibrary, art: build_mod.Artifacts, command: Sequence[str], *,
            profile_dir: Path | None = None, profile: Path | None = None,
            extra: Mapping[str, str] | None = None, quiet: bool = False) -> AppRun:
    env = dict(runenv.rank_environment(lib, art, profile=str(profile) if profile else None))
    if profile_dir is not None:
        if profile_dir.exists():
            shutil.rmtree(profile_dir)
        profile_dir.mkdir(parents=True)
        env["COLLTUNE_PROFILE_RUN"] = str(profile_dir.resolve())
    env.update(extra or {})
    argv, launcher_extra = runenv.inject(lib, list(command), env)
    t0 = time.perf_counter()
    launcher_env = launch.launcher_env(lib, nprocs=launch.nprocs_of(command))
    proc = subprocess.run(argv, env={**launcher_env, **launcher_extra}, check=False,
                          stdout=subprocess.DEVNULL if quiet else None)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise AdviseError(f"the application exited with status {proc.returncode}: `{' '.join(command)}`; "
                          "fix the command line (it must run without colltune too)")
    return AppRun(proc.returncode, seconds)
