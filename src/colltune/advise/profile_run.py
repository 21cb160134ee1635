"""Read the directory libcolltune's profiling mode writes (COLLTUNE_PROFILE_RUN=dir).

Format of dir/rank-N: one fact per line, written at MPI_Finalize by native/runtime/profrun.c;
the point and pattern lines' fields come from native/spec/formats.toml (colltune.formats
PROFILE_RUN_POINT / PROFILE_RUN_PATTERN), the rest (docs/advise.md "File format"):
  colltune-profile-run 4          (3: sites were return addresses; 2: every call timed; 1: no exact size range)
  rank R / nprocs P / wall_ns W / host H / library TEXT / cores_online C / omp_num_threads T|-
  sample_every N / affinity CPU... / map <line of /proc/self/maps> / cvar NAME VALUE
  numa NODE CPULIST / device CLASS/NAME NODE / isolated CPULIST / nohz_full CPULIST / loadavg L (topo.c)
  lost COLL_CALLS P2P_CALLS                      calls not recorded (tables full)
  memo_made COLL P2P POLLS                       memo entries made (a chain's first memoisable call,
                                                 or one whose arguments changed): an entry per chain,
                                                 none shared (profcall.c, requests.c)
  chain SITE RA...                               a site's chain: the caller of MPI_*, then up (profchain.c)
  chains_made UNWINDS LOST                       chains unwound; calls whose chain was not kept
  chain_walks WALKED CHECKED DIFFERED            of those, walked with the kept frame rules (the
                                                 rest unwound by libgcc), checked against libgcc
                                                 (COLLTUNE_PROFILE_RUN_UNWIND_CHECK) and differing
  pattern <PROFILE_RUN_PATTERN>                  call patterns (profcomm.c)
  patterns_lost N                                pattern pairs not recorded (table full)
  sample_syncs N LATENCY_SUM_NS LATENCIES         sampled calls' synchronisations, their agreed latencies
  sample_budget_ppm B                            the run's budget (millionths of the run, 0: none)
  own_cost NS WIDENED NARROWED                   the profiling's own time the budget saw (call path
                                                 and synchronisations), the period's changes
  cvars_skipped ompi_info                        no cvar lines: Open MPI 4's MPI_T costs 0.2 s (ompi_cvars.py)
  coll <PROFILE_RUN_POINT>                       collectives and MPI_Barrier
  p2p  <PROFILE_RUN_POINT>                       point-to-point calls (nprocs 0, no samples)
  request <PROFILE_RUN_REQUEST>                  a nonblocking/persistent point's requests
  polled NAME SITE N                             a Test-family point's sample of the polls of
                                                 requests.c's light path
  polls NAME LIGHT SAMPLED                       a Test-family function's polls on the light path
                                                 (exact, less the dropped samples counted at their
                                                 points) and its sample of them
  poll_period PERIOD WIDENED                     the polls' sampling period at the end, its doublings
  end
BIN is floor(log2(bytes)), -1 for calls without a size (failed calls, waits). Every call is
counted; TIMED of them were timed (all of a point's first 64, then about one in 16, and every
sampled call), TIMED_NS is their time: the point's time is estimated as TIMED_NS * CALLS / TIMED.
Formats 1 and 2 timed every call (their TOTAL_NS stands where TIMED_NS is) and are read too.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colltune import formats
from colltune.errors import ColltuneError

FORMAT_VERSION = str(formats.PROFILE_RUN_VERSION)
# Before the spec: format 2 (every call timed: TOTAL_NS, no TIMED) and 1 (nor the exact size range).
OLD_POINTS: dict[str, tuple[str, ...]] = {
    # format 3: sites were return addresses, not chains (no chain lines); same fields
    "3": tuple(n for n, _ in formats.PROFILE_RUN_POINT),
    "2": ("name", "site", "nprocs", "bin", "calls", "timed_ns", "max_ns", "bytes", "samples", "own_ns",
          "wait_ns", "wait_min_ns", "bytes_min", "bytes_max"),
    "1": ("name", "site", "nprocs", "bin", "calls", "timed_ns", "max_ns", "bytes", "samples", "own_ns",
          "wait_ns", "wait_min_ns"),
}
POINT_FIELDS = {FORMAT_VERSION: tuple(n for n, _ in formats.PROFILE_RUN_POINT), **OLD_POINTS}
READABLE_VERSIONS = tuple(POINT_FIELDS)
WORDS = {n for n, t in (*formats.PROFILE_RUN_POINT, *formats.PROFILE_RUN_PATTERN,
                       *formats.PROFILE_RUN_REQUEST) if t == "word"}
POINTERS = {n for n, t in (*formats.PROFILE_RUN_POINT, *formats.PROFILE_RUN_PATTERN,
                          *formats.PROFILE_RUN_REQUEST) if t == "ptr"}


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
    # The interval of total_ns: the timed calls' measured time, and that plus every untimed call
    # as long as the longest timed one, at most the rank's run (bound_estimates).
    total_lo_ns: int = 0
    total_hi_ns: int = 0
    # Where a Test-family point's calls are partly an estimate (scale_polls): the interval of
    # `calls`; None: every call counted.
    calls_interval: tuple[int, int] | None = None


@dataclass(frozen=True)
class RequestCount:
    """The requests a nonblocking or persistent collective's point made, on one rank
    (native/runtime/requests.c): operations started and completed, the time the rank spent in
    Wait/Test on them and from their start to their completion (the rest of it is overlap)."""

    name: str          # iallreduce, allreduce_init
    site: int
    nprocs: int
    bin: int
    starts: int
    completed: int
    wait_ns: int
    span_ns: int


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
    requests: list[RequestCount] = field(default_factory=list)
    patterns_lost: int = 0
    sample_syncs: int = 0            # sampled calls' synchronisations (budgeted, profcomm.c)
    sync_latency_ns: float | None = None   # their mean latency (min over ranks per sync)
    sample_budget_ppm: int | None = None
    # the profiling run's own time as its budget measured it (profcomm.c: the call path on the
    # countdown's calls, scaled, the unwinds, the synchronisations) and the period's changes
    own_cost_ns: int | None = None
    period_widened: int = 0
    period_narrowed: int = 0
    cvars_skipped: str | None = None   # MPI_T not read (Open MPI 4: advise/ompi_cvars.py fills them)
    # site id -> its chain of return addresses, the caller of MPI_* first (format 4, profchain.c)
    chains: dict[int, tuple[int, ...]] = field(default_factory=dict)
    chain_unwinds: int = 0           # chains unwound (the new ones a thread met)
    chains_lost: int = 0             # calls whose chain the full table could not keep
    # of the unwinds: walked with the kept frame rules, checked against libgcc's, differing
    chain_walks: tuple[int, int, int] = (0, 0, 0)
    # memo entries made: collective, point-to-point, polling (None: a file from before the line)
    memo_made: tuple[int, int, int] | None = None
    # Test-family polls made while no collective request was followed (requests.c's light
    # path): per function (Testany) its count and the sample of it that went to the points,
    # exact; per (function, site) that point's part of the sample; the polls' sampling period at
    # the end and its doublings (each dropped half the sample so far, at random).
    polls: dict[str, tuple[int, int]] = field(default_factory=dict)
    polled: dict[tuple[str, int], int] = field(default_factory=dict)
    poll_period: int | None = None
    poll_widened: int = 0


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


def _fields(names: tuple[str, ...], words: list[str]) -> dict[str, Any]:
    """A line's words by the spec's field names, typed (ValueError: malformed)."""
    if len(words) != len(names):
        raise ValueError(f"{len(words)} fields, {len(names)} expected")
    out: dict[str, Any] = {}
    for name, word in zip(names, words):
        if name in WORDS:
            out[name] = word
        elif name in POINTERS:
            out[name] = 0 if word in ("(nil)", "0") else int(word, 16)
        else:
            out[name] = int(word)
    return out


def _point(kind: str, words: list[str], version: str) -> Point:
    f = _fields(POINT_FIELDS[version], words)
    calls = f["calls"]
    timed, timed_ns = f.pop("timed", calls), f.pop("timed_ns")   # before format 3 all were timed
    if not 0 <= timed <= calls or (timed == 0 and timed_ns):
        raise ValueError(f"{timed} timed calls of {calls}")
    # the timed calls are a sample of the point's calls: their mean time stands for all
    total = round(timed_ns * calls / timed) if timed else 0
    if f["bin"] < 0 and not f.get("bytes_max"):
        # calls without a size: no range (a Gatherv, Scatterv, Alltoallv or Alltoallw point
        # keeps its decision's bin, -1, and records its counts' bytes: that range stays)
        f["bytes_min"] = f["bytes_max"] = None
    return Point(kind, total_ns=total, timed=None if version in ("1", "2") else timed,
                 total_lo_ns=timed_ns, total_hi_ns=timed_ns + (calls - timed) * f["max_ns"], **f)


POLL_CONFIDENCE = 0.95


def _apportion(shares: list[float], total: int) -> list[int]:
    """Integers summing to `total` (the sum of `shares`), each its share rounded down or up: the
    largest remainders up, ties by order."""
    out = [int(x) for x in shares]
    order = sorted(range(len(shares)), key=lambda i: (-(shares[i] - out[i]), i))
    for i in order[:total - sum(out)]:
        out[i] += 1
    return out


def scale_polls(prof: RankProfile) -> None:
    """A Test-family point's polls on the light path were counted only when the polls'
    countdown sampled them (requests.c): its sample s of its function's S sampled polls stands
    for s/S of the function's N (exact). The estimate is rounded so that the function's points
    sum to N, with the exact (Clopper-Pearson, 95%) interval of the proportion s/S times N
    (exact where every poll was sampled); the point's time is its timed calls' mean times the
    estimated calls, its interval's top every untimed call as long as the longest timed one."""
    from scipy import stats

    by_function: dict[str, list[int]] = {}
    for i, p in enumerate(prof.points):
        if p.kind == "p2p" and (p.name, p.site) in prof.polled:
            by_function.setdefault(p.name, []).append(i)
    for name, where in by_function.items():
        total, sampled = prof.polls.get(name, (0, 0))
        samples = [prof.polled[(prof.points[i].name, prof.points[i].site)] for i in where]
        if sampled <= 0 or sum(samples) != sampled:
            raise ValueError(f"{name}: {sum(samples)} polls sampled at its sites, {sampled} in all")
        estimates = _apportion([s * total / sampled for s in samples], total)
        for i, s, est in zip(where, samples, estimates):
            p = prof.points[i]
            if sampled == total:
                lo = hi = est
            else:
                ci = stats.binomtest(s, sampled).proportion_ci(POLL_CONFIDENCE, method="exact")
                lo, hi = max(s, math.floor(ci.low * total)), min(total, math.ceil(ci.high * total))
                lo, hi = min(lo, est), max(hi, est)
            exact = p.calls - s
            calls = exact + est
            timed = p.timed if p.timed is not None else p.calls
            total_ns = round(p.total_lo_ns * calls / timed) if timed else 0
            prof.points[i] = dataclasses.replace(
                p, calls=calls, total_ns=total_ns,
                total_hi_ns=p.total_lo_ns + (exact + hi - timed) * p.max_ns,
                calls_interval=(exact + lo, exact + hi))


def bound_estimates(prof: RankProfile) -> None:
    """No rank spends more than its run in MPI calls. A point's time is estimated from its timed
    calls (TIMED_NS x CALLS / TIMED); on a busy machine a few descheduled timed calls make that
    mean, and so the estimate, far too large (a rank's collectives at 350% of its run). The timed
    calls' time is measured and stays; the estimated rest of every point is scaled down alike so
    that the rank's total is at most its wall time, and each point's interval is capped there."""
    wall = prof.wall_ns
    if wall <= 0:
        return
    measured = sum(p.total_lo_ns for p in prof.points) + sum(r.wait_ns for r in prof.requests)
    estimated = sum(p.total_ns - p.total_lo_ns for p in prof.points)
    factor = 1.0
    if measured + estimated > wall and estimated > 0:
        factor = max(0.0, wall - measured) / estimated
    prof.points = [dataclasses.replace(
        p, total_ns=p.total_lo_ns + round((p.total_ns - p.total_lo_ns) * factor),
        total_hi_ns=min(p.total_hi_ns, wall)) for p in prof.points]


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
        prof.patterns.append(PatternCount(**_fields(tuple(n for n, _ in formats.PROFILE_RUN_PATTERN), rest.split())))
    elif key == "request":
        prof.requests.append(RequestCount(**_fields(tuple(n for n, _ in formats.PROFILE_RUN_REQUEST), rest.split())))
    elif key == "patterns_lost":
        prof.patterns_lost = int(rest)
    elif key == "sample_syncs":
        syncs, total, n = (int(x) for x in rest.split())
        prof.sample_syncs, prof.sync_latency_ns = syncs, total / n if n else None
    elif key == "cvars_skipped":
        prof.cvars_skipped = rest
    elif key == "sample_budget_ppm":
        prof.sample_budget_ppm = int(rest)
    elif key == "own_cost":
        prof.own_cost_ns, prof.period_widened, prof.period_narrowed = (int(x) for x in rest.split())
    elif key == "chain":
        ident, *frames = (int(w, 16) for w in rest.split())
        prof.chains[ident] = tuple(frames)
    elif key == "chains_made":
        prof.chain_unwinds, prof.chains_lost = (int(x) for x in rest.split())
    elif key == "chain_walks":
        walked, checked, differed = (int(x) for x in rest.split())
        prof.chain_walks = (walked, checked, differed)
    elif key == "lost":
        prof.lost_coll, prof.lost_p2p = (int(x) for x in rest.split())
    elif key == "memo_made":
        coll, p2p, polls = (int(x) for x in rest.split())
        prof.memo_made = (coll, p2p, polls)
    elif key == "polls":
        name, empty, sampled = rest.split()
        prof.polls[name] = (int(empty), int(sampled))
    elif key == "poll_period":
        prof.poll_period, prof.poll_widened = (int(x) for x in rest.split())
    elif key == "polled":
        name, site, n = rest.split()
        prof.polled[(name, int(site, 16))] = int(n)
    else:
        facts[key] = rest


def read_rank(path: Path) -> RankProfile:
    lines = path.read_text().splitlines()
    version = lines[0].removeprefix(f"{formats.PROFILE_RUN_MAGIC} ") if lines else ""
    if not lines or not lines[0].startswith(f"{formats.PROFILE_RUN_MAGIC} ") or version not in READABLE_VERSIONS \
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
    try:
        scale_polls(prof)
    except ValueError as exc:
        raise ProfileRunError(f"{path}: polls and polled lines disagree ({exc}); rerun the profile") from exc
    bound_estimates(prof)
    return prof


@dataclass
class ProfileRun:
    directory: Path
    ranks: list[RankProfile]
    # communication layers the user named (`advise --layer`): globs of binaries or functions
    layers: tuple[str, ...] = ()
    # advise/callsites.py's resolution, by layers (addr2line runs once per run)
    site_cache: dict[tuple[str, ...], Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def nprocs(self) -> int:
        return self.ranks[0].nprocs

    @property
    def wall_ns(self) -> int:
        """The run's wall time: the slowest rank's MPI_Init..MPI_Finalize."""
        return max(r.wall_ns for r in self.ranks)


def read(directory: Path, layers: tuple[str, ...] = ()) -> ProfileRun:
    """Every rank's file; `layers`: the communication layers the user named (advise/callsites.py)."""
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
    return ProfileRun(directory, ranks, tuple(layers))
