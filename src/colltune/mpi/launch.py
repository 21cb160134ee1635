"""Command lines that start MPI programs, per MPI library (and srun on Slurm clusters).

Settings meant for the ranks (LD_PRELOAD, COLLTUNE_*) are given to the ranks only: a global
LD_PRELOAD would load the interposer into the launcher and every helper process too.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence

from colltune.mpi.libraries import MpiLibrary


def use_srun() -> bool:
    """Launch with srun inside a Slurm allocation unless COLLTUNE_LAUNCHER says otherwise."""
    choice = os.environ.get("COLLTUNE_LAUNCHER", "auto")
    if choice in ("srun", "mpiexec"):
        return choice == "srun"
    return "SLURM_JOB_ID" in os.environ and shutil.which("srun") is not None


# Slurm's PMI plugin each library starts under (Debian 12's Slurm 22.05, measured: MPI-NOTES.md
# "Slurm on one host"). Open MPI 5 and 4.1 speak PMIx only; MPICH (pip 5.0.2, Debian 4.0.2) PMI-2
# only (it aborts under pmix); Intel MPI both. The wrong plugin or none (Slurm's default
# MpiDefault=none) starts N singletons of world size 1 without an error.
SRUN_MPI_PLUGIN = {"openmpi": "pmix", "mpich": "pmi2", "intel": "pmi2"}


def srun_mpi_flags(lib: MpiLibrary, given: Sequence[str]) -> list[str]:
    """`--mpi=<plugin>` for srun, unless the user chose one: a --mpi flag among `given`, or
    SLURM_MPI_TYPE (which srun reads itself)."""
    if os.environ.get("SLURM_MPI_TYPE") or any(a == "--mpi" or a.startswith("--mpi=") for a in given):
        return []
    return [f"--mpi={srun_plugin(lib)}"]


def srun_plugin(lib: MpiLibrary) -> str:
    return SRUN_MPI_PLUGIN.get(lib.name, "pmix" if lib.family == "openmpi" else "pmi2")


def rank_env_flags(lib: MpiLibrary, rank_env: Mapping[str, str]) -> list[str]:
    """mpiexec flags that set `rank_env` in the ranks only."""
    flags: list[str] = []
    for key, value in rank_env.items():
        if lib.family == "openmpi":
            flags += ["-x", f"{key}={value}"]
        else:  # MPICH and Intel MPI (Hydra)
            flags += ["-genv", key, str(value)]
    return flags


def placement_flags(lib: MpiLibrary, nprocs: int) -> list[str]:
    """Let more ranks than cores run, and do not pin them: this is a measuring tool, the
    user's own mapping goes in through COLLTUNE_MPIEXEC_FLAGS."""
    if lib.family == "openmpi":
        return ["--oversubscribe", "--bind-to", "none"]
    if lib.name == "mpich":
        return ["-bind-to", "none"]
    return []


def mpiexec_argv(
    lib: MpiLibrary,
    nprocs: int,
    argv: Sequence[str],
    rank_env: Mapping[str, str] | None = None,
    extra_flags: Sequence[str] = (),
) -> list[str]:
    """The full command line starting `argv` on `nprocs` ranks with `rank_env` in the ranks."""
    rank_env = dict(rank_env or {})
    user_flags = os.environ.get("COLLTUNE_MPIEXEC_FLAGS", "").split()
    if use_srun():
        exports = ",".join(["ALL", *(f"{k}={v}" for k, v in rank_env.items())])
        return ["srun", "-n", str(nprocs), f"--export={exports}",
                *srun_mpi_flags(lib, [*user_flags, *extra_flags]), *user_flags, *extra_flags, *argv]
    return [
        str(lib.mpiexec),
        "-n", str(nprocs),
        *placement_flags(lib, nprocs),
        *rank_env_flags(lib, rank_env),
        *user_flags,
        *extra_flags,
        *argv,
    ]


def launcher_env(lib: MpiLibrary, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment of the launcher process itself."""
    env = dict(os.environ if base is None else base)
    env.update(lib.env)
    env.pop("LD_PRELOAD", None)  # never into the launcher
    if lib.family == "openmpi":
        # Containers and CI run as root; Open MPI refuses that unless told it is intended.
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        # Ranks outnumbering cores must yield the CPU rather than spin.
        env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    return env


def run(
    lib: MpiLibrary,
    nprocs: int,
    argv: Sequence[str],
    rank_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    extra_flags: Sequence[str] = (),
    capture: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run an MPI program and wait for it (stdin closed so a rank never waits on a terminal)."""
    return subprocess.run(
        mpiexec_argv(lib, nprocs, argv, rank_env, extra_flags),
        env=launcher_env(lib),
        capture_output=capture,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _die_with_parent() -> Callable[[], None] | None:
    """For the child between fork and exec: get SIGTERM when colltune dies, however it dies
    (Linux PR_SET_PDEATHSIG; SIGKILL and the out-of-memory killer included), so a killed front
    end leaves no launch behind measuring for nobody. mpiexec and srun pass SIGTERM to the
    ranks. It fires when the thread that started the launch ends: start launches from a thread
    that outlives them (colltune starts them from the main thread)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def arm() -> None:
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # died before the line above took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def popen(
    lib: MpiLibrary,
    nprocs: int,
    argv: Sequence[str],
    rank_env: Mapping[str, str] | None = None,
    extra_flags: Sequence[str] = (),
) -> subprocess.Popen[str]:
    """Start an MPI program whose stdout is read as it streams (the benchmark's records)."""
    return subprocess.Popen(
        mpiexec_argv(lib, nprocs, argv, rank_env, extra_flags),
        env=launcher_env(lib),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # Ctrl-C reaches us first; we stop the launch ourselves
        preexec_fn=_die_with_parent(),
    )
