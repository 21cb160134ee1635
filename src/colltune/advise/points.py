"""The application's collective points across ranks: (collective, nprocs, size bin) with calls,
time, the own-cost/waiting split estimated from the sampled calls, and the call sites."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from colltune.advise import callsites
from colltune.advise.profile_run import Point, ProfileRun, interval_of


@dataclass
class AppPoint:
    collective: str
    nprocs: int
    bin: int                         # floor(log2(bytes)), -1: unknown size
    calls: int = 0                   # the most calls any rank made here
    # where a rank's calls here are partly an estimate (a light path's sample,
    # profile_run.scale_samples): the interval's ends, each the most of any rank's; None: counted
    calls_interval: tuple[int, int] | None = None
    mean_bytes: int = 0
    total_s: float = 0.0             # the slowest rank's time in these calls
    own_s: float = 0.0               # its estimated own cost (sampled calls)
    wait_s: float = 0.0              # its estimated waiting for late ranks
    sites: dict[str, int] = field(default_factory=dict)   # call site label -> calls (all ranks)
    sites_estimated: set[str] = field(default_factory=set)  # those whose calls are partly estimates
    per_rank_s: dict[int, float] = field(default_factory=dict)
    loop: bool = False               # to be timed back to back (a call pattern's calls, in a loop)


def own_and_wait(p: Point) -> tuple[float, float]:
    """(own, wait) seconds of one rank's point. The sampled calls ran after a barrier, so their
    time is the collective's own cost; unsampled calls include waiting for late ranks."""
    if p.samples == 0 or p.calls == 0:
        return p.total_ns / 1e9, 0.0
    own = min(p.total_ns, p.calls * p.own_ns / p.samples)
    return own / 1e9, (p.total_ns - own) / 1e9


def collective_points(run: ProfileRun) -> list[AppPoint]:
    out: dict[tuple[str, int, int], AppPoint] = {}
    byte_sum: dict[tuple[str, int, int], list[int]] = defaultdict(lambda: [0, 0])
    ranges: dict[tuple[str, int, int], tuple[int, int, bool]] = {}   # calls' interval, estimated
    for rank in run.ranks:
        sites = callsites.of(run, rank)
        mine: dict[tuple[str, int, int], list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
        at: dict[tuple[str, int, int], list[Point]] = defaultdict(list)   # (profile_run.interval_of)
        for p in rank.points:
            if p.kind != "coll":
                continue
            key = (p.name, p.nprocs, p.bin)
            own, wait = own_and_wait(p)
            acc = mine[key]
            acc[0] += p.calls
            acc[1] += p.total_ns / 1e9
            acc[2] += own
            acc[3] += wait
            at[key].append(p)
            ap = out.setdefault(key, AppPoint(*key))
            label = sites[p.site].label
            ap.sites[label] = ap.sites.get(label, 0) + p.calls
            if p.calls_interval is not None:
                ap.sites_estimated.add(label)
            byte_sum[key][0] += p.bytes
            byte_sum[key][1] += p.calls
        for key, (calls, total, own, wait) in mine.items():
            ap = out[key]
            ap.per_rank_s[rank.rank] = total
            ap.calls = max(ap.calls, int(calls))
            # the most of any rank's calls lies between the most of their low and high ends (a
            # counted rank's ends are its calls)
            interval = interval_of(rank, at[key])
            lo, hi = interval or (int(calls), int(calls))
            old = ranges.get(key, (0, 0, False))
            ranges[key] = (max(old[0], lo), max(old[1], hi), old[2] or interval is not None)
            if total > ap.total_s:
                ap.total_s, ap.own_s, ap.wait_s = total, own, wait
    for key, ap in out.items():
        lo, hi, estimated = ranges[key]
        ap.calls_interval = (lo, hi) if estimated else None
        b, n = byte_sum[key]
        ap.mean_bytes = b // n if n else 0
    return sorted(out.values(), key=lambda a: -a.total_s)
