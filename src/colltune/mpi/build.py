"""Build the C core for one MPI library into a cache keyed by the library's identity.

The C core must be compiled against the MPI it runs with (an interposer built against MPICH does
not work under Open MPI), so one colltune installation keeps one build per library:
`<cache>/<family>-<name>-<hash>/` holding libcolltune.so, colltune-bench, colltune-selftest and
build.json. A build is redone when the sources change (hash of native/); whether they changed
is first asked of their sizes and modification times (source_stamp), which reads no file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from colltune.mpi.libraries import MpiError, MpiLibrary
from colltune.paths import cache_dir, native_dir

CFLAGS = ["-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-fPIC", "-D_GNU_SOURCE"]

# Which source directories go into which product. Files are found by glob, so a new source file
# needs no change here. The interposer's MPI_* wrappers (runtime/, generated/ct_wrappers*.c) are
# only in the shared library: the drivers call variants and the library directly.
_COMMON = ("core", "variants")
_PRODUCTS = {
    "libcolltune.so": (*_COMMON, "runtime", "generated"),
    "colltune-bench": (*_COMMON, "generated-nowrap", "bench"),
    "colltune-selftest": (*_COMMON, "generated-nowrap", "selftest"),
}

# smpicc turns every malloc, calloc, realloc and free into SimGrid's (smpi_helpers.h:35-40), which
# maps an allocation onto one block shared by all simulated ranks when a line sets
# --cfg=smpi/auto-shared-malloc-thresh and the size reaches it. The drivers want that for their
# large buffers and the mock-ups' scratch arena in timing launches (docs/smpi.md, "Large
# buffers"); libcolltune must not have it, since a user's shared-malloc line would then share its
# trace records and learning state between the ranks. So under SMPI the interposer's objects,
# core/ and variants/ included, are compiled apart, with SimGrid's own switch for that, and the
# drivers' keep SimGrid's malloc.
_PRIVATE_MALLOC = {"smpi": ("libcolltune.so", "-DSMPI_NO_OVERRIDE_MALLOC")}


@dataclass(frozen=True)
class Artifacts:
    dir: Path
    libcolltune: Path
    bench: Path
    selftest: Path
    family: str

    def as_dict(self) -> dict[str, str]:
        return {"dir": str(self.dir), "libcolltune": str(self.libcolltune),
                "bench": str(self.bench), "selftest": str(self.selftest), "family": self.family}


class BuildError(MpiError):
    """Compiling the C core failed; the message holds the compiler's output."""


def _sources(group: str) -> list[Path]:
    root = native_dir()
    if group == "generated-nowrap":
        return sorted(p for p in (root / "generated").glob("*.c") if "wrappers" not in p.name)
    return sorted((root / group).glob("*.c"))


def _build_inputs() -> list[Path]:
    root = native_dir()
    return [path for path in sorted(root.rglob("*"))
            if path.suffix in (".c", ".h", ".toml") and "fuzz" not in path.parts and path.is_file()]


def source_hash() -> str:
    """Hash of everything the build reads: a change to any C file, header or table rebuilds."""
    root = native_dir()
    digest = hashlib.sha256()
    for path in _build_inputs():
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    digest.update(" ".join(CFLAGS).encode())
    return digest.hexdigest()[:16]


def source_stamp() -> str:
    """Names, sizes and modification times of the build's inputs: equal stamps mean equal
    sources without reading them (the check in front of every `colltune run`). A different
    stamp only sends the check on to source_hash: touching a file does not rebuild."""
    root = native_dir()
    digest = hashlib.sha256(str(root).encode())
    for path in _build_inputs():
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    digest.update(" ".join(CFLAGS).encode())
    return digest.hexdigest()[:16]


def build_dir(lib: MpiLibrary) -> Path:
    return cache_dir() / lib.identity


def build_rules(lib: MpiLibrary) -> str:
    """What the build does for this family beyond the sources and CFLAGS, recorded in build.json:
    a cached build made under other rules is not current (source_hash covers native/ only)."""
    rule = _PRIVATE_MALLOC.get(lib.family)
    return f"{rule[0]}: {rule[1]}" if rule else ""


def _artifacts(directory: Path, family: str) -> Artifacts:
    return Artifacts(directory, directory / "libcolltune.so", directory / "colltune-bench",
                     directory / "colltune-selftest", family)


def _compile_env(lib: MpiLibrary) -> dict[str, str]:
    env = dict(os.environ)
    env.update(lib.env)
    env.pop("LD_PRELOAD", None)
    return env


def _run_compiler(argv: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise BuildError(f"compiling the C core failed:\n$ {' '.join(argv)}\n{proc.stderr.strip()}")


def _build_into(lib: MpiLibrary, out: Path) -> None:
    root = native_dir()
    env = _compile_env(lib)
    flags = [*CFLAGS, f"-DCOLLTUNE_ABI_FAMILY_{lib.family.upper()}",
             f"-I{root / 'include'}", f"-I{root / 'generated'}", f"-I{root / 'core'}",
             f"-I{root / 'runtime'}"]
    if lib.family == "smpi":  # SMPI has no MPI_T: every file sees it absent, no file changes
        flags += ["-include", str(root / "include" / "ct_mpit_absent.h")]
    private_product, private_flag = _PRIVATE_MALLOC.get(lib.family, ("", ""))
    # (source, compiled with private_flag) -> object; a source of both kinds of product twice
    units = {(src, product == private_product) for product, groups in _PRODUCTS.items()
             for g in groups for src in _sources(g)}
    if not units:
        raise BuildError(f"no C sources under {root}")
    objects = {(src, own): out / "obj" / (("private__" if own else "")
                                          + str(src.relative_to(root)).replace(os.sep, "__") + ".o")
               for src, own in units}
    (out / "obj").mkdir(parents=True)
    from concurrent.futures import ThreadPoolExecutor  # only when compiling: colltune run's start

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        jobs = [pool.submit(_run_compiler, [str(lib.mpicc), *flags, *([private_flag] if own else []),
                                            "-c", str(s), "-o", str(o)], env)
                for (s, own), o in sorted(objects.items())]
        for job in jobs:
            job.result()
    for product, product_groups in _PRODUCTS.items():
        if not _sources(product_groups[-1]):
            continue  # e.g. a checkout without the drivers' sources
        own = product == private_product
        objs = [str(objects[(s, own)]) for g in product_groups for s in _sources(g)]
        target = out / product
        if product.endswith(".so"):
            argv = [str(lib.mpicc), "-shared", "-o", str(target), *objs, "-ldl", "-lpthread", "-lm"]
        else:
            argv = [str(lib.mpicc), "-o", str(target), *objs, "-lpthread", "-lm"]
        _run_compiler(argv, env)


def _read_info(info: Path) -> dict[str, object]:
    try:
        data = json.loads(info.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def current(lib: MpiLibrary) -> Artifacts | None:
    """The cached build for `lib` if it is current, else None (then ensure_built builds)."""
    directory = build_dir(lib)
    info_path = directory / "build.json"
    info = _read_info(info_path)
    if not info or info.get("rules", "") != build_rules(lib):
        return None
    stamp = source_stamp()
    if info.get("source_stamp") == stamp:
        return _artifacts(directory, lib.family)
    if info.get("source_hash") != source_hash():
        return None
    # Same sources under new times (a checkout, a copy): remember the stamp, whole file only.
    tmp = info_path.with_name(f".build.json.{os.getpid()}")
    try:
        tmp.write_text(json.dumps({**info, "source_stamp": stamp}, indent=2))
        tmp.replace(info_path)
    except OSError:
        pass  # a read-only cache still works, checked by hash each time
    return _artifacts(directory, lib.family)


def ensure_built(lib: MpiLibrary, force: bool = False) -> Artifacts:
    """Build the C core for `lib` unless a current build is cached; return its products."""
    directory = build_dir(lib)
    if not force and (cached := current(lib)) is not None:
        return cached
    stamp = source_stamp()  # before the hash: a file edited meanwhile fails the next stamp check
    wanted = source_hash()
    info = directory / "build.json"
    directory.parent.mkdir(parents=True, exist_ok=True)
    # One builder at a time per library (parallel test sessions share the cache).
    with open(directory.parent / f".{lib.identity}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        known = _read_info(info)
        if not force and known.get("source_hash") == wanted and known.get("rules", "") == build_rules(lib):
            return _artifacts(directory, lib.family)
        staging = Path(tempfile.mkdtemp(prefix=f".{lib.identity}-", dir=directory.parent))
        try:
            _build_into(lib, staging)
            (staging / "build.json").write_text(json.dumps(
                {"source_hash": wanted, "source_stamp": stamp, "rules": build_rules(lib),
                 "library": lib.as_dict(), "family": lib.family}, indent=2))
            if directory.exists():
                shutil.rmtree(directory)
            staging.rename(directory)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return _artifacts(directory, lib.family)


def compile_program(lib: MpiLibrary, sources: list[Path], output: Path, extra: list[str] | None = None) -> Path:
    """Compile a plain MPI program (tests, examples) with the library's mpicc."""
    output.parent.mkdir(parents=True, exist_ok=True)
    _run_compiler([str(lib.mpicc), "-std=c11", "-O2", "-Wall", *(extra or []),
                   *map(str, sources), "-o", str(output), "-lpthread", "-lm"], _compile_env(lib))
    return output


def built_family(artifacts_dir: Path) -> str | None:
    """The ABI family a cached build was made for (None when unknown)."""
    try:
        return str(json.loads((artifacts_dir / "build.json").read_text())["family"])
    except (OSError, ValueError, KeyError):
        return None
