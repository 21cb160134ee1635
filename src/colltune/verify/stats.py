"""Statistics for guideline verdicts: pure functions on numpy arrays, no I/O.

Conventions used throughout (docs/statistics.md has the reasoning):

* A comparison has a *reference* side ``ref`` (the side a guideline says should be at least as
  fast: the library's default collective, or the smaller message size for monotony) and a
  *candidate* side ``alt`` (the mock-up, the library algorithm, the larger size, the k-split).
  A guideline is violated when ``ref`` is significantly *slower* than ``alt`` by more than a
  practical tolerance.
* The samples compared are per-launch medians (PGMPI: the launch, i.e. one mpiexec, is the
  experimental unit, because run-to-run variation dominates within-run variation).
* slowdown = median(ref) / median(alt) (pgchecker); rel_diff = 1 - median(alt) / median(ref),
  the share of the reference's time the candidate saves.
* Paired tests (the default): the benchmark measures every variant of a job interleaved within
  the same launch, so per-launch medians of the two sides are paired by launch. The launch effect
  (8x on an oversubscribed node) is shared and cancels in the per-launch ratio ref_i / alt_i;
  the tests run on the log-ratios, the slowdown is the median per-launch ratio.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

from types import ModuleType

import numpy as np
import numpy.typing as npt

# scipy.stats is imported where a test needs it, not here: its import is ~0.8 s of a quick
# check's ~10 s (it parses its docstrings), and the check's own path (paired and trimmed t, the
# bootstrap, the pooled rank test on large samples, the A/A binomial) needs only scipy.special.
# That one is imported on first use too (`preload`): ~0.2-0.5 s, of which scipy's array-API layer
# imports numpy.f2py and numpy.testing; a check imports it while its first launch starts MPI.


def _special() -> ModuleType:
    from scipy import special

    return special


def preload() -> None:
    """Import what judging needs and measuring does not (verify.adaptive calls it while the
    first launch's ranks start MPI, held at their gate)."""
    _special()


def t_quantile(df: float, p: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom."""
    return float(_special().stdtrit(df, p))

FloatArray = npt.NDArray[np.float64]


class Test(enum.StrEnum):
    """One-sided tests of "ref is slower than alt"."""

    PAIRED_T = "paired-t"  # t-test on per-launch log-ratios (paired by launch)
    SIGNED_RANK = "signed-rank"  # Wilcoxon signed-rank on per-launch log-ratios (paired)
    TRIMMED_T = "trimmed-t"  # Yuen's t on the 10%-trimmed mean of per-launch log-ratios (paired)
    SCREENED_T = "screened-t"  # paired-t without wild launches (wild_launches); trimmed-t below 16 launches
    MWU = "mwu"  # Mann-Whitney U (= Wilcoxon rank-sum) on unpaired samples, PGMPI's test
    KS = "ks"  # Kolmogorov-Smirnov, less sensitive to ties (PGMPI), unpaired
    WELCH = "welch"  # Welch's t on means, unpaired, for comparison with pgchecker's t-test
    WELCH_LOG = "welch-log"  # Welch's t on log per-launch medians: paired-t's unpaired counterpart

    @property
    def paired(self) -> bool:
        return self in (Test.PAIRED_T, Test.SIGNED_RANK, Test.TRIMMED_T, Test.SCREENED_T)

    @property
    def unpaired(self) -> Test:
        """The test used when the two sides never share a launch (Intel MPI's algorithms run in
        launches of their own): the launch stays the unit, the sides are independent samples."""
        return {Test.PAIRED_T: Test.WELCH_LOG, Test.TRIMMED_T: Test.WELCH_LOG, Test.SCREENED_T: Test.WELCH_LOG,
                Test.SIGNED_RANK: Test.MWU}.get(self, self)


class Correction(enum.StrEnum):
    HOLM = "holm"  # family-wise error rate, valid under any dependence
    BH = "bh"  # Benjamini-Hochberg false discovery rate


@dataclass(frozen=True)
class TestResult:
    statistic: float
    p_value: float


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


# ---------------------------------------------------------------------------------------------
# Reducing raw repetitions to the experimental unit


def per_launch_medians(launch: npt.ArrayLike, runtime: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """Median runtime of each launch, launches in ascending order.

    ``launch`` and ``runtime`` are parallel arrays (one entry per valid repetition). NaN runtimes
    are ignored; a launch whose runtimes are all NaN is dropped.
    """
    launch_arr = np.asarray(launch, dtype=np.int64)
    rt = np.asarray(runtime, dtype=np.float64)
    if launch_arr.shape != rt.shape:
        raise ValueError(f"launch and runtime differ in shape: {launch_arr.shape} vs {rt.shape}")
    keep = ~np.isnan(rt)
    launch_arr, rt = launch_arr[keep], rt[keep]
    ids = np.unique(launch_arr)
    medians = np.array([np.median(rt[launch_arr == i]) for i in ids], dtype=np.float64)
    return ids, medians


# ---------------------------------------------------------------------------------------------
# Two-sample tests


def log_ratios(ref: npt.ArrayLike, alt: npt.ArrayLike) -> FloatArray:
    """Per-launch log(ref_i / alt_i) of paired values (same launch at the same position)."""
    x = np.asarray(ref, dtype=np.float64)
    y = np.asarray(alt, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} vs {y.size}")
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("runtimes must be positive for log-ratios")
    return np.log(x) - np.log(y)


def _t_sf(t: float, df: float) -> float:
    """Upper tail of Student's t: what scipy.stats.ttest_1samp/ttest_ind(alternative="greater")
    return, without their per-call overhead (a check makes thousands of these tests)."""
    return float(_special().stdtr(df, -t))


def one_sided_test(ref: npt.ArrayLike, alt: npt.ArrayLike, test: Test = Test.MWU,
                   var_floor: float = 0.0) -> TestResult:
    """Test H1: ``ref`` tends to take longer than ``alt``. Returns the p-value of that test.

    Paired tests need ``ref[i]`` and ``alt[i]`` from the same launch. NaN when either side has
    fewer than two values (no test is possible). `var_floor`: the paired t-tests' per-launch
    variance of the log-ratio is taken as at least this (variance_floor; 0: as measured).
    """
    x = np.asarray(ref, dtype=np.float64)
    y = np.asarray(alt, dtype=np.float64)
    if x.size < 2 or y.size < 2:
        return TestResult(math.nan, math.nan)
    match Test(test):
        case Test.PAIRED_T:
            return paired_t(log_ratios(x, y), var_floor)
        case Test.TRIMMED_T:
            return trimmed_t(log_ratios(x, y), TRIM, var_floor)
        case Test.SCREENED_T:
            d = log_ratios(x, y)
            if d.size < SCREEN_MIN_LAUNCHES:
                return trimmed_t(d, TRIM, var_floor)
            return paired_t(d[~wild_launches(d)], var_floor)
        case Test.SIGNED_RANK:
            from scipy import stats

            d = log_ratios(x, y)
            if not d.any():
                return TestResult(0.0, 1.0)
            r = stats.wilcoxon(d, alternative="greater", zero_method="wilcox")
            return TestResult(float(r.statistic), float(r.pvalue))
        case Test.MWU:
            return mann_whitney_greater(x, y)
        case Test.KS:
            from scipy import stats

            # scipy: alternative "less" means the CDF of the first sample lies below the second
            # somewhere, i.e. ref has more mass at large runtimes.
            r = stats.ks_2samp(x, y, alternative="less", method="auto")
            return TestResult(float(r.statistic), float(r.pvalue))
        case Test.WELCH:
            if np.ptp(x) == 0 and np.ptp(y) == 0:
                # Zero variance on both sides: t is undefined; the medians decide.
                p = 0.0 if x[0] > y[0] else 1.0
                return TestResult(math.inf if p == 0.0 else -math.inf, p)
            vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
            t = float((x.mean() - y.mean()) / math.sqrt(vx + vy))
            df = (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1))
            return TestResult(t, _t_sf(t, float(df)))
        case Test.WELCH_LOG:
            if (x <= 0).any() or (y <= 0).any():
                raise ValueError("runtimes must be positive for log-medians")
            return one_sided_test(np.log(x), np.log(y), Test.WELCH)
    raise ValueError(f"unknown test {test!r}")


def mann_whitney_greater(x: FloatArray, y: FloatArray) -> TestResult:
    """Mann-Whitney U of H1: ``x`` tends to be larger, as scipy.stats.mannwhitneyu(x, y,
    alternative="greater", method="auto") computes it: its normal approximation (tie-corrected,
    continuity-corrected) is written out here in numpy, because the check's pooled view makes this
    test on a few hundred repetitions a side, where scipy's "auto" chooses it anyway; the exact
    test of small tie-free samples stays scipy's."""
    n1, n2 = x.size, y.size
    _, inverse, counts = np.unique(np.concatenate([x, y]), return_inverse=True, return_counts=True)
    if (n1 <= 8 or n2 <= 8) and counts.size == n1 + n2:
        from scipy import stats

        r = stats.mannwhitneyu(x, y, alternative="greater", method="exact")
        return TestResult(float(r.statistic), float(r.pvalue))
    average_rank = np.cumsum(counts) - (counts - 1) / 2.0  # of each group of tied values
    u = float(average_rank[inverse[:n1]].sum()) - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    ties = float((counts.astype(np.float64) ** 3 - counts).sum())
    sd = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.float64(u - n1 * n2 / 2.0 - 0.5) / np.float64(sd)
    return TestResult(u, float(np.clip(_special().ndtr(-z), 0.0, 1.0)))


# Share cut from each end by the trimmed t: one launch in ten may be wild (a descheduled rank:
# per-launch ratios of 15-19 among values of 1.0-1.8 on this machine) without sinking a
# comparison, which the plain t cannot absorb. Calibrated on 400 000 null trials per launch count
# (8-32) and noise (normal, t3, 10% of launches 5x wider) at the levels Holm uses in a check
# (0.05, 1e-3, 2e-4; benchmarks/verification/trimmed_t_calibration.py): at or below nominal
# within Monte Carlo error everywhere, with df = h - 2; Yuen's usual h - 1 rejected up to 50%
# more often than nominal with 10-12 launches.
TRIM = 0.1


def paired_t(d: FloatArray, var_floor: float = 0.0) -> TestResult:
    """Student's one-sample t of H1: the mean of ``d`` is above 0; the variance of ``d`` taken as
    at least `var_floor` (variance_floor), the degrees of freedom unchanged."""
    var = float(d.var(ddof=1)) if np.ptp(d) else 0.0
    if max(var, var_floor) == 0:
        # Identical ratio in every launch: t is undefined; its sign decides.
        return TestResult(math.copysign(math.inf, d[0]) if d[0] else 0.0, 0.0 if d[0] > 0 else 1.0)
    if var >= var_floor:
        t = float(d.mean() / (d.std(ddof=1) / math.sqrt(d.size)))
    else:
        t = float(d.mean() / math.sqrt(var_floor / d.size))
    return TestResult(t, _t_sf(t, d.size - 1))


def trimmed_t(d: FloatArray, trim: float, var_floor: float = 0.0) -> TestResult:
    """Yuen's one-sample t of H1: the trimmed mean of ``d`` is above 0. The g = floor(trim * n)
    smallest and largest values are cut from the mean and winsorized in the variance (Wilcox,
    Introduction to Robust Estimation, 4.2; scipy's standard error for trimmed samples);
    df = h - 2 for h = n - 2g kept values (h - 1, the plain t, when nothing is cut, below 10
    values): see the calibration above. `var_floor`: the squared standard error is at least
    var_floor / h (tested_variance)."""
    n = d.size
    g = int(math.floor(trim * n))
    s = np.sort(d)
    kept = s[g:n - g]
    h = n - 2 * g
    winsorized = np.clip(s, s[g], s[n - g - 1])
    se2 = float(winsorized.var(ddof=1)) * (n - 1) / (h * (h - 1)) if np.ptp(kept) else 0.0
    se2 = max(se2, var_floor / h)
    if se2 == 0:
        return TestResult(math.copysign(math.inf, kept[0]) if kept[0] else 0.0, 0.0 if kept[0] > 0 else 1.0)
    t = float(kept.mean()) / math.sqrt(se2)
    return TestResult(t, _t_sf(t, h - 2 if g else h - 1))


def tested_variance(d: FloatArray, test: Test) -> tuple[float, int]:
    """The per-launch variance of the log-ratios ``d`` that a paired t-test's standard error
    implies (its squared standard error times the launches it keeps: the sample variance for the
    plain and screened t, Yuen's winsorized estimate for the trimmed t), and its degrees of freedom."""
    kept, df = tested_launches(d, test)
    if kept.size < 2:
        return math.nan, df
    test = Test(test)
    if test is Test.TRIMMED_T or (test is Test.SCREENED_T and d.size < SCREEN_MIN_LAUNCHES):
        n, g = d.size, int(math.floor(TRIM * d.size))
        s = np.sort(d)
        h = n - 2 * g
        return float(np.clip(s, s[g], s[n - g - 1]).var(ddof=1)) * (n - 1) / (h - 1), df
    return float(kept.var(ddof=1)), df


def variance_floor(own: float, df: int, typical: float, prior_launches: float) -> float:
    """The per-launch variance a comparison's test takes at least: its own variance `own` (with
    `df` degrees of freedom) shrunk towards the `typical` variance of its family at this look, with
    the weight of `prior_launches` launches, (prior x typical + df x own) / (prior + df), where that
    is larger than its own; never smaller (so the test can only get more conservative).

    Why (issue 36, session 10): a look's launches run one after another within seconds, and under
    load a state that lasts that long (where the busy program runs, the ranks' placement) can put
    all of them in one mode. At load ~2 one quick check's first 8 launches of MPI_Gather vs
    Gatherv at 8 B lay at 0.91-0.99x (sd 0.03 in log) where its rounds and 9 other checks found
    launches at ~1.0x and 1.3-1.7x (1.22-1.31x over 18-38 launches); with the other comparisons'
    typical sd of 0.18 in that look, the t of its equivalence test was 9 and it was called "no
    violation": the one decided flip of issue 36's batches. The launches of one look estimate the
    variance within that stretch of time; the family's typical variance says how much a
    comparison's launches vary on this machine, and weighs most where a look has few launches."""
    if not (math.isfinite(own) and math.isfinite(typical)) or prior_launches <= 0 or own >= typical:
        return 0.0 if not math.isfinite(own) else own
    return (prior_launches * typical + df * own) / (prior_launches + df)


# A launch is wild in a comparison when its log-ratio lies farther from the median of the
# comparison's launches than both WILD_MADS robust standard deviations (1.4826 x the median
# absolute deviation) and a factor WILD_FACTOR: a rank descheduled during one side's job (ratios of
# 15-19 among 1.0-1.8 under load; up to 7 such launches at one end of 32 at load ~2:
# benchmarks/reproducibility/wild_launches.py), not a placement mode (1.5-2x, never 4x here). The
# factor alone would cut ordinary launches of a comparison that scatters widely, the MADs alone a
# whole mode when two modes are near equal in size (the MAD shrinks to one mode's scatter). Only
# the wild launches are dropped, not as many ordinary ones from the other end (a symmetric cut
# biases the mean when the wild launches lie on one side), at most a quarter of them. Where no
# launch is wild the screened t is the plain paired t, exact for normal log-ratios. The screen is
# chosen by the data, so it was calibrated like the trimmed t (400 000 null trials per launch
# count and noise: benchmarks/verification/screened_t_calibration.py): from SCREEN_MIN_LAUNCHES
# on, at the plain t's rates within Monte Carlo error at the Holm levels; with 10-12 launches the
# median absolute deviation is too noisy (1.6x nominal at 2e-4 with 10), so there the screened t
# is the trimmed t (one launch cut from each end, below 10 none).
WILD_MADS, WILD_FACTOR, SCREEN_MIN_LAUNCHES = 8.0, 4.0, 16


def wild_launches(d: FloatArray) -> npt.NDArray[np.bool_]:
    """Which of the per-launch log-ratios ``d`` are wild (above), farthest first up to a quarter."""
    n = d.size
    wild = np.zeros(n, dtype=bool)
    distance = np.abs(d - _median(d))
    if distance.max() <= math.log(WILD_FACTOR):  # the common case, without the second median
        return wild
    far = max(WILD_MADS * 1.4826 * _median(distance), math.log(WILD_FACTOR))
    count = min(int((distance > far).sum()), n // 4)
    wild[np.argsort(-distance, kind="stable")[:count]] = True
    return wild


def median(values: npt.ArrayLike) -> float:
    """np.median of a 1-d array without NaN (per-launch medians, repetitions), by one sort: a tenth
    of np.median's cost on a few dozen values, and a check's looks take ~2,000 medians each (0.1-0.4
    CPU s of a look through np.median); the same value to the last bit (the mean of the two middle
    values of an even count is their sum halved either way)."""
    return _median(np.asarray(values, dtype=np.float64))


def _median(values: FloatArray) -> float:
    """np.median of a few dozen values, by one sort: a tenth of np.median's cost there, and a check
    screens each comparison three times per look."""
    s = np.sort(values)
    n = s.size
    return float(0.5 * (s[(n - 1) // 2] + s[n // 2]))


def tested_launches(d: FloatArray, test: Test) -> tuple[FloatArray, int]:
    """The log-ratios whose mean a paired test takes (all, the trimmed ones, the screened ones)
    and the degrees of freedom of its t."""
    test = Test(test)
    if test is Test.TRIMMED_T or (test is Test.SCREENED_T and d.size < SCREEN_MIN_LAUNCHES):
        g = int(math.floor(TRIM * d.size))
        kept = np.sort(d)[g:d.size - g]
        return kept, kept.size - (2 if g else 1)
    if test is Test.SCREENED_T:
        kept = d[~wild_launches(d)]
        return kept, kept.size - 1
    return d, d.size - 1


def equivalence_test(ref: npt.ArrayLike, alt: npt.ArrayLike, tolerance: float,
                     test: Test = Test.PAIRED_T, var_floor: float = 0.0) -> TestResult:
    """Test H1: ``alt`` saves less than ``tolerance`` of ``ref``'s time (no violation shown).

    The violation zone is ref/alt > 1/(1 - tolerance); its complement is "ref scaled by
    (1 - tolerance) takes less time than alt", tested one-sided with the same test (and the
    same pairing) as the violation, so p <= a is the one-sided upper (1 - a) confidence bound
    of the ratio lying below the tolerance.
    """
    x = np.asarray(ref, dtype=np.float64) * (1.0 - tolerance)
    return one_sided_test(alt, x, test, var_floor)


def beyond_tolerance_test(ref: npt.ArrayLike, alt: npt.ArrayLike, tolerance: float,
                          test: Test = Test.PAIRED_T, var_floor: float = 0.0) -> TestResult:
    """Test H1: ``alt`` saves more than ``tolerance`` of ``ref``'s time (a violation shown).

    The mirror image of `equivalence_test` at the same boundary ref/alt = 1/(1 - tolerance):
    "ref scaled by (1 - tolerance) still takes longer than alt", with the same test and pairing,
    so p <= a is the one-sided lower (1 - a) confidence bound of the ratio lying beyond the
    tolerance. A true ratio on the boundary is then rejected by neither test more often than
    alpha: it stays undecided instead of being called a violation in every other run.
    """
    x = np.asarray(ref, dtype=np.float64) * (1.0 - tolerance)
    return one_sided_test(x, alt, test, var_floor)


def min_attainable_p(n_ref: int, n_alt: int, test: Test = Test.MWU, *, two_sided: bool = False) -> float:
    """Smallest p-value the exact rank test can give with these sample sizes, one-sided (check)
    or two-sided (compare: twice that, at most 1); 0 for the t-tests, which have no such floor.

    With few launches no outcome can be significant after a multiple-comparison correction;
    check and compare use this to tell the user to measure more launches.
    """
    if n_ref < 1 or n_alt < 1:
        return 1.0
    t = Test(test)
    if t in (Test.WELCH, Test.PAIRED_T, Test.WELCH_LOG, Test.TRIMMED_T, Test.SCREENED_T):
        return 0.0
    one_sided = 0.5 ** min(n_ref, n_alt) if t is Test.SIGNED_RANK else 1.0 / math.comb(n_ref + n_alt, n_ref)
    return min(1.0, 2.0 * one_sided) if two_sided else one_sided


# ---------------------------------------------------------------------------------------------
# Multiple comparisons


def holm(p_values: npt.ArrayLike) -> FloatArray:
    """Holm's step-down adjusted p-values (NaN entries stay NaN and are not counted)."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    finite = ~np.isnan(p)
    ps = p[finite]
    m = ps.size
    if m == 0:
        return out
    order = np.argsort(ps, kind="stable")
    scaled = (m - np.arange(m)) * ps[order]
    adjusted_sorted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    out[finite] = adjusted
    return out


def benjamini_hochberg(p_values: npt.ArrayLike) -> FloatArray:
    """Benjamini-Hochberg adjusted p-values (scipy), NaN entries stay NaN and are not counted."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    finite = ~np.isnan(p)
    if finite.any():
        from scipy import stats

        out[finite] = stats.false_discovery_control(p[finite], method="bh")
    return out


def adjust(p_values: npt.ArrayLike, correction: Correction = Correction.HOLM) -> FloatArray:
    match Correction(correction):
        case Correction.HOLM:
            return holm(p_values)
        case Correction.BH:
            return benjamini_hochberg(p_values)
    raise ValueError(f"unknown correction {correction!r}")


def adjust_directional(p_beyond: npt.ArrayLike, p_inside: npt.ArrayLike,
                       correction: Correction = Correction.HOLM) -> tuple[FloatArray, FloatArray]:
    """One correction over the comparisons of a family for the two mirror tests at the tolerance
    boundary (beyond it: a violation; inside it: equivalence): each comparison enters with the
    test its data point to, the smaller of its two p-values, and the other test is not made
    (adjusted p 1: the two add up to about 1, so it could never be rejected).

    This is Holm (or BH) at level 2 alpha on the two-sided p-values 2 min(p_beyond, p_inside),
    with directional decisions on the question "on which side of the boundary does the ratio
    lie?" (Shaffer 1980; Finner 1999): the comparisons shown inside the tolerance leave the
    step-down first, so a violation is corrected over the comparisons still in doubt rather than
    over the whole family. Any false verdict of either kind: at most 2 alpha, as with one
    correction per test; each kind at alpha: measured (docs/measurement.md, "Error rates before
    and after")."""
    beyond = np.asarray(p_beyond, dtype=np.float64)
    inside = np.asarray(p_inside, dtype=np.float64)
    pointed = np.fmin(beyond, inside)
    pointed[np.isnan(beyond) | np.isnan(inside)] = np.nan
    adjusted = adjust(pointed, correction)
    to_beyond, to_inside = beyond < inside, inside < beyond
    out_beyond = np.where(to_beyond, adjusted, np.where(np.isnan(adjusted), np.nan, 1.0))
    out_inside = np.where(to_inside, adjusted, np.where(np.isnan(adjusted), np.nan, 1.0))
    return out_beyond, out_inside


# ---------------------------------------------------------------------------------------------
# Effect sizes


def slowdown(ref_median: float, alt_median: float) -> float:
    """Seed 003's slowdown: how many times longer the reference takes than the candidate."""
    if not (alt_median > 0):
        return math.nan
    return ref_median / alt_median


def relative_difference(ref_median: float, alt_median: float) -> float:
    """Share of the reference's time the candidate saves: 1 - alt/ref (negative: alt slower)."""
    if not (ref_median > 0):
        return math.nan
    return 1.0 - alt_median / ref_median


def percentile_bootstrap(data: tuple[FloatArray, ...], statistic: Callable[..., FloatArray], confidence: float,
                          n_resamples: int, seed: int, *, paired: bool = True) -> Interval:
    """Percentile bootstrap interval of a vectorized statistic (percentile: BCa's jackknife
    degenerates with the 3-10 launches a side typically has), seeded: the same data give the same
    verdicts. Each sample is resampled with replacement (`paired`: one draw of positions for all
    samples, which then must have one length), all resamples at once: the statistic gets arrays of
    shape (n_resamples, n) and reduces the last axis. This is scipy.stats.bootstrap's percentile
    method without its per-call validation, which cost ~4 ms of each of a check's ~110 intervals."""
    rng = np.random.default_rng(seed)
    if paired:
        picks = rng.integers(0, data[0].size, size=(n_resamples, data[0].size))
        resampled = [sample[picks] for sample in data]
    else:
        resampled = [sample[rng.integers(0, sample.size, size=(n_resamples, sample.size))] for sample in data]
    values = statistic(*resampled, axis=-1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [100.0 * tail, 100.0 * (1.0 - tail)])
    return Interval(float(low), float(high))


def _rel_diff_statistic(ref: FloatArray, alt: FloatArray, axis: int = -1) -> FloatArray:
    return 1.0 - np.median(alt, axis=axis) / np.median(ref, axis=axis)


def relative_difference_ci(
    ref: npt.ArrayLike,
    alt: npt.ArrayLike,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of the relative difference of medians (scipy.bootstrap).

    Resampling is per side (the sides are independent samples of launches). The percentile
    method is used because BCa's jackknife is degenerate for the 3-10 launches we typically
    have. A fixed seed makes verdicts reproducible from the same data.
    """
    x = np.asarray(ref, dtype=np.float64)
    y = np.asarray(alt, dtype=np.float64)
    if x.size < 2 or y.size < 2:
        return Interval(math.nan, math.nan)
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        value = float(_rel_diff_statistic(x, y))
        return Interval(value, value)
    return percentile_bootstrap((x, y), _rel_diff_statistic, confidence, n_resamples, seed, paired=False)


def paired_slowdown(ref: npt.ArrayLike, alt: npt.ArrayLike) -> float:
    """Median over launches of the per-launch slowdown ref_i / alt_i."""
    d = log_ratios(ref, alt)
    if d.size == 0:
        return math.nan
    return median(np.exp(d))


def _paired_rel_diff_statistic(ratios: FloatArray, axis: int = -1) -> FloatArray:
    return 1.0 - 1.0 / np.median(ratios, axis=axis)


def paired_relative_difference_ci(
    ref: npt.ArrayLike,
    alt: npt.ArrayLike,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of 1 - 1/median(ref_i/alt_i), resampling whole launches."""
    d = log_ratios(ref, alt)
    if d.size < 2:
        return Interval(math.nan, math.nan)
    ratios = np.exp(d)
    if np.ptp(ratios) == 0:
        value = float(1.0 - 1.0 / ratios[0])
        return Interval(value, value)
    return percentile_bootstrap((ratios,), _paired_rel_diff_statistic, confidence, n_resamples, seed)


@dataclass(frozen=True)
class LaunchModes:
    """Per-launch log-ratios that fall into two separated groups: `low` launches around the
    ratio `low_ratio`, `high` around `high_ratio` (medians of each group)."""

    low: int
    low_ratio: float
    high: int
    high_ratio: float


# Two modes are reported when each holds at least a quarter of >= 24 launches (fewer: a normal
# sample split at its quartile passes the other tests now and then), their medians lie
# at least 25% apart (a log-ratio of 0.22) and Ashman's D, sqrt(2)|m1 - m2| / sqrt(s1^2 + s2^2),
# is at least 4 (3 let 4-8% of normal samples of 24-32 launches through, 4: 1-2%). Measured on
# this machine at 8 B: MPI_Scatter vs Scatterv, 17-23
# launches of 32 at 1.03-1.04x and the rest at 1.78-1.87x in every run (docs/measurement.md).
MODE_MIN_SHARE, MODE_MIN_GAP, MODE_MIN_ASHMAN_D, MODE_MIN_LAUNCHES = 0.25, math.log(1.25), 4.0, 24


def launch_modes(d: npt.ArrayLike) -> LaunchModes | None:
    """The two modes of per-launch log-ratios ``d``, split where the between-group sum of squares is
    largest (two-means on the sorted values), or None when the launches do not form two
    separated groups by the thresholds above."""
    s = np.sort(np.asarray(d, dtype=np.float64))
    n = s.size
    smallest = max(2, math.ceil(MODE_MIN_SHARE * n))
    if n < MODE_MIN_LAUNCHES or n < 2 * smallest:
        return None
    ks = np.arange(smallest, n - smallest + 1)
    csum = np.cumsum(s)
    low_mean, high_mean = csum[ks - 1] / ks, (csum[-1] - csum[ks - 1]) / (n - ks)
    k = int(ks[np.argmax(ks * (n - ks) * (high_mean - low_mean) ** 2)])
    low, high = s[:k], s[k:]
    gap = float(np.median(high) - np.median(low))
    spread = math.sqrt(float(low.var(ddof=1) + high.var(ddof=1)))
    if gap < MODE_MIN_GAP or (spread > 0 and math.sqrt(2) * gap / spread < MODE_MIN_ASHMAN_D):
        return None
    return LaunchModes(k, float(np.exp(np.median(low))), n - k, float(np.exp(np.median(high))))


# ---------------------------------------------------------------------------------------------
# Decisions


def is_violation(p_adjusted: float, rel_diff: float, alpha: float, tolerance: float) -> bool:
    """A violation needs both: significance after correction and a practical effect."""
    if math.isnan(p_adjusted) or math.isnan(rel_diff):
        return False
    return p_adjusted <= alpha and rel_diff > tolerance


def barrier_warning(ref_median: float, alt_median: float, barrier_median: float) -> bool:
    """Seed 003's MPI_Barrier warning, extended to the size of the effect.

    The benchmark synchronizes every repetition; processes leave a barrier at different times,
    so one barrier's duration bounds the synchronization error of a single measurement. We warn
    when the faster side runs shorter than one barrier (pgchecker's rule) or when the measured
    gain ``ref - alt`` is smaller than one barrier (the gain could be synchronization noise).
    NaN barrier (not measured): no warning can be given.
    """
    if math.isnan(barrier_median):
        return False
    return alt_median < barrier_median or 0.0 < (ref_median - alt_median) < barrier_median


def split_factor(small_bytes: int, large_bytes: int) -> int:
    """Seed 002: the smallest k with k * small >= large (k >= 1)."""
    if small_bytes <= 0:
        raise ValueError("split-robustness needs a positive smaller size")
    return max(1, -(-large_bytes // small_bytes))


def calibration_p_value(n_violations: int, n_comparisons: int, alpha: float) -> float:
    """One-sided binomial p-value of seeing this many A/A violations if the rate were alpha.

    A small value means the check reports false violations more often than it claims.
    """
    if n_comparisons == 0:
        return math.nan
    if n_violations <= 0:
        return 1.0
    # P(X >= k) for X ~ Binomial(n, alpha): scipy.stats.binomtest's "greater" p-value
    return float(_special().bdtrc(n_violations - 1, n_comparisons, alpha))


# ---------------------------------------------------------------------------------------------
# Launches bound by the scheduler, not by MPI


# A measurement (collective, variant, size) is scheduler-bound when its median launch takes at
# least SCHEDULER_RATIO x its fastest repetition over the run: most repetitions then waited for a
# CPU time slice (a rank yielding to another program busy on its core), not for the collective.
# A run is, when at least SCHEDULER_SHARE of its measurements are (and it has SCHEDULER_MIN_SIDES).
# Measured on the 232 stored 4-rank quick checks of sessions 9-14 (benchmarks/reproducibility/
# scheduler_bound.py; issue 36): 189 quiet checks 2-8% of their measurements at >= 20x (median
# ratio 1.5-2.0x), 30 beside an unpinned busy program under autogroup scheduling 4-9% (2.0-2.8x);
# 12 beside a nice-0 program pinned to one of the 2 cores with autogroup off 24-100% (per-launch
# medians ~2-4 ms, the kernel's 4 ms tick, where quiet checks have 10-60 us; 76-99% of the
# comparisons undecided or untested), one at load 16-22 25% (all undecided). 20% is over twice the largest
# share of a check not flagged.
SCHEDULER_RATIO = 20.0
SCHEDULER_SHARE = 0.2
SCHEDULER_MIN_SIDES = 4


@dataclass(frozen=True)
class SchedulerBound:
    """A run whose launches waited for the scheduler: `bound` of its `sides` measurements with the
    median launch >= SCHEDULER_RATIO x the fastest repetition; over those `bound`, the median of
    that ratio, of their median launch (`median_s`) and of their fastest repetition (`fastest_s`)."""

    sides: int
    bound: int
    ratio: float
    median_s: float
    fastest_s: float


def scheduler_bound(launch_medians: list[FloatArray], fastest: list[float]) -> SchedulerBound | None:
    """Whether a run's launches were scheduler-bound (SCHEDULER_RATIO, SCHEDULER_SHARE): per
    measurement its per-launch medians and its fastest repetition over the run; measurements
    without launches or without a positive fastest repetition are left out. None: not bound."""
    medians, fast = [], []
    for per_launch, f in zip(launch_medians, fastest, strict=True):
        if per_launch.size and f > 0 and math.isfinite(f):
            medians.append(median(per_launch))
            fast.append(f)
    if len(medians) < SCHEDULER_MIN_SIDES:
        return None
    m, f = np.asarray(medians, dtype=np.float64), np.asarray(fast, dtype=np.float64)
    ratios = m / f
    bound = ratios >= SCHEDULER_RATIO
    count = int(np.count_nonzero(bound))
    if count == 0 or count < SCHEDULER_SHARE * len(ratios):
        return None
    return SchedulerBound(len(ratios), count, median(ratios[bound]), median(m[bound]), median(f[bound]))


# ---------------------------------------------------------------------------------------------
# Severity (quality score, report colours)

# Seed 003 (Fig. 4.12) classes of the default's slowdown against the best alternative.
SEVERITY_CLASSES: tuple[tuple[float, str, float], ...] = (
    # (upper bound of slowdown, label, penalty in the quality score)
    (1.0, "very good", 0.0),
    (1.1, "good", 0.1),
    (1.5, "tolerable", 0.25),
    (2.0, "critical", 0.5),
    (5.0, "very critical", 0.75),
    (math.inf, "severe", 1.0),
)


def severity(slowdown_value: float) -> tuple[str, float]:
    """Label and penalty of a violation's slowdown (NaN or <= 1: no penalty)."""
    if math.isnan(slowdown_value):
        return SEVERITY_CLASSES[0][1], 0.0
    for bound, label, penalty in SEVERITY_CLASSES:
        if slowdown_value <= bound:
            return label, penalty
    raise AssertionError("unreachable: the last class is unbounded")


def monotony_pairs(sizes: npt.ArrayLike) -> list[tuple[int, int]]:
    """Adjacent pairs of distinct measured sizes, ascending (PGMPI's monotony rule)."""
    s = sorted({int(v) for v in np.asarray(sizes).ravel()})
    return list(zip(s[:-1], s[1:], strict=True))


def split_pairs(sizes: npt.ArrayLike, max_k: int) -> list[tuple[int, int, int]]:
    """(small, large, k) for every pair of measured sizes small < large with k <= max_k.

    Sizes of 0 bytes cannot be split into; pairs are ordered by large, then by small descending
    (so the first violating pair of a large size is the smallest k, the one PGMPI reports).
    """
    s = sorted({int(v) for v in np.asarray(sizes).ravel() if int(v) > 0})
    out: list[tuple[int, int, int]] = []
    for j, large in enumerate(s):
        for small in reversed(s[:j]):
            k = split_factor(small, large)
            if k <= max_k:
                out.append((small, large, k))
    return out
