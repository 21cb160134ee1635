"""What a proof of format 2 (issue 37: bands, int16, sized classes) takes away from a proof of
format 1, member by member: every class a member passed before, and which of its bands it no
longer passes now (an old `builtin/int` class is the new `builtin/int16` and `builtin/int`).
Prints a Markdown table.

    .venv/bin/python benchmarks/proof/compare_proofs.py OLD/proof.txt NEW/proof.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

BANDS = ("0-15B", "16-2047B", "2048-65535B", "65536B+")


def passed(path: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "member" and parts[2] == "passed":
            out[parts[1]] = set() if parts[3] == "-" else set(parts[3].split(","))
    return out


def expand(classes: set[str]) -> set[str]:
    """Format-2 names with every band written out."""
    full: set[str] = set()
    for cls in classes:
        full.update({f"{cls}/{b}" for b in BANDS} if cls.count("/") == 2 else {cls})
    return full


def successors(old_class: str) -> list[str]:
    place, op, dt = old_class.split("/")
    # user ops keep one integer class (their arithmetic is the user's, not op/avx's)
    dts = ["int16", "int"] if dt == "int" and op == "builtin" else [dt]
    return [f"{place}/{op}/{d}/{b}" for d in dts for b in BANDS]


def main() -> None:
    old, new = passed(Path(sys.argv[1])), passed(Path(sys.argv[2]))
    print("| member | passed before | lost now (class: bands) |")
    print("| --- | --- | --- |")
    for member in sorted(old):
        now = expand(new.get(member, set()))
        lost: dict[str, list[str]] = {}
        for cls in sorted(old[member]):
            for succ in successors(cls):
                if succ not in now:
                    base, _, band = succ.rpartition("/")
                    lost.setdefault(base, []).append(band)
        text = "; ".join(f"{base}: {'all' if len(b) == 4 else ' '.join(b)}"
                         for base, b in sorted(lost.items())) or "-"
        print(f"| {member} | {len(old[member])} | {text} |")


if __name__ == "__main__":
    main()
