"""Statistics of a comparison between two configurations: pure functions on per-launch medians.

Two libraries cannot share a launch, so the samples are unpaired: each side is the set of its
per-launch medians of the default collective at one point (PGMPI: the launch is the unit).
The effect is the ratio of medians A/B (> 1: B is faster); its interval is a percentile
bootstrap resampling each side's launches; the test is two-sided. A point gets one of four
verdicts (docs/compare.md), the decided ones statements about the whole interval, so that two
runs can give different decided verdicts only if one of their intervals misses the true ratio:

  "A faster" / "B faster"  Holm-adjusted p <= alpha and the whole interval of the ratio lies
                            beyond the band [1 - tol, 1 / (1 - tol)]: the faster side saves more
                            than the tolerance of the other's time
  "no difference"          the whole interval lies inside the band (equivalence)
  "undecided"              the interval reaches across an edge of the band: a true ratio near the
                            tolerance, or too few launches or too much launch noise to tell
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from colltune.verify.stats import Interval, Test, TestResult, percentile_bootstrap

# The unpaired tests of the check's family that a comparison makes, two-sided (configurations
# never share a launch): Mann-Whitney U (Wilcoxon rank-sum), exact for small samples, and
# Welch's t on log per-launch medians (ratio of geometric means, no exact-p floor).
TESTS = (Test.MWU, Test.WELCH_LOG)


class Verdict(enum.StrEnum):
    A_FASTER = "A faster"
    B_FASTER = "B faster"
    SAME = "no difference"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Ratio:
    """A/B of one point: ratio of medians, its interval, the two-sided test, launches per side."""

    ratio: float
    ci: Interval
    test: TestResult
    n_a: int
    n_b: int


def band(tolerance: float) -> tuple[float, float]:
    """Ratios A/B within which neither side saves more than `tolerance` of the other's time."""
    return 1.0 - tolerance, 1.0 / (1.0 - tolerance)


def ratio_of_medians(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0 or y.size == 0 or not np.median(y) > 0:
        return math.nan
    return float(np.median(x) / np.median(y))


def _log_ratio(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], axis: int = -1) -> npt.NDArray[np.float64]:
    return np.log(np.median(x, axis=axis)) - np.log(np.median(y, axis=axis))


def ratio_ci(a: npt.ArrayLike, b: npt.ArrayLike, confidence: float = 0.95, n_resamples: int = 2000,
             seed: int = 0) -> Interval:
    """Percentile bootstrap interval of median(a)/median(b), each side's launches resampled
    (scipy.stats.bootstrap; percentile because BCa's jackknife degenerates with few launches)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size < 2 or y.size < 2 or (x <= 0).any() or (y <= 0).any():
        return Interval(math.nan, math.nan)
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        value = float(x[0] / y[0])
        return Interval(value, value)
    log = percentile_bootstrap((x, y), _log_ratio, confidence, n_resamples, seed, paired=False)
    return Interval(float(np.exp(log.low)), float(np.exp(log.high)))


def two_sided_test(a: npt.ArrayLike, b: npt.ArrayLike, test: Test = Test.MWU) -> TestResult:
    """H1: the two configurations' per-launch medians differ in location. NaN below 2 per side."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size < 2 or y.size < 2:
        return TestResult(math.nan, math.nan)
    match Test(test):
        case Test.MWU:
            # Exact whenever there are no ties: scipy's "auto" falls back to the normal
            # approximation above 8 launches, whose smallest p (complete separation of 10 vs 10
            # launches: 1.6e-4) wastes most of the exact test's power (1.1e-5) under Holm.
            tied = np.unique(np.concatenate([x, y])).size < x.size + y.size
            r = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic" if tied else "exact")
        case Test.WELCH_LOG:
            lx, ly = np.log(x), np.log(y)
            if np.ptp(lx) == 0 and np.ptp(ly) == 0:
                same = bool(lx[0] == ly[0])
                return TestResult(0.0 if same else math.copysign(math.inf, lx[0] - ly[0]), 1.0 if same else 0.0)
            r = stats.ttest_ind(lx, ly, equal_var=False, alternative="two-sided")
        case other:
            raise ValueError(f"a comparison tests with {', '.join(TESTS)}, not {other}")
    return TestResult(float(r.statistic), float(r.pvalue))


def slow_launches(medians: npt.ArrayLike, factor: float) -> int:
    """How many per-launch medians exceed `factor` times their median."""
    x = np.asarray(medians, dtype=np.float64)
    return int((x > factor * np.median(x)).sum()) if x.size else 0


def compare_point(a: npt.ArrayLike, b: npt.ArrayLike, test: Test = Test.MWU, confidence: float = 0.95,
                  n_resamples: int = 2000, seed: int = 0) -> Ratio:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return Ratio(ratio_of_medians(x, y), ratio_ci(x, y, confidence, n_resamples, seed),
                 two_sided_test(x, y, test), int(x.size), int(y.size))


def decide(ci: Interval, p_adjusted: float, alpha: float, tolerance: float) -> Verdict:
    """The three-way verdict of one point (plus "undecided").

    A point estimate just outside the band (ratio 1.06 at tolerance 5%) is not evidence that the
    saving exceeds the tolerance: a rerun would as likely find 1.04 and call it "no difference".
    Requiring the interval beyond the band leaves such points undecided instead."""
    low, high = band(tolerance)
    if math.isnan(ci.low) or math.isnan(ci.high):
        return Verdict.UNDECIDED
    if not math.isnan(p_adjusted) and p_adjusted <= alpha:
        if ci.low > high:
            return Verdict.B_FASTER
        if ci.high < low:
            return Verdict.A_FASTER
    if low <= ci.low and ci.high <= high:
        return Verdict.SAME
    return Verdict.UNDECIDED
