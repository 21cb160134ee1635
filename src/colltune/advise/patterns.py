"""Call patterns one call could replace (recorded per rank by native/runtime/profcomm.c), as
findings with their sites and a predicted saving. Advice for the source code: colltune never
fuses calls at run time (a fused call changes the program's semantics the moment the pattern
breaks).

- reduce_bcast: MPI_Reduce to root r, directly followed on the same communicator by MPI_Bcast
  from r with the same count and datatype, whose buffer at the root is the reduce's result ->
  one MPI_Allreduce. Saving per pair: this machine's database, both timed back to back (`--sync
  none`, as a loop runs them): the mock-up `allreduce_as_reduce_bcast` (exactly Reduce + Bcast)
  minus the library's MPI_Allreduce.
  Why back to back: timed from synchronized starts, each call pays a whole isolated latency (and
  the exit skew of the synchronization); in a loop of dependent calls a call's local overheads
  overlap the previous call's messages (the root's broadcast send returns at once, its next
  reduce waits only for the data), and fusing saves what the chain of messages loses: on ExaML
  0.6 us per pair from synchronized starts, 0.12 us back to back, and the hand-fused run
  measured 0.11 us (benchmarks/advise/README.md, "Hand-fused").
- small_reductions: two reductions of <= 4 KiB of the same kind, op, datatype (and root),
  back to back, the second's buffers not overlapping the first's result -> one reduction over
  both (a packed buffer or a derived datatype). Buffers cannot show data flow (the second's input
  computed from the first's result through another variable, a convergence test between them):
  the finding says what the user must check before fusing, and ranks below the observable-safe
  ones (findings.ordered). Saving per pair: the database's cost of one such reduction at
  the second's size, minus what the fused call costs more at twice the size, timed back to back.
- barrier_before_sync: MPI_Barrier directly before a collective that synchronises the ranks
  anyway (Allreduce, Allgather, Alltoall, Reduce_scatter(_block), Barrier) -> drop the barrier.
  Saving per pair: the barrier's own cost at its site, measured in this run (its waiting moves
  to the next collective, it does not disappear). The user checks that it orders nothing else.

A pattern counts only where every rank saw it (the minimum over ranks): only the root can check
that a broadcast sends the reduce's result, the other ranks only check order, root, count, type.
Where a light path sampled the first calls (profile_run.scale_samples) the pairs are an estimate:
`~` before them wherever they are quoted, their 95% interval (and the saving's) in the evidence and
the JSON (`pairs_interval`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

import pandas as pd

from colltune import catalog
from colltune.advise import callsites
from colltune.advise.findings import Finding
from colltune.advise.points import AppPoint
from colltune.advise.profile_run import ProfileRun
from colltune.advise.where import class_method, cut_name, fmt_bytes, fmt_count, fmt_s, shorten

NAMES = ("reduce_bcast", "small_reductions", "barrier_before_sync")
# A pattern whose predicted saving is below this share of the run is not advised (it stays in the
# JSON's "patterns"): a barrier before an allreduce once at start-up is not worth a source change.
NEGLIGIBLE = 1e-4


@dataclass
class Pattern:
    name: str
    first: str             # call site labels
    second: str
    first_call: str        # MPI_Reduce ... (from the collective table at that site)
    second_call: str
    nprocs: int
    bin: int
    pairs: int             # the fewest any rank saw
    mean_bytes: float      # of the second call
    saving_per_pair_s: float | None = None
    basis: str = ""        # where the saving comes from
    # where some rank's pairs are an estimate (a light path's sample): the interval of `pairs`
    # (the fewest of any rank lies between the fewest of their low and high ends); None: counted
    pairs_interval: tuple[int, int] | None = None

    @property
    def saving_s(self) -> float | None:
        return None if self.saving_per_pair_s is None else self.pairs * self.saving_per_pair_s


def _calls_at(run: ProfileRun) -> dict[str, set[str]]:
    """Site label -> the collectives called there (to name a pattern's two calls)."""
    out: dict[str, set[str]] = defaultdict(set)
    for rank in run.ranks:
        labels = callsites.of(run, rank)
        for p in rank.points:
            if p.kind == "coll":
                out[labels[p.site].label].add("MPI_" + p.name.capitalize())
    return out


def find(run: ProfileRun) -> list[Pattern]:
    """Every pattern every rank saw, by pairs (most first)."""
    # per rank and pattern: pairs, bytes, the pairs' interval, whether any of them is an estimate
    per_rank: list[dict[tuple[str, str, str, int, int], tuple[int, int, int, int, bool]]] = []
    for rank in run.ranks:
        labels = callsites.of(run, rank)
        mine: dict[tuple[str, str, str, int, int], tuple[int, int, int, int, bool]] = {}
        for p in rank.patterns:
            key = (p.name, labels[p.first].label, labels[p.second].label, p.nprocs, p.bin)
            pairs, b, lo, hi, estimated = mine.get(key, (0, 0, 0, 0, False))
            plo, phi = p.pairs_interval or (p.pairs, p.pairs)
            mine[key] = (pairs + p.pairs, b + p.bytes, lo + plo, hi + phi, estimated or p.pairs_interval is not None)
        per_rank.append(mine)
    calls = _calls_at(run)
    out = []
    for key in set.intersection(*(set(m) for m in per_rank)) if per_rank else set():
        name, first, second, nprocs, bin_ = key
        pairs = min(m[key][0] for m in per_rank)
        mean = sum(m[key][1] for m in per_rank) / sum(m[key][0] for m in per_rank)
        interval = ((min(m[key][2] for m in per_rank), min(m[key][3] for m in per_rank))
                    if any(m[key][4] for m in per_rank) else None)
        out.append(Pattern(name, first, second, "/".join(sorted(calls.get(first, {"?"}))),
                           "/".join(sorted(calls.get(second, {"?"}))), nprocs, bin_, pairs, mean,
                           pairs_interval=interval))
    return sorted(out, key=lambda p: (-p.pairs, p.name, p.first, p.second))


def _median(table: pd.DataFrame, collective: str, nprocs: int, size: float, variant: str) -> tuple[int, float] | None:
    """(database size, median) in the log2 bin of `size`, at the size nearest it."""
    if size <= 0:
        return None
    bin_ = int(size).bit_length() - 1
    at = table[(table["collective"] == collective) & (table["nprocs"] == nprocs) & (table["variant"] == variant)]
    same = [int(s) for s in at["msg_bytes"] if s > 0 and int(s).bit_length() - 1 == bin_]
    if not same:
        return None
    best = min(same, key=lambda s: abs(s - size))
    return best, float(at[at["msg_bytes"] == best]["median_s"].iloc[0])


def _barrier_own_per_call(run: ProfileRun, site: str) -> tuple[float, str] | None:
    """The barrier's own cost per call, the slowest rank's: its sampled calls at `site`, else its
    sampled barriers anywhere (a barrier's cost does not depend on where it is called), else the
    latency of the sampling synchronisations (an 8-byte MPI_Allreduce, as fast as a barrier)."""
    best: tuple[float, str] | None = None
    for rank in run.ranks:
        labels = callsites.of(run, rank)
        barriers = [p for p in rank.points if p.name == "barrier" and p.samples]
        here = [p for p in barriers if labels[p.site].label == site]
        mine = None
        for points, how in ((here, "its sampled calls"), (barriers, "sampled barriers of the run")):
            if points:
                mine = (sum(p.own_ns for p in points) / sum(p.samples for p in points) / 1e9, how)
                break
        if mine is None and rank.sync_latency_ns is not None:
            mine = (rank.sync_latency_ns / 1e9, "the latency of the sampling synchronisations")
        if mine is not None and (best is None or mine[0] > best[0]):
            best = mine
    return best


def predict(patterns: list[Pattern], run: ProfileRun, loop: pd.DataFrame) -> None:
    """Each pattern's saving per pair: reduce_bcast and small_reductions from `loop`, the
    database's medians timed back to back; barrier_before_sync from the run itself."""
    for p in patterns:
        if p.name == "reduce_bcast":
            fused = _median(loop, "allreduce", p.nprocs, p.mean_bytes, catalog.DEFAULT)
            pair = _median(loop, "allreduce", p.nprocs, p.mean_bytes, "allreduce_as_reduce_bcast")
            if fused and pair and fused[0] == pair[0]:
                p.saving_per_pair_s = pair[1] - fused[1]
                p.basis = (f"database, back to back at {fused[0]} B, {p.nprocs} ranks: Reduce + Bcast "
                           f"(allreduce_as_reduce_bcast) {fmt_s(pair[1])}, MPI_Allreduce {fmt_s(fused[1])}")
        elif p.name == "small_reductions":
            coll = "allreduce" if "MPI_Allreduce" in p.second_call else "reduce"
            one = _median(loop, coll, p.nprocs, p.mean_bytes, catalog.DEFAULT)
            two = _median(loop, coll, p.nprocs, 2 * p.mean_bytes, catalog.DEFAULT)
            if one and two:
                p.saving_per_pair_s = 2 * one[1] - two[1]
                p.basis = (f"database, back to back, {p.nprocs} ranks: MPI_{coll.capitalize()} {fmt_s(one[1])} "
                           f"at {one[0]} B, {fmt_s(two[1])} at {two[0]} B (two calls vs one of both)")
        elif p.name == "barrier_before_sync":
            own = _barrier_own_per_call(run, p.first)
            if own is not None:
                p.saving_per_pair_s = own[0]
                p.basis = f"this run: a barrier's own cost {fmt_s(own[0])} per call (slowest rank, {own[1]})"


def missing_points(patterns: list[Pattern]) -> list[AppPoint]:
    """Database points the predictions lack (what `--measure` measures, back to back): the pair
    and the fused call."""
    out: dict[tuple[str, int, int], AppPoint] = {}
    for p in patterns:
        if p.saving_per_pair_s is not None or p.name == "barrier_before_sync":
            continue
        coll = "reduce" if p.name == "small_reductions" and "MPI_Allreduce" not in p.second_call else "allreduce"
        for size in ((p.mean_bytes,) if p.name == "reduce_bcast" else (p.mean_bytes, 2 * p.mean_bytes)):
            b = int(size).bit_length() - 1
            out.setdefault((coll, p.nprocs, b), AppPoint(coll, p.nprocs, b, mean_bytes=int(size), loop=True))
    return list(out.values())


TITLES = {
    "reduce_bcast": "{second_call} of {first_call}'s result from the same root, directly after it, "
                    "{times}: one MPI_Allreduce would do",
    "small_reductions": "small reductions back to back on one communicator, {times}: one "
                        "reduction over both (a packed buffer or a derived datatype) would do",
    "barrier_before_sync": "MPI_Barrier directly before {second_call}, which synchronises the ranks "
                           "anyway, {times}: the barrier can go",
}

# What the run saw that makes the pair one call's work (the buffers, never the data flow).
OBSERVED = {
    "reduce_bcast": "observed on every rank: same root, count and datatype, and at the root the "
                    "broadcast sends the reduce's result buffer; MPI_Allreduce gives every rank "
                    "those values",
    "small_reductions": "observed on every rank: same op and datatype (and root), and the second "
                        "call's buffers do not overlap the first's result",
    "barrier_before_sync": "observed on every rank: no intercepted MPI call between the barrier "
                           "and {second_call}",
}

# What the run cannot show and the user must check before changing the source ("": nothing).
CHECKS = {
    "reduce_bcast": "",
    "small_reductions": "the second reduction's input must not be computed from the first's result "
                        "(through another variable: buffers cannot show data flow), and no test of "
                        "the first result (a convergence check) may decide whether the second runs",
    "barrier_before_sync": "the barrier must order nothing outside MPI's collectives (file I/O, "
                           "shared memory, one-sided windows, timers)",
}

CHANGES = {
    "reduce_bcast": "replace MPI_Reduce at {first} and MPI_Bcast at {second} by one MPI_Allreduce "
                    "into the reduce's result buffer",
    "small_reductions": "pack the two reductions at {first} and {second} into one call, once the "
                        "check holds",
    "barrier_before_sync": "remove MPI_Barrier at {first} (the {second_call} at {second} "
                           "synchronises the ranks), once the check holds",
}

# The finding in one line: what, where (the application lines), the change.
BRIEFS = {
    "reduce_bcast": "Reduce+Bcast {npairs}x {where}: one MPI_Allreduce",
    "small_reductions": "reductions {npairs}x {where}: fuse (check)",
    "barrier_before_sync": "Barrier before {second_call} {npairs}x {where}: remove (check)",
}
# Which sites a brief names: the barrier's alone (the collective after it is in the title), or both.
BRIEF_SITES = {"reduce_bcast": 2, "small_reductions": 2, "barrier_before_sync": 1}

_OBJECT_OFFSET = re.compile(r"^(\S+)(\+0x[0-9a-f]+)$")


def _line(site: str, offset: bool = False) -> str:
    """The application line of a site label, compact: without the layer frames below it, the
    function without its namespaces (`PCG::solve (PCG.C:142)`); without a line, the function
    alone (its `lib.so+0x...` is in the JSON), with `offset` its offset (`PCG::solve (+0x5fe53e)`)
    to tell two sites of one function apart; without a symbol `object+0xoffset`."""
    line = site.split(" <- ")[0]
    function, paren, where_ = line.partition(" (")
    if not paren:
        return line
    function = class_method(function)
    where_ = where_.removesuffix(")")
    if m := _OBJECT_OFFSET.match(where_):
        return f"{function} ({m[2]})" if offset else function
    return f"{function} ({where_})"


def _pair_where(first: str, second: str, offset: bool = False) -> str:
    """Both sites' application lines; one function's two lines as `f (file.c:12, :14)`, its two
    offsets as `f (+0x5fe53e, +0x5fe6ca)`, one object's two addresses as `obj+0x1c45c, +0x1c4a0`."""
    a, b = _line(first, True), _line(second, True)
    if a == b:
        return _line(first, offset)
    fa, _, la = a.partition(" (")
    fb, _, lb = b.partition(" (")
    if fa == fb and la and lb:
        la, lb = la.rstrip(")"), lb.rstrip(")")
        if la.startswith("+0x"):   # one function's two offsets
            return f"{fa} ({la}, {lb})"
        if ":" in la and ":" in lb and la.rsplit(":", 1)[0] == lb.rsplit(":", 1)[0]:
            return f"{fa} ({la}, :{lb.rsplit(':', 1)[1]})"
    ma, mb = _OBJECT_OFFSET.match(a), _OBJECT_OFFSET.match(b)
    if ma and mb and ma[1] == mb[1]:
        return f"{a}, {mb[2]}"
    return f"{_line(first, offset)}, {_line(second, offset)}"


def _below(site: str) -> str:
    """The frame below a site's application line (the layer's call toward MPI), compact: its
    offset alone where both are offsets in one object (a stripped binary's `hpcc+0x1eed6` below
    `hpcc+0x1dc6d`), else its function as _line shortens it; "" where the chain has no frame
    below."""
    frames = site.split(" <- ")
    if len(frames) < 2:
        return ""
    top, below = _OBJECT_OFFSET.match(frames[0]), _OBJECT_OFFSET.match(frames[1])
    if top and below and top.group(1) == below.group(1):
        return below.group(2)
    return _line(frames[1])


def _brief_where(p: Pattern, detail: int) -> str:
    """The brief's sites: detail 0 the application lines (functions without their offsets), 1
    with the offsets of functions without a line, 2 with the frame below one application line
    too (several findings at one line, reached through different calls of its layer: HPCC's
    three barrier pairs inside one helper function printed the same line three times)."""
    if BRIEF_SITES[p.name] == 1:
        first = _line(p.first, detail > 0)
        if detail > 1 and _below(p.first):
            first = f"{first} <- {_below(p.first)}"
        return first
    pair = _pair_where(p.first, p.second, detail > 0)
    if detail > 1 and _below(p.first):
        if _line(p.first, True) == _line(p.second, True) and _below(p.second) not in ("", _below(p.first)):
            pair = f"{_line(p.first, True)} <- {_below(p.first)}, {_below(p.second)}"
        elif _line(p.first, True) == _line(p.second, True):
            pair = f"{_line(p.first, True)} <- {_below(p.first)}"
    return pair


def _briefs(kept: list[Pattern]) -> list[str]:
    """Each pattern's one line, its sites as short as they stay told apart: findings of one kind
    whose sites read alike (the pair counts aside) get the offsets, then the frames below."""
    def key(p: Pattern, detail: int) -> tuple[str, str, str]:
        return p.name, p.second_call, _brief_where(p, detail)

    details = [0] * len(kept)
    for level in (1, 2):
        seen = Counter(key(p, d) for p, d in zip(kept, details))
        details = [level if seen[key(p, d)] > 1 else d for p, d in zip(kept, details)]
    return [BRIEFS[p.name].format(**{**counted(p.__dict__), "where": _brief_where(p, d)})
            for p, d in zip(kept, details)]


_COUNT = re.compile(r"~?\b\d[\d,]*x ")


def counted(fields: dict) -> dict:
    """A pattern's fields (its __dict__ or its finding's data) with `npairs`, its pairs as the
    briefs quote them: `~` before an estimate."""
    return {**fields, "npairs": fmt_count(fields["pairs"], fields.get("pairs_interval"))}


def told_apart(findings: list[Finding]) -> dict[int, str]:
    """Briefs for the pattern findings of `findings` (the rows a screen shows) that read alike but
    for their counts, each naming the first frame where its chain parts from theirs (`via`;
    ExaML: `examl-avx2+0x1c45c <- +0x1a66e` twice, one line reached through one layer call from
    two callers further down -> `examl-avx2+0x1c45c via +0x19a37`, `... via +0x19aa8`), by index
    into `findings`. The JSON's briefs stay as _briefs made them (its data has the whole chains)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, f in enumerate(findings):
        if f.strategy == "pattern" and f.data.get("pattern") in BRIEFS:
            groups[(f.data["pattern"], _COUNT.sub("", f.brief))].append(i)
    out: dict[int, str] = {}
    for members in (m for m in groups.values() if len(m) > 1):
        for i in members:
            d = findings[i].data
            for side in ("first", "second"):
                others = [findings[j].data[side] for j in members if j != i]
                k = _parting(d[side], others)
                if k is not None and k >= 1:
                    break
            else:
                continue   # the same chains: nothing tells them apart
            one = BRIEF_SITES[d["pattern"]] == 1 or _line(d["first"], True) == _line(d["second"], True)
            where_ = _line(d[side], True) if one else _pair_where(d["first"], d["second"], True)
            link = "<-" if k == 1 else "via"
            fields = {**counted(d), "call": str(d.get("second_call", "")).removeprefix("MPI_")}
            out[i] = BRIEFS[d["pattern"]].format(**{**fields, "where": f"{where_} {link} {_frame(d[side], k)}"})
    # A row told apart from its group must not now read as another row does (two groups parting at
    # the same callers: `via +0x19a37` in each): those keep their briefs (one frame cannot tell
    # them apart, and two do not fit a row).
    def key(i: int) -> tuple[str, str]:
        return str(findings[i].data.get("pattern")), _COUNT.sub("", out.get(i, findings[i].brief))

    while clash := [i for i in out if sum(key(j) == key(i) for j in range(len(findings))) > 1]:
        for i in clash:
            del out[i]
    return out


def _parting(site: str, others: list[str]) -> int | None:
    """The first frame of `site`'s chain that is not every other chain's frame there (None:
    `site`'s chain is one of theirs)."""
    frames = site.split(" <- ")
    rest = [o.split(" <- ") for o in others]
    return next((k for k, f in enumerate(frames) if any(len(o) <= k or o[k] != f for o in rest)), None)


def _frame(site: str, k: int) -> str:
    """Frame `k` of a site's chain, compact as _below gives the frame below: its offset alone in
    the application frame's object, else its function as _line shortens it."""
    frames = site.split(" <- ")
    top, frame = _OBJECT_OFFSET.match(frames[0]), _OBJECT_OFFSET.match(frames[k])
    if top and frame and top.group(1) == frame.group(1):
        return frame.group(2)
    return _line(frames[k])


# Shorter words for a brief's what and change, tried in turn before its sites are shortened.
SHORTER = {
    "reduce_bcast": [("Reduce+Bcast {npairs}x ", ": one Allreduce")],
    "small_reductions": [],
    "barrier_before_sync": [("Barrier before {call} {npairs}x ", ": remove (check)"),
                            ("Barrier+{call} {npairs}x ", ": remove (check)")],
}
_QUALIFIED = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*::)+(?=[A-Za-z_~]\w*)")
_NAME = re.compile(r"(?<![\w.+])[A-Za-z_~]\w{14,}(?![\w.])")


def fit_brief(f: Finding, width: int) -> str:
    """A pattern finding's brief in `width` characters, dropping what the reader needs least
    first: `MPI_` and longer words of its what and change (SHORTER), then its sites' classes and
    namespaces, the longest name first (`virial_compute`), then the longest names are cut in the
    middle, start and end kept (`ComputePre...ure_virial`); a file:line, an offset and an address
    stay whole."""
    brief = f.brief or f.title
    name = f.data.get("pattern")
    if len(brief) <= width or name not in BRIEFS:
        return brief
    fields = {**counted(f.data), "call": str(f.data.get("second_call", "")).removeprefix("MPI_")}
    head, _, tail = BRIEFS[name].partition("{where}")
    head, tail = head.format(**fields), tail.format(**fields)
    if not (brief.startswith(head) and brief.endswith(tail)):
        return shorten(brief, width)
    where_ = brief[len(head):len(brief) - len(tail)]
    for short_head, short_tail in SHORTER[name]:
        if len(head) + len(where_) + len(tail) <= width:
            break
        head, tail = short_head.format(**fields), short_tail.format(**fields)
    room = width - len(head) - len(tail)
    while len(where_) > room and (qualified := sorted(_QUALIFIED.finditer(where_),
                                                      key=lambda m: -len(where_[m.start():].split(" ")[0]))):
        m = qualified[0]
        where_ = where_[:m.start()] + where_[m.end():]
    while len(where_) > room:
        names = sorted(_NAME.finditer(where_), key=lambda m: -len(m[0]))
        if not names or len(names[0][0]) <= 15:
            return shorten(head + where_ + tail, width)
        m = names[0]
        where_ = where_[:m.start()] + cut_name(m[0], len(m[0]) - (len(where_) - room)) + where_[m.end():]
    return head + where_ + tail


def findings(patterns: list[Pattern], wall_s: float) -> list[Finding]:
    out = []
    kept = [p for p in patterns if p.saving_s is None or p.saving_s >= NEGLIGIBLE * wall_s]
    for p, brief in zip(kept, _briefs(kept)):
        fields = counted(p.__dict__)
        estimated = p.pairs_interval is not None
        fields["times"] = ("once" if p.pairs == 1 and not estimated else f"{fields['npairs']} times")
        evidence = [f"{fields['npairs']} pairs on every rank at {p.nprocs} ranks, {fmt_bytes(p.mean_bytes)} B "
                    f"per call: {p.first} then {p.second}", OBSERVED[p.name].format(**fields)]
        if p.pairs_interval is not None:
            evidence.insert(1, f"pairs estimated from a sample of the calls (a light path): 95% "
                               f"{p.pairs_interval[0]:,}-{p.pairs_interval[1]:,}")
        if p.saving_s is not None:
            per = max(p.saving_per_pair_s or 0.0, 0.0)
            spread = (f", 95% {fmt_s(p.pairs_interval[0] * per)}-{fmt_s(p.pairs_interval[1] * per)}"
                      if p.pairs_interval is not None else "")
            evidence.append(f"predicted saving {fmt_s(max(p.saving_s, 0.0))} = {fields['npairs']} x "
                            f"{fmt_s(per)} ({100 * max(p.saving_s, 0.0) / wall_s:.2f}% of the run{spread}); "
                            f"{p.basis}" if wall_s else p.basis)
            if p.saving_s <= 0:
                evidence.append("on this machine the fused call is not faster: no saving predicted")
        else:
            evidence.append("no prediction: the database lacks these calls timed back to back at this "
                            "size (`colltune advise --measure` measures them)")
        out.append(Finding("pattern", TITLES[p.name].format(**fields), evidence,
                           {"source": CHANGES[p.name].format(**fields)},
                           None if p.saving_s is None else max(p.saving_s, 0.0),
                           check=CHECKS[p.name], brief=brief,
                           data={"pattern": p.name, "first": p.first, "second": p.second,
                                 "first_call": p.first_call, "second_call": p.second_call,
                                 "nprocs": p.nprocs, "bin": p.bin, "pairs": p.pairs,
                                 "pairs_estimated": estimated,
                                 **({"pairs_interval": list(p.pairs_interval)} if estimated else {}),
                                 "mean_bytes": p.mean_bytes,
                                 "saving_per_pair_s": p.saving_per_pair_s}))
    return out
