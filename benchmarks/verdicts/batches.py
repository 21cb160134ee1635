"""One table row per batch of runs (results_*.json written by verdicts.py), for README.md.

    python benchmarks/verdicts/batches.py benchmarks/verdicts/results_s2-*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def row(path: Path) -> str:
    d = json.loads(path.read_text())
    overlap = [p["overlap"] for p in d["pairs"]]
    decided = [p["decided_in_both"] for p in d["pairs"]]
    timing, runs = d["timing"], d["runs"]
    loads = [x[k] for x in timing for k in ("loadavg_before", "loadavg_after")]
    undecided = [(r["undecided"] + r["untested"]) / r["comparisons"] for r in runs]
    walls = [x["wall_s"] for x in timing]
    return " | ".join([
        f"`{path.name}` {timing[0]['started_utc'][:5]}",
        f"{min(loads):.1f}-{max(loads):.1f}",
        f"{min(walls):.1f}-{max(walls):.1f} s",
        f"**{100 * sum(overlap) / len(overlap):.1f}%** ({100 * min(overlap):.0f}-{100 * max(overlap):.0f}%)",
        f"{sum(p['flips'] for p in d['pairs'])} of {min(decided)}-{max(decided)} per pair",
        f"{100 * min(undecided):.1f}-{100 * max(undecided):.1f}%",
        ", ".join(str(r["violations"]) for r in runs),
    ])


if __name__ == "__main__":
    print("| batch | load | wall time per run | overlap mean (min-max) | flips | undecided | violations per run |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in sys.argv[1:]:
        print(f"| {row(Path(name))} |")
