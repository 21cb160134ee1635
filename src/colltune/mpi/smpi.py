"""SimGrid SMPI: simulated platforms, and the smpirun command line that starts ranks on them.

SMPI runs every rank of a program as a simulated process of one host process (`smpirun` starts
`smpimain`, which dlopens one copy of the program per rank), on a platform described in SimGrid's
XML: hosts, cores, links with latency and bandwidth, routing. Times read through MPI_Wtime are
simulated, so a measurement is the model's answer, not this machine's.

A platform is given by `--platform` (or COLLTUNE_SMPI_PLATFORM): one of PRESETS, generated into
the cache, or the path of the user's own SimGrid platform file, whose hosts are read from its
`<host>` and `<cluster>` elements. Ranks are placed in blocks (ranks 0..ppn-1 on the first
node), so a launch of n ranks spans ceil(n / ppn) nodes of ppn ranks: the layout every launch
confirms from the host names its ranks report (measure/confirm.py).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from colltune.errors import ColltuneError
from colltune.paths import cache_dir

PLATFORM_VAR = "COLLTUNE_SMPI_PLATFORM"
# Per-launch algorithm choice: COLLTUNE_SMPI_<COLLECTIVE>=<algorithm> in the launch environment
# becomes `--cfg=smpi/<collective>:<algorithm>` (core/libalg.c checks it on every rank), and
# COLLTUNE_SMPI_SELECTOR=<family> becomes `--cfg=smpi/coll-selector:<family>`.
ALGORITHM_VAR_PREFIX = "COLLTUNE_SMPI_"
SELECTOR_VAR = "COLLTUNE_SMPI_SELECTOR"
SELECTORS = ("default", "ompi", "mpich", "mvapich2", "impi")
# colltune's launches take MPICH's decision functions unless the launch names a family. SimGrid's
# own `default` selector is its naive set ("should not be trusted for performance evaluations",
# src/smpi/colls/smpi_default_selector.cpp): its Allgather is an all-pairs Iallgather, so that 3
# Allgathers of 8 B on 256 simulated ranks ran for more than 300 s of host time against 0.4 s
# with the MPICH family (benchmarks/scale/README.md). `COLLTUNE_SMPI_SELECTOR=default` keeps it.
DEFAULT_SELECTOR = "mpich"

# Every launch: no measured computation (SMPI would otherwise time this loaded host's CPU bursts
# and inject them into the simulated clock, so that two launches of the same job differ), and
# SimGrid's start-up chatter off (warnings and errors stay on stderr).
BASE_CONFIG = ("--cfg=smpi/simulate-computation:no", "--log=root.thres:warning")


def deterministic_config(config: str | None) -> bool:
    """Whether a launch with these recorded `--cfg` flags (its `smpi_config`) times the network
    model alone: without measured computation, SimGrid repeats a launch's times in every launch and
    repetition up to the rounding of its event times (docs/smpi.md, "Deterministic times"), so a
    check judges it by its exact ratios (verify/decide.py exact_effect). The last setting wins,
    as in SimGrid."""
    flags = re.findall(r"--cfg=smpi/simulate-computation:(\S+)", config or "")
    return bool(flags) and flags[-1] in ("no", "false", "0", "off")

# The bench driver's timing launches share every large buffer between the simulated ranks:
# SimGrid maps each malloc of at least this many bytes onto one file-backed block
# (smpi/auto-shared-malloc-thresh: src/smpi/internals/smpi_shared.cpp:304-316, v3.32; smpicc
# turns the drivers' malloc/calloc into it, include/smpi/smpi_helpers.h:36-37, and not
# libcolltune's: mpi/build.py compiles it with -DSMPI_NO_OVERRIDE_MALLOC)
# and copies no payload into or out of it (smpi_global.cpp:165-184). Times stay the model's
# (computation is not simulated, copies are not timed); the data is lost, which the timing
# launches never read (only --probe and the selftest do, and they never get it). Every shared
# allocation is the same memory, so whatever must keep its contents has to stay below the
# threshold: the driver's largest such allocations are its state (112 KB), its job list (6.3 KB
# per job: 4 MiB would be 660 jobs in one launch; the full preset has 120) and rank 0's host
# names (100 bytes per rank, hence SHARED_BYTES_PER_RANK). A 64 KiB threshold on 8 ranks shared
# the driver's state and broke the launch (a NULL receive buffer). 1024 ranks x 32 KiB Scatters
# need 32 GiB without it (every rank's send buffer); the 1024-rank check of
# benchmarks/scale/README.md peaked at 648 MB of private memory with it.
# `COLLTUNE_SMPI_SHARED_FROM=0` keeps every buffer private; another value is the threshold in bytes.
SHARED_VAR = "COLLTUNE_SMPI_SHARED_FROM"
SHARED_BYTES_PER_RANK = 1024
SHARED_MIN_BYTES = 4 << 20
# SimGrid maps a shared allocation block by block, one mapping each (smpi_shared.cpp:235-240), and
# Linux allows 65,530 mappings per process (vm.max_map_count): with the default 1 MiB block, a
# 32 MiB buffer on each of 1024 ranks alone takes 32,768. A 64 MiB block maps any buffer up to
# 64 MiB in one (the block is one file of that size in /tmp, unlinked, mapped by every rank).
SHARED_BLOCK_BYTES = 64 << 20


def timing_env(nprocs: int, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The launch setting that shares large buffers in a timing launch of nprocs ranks (the
    user's own SHARED_VAR wins)."""
    env = os.environ if env is None else env
    if SHARED_VAR in env:
        return {SHARED_VAR: env[SHARED_VAR]}
    return {SHARED_VAR: str(max(SHARED_MIN_BYTES, SHARED_BYTES_PER_RANK * nprocs))}


class SmpiError(ColltuneError):
    """A platform that cannot be used (unknown preset, unreadable file, too few cores)."""


@dataclass(frozen=True)
class Preset:
    """A generated platform: `nodes` hosts of `cores` cores behind one network topology."""

    name: str
    nodes: int
    cores: int
    topology: str  # SimGrid cluster topology: FLAT, FAT_TREE, DRAGONFLY
    topo_parameters: str
    link_bw: str
    link_lat: str
    loopback_bw: str  # between two ranks of one node (shared memory)
    loopback_lat: str
    about: str


# InfiniBand-like figures: EDR 100 Gb/s links (12.5 GB/s) with ~1 us per switch hop in the
# model's link latency; ranks on one node talk through memory at ~20 GB/s and 0.2 us.
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("small", 4, 4, "FLAT", "", "12.5GBps", "1us", "20GBps", "0.2us",
           "4 nodes x 4 cores on one switch: tests and quick looks"),
    Preset("fattree-64x16", 64, 16, "FAT_TREE", "2;8,8;1,4;1,1", "12.5GBps", "0.5us", "20GBps",
           "0.2us", "2-level fat tree: 8 leaf switches of 8 nodes, 4 spines; 64 nodes x 16 cores"),
    Preset("dragonfly-1024", 1024, 4, "DRAGONFLY", "8,4;4,2;8,1;4", "12.5GBps", "0.5us", "20GBps",
           "0.2us", "dragonfly: 8 groups x 4 chassis x 8 routers x 4 nodes = 1024 nodes x 4 cores"),
)}


@dataclass(frozen=True)
class Platform:
    """A platform ready for smpirun: its XML file and the hosts in rank order (one per core)."""

    name: str  # preset name or the file's path
    xml: Path
    hosts: tuple[str, ...]  # one entry per core, node after node
    ppn: int  # cores of the first node: the ranks placed per node

    @property
    def slots(self) -> int:
        return len(self.hosts)

    def layout(self, nprocs: int) -> tuple[int, int]:
        """(nodes, ranks per node) of a launch of nprocs ranks placed in blocks."""
        return math.ceil(nprocs / self.ppn), min(self.ppn, nprocs)

    def hostfile(self, nprocs: int) -> Path:
        """The first nprocs slots as an smpirun hostfile (no `host:n` lines: smpirun would
        unroll those into a temporary file in the current directory)."""
        if nprocs > self.slots:
            raise SmpiError(f"platform {self.name} has {self.slots} cores, {nprocs} ranks asked: "
                            f"choose a larger one ({', '.join(PRESETS)}) or fewer ranks")
        path = self.xml.with_name(f"{self.xml.stem}.hosts{nprocs}")
        if not path.exists():
            _write_whole(path, "".join(f"{h}\n" for h in self.hosts[:nprocs]))
        return path


def _write_whole(path: Path, text: str) -> None:
    """Concurrent launches read it: a whole file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def preset_xml(preset: Preset) -> str:
    topo = f' topology="{preset.topology}" topo_parameters="{preset.topo_parameters}"' \
        if preset.topology != "FLAT" else ""
    return (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        f"<!-- generated by colltune: preset {preset.name}: {preset.about} -->\n"
        '<platform version="4.1">\n'
        f'  <cluster id="{preset.name}" prefix="{preset.name}-" suffix="" radical="0-{preset.nodes - 1}"'
        f' speed="1Gf" core="{preset.cores}" bw="{preset.link_bw}" lat="{preset.link_lat}"'
        f' loopback_bw="{preset.loopback_bw}" loopback_lat="{preset.loopback_lat}"{topo}/>\n'
        "</platform>\n"
    )


def _preset_platform(preset: Preset) -> Platform:
    xml = cache_dir() / "smpi" / "platforms" / f"{preset.name}.xml"
    text = preset_xml(preset)
    if not xml.exists() or xml.read_text() != text:
        _write_whole(xml, text)
    hosts = tuple(f"{preset.name}-{n}" for n in range(preset.nodes) for _ in range(preset.cores))
    return Platform(preset.name, xml, hosts, preset.cores)


def _radical(text: str) -> list[int]:
    """SimGrid's radical "0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11]."""
    numbers: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        numbers.extend(range(int(low), int(high or low) + 1))
    return numbers


def _file_platform(path: Path) -> Platform:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise SmpiError(f"platform file {path} cannot be read as SimGrid XML ({exc}); give a "
                        f"SimGrid platform file or a preset ({', '.join(PRESETS)})") from exc
    hosts: list[str] = []
    ppn = 0
    for elem in root.iter():
        if elem.tag == "host":
            cores = int(elem.get("core", "1"))
            hosts.extend([elem.get("id", "")] * cores)
        elif elem.tag == "cluster":
            cores = int(elem.get("core", "1"))
            names = [f"{elem.get('prefix', '')}{n}{elem.get('suffix', '')}"
                     for n in _radical(elem.get("radical", ""))]
            hosts.extend(h for h in names for _ in range(cores))
        else:
            continue
        ppn = ppn or cores
    if not hosts:
        raise SmpiError(f"platform file {path} declares no <host> or <cluster>: nowhere to run ranks")
    return Platform(str(path), path.resolve(), tuple(hosts), ppn)


def platform(spec: str | None = None, nprocs: int = 1) -> Platform:
    """The platform named by `spec` (a preset or a file), else COLLTUNE_SMPI_PLATFORM, else the
    smallest preset with nprocs cores."""
    spec = spec or os.environ.get(PLATFORM_VAR) or None
    if spec is None:
        fitting = [p for p in PRESETS.values() if p.nodes * p.cores >= nprocs]
        if not fitting:
            raise SmpiError(f"no preset platform holds {nprocs} ranks; pass --platform <file>")
        return _preset_platform(min(fitting, key=lambda p: p.nodes * p.cores))
    if spec in PRESETS:
        return _preset_platform(PRESETS[spec])
    path = Path(spec)
    if not path.is_file():
        raise SmpiError(f"--platform {spec}: neither a preset ({', '.join(PRESETS)}) nor a file")
    return _file_platform(path)


def config_flags(env: Mapping[str, str]) -> list[str]:
    """`--cfg=` flags from the launch environment's per-launch choices (sorted: equal
    environments give equal command lines)."""
    flags = list(BASE_CONFIG)
    if SELECTOR_VAR not in env:
        flags.append(f"--cfg=smpi/coll-selector:{DEFAULT_SELECTOR}")
    for key, value in sorted(env.items()):
        if key == SELECTOR_VAR:
            flags.append(f"--cfg=smpi/coll-selector:{value}")
        elif key == SHARED_VAR:
            flags.append(f"--cfg=smpi/auto-shared-malloc-thresh:{value}")
            if value.strip() not in ("", "0"):
                flags.append(f"--cfg=smpi/shared-malloc-blocksize:{SHARED_BLOCK_BYTES}")
        elif key.startswith(ALGORITHM_VAR_PREFIX) and re.fullmatch(r"[A-Z_]+", key[len(ALGORITHM_VAR_PREFIX):]) \
                and key != PLATFORM_VAR:
            flags.append(f"--cfg=smpi/{key[len(ALGORITHM_VAR_PREFIX):].lower()}:{value}")
    return flags


def smpirun_argv(smpirun: Path, nprocs: int, argv: Sequence[str], env: Mapping[str, str],
                 extra_flags: Sequence[str] = ()) -> list[str]:
    """smpirun on the chosen platform, the first nprocs cores, the launch's --cfg choices."""
    plat = platform(env.get(PLATFORM_VAR), nprocs)
    return [str(smpirun), "-np", str(nprocs), "-platform", str(plat.xml),
            "-hostfile", str(plat.hostfile(nprocs)), *config_flags(env), *extra_flags, *argv]


# smpirun's options that take a value (smpirun --help, SimGrid 3.32); the first other word that
# does not start with '-' is the program.
_VALUE_OPTIONS = frozenset({"-np", "-n", "-bandwidth", "-latency", "-platform", "-hostfile",
                            "-machinefile", "-replay", "-map", "-tmpdir", "-trace-comment",
                            "-trace-comment-file", "-trace-file", "-wrapper"})
INTERPOSER_SONAME = "libcolltune.so"


def program_index(argv: Sequence[str]) -> int:
    """Position of the program in an smpirun command line."""
    i = 1
    while i < len(argv):
        word = argv[i]
        if word in _VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return i
    raise SmpiError(f"no program in `{' '.join(argv)}`: give `smpirun -np N -platform P ./app`")


def interposed_program(program: Path, libcolltune: Path) -> Path:
    """A copy of an smpicc-built program that loads libcolltune before libsimgrid.

    An SMPI program cannot be interposed by LD_PRELOAD: smpimain opens each rank's copy of it
    with RTLD_DEEPBIND, so the copy's own dependencies (libsimgrid) are searched before the
    global scope (docs/smpi.md). The copy gets libcolltune as its first DT_NEEDED (patchelf), by
    its bare name: smpirun puts SMPI's temporary directory, where smpi/privatize-libs places each
    rank's copy of the library, on LD_LIBRARY_PATH. The program itself is not changed."""
    patchelf = shutil.which("patchelf")
    if patchelf is None:
        raise SmpiError("colltune run under SMPI needs patchelf to add libcolltune to a copy of the "
                        "program: run `make setup-smpi` (apt-get install patchelf), or link the "
                        f"program with `-Wl,--no-as-needed -lcolltune` from {libcolltune.parent}")
    resolved = program.resolve()
    stat = resolved.stat()
    key = f"{resolved}|{stat.st_size}|{stat.st_mtime_ns}|{libcolltune.resolve()}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    copy = cache_dir() / "smpi" / "programs" / f"{resolved.name}-{digest}"
    if copy.exists():
        return copy
    copy.parent.mkdir(parents=True, exist_ok=True)
    tmp = copy.with_name(f".{copy.name}.{os.getpid()}")
    shutil.copy2(resolved, tmp)
    proc = subprocess.run([patchelf, "--add-needed", INTERPOSER_SONAME, str(tmp)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise SmpiError(f"patchelf could not add {INTERPOSER_SONAME} to a copy of {program}: "
                        f"{proc.stderr.strip()} (is it a program built by smpicc?)")
    tmp.replace(copy)
    return copy


def unproven_choice(argv: Sequence[str]) -> str | None:
    """Why the library collectives of an smpirun line are not those `colltune selftest` proved
    the members against (the MPICH family, colltune's launches', and no per-collective choice),
    or None when they are. A member's exact result is the proven library algorithm's; against
    another family's it is not known (sums of floats round in another order)."""
    from colltune.mpi.algorithms import LIBRARY_ALGORITHMS

    selector = "default"  # SimGrid's, when the line names none
    shared = ""
    for word in argv:
        m = re.fullmatch(r"--cfg=smpi/([a-z_-]+):(.*)", word)
        if m is None:
            continue
        if m.group(1) == "coll-selector":
            selector = m.group(2)
        elif m.group(1) == "auto-shared-malloc-thresh":
            shared = word if m.group(2).strip() not in ("", "0") else ""
        elif m.group(1) in LIBRARY_ALGORITHMS["smpi"]:
            return f"the line chooses {m.group(1)}'s algorithm ({word})"
    if shared:
        return (f"the line shares the application's allocations of a size or more between the simulated ranks "
                f"({shared}): such a buffer is one block for all ranks and holds no rank's own result, so a "
                "member's could differ from the library's (colltune's own memory stays each rank's: libcolltune "
                "is built with SMPI_NO_OVERRIDE_MALLOC); drop the setting to have members serve")
    if selector != DEFAULT_SELECTOR:
        return (f"the line's collectives are SimGrid's {selector!r} family, the proof's the "
                f"{DEFAULT_SELECTOR!r} family (add --cfg=smpi/coll-selector:{DEFAULT_SELECTOR})")
    return None


def _no_proof(proof: Path, why: str) -> Path:
    """A proof that passes no member, saying why: the header of the real one and a comment."""
    header = proof.read_text().splitlines()[0] if proof.exists() else ""
    path = cache_dir() / "smpi" / f"unproven-{hashlib.sha256(why.encode()).hexdigest()[:12]}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{header}\n# no member serves: {why}\n")
    return path


def private_tmpdir() -> Path:
    """A temporary directory for this process's smpirun, given to it as TMPDIR. SMPI names each
    rank's copy of a privatized library by the rank alone (`<7 digits>tune.so` for libcolltune.so,
    no process id) in smpirun's temporary directory, `dirname $(mktemp -u)`, /tmp by default; two
    runs at once there (two test sessions, two users) load, overwrite and delete each other's
    copies: of two 1024-rank runs started together one aborted after 12 ranks, and a rank could
    load another build's library. (smpirun's own `-tmpdir DIR` is broken in SimGrid 3.32: it
    shifts one word, not two, and takes DIR for the program, /usr/bin/smpirun:171-173.) One
    directory per process id under the cache; those of finished processes are removed when
    empty (SMPI deletes its copies itself)."""
    root = cache_dir() / "smpi" / "tmp"
    root.mkdir(parents=True, exist_ok=True)
    for old in root.iterdir():
        if old.name.isdigit() and int(old.name) != os.getpid() and not Path(f"/proc/{old.name}").exists():
            try:
                old.rmdir()
            except OSError:
                pass  # not empty (an application's own temporary files): left as they are
    mine = root / str(os.getpid())
    mine.mkdir(exist_ok=True)
    return mine


def interposed_command(argv: Sequence[str], libcolltune: Path, env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """`colltune run -- smpirun ... ./app args`: the command with the program's interposed copy,
    one copy of libcolltune per rank (smpi/privatize-libs), a preset platform when the line names
    none; and the ranks' settings, which go to smpirun's own environment (all ranks live in its
    process). LD_PRELOAD is left out: it cannot reach the ranks."""
    words = list(argv)
    at = program_index(words)
    words[at] = str(interposed_program(Path(words[at]), libcolltune))
    added = [f"--cfg=smpi/privatize-libs:{libcolltune.resolve()}"]
    if "-platform" not in words[:at] and "-hostfile" not in words[:at] and "-machinefile" not in words[:at]:
        nprocs = next((int(words[i + 1]) for i in range(1, at - 1) if words[i] in ("-np", "-n")
                       and words[i + 1].isdigit()), 1)
        plat = platform(env.get(PLATFORM_VAR), nprocs)
        added += ["-platform", str(plat.xml), "-hostfile", str(plat.hostfile(nprocs))]
    settings = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    settings.setdefault("TMPDIR", str(private_tmpdir()))
    # the runtime looks for proof.txt next to the libcolltune it runs: here a copy in SMPI's
    # temporary directory, so it is named where `colltune selftest` wrote it
    proof = libcolltune.resolve().with_name("proof.txt")
    why = unproven_choice(words[:at])
    settings.setdefault("COLLTUNE_PROOF", str(proof if why is None else _no_proof(proof, why)))
    return [words[0], *added, *words[1:]], settings
