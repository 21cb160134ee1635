"""How often a batch of 10 checks would meet the issue's agreement targets, from replayed checks.

    python benchmarks/reproducibility/batch_odds.py benchmarks/reproducibility/results_replicated_screened-t_ff4_z1_8_8_16.json

replicate.py replays N quick checks and records the overlap of every pair. A batch of the issue is
10 checks: this draws 5000 sets of 10 of the N checks (seeded) and reports the share whose mean
pairwise overlap is >= 95% and whose worst pair is >= 90%, and the median of their mean overlap.
Pure reading.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="+")
    ap.add_argument("--batches", type=int, default=5000)
    args = ap.parse_args()
    for path in args.results:
        pairs = json.loads(path.read_text())["pairs"]
        overlap = {frozenset((p["a"], p["b"])): p["overlap"] for p in pairs}
        checks = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
        rng = random.Random(0)
        means, worst_met = [], 0
        for _ in range(args.batches):
            batch = rng.sample(checks, 10)
            values = [overlap[frozenset((a, b))] for i, a in enumerate(batch) for b in batch[i + 1:]]
            means.append(statistics.fmean(values))
            worst_met += min(values) >= 0.9 - 1e-12
        print(f"{path.name}: of {args.batches} batches of 10 from {len(checks)} checks, mean overlap >= 95% in "
              f"{sum(m >= 0.95 for m in means) / args.batches:.1%}, worst pair >= 90% in "
              f"{worst_met / args.batches:.1%}; median mean overlap {statistics.median(means):.1%}")


if __name__ == "__main__":
    main()
