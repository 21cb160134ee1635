"""Command lines that start MPI programs, per MPI library (and srun on Slurm clusters).

Settings meant for the ranks (LD_PRELOAD, COLLTUNE_*) are given to the ranks only: a global
LD_PRELOAD would load the interposer into the launcher and every helper process too. SimGrid
SMPI has no helper processes (all ranks live in the one process smpirun starts), so its ranks'
settings are that process's environment, and the per-launch algorithm choices among them are
also turned into smpirun's `--cfg=` flags (mpi/smpi.py).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from colltune.mpi import smpi
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
    if lib.family == "smpi":  # a simulated platform: never srun, never this host's cores
        return smpi.smpirun_argv(lib.mpiexec, nprocs, argv, {**os.environ, **rank_env},
                                 [*user_flags, *extra_flags])
    if use_srun():
        exports = ",".join(["ALL", *(f"{k}={v}" for k, v in rank_env.items())])
        # as mpiexec does: a rank that fails ends the step, instead of leaving the others
        # spinning in a collective (or in MPI_Init) for nobody
        return ["srun", "-n", str(nprocs), f"--export={exports}", "--kill-on-bad-exit=1",
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


YIELD_VAR = "OMPI_MCA_mpi_yield_when_idle"


def cores_available() -> int:
    """CPUs this process may run on: its affinity mask (taskset, a cgroup cpuset, a Slurm step),
    capped by a cgroup v2 CPU quota (`docker --cpus`), which limits time, not the mask."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, -(-int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return cores


def should_yield(nprocs: int | None) -> bool:
    """Whether Open MPI's waiting ranks should give their core away (mpi_yield_when_idle).

    Only when the ranks outnumber the cores: then a spinning rank can hold the core its partner
    needs for a whole scheduler tick. With a core per rank, yielding only makes every wait pay
    for a trip through the scheduler, and a launch that meets a third process on the node runs
    3-5x slower throughout (benchmarks/compare/README.md). `nprocs` None (a user's command line
    whose process count colltune cannot read) yields: slower beats a livelock."""
    return nprocs is None or nprocs > cores_available()


def launcher_env(lib: MpiLibrary, base: Mapping[str, str] | None = None,
                 nprocs: int | None = None, rank_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment of the launcher process itself, for a launch of `nprocs` ranks on this node.

    Open MPI's ranks are told to yield when they outnumber the cores (should_yield); otherwise
    the library decides (it yields when its launcher sees the node oversubscribed, e.g. by a
    hostfile with fewer slots). The user's own OMPI_MCA_mpi_yield_when_idle (exported, or a
    `colltune compare --config` setting) always wins. What the ranks did is read back through
    MPI_T by the bench driver (environment `cvar:mpi_yield_when_idle`, `idle_wait`)."""
    env = dict(os.environ if base is None else base)
    env.update(lib.env)
    env.pop("LD_PRELOAD", None)  # never into the launcher
    if lib.family == "smpi":  # the launcher's process is where the simulated ranks run
        env.update(rank_env or {})
        # the front end's choice, already the line's -platform/-hostfile: not a runtime setting
        env.pop(smpi.PLATFORM_VAR, None)
        env.pop(smpi.SHARED_VAR, None)  # likewise: the line's --cfg=smpi/auto-shared-malloc-thresh
    if lib.family == "openmpi":
        # Containers and CI run as root; Open MPI refuses that unless told it is intended.
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        if should_yield(nprocs):
            env.setdefault(YIELD_VAR, "1")
        # PMIx settings are read at both ends, by mpiexec's PMIx server and by each rank's client
        # (measure/startup.py FAST_START: the server then builds no shared-memory store for the job)
        env.update({k: v for k, v in (rank_env or {}).items() if k.startswith("PMIX_MCA_")})
    return env


def idle_wait(lib: MpiLibrary, env: Mapping[str, str], reported: str | None = None) -> str:
    """How the ranks of `lib` waited (for the environment table): Open MPI's `reported` MPI_T
    value of mpi_yield_when_idle when the ranks gave it, else what `env` asked for."""
    if lib.family != "openmpi":
        return "library default"
    value = reported if reported is not None else env.get(YIELD_VAR, "0")
    return "yield" if value.strip().lower() in ("1", "true", "yes") else "busy-poll"


_NPROCS_FLAGS = ("-n", "-np", "--np", "--ntasks")


def nprocs_of(argv: Sequence[str]) -> int | None:
    """The process count of a user's launcher command line (`mpiexec -n 4 ./app`, `srun
    --ntasks=4 ./app`), or None when it names none (a hostfile or a Slurm allocation decides)
    or runs several programs (MPMD `:`). colltune cannot tell the launcher's options from the
    program's, so a count given to the program (`./app -n 1000`) counts too: the largest is
    taken, which can only make ranks yield when they need not, never spin when they should not."""
    found: list[int] = []
    words = list(argv[1:])
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if word == ":":
            return None
        if flag in _NPROCS_FLAGS:
            value = value if eq else (words[i + 1] if i + 1 < len(words) else "")
        elif re.fullmatch(r"-n\d+", word):  # srun -n4
            value = word[2:]
        else:
            continue
        if not value.isdigit():
            return None
        found.append(int(value))
    return max(found) if found else None


_HOSTS_FLAGS = ("-H", "--host", "-host", "--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f",
                "-hosts", "--map-by", "-ppn", "--ppn", "-npernode", "--npernode")


def _flag_value(words: Sequence[str], names: Sequence[str]) -> str | None:
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if flag in names:
            return value if eq else (words[i + 1] if i + 1 < len(words) else None)
    return None


def planned_layout(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[int, tuple[int, int]] | None:
    """(nprocs, (nodes, ranks per node)) that a launcher line asks for, or None when colltune
    cannot tell: srun's -n/-N/--ntasks-per-node (with the allocation's SLURM_NNODES and
    SLURM_NTASKS for what the line leaves out; block distribution), mpiexec on this host only
    when no host option is given and no Slurm allocation surrounds it."""
    env = os.environ if environ is None else environ
    if not argv:
        return None
    words = list(argv[1:])
    nprocs = nprocs_of(argv)
    if os.path.basename(argv[0]) == "srun":
        if nprocs is None and str(env.get("SLURM_NTASKS", "")).isdigit():
            nprocs = int(env["SLURM_NTASKS"])
        nodes_text = _flag_value(words, ("-N", "--nodes")) or env.get("SLURM_NNODES")
        per_node = _flag_value(words, ("--ntasks-per-node",))
        if nprocs is None or (nodes_text is None and per_node is None):
            return None
        if (nodes_text is not None and not nodes_text.isdigit()) or (per_node is not None and not per_node.isdigit()):
            return None  # a range of nodes (-N 2-4): Slurm decides
        nodes = int(nodes_text) if nodes_text else -(-nprocs // int(per_node or 1))
        nodes = min(nodes, nprocs)
        return nprocs, (nodes, int(per_node) if per_node else -(-nprocs // nodes))
    if nprocs is None or "SLURM_JOB_ID" in env or any(w.partition("=")[0] in _HOSTS_FLAGS for w in words):
        return None
    return nprocs, (1, nprocs)


def run(
    lib: MpiLibrary,
    nprocs: int,
    argv: Sequence[str],
    rank_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    extra_flags: Sequence[str] = (),
    capture: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run an MPI program and wait for it (stdin closed so a rank never waits on a terminal).
    When the launcher itself died before any rank ran (LAUNCHER_DIED, captured output only), it
    is started again, LAUNCH_ATTEMPTS times at most: nothing ran, so a second start changes
    nothing but the outcome."""
    attempt = 1
    while True:
        proc = subprocess.run(
            mpiexec_argv(lib, nprocs, argv, rank_env, extra_flags),
            env=launcher_env(lib, nprocs=nprocs, rank_env=rank_env),
            capture_output=capture,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if proc.returncode == 0 or not capture or not launcher_died(proc.stderr) or attempt == LAUNCH_ATTEMPTS:
            return proc
        attempt += 1
        time.sleep(LAUNCH_RETRY_PAUSE_S)


# Open MPI 5's launcher (PRRTE) sometimes fails to start its PMIx listener on a loaded machine,
# before any rank exists (seen in CI: 1 launch in ~2,000; the PMIx and Open MPI trackers report it
# as transient). Nothing of the program ran, so it is safe to start it again.
LAUNCHER_DIED = ("The PMIx server's listener thread failed to start",)
LAUNCH_ATTEMPTS = 3
LAUNCH_RETRY_PAUSE_S = 0.5


def launcher_died(stderr: str) -> bool:
    """Whether a failed launch's stderr says the launcher died before starting any rank."""
    return any(text in stderr for text in LAUNCHER_DIED)


def _die_with_parent() -> Callable[[], None] | None:
    """For the child between fork and exec: get SIGTERM when colltune dies, however it dies
    (Linux PR_SET_PDEATHSIG; SIGKILL and the out-of-memory killer included), so a killed front
    end leaves no launch behind measuring for nobody. mpiexec and srun pass SIGTERM to the
    ranks. It fires when the thread that started the launch ends: start launches from a thread
    that outlives them (colltune starts them from the main thread). Used where setpriv is missing
    (die_with_parent_argv): a Python function between fork and exec makes subprocess fork the
    whole front end instead of vfork (~5 ms a launch, benchmarks/reproducibility/spawn_cost.py)."""
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


def die_with_parent_argv() -> list[str]:
    """The same parent-death signal set by util-linux's setpriv, which then executes the launcher
    (the signal survives exec; the launcher keeps setpriv's process id, so stopping its process
    group is unchanged), leaving subprocess free to vfork; [] without setpriv. Unlike
    _die_with_parent it does not check that colltune is still alive once the signal is set: a
    front end killed in that millisecond leaves its launch to run its jobs out."""
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


def popen(
    lib: MpiLibrary,
    nprocs: int,
    argv: Sequence[str],
    rank_env: Mapping[str, str] | None = None,
    extra_flags: Sequence[str] = (),
) -> subprocess.Popen[str]:
    """Start an MPI program whose stdout is read as it streams (the benchmark's records)."""
    guard = die_with_parent_argv()
    return subprocess.Popen(
        guard + mpiexec_argv(lib, nprocs, argv, rank_env, extra_flags),
        env=launcher_env(lib, nprocs=nprocs, rank_env=rank_env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # Ctrl-C reaches us first; we stop the launch ourselves
        preexec_fn=None if guard else _die_with_parent(),
    )

