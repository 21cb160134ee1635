#!/usr/bin/env python3
"""One object's events in a callgrind file of cachesim.py --instr, summed by the symbol (nm) each
instruction's address falls in (issue 34, sixteenth round). callgrind's own function names are not
used: after a jump back from a .cold part it goes on naming the cold part, and code inlined from
headers is named by its header. Symbols matching REGEX are summed as one group, the rest as
another, so that a change to some functions is read on their own lines: a build's other code moves
with any change, and where its lines fall in the 8-way instruction cache moves its misses by
+-5% of libcolltune's (ct_profrun_allreduce, unchanged, 58,647 -> 119,293 I1 misses at another
address).

    .venv/bin/python benchmarks/advise/cachesim_symbols.py OUT/cachesim-openfoam-NAME.out LIB \\
        '^(MPI_Wait|ct_watched_wait|ct_waited|ct_poll_same)'
"""

from __future__ import annotations

import bisect
import collections
import os
import re
import subprocess
import sys

EVENTS = ("Ir", "I1mr", "D1mr", "D1mw")


def costs(path: str, obj: str) -> dict[int, list[int]]:
    """Self events per instruction address of the object whose file name is `obj`."""
    names: dict[str, str] = {}
    positions, events = ["line"], []
    last = [0, 0]
    ob = ""
    skip = False
    per: dict[int, list[int]] = {}
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line:
                continue
            if line.startswith("positions:"):
                positions = line.split()[1:]
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line[0].isdigit() or line[0] in "+-*":
                parts = line.split()
                for i in range(len(positions)):
                    p = parts[i]
                    last[i] = last[i] if p == "*" else last[i] + int(p) if p[0] in "+-" else int(p, 0)
                if skip:   # a call's inclusive cost, not the call instruction's own
                    skip = False
                    continue
                if os.path.basename(ob) != obj:
                    continue
                vals = [int(x) for x in parts[len(positions):]]
                row = per.setdefault(last[0], [0] * len(events))
                for i, v in enumerate(vals):
                    row[i] += v
            elif line.startswith("ob="):
                m = re.match(r"\((\d+)\)(?:\s+(.*))?", line[3:])
                if m and m.group(2) is not None:
                    names[m.group(1)] = m.group(2)
                ob = names.get(m.group(1), "") if m else line[3:]
            elif line.startswith("cob="):
                m = re.match(r"\((\d+)\)\s+(.*)", line[4:])
                if m:
                    names[m.group(1)] = m.group(2)
            elif line.startswith("calls="):
                skip = True
    index = [events.index(e) for e in EVENTS]
    return {a: [v[i] for i in index] for a, v in per.items()}


def symbols(lib: str) -> list[tuple[int, str]]:
    out = subprocess.run(["nm", "-n", lib], capture_output=True, text=True, check=True).stdout
    return [(int(f[0], 16), f[2]) for f in (l.split() for l in out.splitlines())
            if len(f) == 3 and f[1] in "tT"]


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    path, lib, pattern = sys.argv[1:]
    syms = symbols(lib)
    starts = [a for a, _ in syms]
    by: dict[str, list[int]] = collections.defaultdict(lambda: [0] * len(EVENTS))
    for addr, v in costs(path, os.path.basename(lib)).items():
        i = bisect.bisect_right(starts, addr) - 1
        name = syms[i][1] if i >= 0 else "?"
        for k, x in enumerate(v):
            by[name][k] += x
    group = re.compile(pattern)
    print(f"{'':32} {'Ir':>11} {'I1mr':>9} {'D1mr':>9} {'D1mw':>9} {'L1 misses':>10}")
    for title, keep in (("matching", True), ("others", False)):
        rows = {n: v for n, v in by.items() if bool(group.search(n)) == keep}
        total = [sum(v[k] for v in rows.values()) for k in range(len(EVENTS))]
        print(f"{title + ' (all)':32} {total[0]:11,} {total[1]:9,} {total[2]:9,} {total[3]:9,} "
              f"{sum(total[1:]):10,}")
        if keep:
            for n, v in sorted(rows.items(), key=lambda kv: -sum(kv[1][1:])):
                print(f"  {n[:30]:30} {v[0]:11,} {v[1]:9,} {v[2]:9,} {v[3]:9,} {sum(v[1:]):10,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
