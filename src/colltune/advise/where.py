"""Where the time goes: per collective (and per point-to-point call) of one profiling run, the
calls, message sizes, own cost, waiting, share of the run, slowest and fastest rank and the call
sites that make it up, ordered by own cost. Pure: a ProfileRun in, rows out (output.py renders).

Definitions (docs/advise.md, "Where the time goes"):
- per rank, a row's time is the rank's time in that call (all sites and sizes), split into own
  cost and waiting point by point with the sampled calls (points.own_and_wait);
- the row's time, own cost and waiting are those of its **slowest rank** (the most time in it),
  its share is that time over the run's wall time; the fastest rank is the one with the least;
- calls are the most calls any rank made (a collective's calls are the same on every rank);
- bytes: mean over every rank's calls with a size, range over all of them;
- a site's calls and time are the most of any rank at that site;
- the run's collective time (coverage_of) is one rank's: the sum over the collective rows on
  each rank, then the rank with the most (the sum of each row's slowest rank can exceed the run
  where ranks wait in different functions of a pair).
Point-to-point calls have no waiting split (a receive's wait is its sender's lateness): their own
cost is their time.
A nonblocking or persistent collective (MPI_Iallreduce, MPI_Allreduce_init) adds to its starting
calls' time the time the rank spent in Wait/Test completing its requests, which is its waiting;
its overlap is the time from start to completion the rank spent elsewhere (computing).
Tunable: the share of the collective time spent in functions colltune can serve with another
member on the run's library (Tunability): the function's form has members on that library (the
blocking form: the collective's mock-ups and the library algorithms of mpi/algorithms.py; the
nonblocking and persistent forms: the library's algorithms of that form, which the learning mode,
COLLTUNE_FORCE and profiles serve), its binding is served (a v/w form's _c binding is watched
only), and, where the build's proof (proof.txt) is known, at least one of those members passed
some class of it (the runtime serves nothing unproven). Each row says which rule decided; the
rest is only seen.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colltune import catalog
from colltune.advise import callsites
from colltune.advise.findings import family_of
from colltune.measure.proof import read_passed
from colltune.mpi.algorithms import ALGORITHMS_AT_LAUNCH, LIBRARY_ALGORITHMS, started_algorithms
from colltune.advise.points import own_and_wait
from colltune.advise.profile_run import Point, ProfileRun, RequestCount, interval_of

DEFAULT_TOP = 3


@dataclass
class SiteTime:
    label: str
    calls: int = 0
    time_s: float = 0.0
    # an estimate's interval (a light path's sample: profile_run.scale_samples), None: counted
    calls_interval: tuple[int, int] | None = None


@dataclass
class TimeRow:
    kind: str                       # "coll" | "p2p"
    name: str                       # MPI_Reduce, MPI_Send
    calls: int = 0
    bytes_mean: float = 0.0
    bytes_min: int | None = None    # None: no call with a size
    bytes_max: int | None = None
    time_s: float = 0.0             # on the slowest rank
    own_s: float = 0.0
    wait_s: float | None = 0.0      # None for point-to-point
    share: float = 0.0              # time_s / wall
    slowest_rank: int = 0
    slowest_s: float = 0.0
    fastest_rank: int = 0
    fastest_s: float = 0.0
    sites: list[SiteTime] = field(default_factory=list)
    # the slowest rank's time: measured (timed calls) .. at most every untimed call as long as
    # the longest timed one, within the run (an estimate carries its interval)
    time_interval_s: tuple[float, float] = (0.0, 0.0)
    completed: int = 0              # requests completed by Wait/Test (nonblocking, persistent)
    overlap_s: float | None = None  # their start-to-completion time not spent waiting
    # every rank's time in it (coverage: the run's collective time is one rank's sum)
    rank_s: dict[int, float] = field(default_factory=dict)
    tunable: bool = False           # colltune can serve it on the run's library (Tunability)
    tunable_rule: str = ""          # the rule that decided it

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "calls": self.calls,
                "bytes_mean": self.bytes_mean, "bytes_min": self.bytes_min, "bytes_max": self.bytes_max,
                "time_s": self.time_s, "own_s": self.own_s, "wait_s": self.wait_s, "share": self.share,
                "slowest_rank": self.slowest_rank, "slowest_s": self.slowest_s,
                "fastest_rank": self.fastest_rank, "fastest_s": self.fastest_s,
                "sites": [{"site": s.label, "calls": s.calls, "time_s": s.time_s,
                           "calls_estimated": s.calls_interval is not None,
                           **({"calls_interval": list(s.calls_interval)} if s.calls_interval else {})}
                          for s in self.sites],
                "completed": self.completed, "overlap_s": self.overlap_s, "tunable": self.tunable,
                "tunable_rule": self.tunable_rule,
                "time_interval_s": list(self.time_interval_s),
                "rank_s": {str(rank): t for rank, t in sorted(self.rank_s.items())}}


def library_key(library: str) -> str:
    """mpi/algorithms.py's key of the library a run's `library` line names (MPI_Get_library_version):
    openmpi, mpich, intel or smpi."""
    text = library.lower()
    return "smpi" if "smpi" in text or "simgrid" in text else family_of(library)


def _binding(row: catalog.Collective, mpi: str) -> tuple[str, bool]:
    """(form, large-count binding) of one of the row's MPI functions."""
    for form in row.forms:
        if mpi in (row.function(form), row.function(form) + "_c"):
            return form, mpi != row.function(form)
    raise ValueError(f"{mpi} is not a function of {row.mpi}'s row")


@dataclass(frozen=True)
class Tunability:
    """What colltune can serve on one library: per MPI function, whether another member may serve
    its calls and the rule that says so. `proven`: the build's proof (member -> classes passed,
    measure/proof.read_passed), None where no proof of this build is known (then the catalog's
    members count, said in the rule)."""

    library: str                                        # openmpi, mpich, intel, smpi
    proven: Mapping[str, frozenset[str]] | None = None
    proof: str | None = None                            # the proof file read

    @classmethod
    def of_run(cls, run: ProfileRun, proof: Path | None = None) -> Tunability:
        """The run's library (its rank 0's `library` line) and the proof at `proof`, if it exists."""
        key = library_key(run.ranks[0].library) if run.ranks else "mpich"
        if proof is None or not proof.exists():
            return cls(key)
        return cls(key, {m: frozenset(c) for m, c in read_passed(proof).items()}, str(proof))

    def members(self, row: catalog.Collective, form: str) -> list[str]:
        """The members of `row`'s collective in `form` on this library: the blocking form's
        mock-ups and library algorithms, the other forms' library algorithms of that form."""
        if form == catalog.FORMS[0]:
            return ([v.name for v in catalog.load().variants_of(row.name)]
                    + [f"lib:{row.name}:{a}" for a in LIBRARY_ALGORITHMS.get(self.library, {}).get(row.name, ())])
        return [f"lib:{row.name}:{a}#{form}" for a in started_algorithms(self.library, row.name, form)]

    def decide(self, mpi: str) -> tuple[bool, str]:
        """(tunable, the rule that decided) for an MPI function (MPI_Iallreduce, MPI_Gatherv_c)."""
        row = catalog.load().function_row(mpi)
        if row is None:
            return False, "not a collective of colltune's table"
        if not row.dispatch:
            return False, f"watched only: no member for the {row.family} collectives"
        form, large = _binding(row, mpi)
        if large and not row.serve_large:
            arrays = any(a.role in ("sendcounts", "recvcounts") for a in row.args)
            # a regular neighborhood row's counts: significant per neighbour pair only, so
            # "fits an int" (the narrowing's condition) need not hold alike on every rank
            why = ("its counts need not fit an int alike on every rank"
                   if row.family == "neighborhood" and not arrays else "MPI_Count arrays")
            return False, f"watched only: its _c binding is not served ({why})"
        members = self.members(row, form)
        if not members:
            return False, f"no member of the {form} form on {self.library}"
        at_launch = [m for m in members if m.startswith(catalog.LIB_PREFIX) and self.library in ALGORITHMS_AT_LAUNCH]
        if self.proven is None:
            return True, f"{len(members)} members of the {form} form on {self.library} (not proven yet: no proof of this build known)"
        proven = [m for m in members if m not in at_launch and self.proven.get(m)]
        if proven or at_launch:
            what = f"{len(proven)} of {len(members) - len(at_launch)} members proven"
            if at_launch:
                what += f", {len(at_launch)} library algorithms set per launch"
            return True, f"{what} ({form} form, {self.library})"
        if any(m in self.proven for m in members):
            return False, f"none of its {len(members)} members of the {form} form passed this build's proof"
        flag = {"nonblocking": " --nonblocking", "persistent": " --persistent"}.get(form, "")
        return False, (f"none of its {len(members)} members of the {form} form is in this build's proof "
                       f"(the library offers none at run time, or colltune selftest{flag} has not run)")

    def describe(self) -> str:
        """The rule in one line, for the coverage figure."""
        if self.proof:   # the path: the JSON's tunable_proof
            return f"tunable on {self.library}: a member of its form proven here (the build's proof.txt)"
        return f"tunable on {self.library}: a member of its form (no proof of this build known)"


def is_tunable(mpi: str, tunability: Tunability | None = None) -> bool:
    """Whether colltune can serve calls of this MPI function with another member on the library
    (Tunability.decide; without one: Open MPI's catalog, no proof)."""
    return (tunability or Tunability("openmpi")).decide(mpi)[0]


def mpi_name(p: Point | RequestCount) -> str:
    """MPI_Reduce_scatter_block from the runtime's names (reduce_scatter_block, Send)."""
    return "MPI_" + (p.name[:1].upper() + p.name[1:])


def byte_range(p: Point) -> tuple[int, int] | None:
    """(smallest, largest) size of a point's calls: exact where the runtime recorded them
    (format 2), else the bounds of its log2 bin. A Gatherv, Scatterv, Alltoallv or Alltoallw
    point stays in the bin of its decision size (0 bytes: -1) but records its counts' bytes
    (native/runtime/watch.c, ct_watch_call_bytes): their range where any call had some."""
    if p.bin < 0:
        if p.bytes_max:   # only those rows record bytes in bin -1 (failed calls record none)
            return p.bytes_min or 0, p.bytes_max
        return None
    if p.bytes_min is not None and p.bytes_max is not None:
        return p.bytes_min, p.bytes_max
    return 1 << p.bin, (1 << (p.bin + 1)) - 1


def _per_rank(run: ProfileRun) -> dict[tuple[str, str], dict[int, list[float]]]:
    """(kind, name) -> rank -> [calls, time, own, wait, completed, overlap]; a nonblocking
    collective's completion wait is in its time and its waiting."""
    acc: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(dict)
    for rank in run.ranks:
        for r in rank.requests:
            a = acc[("coll", mpi_name(r))].setdefault(rank.rank, [0, 0.0, 0.0, 0.0, 0, 0.0, 0.0, 0.0])
            a[1] += r.wait_ns / 1e9
            a[3] += r.wait_ns / 1e9
            a[4] += r.completed
            a[5] += max(0, r.span_ns - r.wait_ns) / 1e9
            a[6] += r.wait_ns / 1e9
            a[7] += r.wait_ns / 1e9
        for p in rank.points:
            own, wait = own_and_wait(p) if p.kind == "coll" else (p.total_ns / 1e9, 0.0)
            a = acc[(p.kind, mpi_name(p))].setdefault(rank.rank, [0, 0.0, 0.0, 0.0, 0, 0.0, 0.0, 0.0])
            a[0] += p.calls
            a[1] += p.total_ns / 1e9
            a[2] += own
            a[3] += wait
            a[6] += p.total_lo_ns / 1e9   # the interval of the estimate (profile_run.bound_estimates)
            a[7] += p.total_hi_ns / 1e9
    return acc


def rows(run: ProfileRun, tunability: Tunability | None = None) -> list[TimeRow]:
    """Every collective and point-to-point call of the run; collectives first, each kind by own
    cost (then time, then name: a stable order for equal figures). `tunability`: what colltune
    serves on the run's library (default: Tunability.of_run, no proof)."""
    tunability = tunability or Tunability.of_run(run)
    wall = run.wall_ns / 1e9
    out: dict[tuple[str, str], TimeRow] = {}
    sizes: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])   # bytes, sized calls
    sites: dict[tuple[str, str], dict[str, SiteTime]] = defaultdict(dict)
    spans: dict[tuple[tuple[str, str], str], tuple[int, int, bool]] = {}   # sites' calls interval
    for rank in run.ranks:
        labels = callsites.of(run, rank)
        # calls, time; the points (an estimate's interval: profile_run.interval_of)
        here: dict[tuple[tuple[str, str], str], list[float]] = defaultdict(lambda: [0, 0.0])
        at: dict[tuple[tuple[str, str], str], list[Point]] = defaultdict(list)
        for p in rank.points:
            key = (p.kind, mpi_name(p))
            row = out.setdefault(key, TimeRow(p.kind, key[1], wait_s=None if p.kind == "p2p" else 0.0))
            if (rng := byte_range(p)) is not None:
                row.bytes_min = rng[0] if row.bytes_min is None else min(row.bytes_min, rng[0])
                row.bytes_max = rng[1] if row.bytes_max is None else max(row.bytes_max, rng[1])
                sizes[key][0] += p.bytes
                sizes[key][1] += p.calls
            h = here[(key, labels[p.site].label)]
            h[0] += p.calls
            h[1] += p.total_ns / 1e9
            at[(key, labels[p.site].label)].append(p)
        for (key, label), (calls, t) in here.items():
            s = sites[key].setdefault(label, SiteTime(label))
            s.calls, s.time_s = max(s.calls, int(calls)), max(s.time_s, t)
            # the most of any rank lies between the most of their low and high ends (a counted
            # rank's ends are its calls)
            interval = interval_of(rank, at[(key, label)])
            lo, hi = interval or (int(calls), int(calls))
            old = spans.get((key, label), (0, 0, False))
            spans[(key, label)] = (max(old[0], lo), max(old[1], hi), old[2] or interval is not None)
    for (key, label), (lo, hi, estimated) in spans.items():
        sites[key][label].calls_interval = (lo, hi) if estimated else None
    for key, by_rank in _per_rank(run).items():
        row = out[key]
        slow = max(by_rank, key=lambda r: (by_rank[r][1], -r))
        fast = min(by_rank, key=lambda r: (by_rank[r][1], r))
        calls, t, own, wait, completed, overlap, lo, hi = by_rank[slow]
        if key not in out:   # requests whose point was lost (its table was full)
            continue
        if completed:
            row.completed, row.overlap_s = int(completed), overlap
        row.calls = int(max(v[0] for v in by_rank.values()))
        row.time_s, row.own_s = t, own
        row.wait_s = wait if row.kind == "coll" else None
        row.share = t / wall if wall else 0.0
        row.time_interval_s = (lo, min(hi, wall) if wall else hi)
        row.slowest_rank, row.slowest_s = slow, t
        row.fastest_rank, row.fastest_s = fast, by_rank[fast][1]
        row.rank_s = {rank: v[1] for rank, v in by_rank.items()}
        b, n = sizes[key]
        row.bytes_mean = b / n if n else 0.0
        if row.kind == "coll":
            row.tunable, row.tunable_rule = tunability.decide(row.name)
        row.sites = sorted(sites[key].values(), key=lambda s: (-s.time_s, -s.calls, s.label))
    return sorted(out.values(), key=lambda r: (r.kind != "coll", -r.own_s, -r.time_s, r.name))


@dataclass(frozen=True)
class Coverage:
    """The run's collective time: one rank's, summed over the collective functions on that rank
    (the slowest rank: the most collective time), so it is at most that rank's run. (A sum of each
    function's slowest rank counted one wait twice where the ranks wait in different functions
    of a pair: ExaML's root in MPI_Reduce, the other rank in MPI_Bcast, 122% of the wall.)"""

    seen_s: float          # the slowest rank's collective time
    rank: int              # that rank (0 when there is none)
    tunable_share: float   # of it, in functions colltune can serve (is_tunable)


def coverage_of(table: list[TimeRow]) -> Coverage:
    """The run's collective time and its tunable share, on the rank with the most of it."""
    per_rank: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])   # all, tunable
    for r in table:
        if r.kind == "coll":
            for rank, t in r.rank_s.items():
                per_rank[rank][0] += t
                per_rank[rank][1] += t if r.tunable else 0.0
    if not per_rank:
        return Coverage(0.0, 0, 0.0)
    rank = max(per_rank, key=lambda k: (per_rank[k][0], -k))
    seen, tunable = per_rank[rank]
    return Coverage(seen, rank, tunable / seen if seen else 0.0)


def coverage(table: list[TimeRow]) -> tuple[float, float]:
    """(collective time seen, its tunable share): coverage_of's."""
    c = coverage_of(table)
    return c.seen_s, c.tunable_share


def as_json(run: ProfileRun, table: list[TimeRow], tunability: Tunability | None = None) -> dict[str, Any]:
    cov = coverage_of(table)
    tunability = tunability or Tunability.of_run(run)
    return {"wall_s": run.wall_ns / 1e9, "nprocs": run.nprocs,
            "collective_s": cov.seen_s, "collective_rank": cov.rank, "tunable_share": cov.tunable_share,
            "tunable_rule": tunability.describe(), "tunable_library": tunability.library,
            "tunable_proof": tunability.proof,
            "collectives": [r.as_dict() for r in table if r.kind == "coll"],
            "p2p": [r.as_dict() for r in table if r.kind == "p2p"]}


# ---- text: 80 columns -----------------------------------------------------------------------------

WIDTH = 80


def fmt_s(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.1f} us"
    if s > 0:   # a call pattern's saving per pair: tens of nanoseconds on one node
        return f"{s * 1e9:.0f} ns"
    return "0"


def fmt_count(n: int, interval: tuple[int, int] | None) -> str:
    """A count for people: `~` before an estimate (one with an interval, a light path's sample)."""
    return f"~{n:,}" if interval is not None else f"{n:,}"


def fmt_bytes(n: float) -> str:
    """Compact: 24, 1.5K, 41K, 2.0M (powers of 1024)."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.1f}{unit}" if v < 10 else f"{v:.0f}{unit}"
    return f"{n:.0f}"


def fmt_size(row: TimeRow) -> str:
    if row.bytes_min is None or row.bytes_max is None:
        return "-"
    if row.bytes_min == row.bytes_max:
        return fmt_bytes(row.bytes_min)
    return f"{fmt_bytes(row.bytes_mean)} ({fmt_bytes(row.bytes_min)}-{fmt_bytes(row.bytes_max)})"


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


_OBJECT_OFFSET = re.compile(r"^(?P<obj>\S+?)(?P<off>\+0x[0-9a-f]+)$")


def class_method(function: str) -> str:
    """A C++ name without its namespaces: `LAMMPS_NS::Thermo::lost_check` -> `Thermo::lost_check`
    (the class and the method: what a reader finds in the source; template arguments are gone
    already, callsites.short_function)."""
    parts = function.split("::")
    return "::".join(parts[-2:]) if len(parts) > 2 else function


def cut_name(name: str, width: int) -> str:
    """A function's name in `width` characters, cut in the middle: its start and its end stay
    (`ComputePre...rial_compute`), at least 6 characters of each (15 in all: a narrower cut
    would no longer name the function)."""
    width = max(width, 15)
    if len(name) <= width:
        return name
    tail = (width - 3) // 2
    return name[:width - 3 - tail] + "..." + name[len(name) - tail:]


def frame_forms(line: str) -> list[str]:
    """An application frame's label from the longest to the shortest form a reader still acts on:
    `function (lib.so+0xoff)` drops its object first (`function (+0xoff)`; the object is in the
    JSON), then its namespaces (`Class::method`), then its offset; `function (file.c:12)` keeps
    its file:line and drops its namespaces; `object+0xoff` (no symbol) stays whole."""
    function, paren, where_ = line.partition(" (")
    where_ = where_.removesuffix(")")
    if not paren:
        return [line]
    short = class_method(function)
    m = _OBJECT_OFFSET.match(where_)
    if m:
        forms = [line, f"{function} ({m['off']})", f"{short} ({m['off']})", short]
    else:
        forms = [line, f"{short} ({where_})"]
    return list(dict.fromkeys(forms))


def fit_site(label: str, width: int) -> str:
    """A call site label in `width` characters, dropping what the reader needs least first: the
    object of `(lib.so+0xoff)` where the function is known, the layer frames below the
    application line (`<- ...`), the namespaces, the offset; only then is the function's name cut
    in the middle (its end stays); a file:line always stays."""
    if len(label) <= width:
        return label
    line, *below = label.split(" <- ")
    forms = frame_forms(line)
    # the layer frames go with the object dropped (`(+0xoff)`), or before a file:line's namespaces
    with_layers = forms[1] if _OBJECT_OFFSET.match(line.partition(" (")[2].removesuffix(")")) else forms[0]
    candidates = [" <- ".join([line, *below])]
    candidates += [" <- ".join([with_layers, *below[:keep], *(["..."] if keep < len(below) else [])])
                   for keep in range(len(below), -1, -1)]
    candidates += forms[forms.index(with_layers):]
    for text in candidates:
        if len(text) <= width:
            return text
    last = forms[-1]
    function, paren, where_ = last.partition(" (")
    if paren and len(where_) + 8 < width:
        return cut_name(function, width - len(where_) - 2) + paren + where_
    if m := _OBJECT_OFFSET.match(last):   # an address: its object cut, the offset whole
        return cut_name(m["obj"], width - len(m["off"])) + m["off"]
    return cut_name(last, width)


def without_object(label: str) -> str:
    """A site's label with its application frame's object dropped (`f (lib.so+0xoff) <- g` ->
    `f (+0xoff) <- g`): the compact table drops it from every site, not only from those too long
    to keep it, so its rows read alike; the object is in the JSON and, where it has no line
    table, in the screen's line that says so (output.why_addresses)."""
    line, sep, below = label.partition(" <- ")
    function, paren, where_ = line.partition(" (")
    m = _OBJECT_OFFSET.match(where_.removesuffix(")")) if paren else None
    return f"{function} ({m['off']}){sep}{below}" if m else label


def shorten(text: str, width: int = WIDTH) -> str:
    """At most `width` characters, cut in the middle (what has no structure to drop first)."""
    if len(text) <= width:
        return text
    head = (width - 3 + 1) // 2
    return text[:head] + "..." + text[len(text) - (width - 3 - head):]


ESTIMATED = "    ~ estimated from a sample of the calls (intervals in the JSON)"
HEAD = f"{'call':<20} {'calls/rank':>11} {'bytes (range)':>16} {'own':>9} {'waiting':>9} {'share':>6}"


def _row_lines(row: TimeRow, sites: int, compact: bool = False) -> list[str]:
    """A row's lines; `compact` (advise's one-screen summary): no rank spread, no count of the
    sites not shown (the JSON and the report have both)."""
    name = row.name if len(row.name) <= 20 else ""
    lines = [] if name else [row.name]
    lines.append(f"{name:<20} {row.calls:>11,} {fmt_size(row):>16} {fmt_s(row.own_s):>9} "
                 f"{fmt_s(row.wait_s):>9} {100 * row.share:>5.1f}%")
    if not compact:
        lines.append(f"    slowest rank {row.slowest_rank} ({fmt_s(row.slowest_s)}), fastest rank "
                     f"{row.fastest_rank} ({fmt_s(row.fastest_s)})")
    if row.overlap_s is not None:
        lines.append(f"    {row.completed:,} requests completed, waiting {fmt_s(row.wait_s)} in "
                     f"Wait/Test, overlap {fmt_s(row.overlap_s)}")
    for s in row.sites[:sites]:
        calls = fmt_count(s.calls, s.calls_interval)
        head = f"    {calls:>11} {fmt_s(s.time_s):>9}  "
        lines.append(head + fit_site(without_object(s.label) if compact else s.label, WIDTH - len(head)))
    if len(row.sites) > sites and not compact:
        lines.append(f"    ... {len(row.sites) - sites} more call sites (all in the JSON)")
    if not compact and any(s.calls_interval for s in row.sites[:sites]):
        lines.append(ESTIMATED)
    return lines


def text(run: ProfileRun, table: list[TimeRow], top: int = DEFAULT_TOP, sites: int = 3,
         compact: bool = False, tunability: Tunability | None = None, p2p_rows: int = 2) -> list[str]:
    """The table as lines of at most 80 characters: the coverage (collective time, its tunable
    share, the rule, the `top` functions not tunable with why), the `top` collectives by own
    cost, then the `top` point-to-point calls; each with its rank spread and its call sites
    (`compact`: without the rank spread, and at most `p2p_rows` point-to-point calls with one site
    each)."""
    tunability = tunability or Tunability.of_run(run)
    coll = [r for r in table if r.kind == "coll"]
    p2p = [r for r in table if r.kind == "p2p"]
    lines = [_fit(f"Where the time goes: {run.nprocs} ranks, wall {fmt_s(run.wall_ns / 1e9)}, each "
                  "row on its slowest rank", WIDTH)]
    if coll:
        cov = coverage_of(table)
        lines.append(_fit(f"collective time {fmt_s(cov.seen_s)} (rank {cov.rank}), "
                          f"{100 * cov.tunable_share:.1f}% of it tunable (the rest only seen)", WIDTH))
        lines.append(shorten("  " + tunability.describe()))
        untunable = sorted((r for r in coll if not r.tunable), key=lambda r: (-r.time_s, r.name))
        for r in untunable[:top]:
            lines.append(shorten(f"  not tunable: {r.name} {fmt_s(r.time_s)}: {r.tunable_rule}"))
        if len(untunable) > top:
            lines.append(f"  ... {len(untunable) - top} more not tunable (all in the JSON)")
    lines.append(HEAD)
    if not coll:
        lines.append("  no collective calls")
    for row in coll[:top]:
        lines += _row_lines(row, sites, compact)
    if len(coll) > top:
        lines.append(f"... {len(coll) - top} more collectives (--top N shows more)")
    if p2p:
        lines.append("point-to-point (own = time in the call, waiting for the partner included)")
    p2p_top, p2p_sites = (min(top, p2p_rows), 1) if compact else (top, sites)
    for row in p2p[:p2p_top]:
        lines += _row_lines(row, p2p_sites, compact)
    if len(p2p) > p2p_top:
        lines.append(f"... {len(p2p) - p2p_top} more point-to-point calls (--top N shows more)")
    return lines
