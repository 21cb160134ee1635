"""Read the directory libcolltune's profiling mode writes (COLLTUNE_PROFILE_RUN=dir).

Format of dir/rank-N: one fact per line, written at MPI_Finalize by native/runtime/profrun.c;
the point and pattern lines' fields come from native/spec/formats.toml (colltune.formats
PROFILE_RUN_POINT / PROFILE_RUN_PATTERN), the rest (docs/advise.md "File format"):
  colltune-profile-run 5          (4: no light path lines; 3: sites were return addresses; 2: every
                                  call timed; 1: no exact size range)
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
  light NAME CALLS SAMPLED                       a repeated function (Isend, Waitall, allreduce) whose
                                                 light path opened (format 5): its calls while it
                                                 was open (exact, the sample included) and the
                                                 part of them its points' `sampled` lines hold
  sampled KIND NAME SITE NPROCS BIN N            N of the `coll`/`p2p` point (KIND NAME SITE NPROCS
                                                 BIN)'s CALLS are its function's sample; its other
                                                 calls were counted exactly (a point without the
                                                 line: all of them)
  pattern_sampled NAME FIRST SECOND NPROCS BIN PAIRS BYTES LEAD
                                                 the part of that `pattern` line's pairs and bytes
                                                 whose first call was a sample of function LEAD
  poll_period PERIOD WIDENED                     the widest light function's sampling period (each
                                                 has its own) at the end, its doublings
  end
BIN is floor(log2(bytes)), -1 for calls without a size (failed calls, waits). Every call is
counted; TIMED of them were timed (all of a point's first 64, then about one in 16, and every
sampled call), TIMED_NS is their time: the point's time is estimated as TIMED_NS * CALLS / TIMED.
Formats 1 and 2 timed every call (their TOTAL_NS stands where TIMED_NS is) and are read too.

A function's calls on a light path (the Test family's polls: `polls`/`polled`; the other repeated
functions: `light`/`sampled`) are counted in its total only, exactly; one in PERIOD of them is its
sample and counted at its point. scale_samples puts each point's sample back at its share of the
function's total (the point's calls, bytes and time become estimates with a 95% interval of its
calls, Point.calls_interval), and a pattern's pairs whose first call was a sample likewise
(PatternCount.pairs_interval). The per-function totals stay exact.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from colltune import formats
from colltune.errors import ColltuneError

FORMAT_VERSION = str(formats.PROFILE_RUN_VERSION)
# Before the spec: format 2 (every call timed: TOTAL_NS, no TIMED) and 1 (nor the exact size range).
OLD_POINTS: dict[str, tuple[str, ...]] = {
    # format 4: no light path lines (light, sampled, pattern_sampled); same fields
    "4": tuple(n for n, _ in formats.PROFILE_RUN_POINT),
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


class PointKey(NamedTuple):
    """What a point line is the point of (and a `sampled` line names)."""

    kind: str          # "coll" | "p2p"
    name: str
    site: int
    nprocs: int
    bin: int


class PatternKey(NamedTuple):
    """What a pattern line counts (and a `pattern_sampled` line names)."""

    name: str
    first: int
    second: int
    nprocs: int
    bin: int


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
    # Where the point's calls are partly an estimate (a light path's sample, scale_samples): the
    # 95% interval of `calls`; None: every call counted. `bytes` and the time are then scaled
    # with `calls` too (bytes_min/bytes_max stay: exact).
    calls_interval: tuple[int, int] | None = None
    sample: int = 0          # of `calls`: its part of its function's sample (its polled/sampled line)
    sample_calls: int = 0    # the calls that sample stands for (the estimate; the rest is counted)

    @property
    def key(self) -> PointKey:
        return PointKey(self.kind, self.name, self.site, self.nprocs, self.bin)


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
    # Where some pairs' first call was a light path's sample (scale_samples): `pairs` and
    # `bytes` are estimates, this the 95% interval of `pairs`; None: every pair counted.
    pairs_interval: tuple[int, int] | None = None

    @property
    def key(self) -> PatternKey:
        return PatternKey(self.name, self.first, self.second, self.nprocs, self.bin)


@dataclass(frozen=True)
class FunctionSample:
    """A function's calls on its light path (exact) and the part of them its points' sample
    lines hold: a `polls` line (Test family: LIGHT SAMPLED) or a `light` line (CALLS SAMPLED)."""

    calls: int
    sampled: int


@dataclass(frozen=True)
class PatternSample:
    """A `pattern_sampled` line: of its pattern's pairs and bytes, those whose first call was a
    sample of its function LEAD (RankProfile.pattern_sampled's key: the pattern's and LEAD)."""

    pairs: int
    bytes: int


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
    poll_period: int | None = None   # the widest light function's sampling period (format 5)
    poll_widened: int = 0
    # The other repeated functions' light path (format 5): per function (Isend, allreduce) its
    # calls while the light path was open and their sample (`light`); per point its part of
    # the sample (`sampled`); per (pattern, LEAD function) the pairs and bytes whose first
    # call was a sample of LEAD (`pattern_sampled`). As read: scale_samples applies them.
    light: dict[str, FunctionSample] = field(default_factory=dict)
    sampled: dict[PointKey, int] = field(default_factory=dict)
    pattern_sampled: dict[tuple[PatternKey, str], PatternSample] = field(default_factory=dict)

    def function_samples(self) -> dict[str, FunctionSample]:
        """Every function whose calls a light path sampled: the Test family's (`polls`) and the
        others (`light`)."""
        return {**{n: FunctionSample(c, s) for n, (c, s) in self.polls.items()}, **self.light}


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


SAMPLE_CONFIDENCE = 0.95


def _apportion(shares: list[float], total: int) -> list[int]:
    """Integers summing to `total` (the sum of `shares`), each its share rounded down or up: the
    largest remainders up, ties by order."""
    out = [int(x) for x in shares]
    order = sorted(range(len(shares)), key=lambda i: (-(shares[i] - out[i]), i))
    for i in order[:total - sum(out)]:
        out[i] += 1
    return out


def _scaled(part: int, total: int, sampled: int) -> int:
    """part x total / sampled, rounded half up (integers only: the same figure everywhere)."""
    return (2 * part * total + sampled) // (2 * sampled)


def sample_interval(s: int, sampled: int, total: int, estimate: int) -> tuple[int, int]:
    """The 95% interval of what a sample of `s` out of a function's `sampled` stands for in its
    `total`: the exact (Clopper-Pearson) interval of the proportion s/sampled times the total, at
    least the sample itself, at most the total, and never excluding the estimate (rounded);
    exact (the estimate) where every call was sampled."""
    from scipy import stats

    if sampled == total:
        return estimate, estimate
    ci = stats.binomtest(s, sampled).proportion_ci(SAMPLE_CONFIDENCE, method="exact")
    lo, hi = max(s, math.floor(ci.low * total)), min(total, math.ceil(ci.high * total))
    return min(lo, estimate), max(hi, estimate)


def _ptr(address: int) -> str:
    return f"{address:#x}" if address else "(nil)"


def _sampled_line(key: PointKey, n: int) -> str:
    return f"`sampled {key.kind} {key.name} {_ptr(key.site)} {key.nprocs} {key.bin} {n}`"


def _pattern_sampled_line(key: PatternKey, lead: str, s: PatternSample) -> str:
    return (f"`pattern_sampled {key.name} {_ptr(key.first)} {_ptr(key.second)} {key.nprocs} {key.bin} "
            f"{s.pairs} {s.bytes} {lead}`")


def samples_of(prof: RankProfile) -> tuple[dict[str, FunctionSample], dict[PointKey, int]]:
    """The rank's sampled functions (its `polls` and `light` lines) and each sampled point's part
    of its function's sample (its `polled` and `sampled` lines), checked against each other and
    the point lines (ValueError naming the line that disagrees)."""
    for name, f in prof.light.items():
        if name in prof.polls:
            raise ValueError(f"light and polls lines disagree: `light {name} {f.calls} {f.sampled}` "
                             f"and `polls {name} ...` for one function")
    functions = prof.function_samples()
    points = {p.key: p for p in prof.points}
    samples: dict[PointKey, int] = {}
    for (name, site), n in prof.polled.items():
        # a Test-family point is the p2p point of its function and site (no size: one bin)
        matches = [k for k in points if k.kind == "p2p" and k.name == name and k.site == site]
        if len(matches) != 1:
            raise ValueError(f"polls and polled lines disagree: `polled {name} {_ptr(site)} {n}` has "
                             f"{'no p2p point' if not matches else 'several p2p points'}")
        samples[matches[0]] = n
    for key, n in prof.sampled.items():
        line = _sampled_line(key, n)
        if key not in points:
            raise ValueError(f"light and sampled lines disagree: {line} has no {key.kind} point line")
        if key.name not in prof.light:
            raise ValueError(f"light and sampled lines disagree: {line} has no `light {key.name}` line")
        samples[key] = n
    for key, n in samples.items():
        if n > points[key].calls:
            what = "polls and polled" if key.name in prof.polls else "light and sampled"
            raise ValueError(f"{what} lines disagree: {n} sampled of the point's {points[key].calls} "
                             f"calls ({key.kind} {key.name} {_ptr(key.site)} {key.nprocs} {key.bin})")
    held: dict[str, int] = {}
    for key, n in samples.items():
        held[key.name] = held.get(key.name, 0) + n
    for name, f in functions.items():
        polls = name in prof.polls
        line = f"`{'polls' if polls else 'light'} {name} {f.calls} {f.sampled}`"
        what = "polls and polled" if polls else "light and sampled"
        if f.sampled > f.calls:
            raise ValueError(f"{what} lines disagree: {line} samples more calls than it made")
        if held.get(name, 0) != f.sampled:
            raise ValueError(f"{what} lines disagree: {line}, its {'polled' if polls else 'sampled'} "
                             f"lines hold {held.get(name, 0)}")
    return functions, samples


def scale_samples(prof: RankProfile) -> None:
    """A light path counts its function's calls in the function's total only (exact) and sends
    one in PERIOD to the full path, where its point counts it: its sample. A point's part s of its
    function's sample S stands for s/S of the function's light calls C; its other calls were
    counted exactly. The estimates are rounded so that the function's points sum to C, each with
    the exact (Clopper-Pearson, 95%) interval of the proportion s/S times C (sample_interval); the
    point's bytes are scaled with its calls (a point is one size bin), its time is its timed
    calls' mean times the estimated calls, its interval's top every untimed call as long as the
    longest timed one. The Test family's polls (requests.c: `polls`/`polled`) and the other
    repeated functions (`light`/`sampled`) alike. A pattern's pairs whose first call was a sample
    of LEAD (`pattern_sampled`) stand for C/S of theirs likewise, its bytes with them."""
    functions, samples = samples_of(prof)
    index = {p.key: i for i, p in enumerate(prof.points)}
    by_function: dict[str, list[PointKey]] = {}
    for key in samples:
        by_function.setdefault(key.name, []).append(key)
    for name, keys in by_function.items():
        f = functions[name]
        if f.sampled == 0:   # nothing sampled (every N is 0): nothing to place
            continue
        keys.sort(key=lambda k: index[k])   # the file's order: ties of the rounding by it
        estimates = _apportion([samples[k] * f.calls / f.sampled for k in keys], f.calls)
        for key, est in zip(keys, estimates):
            i, s = index[key], samples[key]
            p = prof.points[i]
            lo, hi = sample_interval(s, f.sampled, f.calls, est)
            counted, exact = p.calls, p.calls - s
            calls = exact + est
            timed = p.timed if p.timed is not None else p.calls
            total_ns = round(p.total_lo_ns * calls / timed) if timed else 0
            prof.points[i] = dataclasses.replace(
                p, calls=calls, total_ns=total_ns,
                bytes=_scaled(p.bytes, calls, counted) if counted else p.bytes,
                total_hi_ns=p.total_lo_ns + (exact + hi - timed) * p.max_ns,
                calls_interval=(exact + lo, exact + hi), sample=s, sample_calls=est)
    _scale_patterns(prof, functions)


def interval_of(prof: RankProfile, points: list[Point]) -> tuple[int, int] | None:
    """The 95% interval of the sum of some of one rank's points' calls (a call site's, a size
    bin's); None where every one was counted. Their counted calls, plus per function the
    interval of their summed sample (sample_interval: one proportion of the function's sample,
    narrower than the sum of each point's interval)."""
    if all(p.calls_interval is None for p in points):
        return None
    functions = prof.function_samples()
    lo = hi = 0
    parts: dict[str, list[int]] = {}
    for p in points:
        counted = p.calls - p.sample_calls if p.calls_interval is not None else p.calls
        lo, hi = lo + counted, hi + counted
        if p.calls_interval is not None:
            acc = parts.setdefault(p.name, [0, 0])
            acc[0], acc[1] = acc[0] + p.sample, acc[1] + p.sample_calls
    for name, (s, est) in parts.items():
        f = functions[name]
        a, b = sample_interval(s, f.sampled, f.calls, est)
        lo, hi = lo + a, hi + b
    return lo, hi


def _scale_patterns(prof: RankProfile, functions: dict[str, FunctionSample]) -> None:
    """The patterns' pairs (and bytes) whose first call was a sample of a light path's function."""
    index: dict[PatternKey, int] = {}
    for i, p in enumerate(prof.patterns):
        index.setdefault(p.key, i)
    parts: dict[PatternKey, list[tuple[str, PatternSample]]] = {}
    for (key, lead), s in prof.pattern_sampled.items():
        line = _pattern_sampled_line(key, lead, s)
        what = "pattern and pattern_sampled lines disagree"
        if key not in index:
            raise ValueError(f"{what}: {line} has no pattern line")
        if sum(p.key == key for p in prof.patterns) > 1:
            raise ValueError(f"{what}: {line} names a pattern given on several lines")
        if lead not in prof.light:
            raise ValueError(f"{what}: {line} has no `light {lead}` line")
        if s.pairs > functions[lead].sampled:
            raise ValueError(f"{what}: {line} has more pairs than {lead}'s sample "
                             f"({functions[lead].sampled})")
        parts.setdefault(key, []).append((lead, s))
    for key, leads in parts.items():
        i = index[key]
        p = prof.patterns[i]
        pairs, nbytes = sum(s.pairs for _, s in leads), sum(s.bytes for _, s in leads)
        if pairs > p.pairs or nbytes > p.bytes:
            raise ValueError(f"pattern and pattern_sampled lines disagree: "
                             f"{', '.join(_pattern_sampled_line(key, lead, s) for lead, s in leads)} "
                             f"hold {pairs} pairs of {nbytes} bytes, its pattern line {p.pairs} of {p.bytes}")
        est_pairs, est_bytes, lo, hi = p.pairs - pairs, p.bytes - nbytes, p.pairs - pairs, p.pairs - pairs
        for lead, s in leads:
            f = functions[lead]
            if f.sampled == 0:   # (only with s.pairs == 0, checked above)
                continue
            est = _scaled(s.pairs, f.calls, f.sampled)
            a, b = sample_interval(s.pairs, f.sampled, f.calls, est)
            est_pairs, lo, hi = est_pairs + est, lo + a, hi + b
            est_bytes += _scaled(s.bytes, f.calls, f.sampled)
        prof.patterns[i] = dataclasses.replace(p, pairs=est_pairs, bytes=est_bytes, pairs_interval=(lo, hi))


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


LIGHT_LINES = ("light", "sampled", "pattern_sampled")
LIGHT_SINCE = 5   # the format that has them


def _u64(word: str) -> int:
    value = int(word)
    if value < 0:
        raise ValueError(f"{word}: negative count")
    return value


def _light_fact(prof: RankProfile, key: str, words: list[str]) -> None:
    """A light path line (format 5) into the rank's model, typed; each key once."""
    if key == "light":
        name, calls, sampled = words
        if name in prof.light:
            raise ValueError(f"a second light line for {name}")
        prof.light[name] = FunctionSample(_u64(calls), _u64(sampled))
    elif key == "sampled":
        kind, *point, n = words
        if kind not in ("coll", "p2p"):
            raise ValueError(f"{kind}: not coll or p2p")
        f = _fields(("name", "site", "nprocs", "bin"), point)
        at = PointKey(kind, f["name"], f["site"], f["nprocs"], f["bin"])
        if at in prof.sampled:
            raise ValueError("a second sampled line for this point")
        prof.sampled[at] = _u64(n)
    else:
        *pattern, pairs, nbytes, lead = words
        f = _fields(("name", "first", "second", "nprocs", "bin"), pattern)
        at = (PatternKey(f["name"], f["first"], f["second"], f["nprocs"], f["bin"]), lead)
        if at in prof.pattern_sampled:
            raise ValueError("a second pattern_sampled line for this pattern and function")
        prof.pattern_sampled[at] = PatternSample(_u64(pairs), _u64(nbytes))


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
    elif key in LIGHT_LINES:
        if int(version) < LIGHT_SINCE:
            raise ValueError(f"format {version} has no {key} lines")
        _light_fact(prof, key, rest.split())
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
            raise ProfileRunError(f"{path}: malformed line {line!r} ({exc}); rerun the profile") from exc
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
        scale_samples(prof)
    except ValueError as exc:
        raise ProfileRunError(f"{path}: {exc}; rerun the profile") from exc
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
