"""False-positive rate of the paired tests on per-launch log-ratios under the null, at the levels
Holm uses in a check (alpha 0.05 over ~80 guideline comparisons and 3 looks: ~2e-4 for the first).

    python benchmarks/verification/trimmed_t_calibration.py --trials 400000

Null trials: n per-launch log-ratios with median 0 from normal, Student t3 and contaminated
(10% of launches 5x wider) noise; rate of p <= level for the plain paired t and for
colltune.verify.stats.trimmed_t (Yuen, 10% cut at each end, df = h - 2; vectorised here and
checked against it). Writes trimmed_t_calibration.json.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy import special

from colltune.verify import stats

HERE = Path(__file__).resolve().parent
LEVELS = (0.05, 0.001, 0.0002)


def yuen_p(d: np.ndarray, g: int) -> np.ndarray:
    """stats.trimmed_t's p-value for every row of d with g cut at each end (vectorised)."""
    n = d.shape[1]
    h = n - 2 * g
    s = np.sort(d, axis=1)
    kept = s[:, g:n - g]
    winsorized = np.clip(s, s[:, [g]], s[:, [n - g - 1]])
    se = np.sqrt(winsorized.var(axis=1, ddof=1) * (n - 1) / (h * (h - 1)))
    return special.stdtr(h - 2 if g else h - 1, -kept.mean(axis=1) / se)


def noise(rng: np.random.Generator, kind: str, shape: tuple[int, int]) -> np.ndarray:
    if kind == "normal":
        return rng.normal(0.0, 1.0, shape)
    if kind == "t3":
        return rng.standard_t(3, shape)
    wild = rng.random(shape) < 0.1
    return np.where(wild, rng.normal(0.0, 5.0, shape), rng.normal(0.0, 1.0, shape))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=400_000)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    print(f"{args.trials} null trials per line; rate of p <= level (nominal = level)")
    print(f"{'n':>3} {'noise':>12} {'cut':>4}  " + "  ".join(f"{'t ' + str(a):>9} {'yuen':>8}" for a in LEVELS))
    for n in (8, 10, 12, 16, 24, 32):
        for kind in ("normal", "t3", "contaminated"):
            d = noise(rng, kind, (args.trials, n))
            g = int(math.floor(stats.TRIM * n))
            plain, yuen = yuen_p(d, 0), yuen_p(d, g)
            ours = [stats.trimmed_t(row, stats.TRIM).p_value for row in d[:50]]
            assert np.allclose(ours, yuen[:50], rtol=1e-9), "not stats.trimmed_t's formula"
            row = {"n": n, "noise": kind, "cut_each_end": g,
                   "plain_t": {str(a): float(np.mean(plain <= a)) for a in LEVELS},
                   "yuen": {str(a): float(np.mean(yuen <= a)) for a in LEVELS}}
            rows.append(row)
            print(f"{n:>3} {kind:>12} {g:>4}  " + "  ".join(
                f"{row['plain_t'][str(a)]:>9.5f} {row['yuen'][str(a)]:>8.5f}" for a in LEVELS))
    (HERE / "trimmed_t_calibration.json").write_text(json.dumps(
        {"trials": args.trials, "seed": args.seed, "trim": stats.TRIM,
         "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
