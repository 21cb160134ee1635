"""Run the application once: the profiling run (libcolltune's profiling mode, COLLTUNE_PROFILE_RUN), with
the advice's tuning profile and settings or without them (--verify's runs)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from colltune.errors import ColltuneError
from colltune.mpi import build as build_mod
from colltune.mpi import launch, runenv
from colltune.mpi.libraries import MpiLibrary


class AdviseError(ColltuneError):
    """The application's profiling run failed; the message says why and what to do."""


@dataclass(frozen=True)
class AppRun:
    returncode: int
    seconds: float        # launcher wall time (what --verify compares)


def run_app(lib: MpiLibrary, art: build_mod.Artifacts, command: Sequence[str], *,
            run_dir: Path | None = None, tuning_profile: Path | None = None,
            extra: Mapping[str, str] | None = None, quiet: bool = False,
            rerun: str | None = None) -> AppRun:
    """Run the application once, as a profiling run into `run_dir` if given, with libcolltune
    serving `tuning_profile` if given. `rerun`: which later run this is (--verify's), for the
    message when it fails after the first run succeeded."""
    env = dict(runenv.rank_environment(lib, art, profile=str(tuning_profile) if tuning_profile else None))
    if run_dir is not None:
        env["COLLTUNE_PROFILE_RUN"] = str(run_dir.resolve())
    env.update(extra or {})
    argv, launcher_extra = runenv.inject(lib, list(command), env)
    launcher_env = launch.launcher_env(lib, nprocs=launch.nprocs_of(command))
    if run_dir is not None and (note := script_note(command)) is not None:
        print(note, file=sys.stderr, flush=True)
    # Open MPI 5's launcher sometimes dies before any rank exists (launch.LAUNCHER_DIED): nothing
    # of the application ran, so it is started again, as every launch of colltune's own is.
    for attempt in range(1, launch.LAUNCH_ATTEMPTS + 1):
        if run_dir is not None:
            if run_dir.exists():
                shutil.rmtree(run_dir)
            run_dir.mkdir(parents=True)
        t0 = time.perf_counter()
        returncode, stderr_tail = _launch_once(argv, {**launcher_env, **launcher_extra}, quiet)
        seconds = time.perf_counter() - t0
        if returncode == 0 or not launch.launcher_died(stderr_tail) or attempt == launch.LAUNCH_ATTEMPTS:
            break
        time.sleep(launch.LAUNCH_RETRY_PAUSE_S)
    if returncode != 0 and rerun is not None:
        launcher, program = _split_program(command)
        raise AdviseError(
            f"{rerun} exited with status {returncode}, after the first run of `{shlex.join(command)}` had "
            "succeeded: the application fails when it is started again in the same directory. An application "
            "that refuses to overwrite its own output files (ExaML does) needs a wrapper as the program that "
            f"removes them first: a script fresh.sh with the lines `#!/bin/sh`, `rm -f <its output files>`, "
            f"`exec {shlex.join(program)}` (chmod +x fresh.sh), then `colltune advise --verify ... -- "
            f"{shlex.join([*launcher, './fresh.sh'])}`")
    if returncode != 0:
        raise AdviseError(f"the profiling run of the application exited with status {returncode}: "
                          f"`{shlex.join(command)}`; fix the command line (it must run without colltune too)")
    return AppRun(returncode, seconds)


STDERR_KEPT = 65536   # the last bytes of a launch's stderr that launch.launcher_died reads


def _launch_once(argv: Sequence[str], env: Mapping[str, str], quiet: bool) -> tuple[int, str]:
    """One launch: its exit status and the end of its stderr, which is passed on to colltune's
    own standard error (file descriptor 2, where it went before it was read) as it comes, so the
    user still sees the application's messages when they are written."""
    proc = subprocess.Popen(argv, env=dict(env), stdout=subprocess.DEVNULL if quiet else None,
                            stderr=subprocess.PIPE)
    stderr = proc.stderr
    assert stderr is not None
    tail = b""
    try:
        for chunk in iter(lambda: stderr.read1(65536), b""):
            tail = (tail + chunk)[-STDERR_KEPT:]
            while chunk:
                chunk = chunk[os.write(2, chunk):]
    except BaseException:   # (as subprocess.run: an interrupted colltune leaves no launch behind)
        proc.kill()
        proc.wait()
        raise
    finally:
        stderr.close()
    return proc.wait(), tail.decode(errors="replace")


def script_note(command: Sequence[str]) -> str | None:
    """What a rank script costs the profiling run, when the ranks' program is one (`#!`): the
    launcher gives the preload to the script's interpreter, which loads libcolltune and the MPI
    library it links, and every subshell the script forks carries them (OpenFOAM's bashrc, ~20
    subshells: +6.2 ms a rank, benchmarks/advise/README.md, "twentieth round")."""
    program = _split_program(command)[1]
    try:
        with open(program[0], "rb") as f:
            if f.read(2) != b"#!":
                return None
    except (OSError, IndexError):
        return None
    return (f"colltune advise: note: the ranks start a script, {program[0]}: its shell gets the profiling "
            "library and the MPI library too, and so does each command or subshell it runs (~0.1 ms each); "
            "for the cheapest profiling run put the application itself after the launcher, its environment "
            "set in the launcher's")


def _split_program(command: Sequence[str]) -> tuple[list[str], list[str]]:
    """The launcher with its options, and the program with its arguments: the program is the
    first word after the launcher that names an executable file (else the last word).

    A wrapper in its place runs on every rank: each removes the files before it execs the
    program, and no rank gets past MPI_Init (a collective startup) before every rank got there,
    so no rank's removal can reach a file another rank already wrote."""
    words = list(command)
    start = next((i for i in range(1, len(words))
                  if not words[i].startswith("-") and Path(words[i]).is_file() and os.access(words[i], os.X_OK)),
                 len(words) - 1)
    return words[:start], words[start:]
