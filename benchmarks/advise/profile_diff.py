#!/usr/bin/env python3
"""Two profiling runs' rank files compared point by point (issue 34): does a change of the call
path leave what the profiling run records unchanged?

Chain ids and addresses differ between builds and runs (the chain ids are libcolltune's own
addresses; the application's frames move with the load addresses), so each point is keyed by its
chain written as object+offset frames (the file's `map` lines), with its call, communicator size
and size bin. Compared: every point's calls, bytes and byte range; every pattern's pairs and
bytes; the request and polled lines' keys and counts; memo_made, chains_made, lost,
patterns_lost; the number of chains. Not compared: times, timed counts, samples (the timing
countdown's seed and the sampling synchronisations follow the run's timing).

    .venv/bin/python benchmarks/advise/profile_diff.py RUN_A/rank-0 RUN_B/rank-0   # exit 1: differ
"""

from __future__ import annotations

import collections
import os
import sys


def load(path: str) -> dict[tuple, object]:
    lines = [line.split() for line in open(path).read().splitlines()]
    maps: list[tuple[int, int, int, str]] = []
    for f in lines:
        if f and f[0] == "map":
            lo, hi = (int(x, 16) for x in f[1].split("-"))
            maps.append((lo, hi, int(f[3], 16), os.path.basename(f[-1])))

    def frame(addr: str) -> str:
        x = int(addr, 16)
        for lo, hi, off, name in maps:
            if lo <= x < hi:
                return f"{name}+{x - lo + off:#x}"
        return addr

    chains = {f[1]: tuple(frame(x) for x in f[2:]) for f in lines if f and f[0] == "chain"}

    def chain(cid: str) -> tuple[str, ...]:
        return chains.get(cid, ("(no chain line)", cid))

    out: dict[tuple, object] = collections.Counter()
    for f in lines:
        if not f:
            continue
        if f[0] in ("coll", "p2p"):   # kind name site nprocs bin calls timed timed_ns max bytes ...
            key = (f[0], f[1], chain(f[2]), f[3], f[4])
            out[key + ("calls",)] += int(f[5])
            out[key + ("bytes",)] += int(f[9])
            out[key + ("range",)] = (f[-2], f[-1])
        elif f[0] == "pattern":        # pattern name first second nprocs bin pairs bytes
            key = ("pattern", f[1], chain(f[2]), chain(f[3]), *f[4:-2])
            out[key + ("pairs",)] += int(f[-2])
            out[key + ("bytes",)] += int(f[-1])
        elif f[0] == "request":
            out[("request", f[1], chain(f[2]), *f[3:5])] = 1
        elif f[0] == "polled":
            out[("polled", f[1], chain(f[2]))] = tuple(f[3:])
        elif f[0] in ("memo_made", "chains_made", "lost", "patterns_lost"):
            out[(f[0],)] = tuple(f[1:])
    out[("chains",)] = len(chains)
    return out


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    a, b = load(sys.argv[1]), load(sys.argv[2])
    differ = sorted((k for k in set(a) | set(b) if a.get(k) != b.get(k)), key=str)
    print(f"{len(a)} and {len(b)} values; {len(differ)} differ")
    for k in differ[:40]:
        print(f"  {k}: {a.get(k)} / {b.get(k)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
