#!/usr/bin/env python3
"""Paired wall time of profiled against plain runs: can a 1% bar be resolved?

Reads the TSV that `openfoam.sh OUT time STEPS ROUNDS` writes (round, mode, wall_s, load1,
continuity; one plain and one profiled run per round, in a random order) and prints, per round,
the ratio profiled / plain, then:

- the median ratio with its distribution-free 95% interval (order statistics of the rounds'
  log ratios, binomial ranks: no assumption on the noise's shape, which a shared 2-core machine
  makes heavy-tailed);
- the verdict against the bar (default 1%): "at most 1%" only if the interval's upper end is
  under 1.01, "over 1%" only if its lower end is over it, else "not resolved";
- how many rounds would resolve it at the spread seen (the interval's half-width shrinks as
  1/sqrt(rounds)), so that a reader knows what a run of this design can and cannot show.

The launcher's wall time includes mpirun's start (the same in both modes), which pulls every
ratio toward 1: the difference profiled - plain is printed too (its median and interval), and the
bar is checked on the ratio of the whole runs, which is what a user waits for.

    .venv/bin/python benchmarks/advise/paired_time.py OUT/time.tsv [--bar 0.01]
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Pair:
    round: int
    plain_s: float
    profiled_s: float
    load: float            # the 1-minute load average before the round's first run


@dataclass(frozen=True)
class Estimate:
    median: float
    low: float
    high: float
    level: float           # the interval's actual coverage (order statistics: >= 0.95)


def read_pairs(rows: list[dict[str, str]]) -> list[Pair]:
    """One Pair per round that has both runs; every run must end on the same result line."""
    if len({r["continuity"] for r in rows}) > 1:
        raise ValueError("a run's last continuity line differs: the profiling changed a result")
    by_round: dict[int, dict[str, dict[str, str]]] = {}
    for r in rows:
        by_round.setdefault(int(r["round"]), {})[r["mode"]] = r
    pairs = []
    for k in sorted(by_round):
        runs = by_round[k]
        if {"plain", "profiled"} <= runs.keys():
            load = min(float(runs["plain"]["load1"]), float(runs["profiled"]["load1"]))
            pairs.append(Pair(k, float(runs["plain"]["wall_s"]), float(runs["profiled"]["wall_s"]), load))
    return pairs


def median_interval(values: np.ndarray, confidence: float = 0.95) -> Estimate:
    """The median and its distribution-free interval: the order statistics x(k), x(n+1-k) with
    k the largest rank whose binomial(n, 1/2) tail keeps the coverage at `confidence` or more."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n < 6:
        raise ValueError(f"{n} rounds: at least 6 are needed for a 95% interval of the median")
    k = int(stats.binom.ppf((1 - confidence) / 2, n, 0.5))   # P(B <= k) ~ alpha / 2
    while k > 0 and 1 - 2 * stats.binom.cdf(k - 1, n, 0.5) < confidence:
        k -= 1
    k = max(k, 1)
    level = 1 - 2 * stats.binom.cdf(k - 1, n, 0.5)
    return Estimate(float(np.median(x)), float(x[k - 1]), float(x[n - k]), float(level))


def rounds_needed(log_ratios: np.ndarray, bar: float, confidence: float = 0.95) -> int | None:
    """Rounds that would put the interval's upper end under 1 + bar, if the median stays where it
    is (None: the median is at or over the bar, no number of rounds shows "at most")."""
    margin = math.log1p(bar) - float(np.median(log_ratios))
    if margin <= 0:
        return None
    spread = stats.median_abs_deviation(log_ratios, scale="normal")
    z = stats.norm.ppf(0.5 + confidence / 2)
    # the median's standard error is ~1.2533 sigma / sqrt(n) for a normal core
    return max(6, math.ceil((z * 1.2533 * spread / margin) ** 2))


def verdict(ratio: Estimate, bar: float) -> str:
    if ratio.high <= 1 + bar:
        return f"at most {bar:.0%} (the interval's upper end is {ratio.high:.4f})"
    if ratio.low > 1 + bar:
        return f"over {bar:.0%} (the interval's lower end is {ratio.low:.4f})"
    return f"not resolved: the interval {ratio.low:.4f}-{ratio.high:.4f} contains {1 + bar:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tsv", type=Path)
    ap.add_argument("--bar", type=float, default=0.01, help="the overhead bar (default 0.01: 1%%)")
    args = ap.parse_args(argv)
    with open(args.tsv) as f:
        pairs = read_pairs(list(csv.DictReader(f, delimiter="\t")))
    logs = np.array([math.log(p.profiled_s / p.plain_s) for p in pairs])
    diffs = np.array([p.profiled_s - p.plain_s for p in pairs])
    lr = median_interval(logs)
    ratio = Estimate(math.exp(lr.median), math.exp(lr.low), math.exp(lr.high), lr.level)
    diff = median_interval(diffs)
    plain = np.array([p.plain_s for p in pairs])
    print(f"{len(pairs)} rounds; plain median {np.median(plain):.3f} s; load before a round "
          f"{min(p.load for p in pairs):.2f}-{max(p.load for p in pairs):.2f}")
    print(f"profiled / plain: median {ratio.median:.4f}, {ratio.level:.1%} interval "
          f"{ratio.low:.4f}-{ratio.high:.4f}")
    print(f"profiled - plain: median {diff.median * 1000:+.1f} ms, interval "
          f"{diff.low * 1000:+.1f} to {diff.high * 1000:+.1f} ms")
    print(f"overhead against the {args.bar:.0%} bar: {verdict(ratio, args.bar)}")
    need = rounds_needed(logs, args.bar)
    print("rounds to resolve 'at most' at this spread: "
          + (f"~{need}" if need is not None else "none (the median is at or over the bar)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
