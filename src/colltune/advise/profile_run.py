"""Read the directory libcolltune's profiling mode writes (COLLTUNE_PROFILE_RUN=dir).

Format of dir/rank-N (one fact per line, written at MPI_Finalize by native/runtime/profrun.c):
  colltune-profile-run 3                         (2: no TIMED; 1: nor BYTES_MIN BYTES_MAX)
  rank R / nprocs P / wall_ns W / host H / library TEXT / cores_online C / omp_num_threads T|-
  sample_every N / affinity CPU... / map <line of /proc/self/maps> / cvar NAME VALUE
  numa NODE CPULIST / device CLASS/NAME NODE / isolated CPULIST / nohz_full CPULIST / loadavg L (topo.c)
  lost COLL_CALLS P2P_CALLS                      calls not recorded (tables full)
  pattern NAME FIRST_SITE SECOND_SITE NPROCS BIN PAIRS BYTES   call patterns (profcomm.c)
  patterns_lost N                                pattern pairs not recorded (table full)
  sample_syncs N LATENCY_SUM_NS LATENCIES         sampled calls' synchronisations, their agreed latencies
  sample_budget_ppm B                            sampling budget (millionths of the run, 0: none)
  cvars_skipped ompi_info                        no cvar lines: Open MPI 4's MPI_T costs 0.2 s (ompi_cvars.py)
  coll NAME SITE NPROCS BIN CALLS TIMED TIMED_NS MAX_NS BYTES SAMPLES OWN_NS WAIT_NS WAIT_MIN_NS BYTES_MIN BYTES_MAX
  p2p  NAME SITE 0 BIN CALLS TIMED TIMED_NS MAX_NS BYTES 0 0 0 0 BYTES_MIN BYTES_MAX
  end
BIN is floor(log2(bytes)), -1 for calls without a size (failed calls, waits). Every call is
counted; TIMED of them were timed (all of a point's first 64, then about one in 16, and every
sampled call), TIMED_NS is their time: the point's time is estimated as TIMED_NS * CALLS / TIMED
(format 2 and before timed every call: TOTAL_NS in TIMED_NS's place, no TIMED).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from colltune.errors import ColltuneError

FORMAT_VERSION = "3"
READABLE_VERSIONS = ("1", "2", "3")   # 2 (every call timed) and 1 (no exact size range) still read


class ProfileRunError(ColltuneError, ValueError):
    """A profile directory that cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    offset: int
    path: str


@dataclass(frozen=True)
class Point:
    """Calls of one (kind, name, site, nprocs, bin) on one rank."""

    kind: str          # "coll" | "p2p"
    name: str          # collective name (bcast) or p2p call (Send)
    site: int          # return address in the rank's address space
    nprocs: int
    bin: int
    calls: int
    total_ns: int      # the time in these calls: measured (timed == calls) or estimated
    max_ns: int        # the longest timed call
    bytes: int
    samples: int
    own_ns: int
    wait_ns: int
    wait_min_ns: int
    bytes_min: int | None = None   # smallest and largest size of the calls (format 2; None before)
    bytes_max: int | None = None
    timed: int | None = None       # calls whose time was taken (format 3; before: all of them)


@dataclass(frozen=True)
class PatternCount:
    """How often one call (at `first`) was directly followed by another (at `second`) that one
    call could replace, on one rank (native/runtime/profcomm.c)."""

    name: str          # reduce_bcast | small_reductions | barrier_before_sync
    first: int
    second: int
    nprocs: int
    bin: int           # of the second call's size
    pairs: int
    bytes: int         # the second calls' bytes, summed


@dataclass
class RankProfile:
    rank: int
    nprocs: int
    wall_ns: int
    host: str
    library: str
    cores_online: int
    omp_num_threads: int | None
    sample_every: int
    affinity: tuple[int, ...]
    maps: list[Mapping] = field(default_factory=list)
    cvars: dict[str, str] = field(default_factory=dict)
    points: list[Point] = field(default_factory=list)
    lost_coll: int = 0
    lost_p2p: int = 0
    # The node's topology (topo.c); empty / None where /sys did not say (then: unknown).
    numa: dict[int, tuple[int, ...]] = field(default_factory=dict)   # NUMA node -> its cpus
    devices: dict[str, int] = field(default_factory=dict)            # net/eth0 -> NUMA node, -1 unknown
    isolated: tuple[int, ...] | None = None                           # isolcpus
    nohz_full: tuple[int, ...] | None = None
    loadavg: float | None = None                                      # 1-minute, at MPI_Finalize
    patterns: list[PatternCount] = field(default_factory=list)
    patterns_lost: int = 0
    sample_syncs: int = 0            # sampled calls' synchronisations (budgeted, profcomm.c)
    sync_latency_ns: float | None = None   # their mean latency (min over ranks per sync)
    sample_budget_ppm: int | None = None
    cvars_skipped: str | None = None   # MPI_T not read (Open MPI 4: advise/ompi_cvars.py fills them)


def cpulist(text: str) -> tuple[int, ...]:
    """Linux's cpulist format ("0-3,8,10-11"; "-" or "" for none) as a sorted tuple."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if part in ("", "-"):
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(cpus))


MAP_LINE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+)\s+\S+\s+([0-9a-f]+)\s+\S+\s+\d+\s+(/.*)$")


COLUMNS = {"1": 10, "2": 12, "3": 13}   # numbers after NAME SITE per format


def _point(kind: str, fields: list[str], version: str) -> Point:
    name, site, *nums = fields
    n: list[int | None] = [int(x) for x in nums]
    if len(n) != COLUMNS[version]:
        raise ValueError(f"{len(n)} numbers")
    timed = None
    if version == "3":
        nprocs, bin_, calls, timed, timed_ns, *rest = n
        if not 0 <= timed <= calls or (timed == 0 and timed_ns):
            raise ValueError(f"{timed} timed calls of {calls}")
        # the timed calls are a sample of the point's calls: their mean time stands for all
        total = round(timed_ns * calls / timed) if timed else 0
        n = [nprocs, bin_, calls, total, *rest]
    if version != "1" and n[1] is not None and n[1] < 0:
        n[-2:] = [None, None]   # calls without a size: no range
    return Point(kind, name, int(site, 16) if site not in ("(nil)", "0") else 0, *n, timed=timed)  # type: ignore[arg-type]


def _fact(prof: RankProfile, facts: dict[str, str], line: str, version: str) -> None:
    key, _, rest = line.partition(" ")
    if key == "map":
        if m := MAP_LINE.match(rest.strip()):
            prof.maps.append(Mapping(int(m[1], 16), int(m[2], 16), int(m[3], 16), m[4]))
    elif key == "cvar":
        name, _, value = rest.partition(" ")
        prof.cvars[name] = value
    elif key in ("coll", "p2p"):
        prof.points.append(_point(key, rest.split(), version))
    elif key == "numa":
        node, _, cpus = rest.partition(" ")
        prof.numa[int(node)] = cpulist(cpus)
    elif key == "device":
        name, _, node = rest.partition(" ")
        prof.devices[name] = int(node)
    elif key in ("isolated", "nohz_full"):
        setattr(prof, key, cpulist(rest))
    elif key == "loadavg":
        prof.loadavg = float(rest)
    elif key == "pattern":
        name, first, second, *nums = rest.split()
        if len(nums) != 4:
            raise ValueError(f"{len(nums)} numbers")
        prof.patterns.append(PatternCount(name, int(first, 16) if first != "(nil)" else 0,
                                          int(second, 16) if second != "(nil)" else 0, *(int(x) for x in nums)))
    elif key == "patterns_lost":
        prof.patterns_lost = int(rest)
    elif key == "sample_syncs":
        syncs, total, n = (int(x) for x in rest.split())
        prof.sample_syncs, prof.sync_latency_ns = syncs, total / n if n else None
    elif key == "cvars_skipped":
        prof.cvars_skipped = rest
    elif key == "sample_budget_ppm":
        prof.sample_budget_ppm = int(rest)
    elif key == "lost":
        prof.lost_coll, prof.lost_p2p = (int(x) for x in rest.split())
    else:
        facts[key] = rest


def read_rank(path: Path) -> RankProfile:
    lines = path.read_text().splitlines()
    version = lines[0].removeprefix("colltune-profile-run ") if lines else ""
    if not lines or not lines[0].startswith("colltune-profile-run ") or version not in READABLE_VERSIONS \
            or lines[-1] != "end":
        raise ProfileRunError(f"{path}: not a complete colltune profiling file (the rank did not "
                              "reach MPI_Finalize, or another colltune version wrote it); rerun")
    facts: dict[str, str] = {}
    prof = RankProfile(0, 0, 0, "", "", 0, None, 0, ())
    for line in lines[1:-1]:
        try:
            _fact(prof, facts, line, version)
        except ValueError as exc:
            raise ProfileRunError(f"{path}: malformed line {line!r}; rerun the profile") from exc
    try:
        prof.rank, prof.nprocs = int(facts["rank"]), int(facts["nprocs"])
        prof.wall_ns, prof.host = int(facts["wall_ns"]), facts["host"]
        prof.library, prof.cores_online = facts["library"], int(facts["cores_online"])
        omp = facts["omp_num_threads"].strip()
        prof.omp_num_threads = int(omp) if omp.isdigit() else None
        prof.sample_every = int(facts["sample_every"])
        prof.affinity = tuple(int(c) for c in facts.get("affinity", "").split())
    except (KeyError, ValueError) as exc:
        raise ProfileRunError(f"{path}: malformed line for {exc}; rerun the profile") from exc
    return prof


@dataclass
class ProfileRun:
    directory: Path
    ranks: list[RankProfile]

    @property
    def nprocs(self) -> int:
        return self.ranks[0].nprocs

    @property
    def wall_ns(self) -> int:
        """The run's wall time: the slowest rank's MPI_Init..MPI_Finalize."""
        return max(r.wall_ns for r in self.ranks)


def read(directory: Path) -> ProfileRun:
    files = sorted(directory.glob("rank-*"), key=lambda p: int(p.name.split("-")[1])
                   if p.name.split("-")[1].isdigit() else -1)
    files = [f for f in files if f.name.split("-")[1].isdigit()]
    if not files:
        raise ProfileRunError(f"{directory}: no rank-N files; was the application run with "
                              "libcolltune preloaded and COLLTUNE_PROFILE_RUN set, and did it "
                              "call MPI_Finalize?")
    ranks = [read_rank(f) for f in files]
    want = ranks[0].nprocs
    if sorted(r.rank for r in ranks) != list(range(want)):
        raise ProfileRunError(f"{directory}: {len(ranks)} rank files for {want} ranks (a rank "
                              "failed before MPI_Finalize, or files of two runs are mixed; use "
                              "an empty directory)")
    return ProfileRun(directory, ranks)
