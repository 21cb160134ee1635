#!/usr/bin/env python3
"""Exclusive instructions per object and per function of whole-process callgrind files, side by
side (benchmarks/advise/pass_cost.sh): exact, from the files' cost lines (a call's inclusive
cost line is skipped, inlined headers keep their function's object).

    python3 benchmarks/advise/cg_objects.py A.out B.out [--functions N] [--match REGEX]
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path


def exclusive(cg: Path) -> tuple[dict[str, int], dict[tuple[str, str], int], dict[tuple[str, str], int], int]:
    """Per object, per (object, function) exclusive Ir, per (object, function) call counts
    (calls made to it, from any caller), and the file's totals."""
    objects: dict[str, int] = defaultdict(int)
    functions: dict[tuple[str, str], int] = defaultdict(int)
    calls: dict[tuple[str, str], int] = defaultdict(int)
    names: dict[str, dict[str, str]] = {"ob": {}, "fn": {}}
    obj = fn = cobj = cfn = None
    pending_calls = 0
    skip_next = False
    total = 0
    for line in cg.read_text(errors="replace").splitlines():
        m = re.match(r"(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            table = names[m[2]]
            if m[4]:
                table[m[3]] = m[4].strip()
            value = table[m[3]]
            if m[1]:
                if m[2] == "ob":
                    cobj = value
                else:
                    cfn = value
            elif m[2] == "ob":
                obj = value
            else:
                fn, cobj = value, None
            continue
        if line.startswith("calls="):
            skip_next = True
            pending_calls = int(line.split()[0][6:])
            continue
        if line.startswith("totals:") or line.startswith("summary:"):
            total = int(line.split()[1])
            continue
        if line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if skip_next:
                skip_next = False
                calls[(cobj or obj or "?", cfn or "?")] += pending_calls
                continue
            if len(parts) >= 2 and obj is not None:
                objects[obj] += int(parts[1])
                functions[(obj, fn or "?")] += int(parts[1])
    return objects, functions, calls, total


def short(obj: str) -> str:
    return obj.rsplit("/", 1)[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--functions", type=int, default=15, help="the functions that differ most")
    ap.add_argument("--match", default=None, help="also every function matching this regex")
    args = ap.parse_args()
    data = [exclusive(f) for f in args.files]
    heads = [f.stem for f in args.files]
    keys = sorted({short(k) for d in data for k in d[0]}, key=lambda k: -max(sum(v for o, v in d[0].items() if short(o) == k) for d in data))
    print(f"{'object':<34}" + "".join(f"{h:>16}" for h in heads) + ("      difference" if len(data) == 2 else ""))
    for k in keys:
        vals = [sum(v for o, v in d[0].items() if short(o) == k) for d in data]
        row = f"{k[:34]:<34}" + "".join(f"{v:>16,}" for v in vals)
        if len(data) == 2:
            row += f"{vals[1] - vals[0]:>+16,}"
        print(row)
    tot = [sum(d[0].values()) for d in data]
    print(f"{'total':<34}" + "".join(f"{v:>16,}" for v in tot) + (f"{tot[1] - tot[0]:>+16,}" if len(data) == 2 else ""))
    if len(data) == 2:
        fa = defaultdict(int, {(short(o), f): v for (o, f), v in data[0][1].items()})
        fb = defaultdict(int, {(short(o), f): v for (o, f), v in data[1][1].items()})
        diff = sorted(set(fa) | set(fb), key=lambda k: -abs(fb[k] - fa[k]))
        print(f"\nfunctions that differ most (exclusive Ir, {heads[0]} -> {heads[1]}):")
        for k in diff[:args.functions]:
            print(f"  {fa[k]:>14,} {fb[k]:>14,} {fb[k] - fa[k]:>+14,}  {k[1]} [{k[0]}]")
        if args.match:
            print(f"\nfunctions matching {args.match!r} (exclusive Ir; calls into it):")
            ca = defaultdict(int, {(short(o), f): v for (o, f), v in data[0][2].items()})
            cb = defaultdict(int, {(short(o), f): v for (o, f), v in data[1][2].items()})
            for k in sorted(set(fa) | set(fb), key=lambda k: -max(fa[k], fb[k])):
                if re.search(args.match, k[1]):
                    print(f"  {fa[k]:>14,} {fb[k]:>14,}  calls {ca[k]:>9,} {cb[k]:>9,}  {k[1]} [{k[0]}]")


if __name__ == "__main__":
    main()
