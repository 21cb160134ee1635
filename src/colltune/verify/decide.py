"""Three-way verdicts, corrected per family and spent over a fixed number of looks.

Every guideline comparison ends as one of (docs/statistics.md, "Three-way verdicts"):

  violation     shown beyond the tolerance: the one-sided test that ref x (1 - tolerance) is
                still slower than alt (stats.beyond_tolerance_test), corrected, p <= alpha_look,
                i.e. the corrected lower confidence bound of the ratio lies beyond the tolerance;
  no violation  equivalence shown: the mirror test that ref x (1 - tolerance) is faster than
                alt (stats.equivalence_test), corrected, p <= alpha_look, i.e. the corrected upper
                confidence bound of the ratio lies inside the tolerance;
  undecided     neither (the interval contains the tolerance); undecided_reason says why;
  untested      too few launches for any test.

With an equivalence margin m (CheckSettings.margin, MARGIN; issue 36, session 13) a violation needs
the bound beyond the tolerance's boundary widened by m, and a fourth verdict, "no practical
violation", is the mirror test at that widened boundary: shown below it, not below the tolerance.

The correction (rule "directional", issue 36) is one Holm (or BH) over the family's comparisons,
each entering with the test its data point to (stats.adjust_directional): the two tests are
mirror images whose p-values add up to about 1, and the comparisons shown inside the tolerance
leave the step-down before the violations are judged. Rule "separate" corrects each test over
the whole family on its own (before issue 36).

Adaptive rounds look at the data several times. The looks and the launches each adds are fixed
before the first launch (the run's settings), and look k is judged at alpha_k, the increment of
alpha * t_k over the planned share t_k of all launches measured by then (linear alpha spending;
alpha / K each when the plan is unknown). The alpha_k sum to alpha (Bonferroni over looks, the
correction within a look over the whole family), so what a single look guarantees holds for all
looks together, whatever the dependence between looks.
A decision is kept from the look that first reached it.

judge_look() computes the effect, tests and CI of every comparison of one look (effect());
decide() turns them into verdicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from colltune import schema
from colltune.verify import stats
from colltune.verify.comparisons import (Comparison, Side, SideKey, barrier_medians, comparisons, measured_sides,
                                         sides)

GUIDELINE_KINDS = ("pattern", "library", "monotony", "split")
VIOLATION, NO_VIOLATION, UNDECIDED, UNTESTED = "violation", "no violation", "undecided", "untested"
# Shown inside the tolerance widened by the margin (CheckSettings.margin), not inside the tolerance
# itself: whatever the comparison's slowdown beyond the tolerance is, it is smaller than the margin.
NO_PRACTICAL = "no practical violation"
DECIDED = (VIOLATION, NO_VIOLATION, NO_PRACTICAL)
# How the two one-sided tests of every comparison of a family are corrected: "directional", one
# Holm (or BH) over the comparisons, each with the test its data point to; "separate", the rule
# before issue 36, one correction per test (docs/statistics.md, "Three-way verdicts").
Rule = Literal["directional", "separate"]
# The slowdown (shown, and a violation's practical gate, stats.is_violation) of a comparison whose
# launches form two modes on either side of the tolerance: "median", the median launch's ratio
# like every other comparison; "mean", the geometric mean of the launches the test takes, the
# quantity its p-value is about (issue 36: MPI_Scatter vs Scatterv at 8 B, a third of the launches
# at 1.5-1.8x and the rest ~1.0x, is shown beyond the tolerance by its test in most checks, and
# the median launch then falls in whichever mode holds the run's majority).
# "tested" (issue 36, session 14; the default): also the geometric mean the test takes wherever it
# lies beyond the tolerance and the median launch's ratio inside it, two modes found or not
# (straddling_slowdown). In 1-2 of every 10 quiet checks of session 13 MPI_Scatter vs Scatterv at
# 8 B was shown beyond the tolerance by its test (mean ratio 1.15-1.22x) while its median launch lay
# in the fast mode (1.02-1.06x) and launch_modes missed the modes: undecided, a violation in the
# other checks.
TwoModes = Literal["median", "mean", "tested"]


# The weight, in launches, of a family's typical per-launch variance (the median over its
# comparisons at that look) in the variance each paired t-test takes at least
# (stats.variance_floor): 4 launches weigh a third against a quick check's first look of 8, a
# tenth against its last of 38 (issue 36, session 10; docs/statistics.md, "A floor under each
# comparison's variance"; calibrated with benchmarks/verification/futility_calibration.py).
VARIANCE_PRIOR = 4.0

# The equivalence margin (issue 36, session 13; docs/statistics.md, "The equivalence margin"): a
# violation must be shown beyond the tolerance's boundary widened by this share, 1/(1 - tolerance)
# x (1 + margin), and a comparison shown below that widened boundary is decided "no practical
# violation". 0 by default (the rule before it): 40 quick checks replayed from 400 stored quiet
# launches (benchmarks/reproducibility/replicate.py) gave 96.7% mean overlap without a margin and
# 97.4% with 1% (2%, 3%: real violations at 1.15x missed, worst pair 66.7%), but 40 live quiet checks
# judged both ways on the same launches gave 95.8% without and 95.3% with 1% (worst pairs 70-90%
# either way; docs/measurement.md, "Why verdicts split", point 9), and 1% costs power: a planted 10%
# violation found 0.332 instead of 0.503 of the time ("Error rates", session 13). `--margin` sets it.
MARGIN = 0.0


def practical_tolerance(tolerance: float, margin: float) -> float:
    """The tolerance whose boundary 1/(1 - t) is the tolerance's widened by `margin`:
    1/(1 - t) = (1 + margin)/(1 - tolerance). Without a margin the tolerance itself, exactly: 1 - (1 -
    0.05)/1 is 0.050000000000000044 in floating point, which made every comparison's two tests at
    "the widened boundary" again at margin 0 (a third more tests per judgement) and put the
    violation's gate 4e-17 off the tolerance (issue 36, session 14)."""
    if margin <= 0:
        return tolerance
    return 1.0 - (1.0 - tolerance) / (1.0 + margin)


class JudgeSettings(BaseModel):
    """What every judgment of per-launch medians is set by (check; validate, tune/validate.py;
    compare, compare/judge.py): its test (each judgment has its own default), error rate and
    practical tolerance, and the bootstrap of its intervals."""

    model_config = ConfigDict(frozen=True)

    test: stats.Test
    alpha: float = Field(0.05, gt=0.0, lt=1.0)
    tolerance: float = Field(0.05, ge=0.0, lt=1.0)
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    n_resamples: int = Field(2000, ge=100)
    seed: int = 0


class CheckSettings(JudgeSettings):
    """How verdicts are reached. Defaults are the documented ones (docs/statistics.md)."""

    test: stats.Test = stats.Test.SCREENED_T
    correction: stats.Correction = stats.Correction.HOLM
    min_launches: int = Field(3, ge=2, description="launches per side below which no test is made")
    min_reps: int = Field(5, ge=1, description="repetitions a per-launch median needs (at most the run's "
                                               "min_reps); fewer, cut by the time budget: that launch is left out")
    max_split: int = Field(64, ge=2, description="largest split factor k tested (adjacent sizes always)")
    looks: int | None = Field(None, ge=1, description="planned looks (None: 1 + the run's adaptive rounds)")
    rule: Rule = Field("directional", description="how the violation and equivalence tests are corrected")
    exact: bool = Field(False, description="the times are a deterministic simulator's (judge() sets it from the "
                                           "run): each verdict is its ratio's, from any number of launches")
    two_modes: TwoModes = Field("tested", description="the slowdown of a comparison whose launches form two modes "
                                                        "on either side of the tolerance (two_modes_slowdown), and "
                                                        "with 'tested' of one whose test shows the mean beyond it while "
                                                        "the median launch lies inside (straddling_slowdown)")
    margin: float = Field(MARGIN, ge=0.0, lt=1.0,
                          description="equivalence margin: a violation must lie beyond the tolerance's boundary "
                                      "times (1 + margin); shown below it, 'no practical violation' (0: none)")
    variance_prior: float = Field(VARIANCE_PRIOR, ge=0.0,
                                  description="weight, in launches, of the family's typical per-launch variance in "
                                              "the variance a paired t-test takes at least (stats.variance_floor; "
                                              "0: each comparison's own)")

    @property
    def practical(self) -> float:
        """The tolerance a violation must be shown beyond: practical_tolerance(tolerance, margin)."""
        return practical_tolerance(self.tolerance, self.margin)


def round_launches(first: int, round_: int) -> int:
    """Launches per process count of adaptive round `round_` (1, 2, ...): doubled every round.
    What is still open after a round is the comparisons whose per-launch ratios scatter most
    (launches in two modes, 1.0 or 1.7 by launch), the ones more launches decide; and a round's
    launches are short, measuring only their jobs."""
    return first * 2 ** (round_ - 1)


def look_alphas(alpha: float, looks: int, planned_launches: list[int] | None = None) -> list[float]:
    """The alpha of each look: increments of alpha * t_k, t_k the planned launches up to look k
    over all planned (a quick check's 8, 18 and 38 launches: 8/38, 10/38 and 20/38 of alpha), so the
    looks with the most launches, which decide what the earlier ones left open, get the most;
    alpha / looks each without a plan for exactly these looks."""
    if not planned_launches or len(planned_launches) != looks or min(planned_launches) <= 0:
        return [alpha / looks] * looks
    cumulative = np.cumsum(planned_launches, dtype=float)
    spent = alpha * cumulative / cumulative[-1]
    return np.diff(spent, prepend=0.0).tolist()


def decide(verdicts: pd.DataFrame, alpha_look: float, tolerance: float, correction: stats.Correction,
           rule: Rule = "directional", margin: float = 0.0) -> pd.DataFrame:
    """Corrections per family (guidelines; A/A calibration and tuned separately), then verdicts
    at this look's alpha, by `rule` (module docstring). Two boundaries, each corrected on its own
    as before: the tolerance's (p_violation, p_equivalence: "no violation"), and the tolerance's
    widened by `margin` (p_violation_margin: a violation; p_no_practical: "no practical
    violation"). Without a margin the second is the first and the verdicts are those before it."""
    v = verdicts.copy()
    for adjusted in ("p_adjusted", "p_violation_adjusted", "p_equivalence_adjusted",
                     "p_violation_margin_adjusted", "p_no_practical_adjusted"):
        v[adjusted] = np.nan
    pairs = [("p_violation", "p_equivalence")] + ([("p_violation_margin", "p_no_practical")] if margin > 0 else [])
    families = [v["kind"].isin(GUIDELINE_KINDS), v["kind"] == "aa", v["kind"] == "tuned"]
    for mask in families:
        if not mask.any():
            continue
        v.loc[mask, "p_adjusted"] = stats.adjust(v.loc[mask, "p_value"].to_numpy(dtype=float), correction)
        for beyond, inside in pairs:
            p_vio = v.loc[mask, beyond].to_numpy(dtype=float)
            p_equ = v.loc[mask, inside].to_numpy(dtype=float)
            if rule == "separate":
                adj_vio, adj_equ = stats.adjust(p_vio, correction), stats.adjust(p_equ, correction)
            else:
                adj_vio, adj_equ = stats.adjust_directional(p_vio, p_equ, correction)
            v.loc[mask, f"{beyond}_adjusted"] = adj_vio
            v.loc[mask, f"{inside}_adjusted"] = adj_equ
    if margin <= 0:
        v["p_violation_margin_adjusted"] = v["p_violation_adjusted"]
        v["p_no_practical_adjusted"] = v["p_equivalence_adjusted"]
    # `significant`: a difference at all (the plain one-sided test, also what A/A calibrates);
    # a violation needs the difference shown beyond the tolerance and its margin.
    v["significant"] = (v["p_adjusted"] <= alpha_look).fillna(False).astype(bool)
    limit = practical_tolerance(tolerance, margin)
    # a bool array even without rows (a list would make an empty object column, which np.select refuses)
    v["violation"] = np.array([bool(stats.is_violation(pa, rd, alpha_look, limit))
                               for pa, rd in zip(v["p_violation_margin_adjusted"], v["rel_diff"], strict=True)],
                              dtype=bool)
    equivalent = (v["p_equivalence_adjusted"] <= alpha_look).fillna(False).astype(bool)
    practical = (v["p_no_practical_adjusted"] <= alpha_look).fillna(False).astype(bool)
    v["verdict"] = np.select([v["p_value"].isna(), v["violation"], equivalent, practical],
                             [UNTESTED, VIOLATION, NO_VIOLATION, NO_PRACTICAL], UNDECIDED)
    return v


@dataclass(frozen=True)
class Effect:
    """What decides a comparison: its effect size and the three one-sided tests."""

    n: int  # launches used (paired: measured on both sides; unpaired: the smaller side)
    slowdown: float
    rel_diff: float
    test: stats.TestResult
    violation: stats.TestResult
    equivalence: stats.TestResult
    test_used: stats.Test
    x: np.ndarray  # the samples tested: per-launch medians of ref and alt (paired: same launches)
    y: np.ndarray
    exact: bool = False  # a deterministic simulator's ratio (exact_effect), not a test
    note: str = ""  # how the slowdown was taken, where not the median launch's ratio (two_modes_slowdown)
    variance: float = math.nan  # per-launch variance of the log-ratio its paired t-test implies (stats.tested_variance)
    df: int = 0  # and its degrees of freedom
    var_floor: float = 0.0  # the variance its tests took at least (stats.variance_floor)
    # the two tests at the tolerance widened by the margin (CheckSettings.practical); None: no margin,
    # the tests at the tolerance (violation, equivalence) stand for them
    beyond_margin: stats.TestResult | None = None
    inside_margin: stats.TestResult | None = None

    @property
    def practical_violation(self) -> stats.TestResult:
        """The test a violation needs: beyond the tolerance and its margin."""
        return self.violation if self.beyond_margin is None else self.beyond_margin

    @property
    def practical_equivalence(self) -> stats.TestResult:
        """The test "no practical violation" needs: inside the tolerance and its margin."""
        return self.equivalence if self.inside_margin is None else self.inside_margin


# A deterministic simulator (SimGrid SMPI without measured computation, mpi/smpi.py) repeats its
# times in every launch and repetition up to the rounding of its event times: in a 64-rank check
# (3 launches x 10 repetitions, 30 points) the per-launch medians of a point differed by at most
# 1.6e-5, one repetition from its launch's median by at most 0.15% (docs/smpi.md, "Deterministic
# times"). There is nothing to test: a comparison is a violation when its ratio lies beyond the
# tolerance by more than EXACT_JITTER, no violation when inside it by as much, and undecided
# within it, where no number of launches would decide.
EXACT_JITTER = 0.01


def exact_effect(ref: Side, alt: Side, settings: CheckSettings) -> Effect:
    """The effect of one comparison of a deterministic simulator's run: the ratio of the medians
    (paired by launch when the sides share launches), its tests' p-values 0 or 1 by which side of
    each boundary (1, the tolerance) it lies on, EXACT_JITTER from it."""
    common = np.intersect1d(ref.launch_ids, alt.launch_ids)
    if common.size:
        x = ref.launch_medians[np.searchsorted(ref.launch_ids, common)]
        y = alt.launch_medians[np.searchsorted(alt.launch_ids, common)]
        positive = (x > 0) & (y > 0)
        x, y = x[positive], y[positive]
        sd = stats.paired_slowdown(x, y) if x.size else math.nan
        n = int(x.size)
    else:
        x, y = ref.launch_medians, alt.launch_medians
        sd = stats.slowdown(float(np.median(x)), float(np.median(y))) if x.size and y.size else math.nan
        n = int(min(x.size, y.size))
    if not n or not math.isfinite(sd) or sd <= 0:
        nan = stats.TestResult(math.nan, math.nan)
        return Effect(0, math.nan, math.nan, nan, nan, nan, settings.test, x, y, exact=True)
    limit, log_sd = 1.0 / (1.0 - settings.tolerance), math.log(sd)

    def shown(beyond: bool) -> stats.TestResult:
        return stats.TestResult(log_sd, 0.0 if beyond else 1.0)

    margins = {}
    if settings.margin > 0:
        wide = limit * (1.0 + settings.margin)
        margins = {"beyond_margin": shown(sd > wide * (1.0 + EXACT_JITTER)),
                   "inside_margin": shown(sd < wide / (1.0 + EXACT_JITTER))}
    return Effect(n, sd, 1.0 - 1.0 / sd, shown(sd > 1.0 + EXACT_JITTER), shown(sd > limit * (1.0 + EXACT_JITTER)),
                  shown(sd < limit / (1.0 + EXACT_JITTER)), settings.test, x, y, exact=True, **margins)


_FLOORED = (stats.Test.TRIMMED_T, stats.Test.SCREENED_T, stats.Test.PAIRED_T)


def effect(ref: Side, alt: Side, settings: CheckSettings, var_floor: float = 0.0) -> Effect:
    """Tests and slowdown of one comparison. Paired by launch when the test is paired and the
    sides share enough launches; sides that cannot share a launch (Intel MPI's algorithms, one
    per launch) are tested unpaired with the launch as the unit. A deterministic simulator's
    run (`settings.exact`): exact_effect. `var_floor`: a paired t-test's per-launch variance is
    taken as at least this (judge_look's floor from the family's typical variance)."""
    if settings.exact:
        return exact_effect(ref, alt, settings)
    test, tol, wide = settings.test, settings.tolerance, settings.practical
    if test.paired:
        common = np.intersect1d(ref.launch_ids, alt.launch_ids)
        x = ref.launch_medians[np.searchsorted(ref.launch_ids, common)]
        y = alt.launch_medians[np.searchsorted(alt.launch_ids, common)]
        # A zero median (below the timer's resolution) has no log-ratio: that launch is dropped.
        positive = (x > 0) & (y > 0)
        x, y = x[positive], y[positive]
        if x.size >= settings.min_launches or min(ref.launch_ids.size, alt.launch_ids.size) < \
                settings.min_launches:
            if x.size == 0:
                nan = stats.TestResult(math.nan, math.nan)
                return Effect(0, math.nan, math.nan, nan, nan, nan, test, x, y)
            sd, how = stats.paired_slowdown(x, y), ""
            mean = two_modes_slowdown(x, y, wide, test) if settings.two_modes in ("mean", "tested") else None
            if mean is not None:
                modes = stats.launch_modes(np.log(x) - np.log(y))
                assert modes is not None
                sd, how = mean, (f"launches in two modes, {modes.low} of {x.size} at {modes.low_ratio:.2f}x and "
                                 f"{modes.high} at {modes.high_ratio:.2f}x: the slowdown is their geometric mean, "
                                 f"the median launch's ratio {stats.paired_slowdown(x, y):.2f}x")
            elif settings.two_modes == "tested":
                mean = straddling_slowdown(x, y, wide, test)
                if mean is not None:
                    sd, how = mean, (f"the geometric mean of the launches its test takes, {mean:.2f}x, lies beyond the "
                                     f"tolerance, the median launch's ratio {stats.paired_slowdown(x, y):.2f}x inside "
                                     "it: the slowdown is that mean, the quantity the test is about")
            var, df = (stats.tested_variance(np.log(x) - np.log(y), test) if test in _FLOORED and x.size >= 2
                       else (math.nan, 0))
            margins = {"beyond_margin": stats.beyond_tolerance_test(x, y, wide, test, var_floor),
                       "inside_margin": stats.equivalence_test(x, y, wide, test, var_floor)} if wide > tol else {}
            return Effect(int(x.size), sd, 1.0 - 1.0 / sd, stats.one_sided_test(x, y, test, var_floor),
                          stats.beyond_tolerance_test(x, y, tol, test, var_floor),
                          stats.equivalence_test(x, y, tol, test, var_floor),
                          test, x, y, note=how, variance=var, df=df, var_floor=var_floor, **margins)
        test = test.unpaired
    x, y = ref.launch_medians, alt.launch_medians
    if test is stats.Test.WELCH_LOG:
        x, y = x[x > 0], y[y > 0]
    rm, am = float(np.median(x)), float(np.median(y))
    margins = {"beyond_margin": stats.beyond_tolerance_test(x, y, wide, test),
               "inside_margin": stats.equivalence_test(x, y, wide, test)} if wide > tol else {}
    return Effect(int(min(x.size, y.size)), stats.slowdown(rm, am), stats.relative_difference(rm, am),
                  stats.one_sided_test(x, y, test), stats.beyond_tolerance_test(x, y, tol, test),
                  stats.equivalence_test(x, y, tol, test), test, x, y, **margins)


def straddling_slowdown(x: np.ndarray, y: np.ndarray, tolerance: float, test: stats.Test) -> float | None:
    """The slowdown the paired `test` takes, exp(mean of its tested log-ratios), where it lies beyond
    the tolerance's boundary and the median launch's ratio (stats.paired_slowdown) does not; else
    None. A violation needs its test beyond the boundary and its slowdown beyond it
    (stats.is_violation): with the median launch's ratio as the slowdown, launches skewed to the
    slow side were decided by which side held the run's majority, not by the test. (The other way
    round, the mean inside, no test can show a violation: the median launch's ratio stays.)"""
    d = np.log(x) - np.log(y)
    mean = float(np.exp(np.mean(stats.tested_launches(d, test)[0])))
    limit = 1.0 / (1.0 - tolerance)
    return mean if mean > limit >= stats.paired_slowdown(x, y) else None


def two_modes_slowdown(x: np.ndarray, y: np.ndarray, tolerance: float, test: stats.Test) -> float | None:
    """The slowdown over launches that the paired `test` takes, exp(mean tested log-ratio), when
    the per-launch ratios x/y form two modes on either side of the tolerance (stats.launch_modes);
    else None (the median launch's ratio stands)."""
    d = np.log(x) - np.log(y)
    modes = stats.launch_modes(d)
    if modes is None or not modes.low_ratio <= 1.0 / (1.0 - tolerance) < modes.high_ratio:
        return None
    return float(np.exp(np.mean(stats.tested_launches(d, test)[0])))


def details(c: Comparison, e: Effect, settings: CheckSettings) -> dict[str, float]:
    """The bootstrap CI and the pooled raw view of a comparison: shown, never deciding, so
    computed only for the rows a check reports (not at every look)."""
    if settings.exact:  # a deterministic simulator's ratio: an interval without width
        return {"ci_low": e.rel_diff, "ci_high": e.rel_diff, "raw_p_value": math.nan}
    if e.n < settings.min_launches:
        return {"ci_low": math.nan, "ci_high": math.nan, "raw_p_value": math.nan}
    if e.test_used.paired:
        ci = stats.paired_relative_difference_ci(e.x, e.y, settings.confidence, settings.n_resamples, settings.seed)
    else:
        ci = stats.relative_difference_ci(e.x, e.y, settings.confidence, settings.n_resamples, settings.seed)
    # The pooled view ignores launches on purpose: it is the naive analysis, shown for contrast.
    raw_p = stats.one_sided_test(c.ref.raw, c.alt.raw, stats.Test.MWU).p_value
    return {"ci_low": ci.low, "ci_high": ci.high, "raw_p_value": raw_p}


# A comparison the check's planned launches could not decide gets no more launches: its verdict
# stays undecided, and the rounds' time goes to the comparisons they can still decide (futility
# stopping; it never decides anything, so no error rate changes). Only once half of the plan is
# measured, and only what would need more than FUTILITY_FACTOR x the whole plan even if its distance
# to the tolerance were FUTILITY_Z standard errors larger than its launches show (a ratio on the
# tolerance: thousands). Judged on the estimate alone (until session 5 of issue 36), the rule stopped
# comparisons whose first 16 launches happened to lie low: MPI_Reduce_scatter vs Reduce + Scatterv
# at 1 KiB (1.13x over 320 quiet launches) looked like 130-186 launches in 2 of 10 quiet checks and
# stayed undecided there, a violation in the other 8 (benchmarks/reproducibility/README.md).
# A quick check's plan of 8 + 10 + 20 launches (issue 36, session 8) has 18 of its 38 at the look
# before the last, less than half: there the rule stops nothing, and the rounds measure every open
# comparison to the end (benchmarks/verification/futility_calibration.py --plan 8,10,20: none stopped).
FUTILITY_FACTOR = 4
FUTILITY_Z = 1.0


def futile(e: Effect, needed_p: float, planned: int | None) -> bool:
    """Whether the adaptive rounds should stop measuring an open comparison (FUTILITY_FACTOR, FUTILITY_Z)."""
    return bool(planned) and 2 * e.n >= (planned or 0) and \
        launches_to_decide(e, needed_p, FUTILITY_Z) > FUTILITY_FACTOR * (planned or 0)


def launches_to_decide(e: Effect, needed_p: float, optimism: float = 0.0) -> float:
    """About how many launches would decide a comparison at the scatter its launches show: t grows
    with the square root of the launches, so n x (t needed / t reached)^2; inf when its ratio lies
    on the tolerance, NaN when the test is not a t-test (no such extrapolation). `optimism`: as if
    its distance to the tolerance were that many standard errors larger (t reached + optimism)."""
    if e.test_used not in (stats.Test.TRIMMED_T, stats.Test.SCREENED_T, stats.Test.PAIRED_T, stats.Test.WELCH_LOG) \
            or e.n < 2:
        return math.nan
    t_now, t_needed = _pointed_t(e, needed_p)
    t_now += optimism
    if not math.isfinite(t_needed):
        return math.nan
    return math.ceil(e.n * (t_needed / t_now) ** 2) if t_now > 0.1 else math.inf


def _pointed(e: Effect) -> stats.TestResult:
    """The test pointing to the side of the boundary the data lie on (the one decide() corrects),
    at the boundary a violation needs (the tolerance with its margin): an open comparison is
    decided there, a violation or "no practical violation", before it could be shown inside the
    tolerance itself."""
    beyond, inside = e.practical_violation, e.practical_equivalence
    return beyond if beyond.p_value < inside.p_value else inside


def _pointed_t(e: Effect, needed_p: float) -> tuple[float, float]:
    """|t| reached by the pointed test and the t it needed for `needed_p`, at the test's own df."""
    if e.test_used.paired:
        df = max(stats.tested_launches(np.log(e.x) - np.log(e.y), e.test_used)[1], 1)
    else:
        df = max(e.n - 1, 1)
    t_needed = stats.t_quantile(df, 1.0 - needed_p) if 0 < needed_p < 1 else math.nan
    return abs(_pointed(e).statistic), t_needed


def undecided_reason(kind: str, e: Effect, tolerance: float, needed_p: float, planned: int | None = None,
                     margin: float = 0.0) -> str:
    """Why a comparison stayed undecided, from what its launches show: two modes of launches on
    either side of the tolerance; where the estimate lies and how far its test is from the
    (corrected) level `needed_p` it had to reach; about how many launches would reach it at this
    scatter, and whether that is beyond the `planned` launches (then the adaptive rounds stopped
    measuring it); for monotony and split, that the sides are separate jobs. With a `margin`, the
    boundary is the tolerance's widened by it (what a violation needs)."""
    limit = 1.0 / (1.0 - practical_tolerance(tolerance, margin))
    boundary = "the tolerance" if margin <= 0 else f"the tolerance with its {margin:.0%} margin"
    if e.exact and e.n:  # both tests 1: the ratio lies on the tolerance
        return (f"undecided: the exact ratio {e.slowdown:.4f}x of a deterministic simulator lies within "
                f"{EXACT_JITTER:.0%} (its repeatability) of {boundary} ({limit:.4f}x): no number of launches "
                "decides it")
    if e.n < 2:
        return "undecided: too few launches"
    parts = []
    if e.test_used.paired:
        d = np.log(e.x) - np.log(e.y)
        center = float(np.mean(stats.tested_launches(d, e.test_used)[0]))
        modes = stats.launch_modes(d)
        if modes is not None and modes.low_ratio <= limit < modes.high_ratio:
            parts.append(f"launches in two modes, {modes.low} of {e.n} at {modes.low_ratio:.2f}x and {modes.high} at "
                         f"{modes.high_ratio:.2f}x, on either side of {boundary} ({limit:.2f}x): the estimate "
                         "follows the run's mix of launches")
        parts.append(f"per-launch ratios scatter by {float(d.std(ddof=1)):.2f} in log between launches")
        if e.var_floor > e.variance:
            parts.append(f"its test took {math.sqrt(e.var_floor):.2f} (the variance floor: its launches' "
                         f"{math.sqrt(e.variance):.2f} weighed with the comparisons' typical scatter at that look)")
    else:
        center = float(np.mean(np.log(e.x)) - np.mean(np.log(e.y)))
    pointed = _pointed(e)
    beyond = pointed is e.practical_violation
    shown = f"{limit:.2f}x" if margin <= 0 else f"{limit:.3f}x"
    where = f"mean ratio {math.exp(center):.2f}x, {'beyond' if beyond else 'inside'} {boundary} ({shown})"
    needed = launches_to_decide(e, needed_p)
    if beyond and pointed.p_value <= needed_p and not e.slowdown > limit:
        # stats.is_violation's second condition: the test takes the mean log-ratio, the slowdown
        # shown is the median launch's, and launches in two modes can put them on either side
        parts.append(f"{where}, shown by its test (p {pointed.p_value:.2g} <= {needed_p:.2g} after correction), but "
                     f"the median launch's ratio, the slowdown shown, is {e.slowdown:.2f}x, inside it: a violation "
                     "needs both")
    elif math.isnan(needed):
        parts.append(f"{where} (p {pointed.p_value:.2g} > {needed_p:.2g} after correction)")
    else:
        t_now, t_needed = _pointed_t(e, needed_p)
        parts.append(f"{where} by t = {t_now:.1f} where {t_needed:.1f} was needed (p {pointed.p_value:.2g} > "
                     f"{needed_p:.2g} after correction)")
        if needed > 10_000:
            parts.append(f"it lies on {boundary}: no number of launches within reach decides it")
        else:
            parts.append(f"about {int(needed)} launches would decide it at this scatter")
        if futile(e, needed_p, planned):
            parts.append(f"more than {FUTILITY_FACTOR} x the {planned} launches the check plans even {FUTILITY_Z:g} "
                         f"standard error further from {boundary}: the adaptive rounds do not measure such a "
                         "comparison again")
    if kind in ("monotony", "split"):
        parts.append("the two sizes are separate jobs of a launch, not interleaved, so their ratio carries "
                     "the drift within the launch")
    return "undecided: " + "; ".join(parts)


EffectCache = dict[tuple[object, ...], Effect]

# Filled by decide() and judge(); every other verdict column comes from judge_look's rows.
COMPUTED = ("p_adjusted", "significant", "violation", "correction", "alpha", "tolerance", "judged_at",
            "verdict", "p_equivalence_adjusted", "p_violation_adjusted", "look", "looks",
            "p_violation_margin_adjusted", "p_no_practical_adjusted")


def _cached_effect(c: Comparison, settings: CheckSettings, cache: EffectCache, var_floor: float = 0.0) -> Effect:
    # A comparison whose sides have the same launches as at an earlier look has the same data:
    # the looks of one judgement recompute only what the adaptive rounds measured again.
    key = (c.kind, c.guideline, c.nprocs, c.collective, c.variant, c.msg_bytes, c.ref_bytes, c.k,
           c.ref.launch_ids.tobytes(), c.alt.launch_ids.tobytes(), var_floor)
    if key not in cache:
        cache[key] = effect(c.ref, c.alt, settings, var_floor)
    return cache[key]


def _family(kind: str) -> str:
    return "guideline" if kind in GUIDELINE_KINDS else kind


def floored(effects: list[tuple[Comparison, Effect]], settings: CheckSettings, cache: EffectCache,
            launch_rounds: dict[int, int] | None = None) -> list[tuple[Comparison, Effect]]:
    """The effects with the variance of each paired t-test whose launches all ran in one look (one
    stretch of time: the first launches, or one adaptive round; `launch_rounds`: launch index ->
    round, absent 0) taken as at least stats.variance_floor of its own and its family's typical one
    at this look (the median over the family's comparisons tested paired with enough launches),
    with the weight settings.variance_prior. A comparison measured in two looks or more has the
    variation between them in its own variance."""
    if settings.variance_prior <= 0 or settings.exact:
        return effects
    rounds = launch_rounds or {}

    def one_stretch(c: Comparison) -> bool:
        ids = np.intersect1d(c.ref.launch_ids, c.alt.launch_ids)
        return len({rounds.get(int(i), 0) for i in ids}) <= 1

    variances: dict[str, list[float]] = {}
    for c, e in effects:
        if e.test_used in _FLOORED and e.n >= settings.min_launches and math.isfinite(e.variance):
            variances.setdefault(_family(c.kind), []).append(e.variance)
    typical = {family: float(np.median(v)) for family, v in variances.items()}
    out = []
    for c, e in effects:
        family_var = typical.get(_family(c.kind), math.nan)
        floor = stats.variance_floor(e.variance, e.df, family_var, settings.variance_prior) \
            if e.test_used in _FLOORED and e.n >= settings.min_launches else 0.0
        out.append((c, _cached_effect(c, settings, cache, floor) if floor > e.variance and one_stretch(c) else e))
    return out


def judge_look(run_id: str, variants: pd.DataFrame, complete: bool, measurements: pd.DataFrame,
               settings: CheckSettings, alpha_look: float, messages: list[str],
               cache: EffectCache | None = None, round_launches: frozenset[int] = frozenset(),
               by_side: dict[SideKey, Side] | None = None,
               launch_rounds: dict[int, int] | None = None) -> tuple[pd.DataFrame, list[tuple[Comparison, Effect]]]:
    """Verdicts of every comparison on these measurements (one look), judged at `alpha_look`,
    and each row's comparison and effect (for `details`). CI and raw view are left NaN.
    `by_side`: the sides of `measurements` when the caller has them (comparisons.sides_within);
    `launch_rounds`: the adaptive round of each launch (absent: 0), for the variance floor (floored)."""
    by_side = sides(measurements) if by_side is None else by_side
    comps = comparisons(variants, by_side, settings.max_split, messages)
    barrier = barrier_medians(by_side)
    if not barrier:
        messages.append("no barrier measured in this run: barrier warnings cannot be given and the cautious "
                        "count equals the brave count")
    cache = {} if cache is None else cache
    effects = floored([(c, _cached_effect(c, settings, cache)) for c in comps], settings, cache, launch_rounds)
    rows = [_row(run_id, complete, c, e, settings, barrier.get(c.nprocs, math.nan), round_launches)
            for c, e in effects]
    verdicts = pd.DataFrame(rows, columns=[c for c in schema.VERDICT_COLUMNS if c not in COMPUTED])
    return decide(verdicts, alpha_look, settings.tolerance, settings.correction, settings.rule,
                  settings.margin), effects


def _row(run_id: str, complete: bool, c: Comparison, e: Effect, settings: CheckSettings,
         barrier_s: float, round_launches: frozenset[int] = frozenset()) -> dict[str, object]:
    n_ref, n_alt = c.ref.launch_medians.size, c.alt.launch_medians.size
    ref_med = stats.median(c.ref.launch_medians)
    alt_med = stats.median(c.alt.launch_medians)
    testable = e.n >= (1 if settings.exact else settings.min_launches)
    note = c.note
    if settings.exact and testable:
        note = "; ".join(x for x in (note, f"the exact ratio of a deterministic simulator ({e.n} launch"
                                     f"{'es' if e.n != 1 else ''}): no test") if x)
    elif not testable:
        note = (f"too few launches ({e.n} < {settings.min_launches})"
                + (" measured on both sides" if e.test_used.paired else "") + ": not tested")
    elif e.test_used != settings.test:
        note = f"sides measured in separate launches: tested unpaired ({e.test_used}), {n_ref} and {n_alt} launches"
    # Paired on fewer launches than were measured: some launches lack the other side. Not so in
    # the adaptive rounds' launches, which measure only the open comparisons' jobs: the default
    # there serves other comparisons (e.g. a job opened by a mock-up comparison: the monotony
    # comparison with the default at another size, whose job stayed closed, gets one side only).
    one_side = np.setxor1d(c.ref.launch_ids, c.alt.launch_ids)
    expected = (np.intersect1d(c.ref.launch_ids, c.alt.launch_ids).size
                + sum(1 for i in one_side if int(i) not in round_launches))
    partial = (not testable) or (e.test_used.paired and e.n < expected)
    if partial and testable:
        note = f"measured in {e.n} of {expected} launches"
    if e.note:
        note = f"{note}; {e.note}" if note else e.note
    nan = math.nan
    return {
        "run_id": run_id, "nprocs": c.nprocs, "collective": c.collective, "variant": c.variant,
        "kind": c.kind, "guideline": c.guideline, "msg_bytes": c.msg_bytes, "ref_bytes": c.ref_bytes,
        "k": c.k, "lhs": c.lhs, "rhs": c.rhs, "default_median_s": ref_med, "variant_median_s": alt_med,
        "slowdown": e.slowdown, "rel_diff": e.rel_diff,
        "ci_low": nan, "ci_high": nan,  # details()
        "statistic": e.test.statistic if testable else nan, "p_value": e.test.p_value if testable else nan,
        "p_violation": e.violation.p_value if testable else nan,
        "p_equivalence": e.equivalence.p_value if testable else nan,
        "p_violation_margin": e.practical_violation.p_value if testable else nan,
        "p_no_practical": e.practical_equivalence.p_value if testable else nan,
        "margin": settings.margin,
        "barrier_warning": stats.barrier_warning(ref_med, ref_med / e.slowdown if e.slowdown > 0 else alt_med,
                                                 barrier_s),
        "barrier_median_s": barrier_s,
        "n_launches": int(e.n), "n_launches_default": int(n_ref), "n_launches_variant": int(n_alt),
        "raw_default_median_s": stats.median(c.ref.raw), "raw_variant_median_s": stats.median(c.alt.raw),
        "raw_p_value": nan, "partial": bool(partial or not complete),
        "note": note, "test": str(e.test_used),
    }


@dataclass(frozen=True)
class Coverage:
    """How much of a check was decided: what the headline, score and exit code must say."""

    comparisons: int
    violations: int
    no_violations: int
    undecided: int
    untested: int
    untested_hint: str  # "too few launches; rerun with -R 8"
    undecided_hint: str
    no_practical: int = 0  # "no practical violation": inside the tolerance with its margin

    @property
    def complete(self) -> bool:
        return self.untested == 0 and self.undecided == 0

    def notes(self) -> list[str]:
        out = []
        if self.untested:
            out.append(f"{self.untested} of {self.comparisons} comparisons untested: {self.untested_hint}")
        if self.undecided:
            out.append(f"{self.undecided} of {self.comparisons} comparisons undecided: {self.undecided_hint}")
        return out

    def headline(self) -> str:
        counts = (f"{self.violations} violation{'s' if self.violations != 1 else ''}, "
                  f"{self.no_violations} no violation (equivalence shown)")
        if self.no_practical:
            counts += f", {self.no_practical} no practical violation (within the tolerance's margin)"
        return "; ".join([counts, *self.notes()])

    @property
    def exit_code(self) -> int:
        """1 violations found; 3 none found but not everything decided; 0 all decided, none."""
        if self.violations:
            return 1
        return 0 if self.complete else 3


def coverage(verdicts: pd.DataFrame, launches: int | None, min_launches: int) -> Coverage:
    v = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS)]
    state = v["verdict"] if "verdict" in v.columns else pd.Series([UNDECIDED] * len(v), index=v.index)
    untested = v[state == UNTESTED]
    hint = "too few launches"
    if len(untested):
        missing = int((min_launches - untested["n_launches"].clip(lower=0)).max())
        base = launches if launches else 0
        hint += f"; rerun with -R {max(base + missing, min_launches)}"
    more = f"-R {2 * launches}" if launches else "more launches (-R)"
    return Coverage(
        comparisons=int(len(v)), violations=int((state == VIOLATION).sum()),
        no_violations=int((state == NO_VIOLATION).sum()), undecided=int((state == UNDECIDED).sum()),
        untested=int(len(untested)), untested_hint=hint, no_practical=int((state == NO_PRACTICAL).sum()),
        undecided_hint=(f"neither a violation nor equivalence within the tolerance could be shown; measure "
                        f"{more} or give the adaptive rounds more time (--round-budget)"))


def selection(verdicts: pd.DataFrame, measured: pd.DataFrame,
              futile: pd.Series | None = None) -> dict[int, frozenset[tuple[str, int, str]]]:
    """Per process count, the (collective, size, variant) an adaptive round measures: the whole
    job (every variant `measured` interleaved with the default at that process count, collective
    and size) of each side of each comparison still open (undecided, or untested for want of
    launches): for a mock-up or library comparison its collective's job at that size, for
    monotony and split the jobs at both sizes, between two collectives or two forms the jobs its
    sides were measured in (comparisons.measured_sides). A variant measured in launches of its own
    (Intel MPI's algorithms) is measured again only for its own comparison. Rows marked `futile`
    (aligned with `verdicts`: more launches than the plan could give would decide them,
    FUTILITY_FACTOR) open no job.

    Whole jobs, not just the two variants compared: the variants interleaved with a call change
    its time (caches, the library's state), so a comparison must be measured in the same company
    in every launch. MPI_Allgather vs the Alltoall mock-up at 1 KiB, 4 ranks: 1.18-1.22x
    interleaved with each other alone, 1.10-1.11x among the job's six variants (three pairs of
    16-24 launches); rounds of pairs made its verdict follow each run's share of round launches
    (docs/measurement.md, "Why verdicts split between runs")."""
    keep = verdicts["kind"].isin(GUIDELINE_KINDS) & verdicts["verdict"].isin((UNDECIDED, UNTESTED))
    if futile is not None:
        keep &= ~futile.reindex(verdicts.index, fill_value=False).astype(bool)
    compared: set[tuple[int, str, int, str]] = set()  # (nprocs, collective, size, variant) of each side
    for r in verdicts[keep].itertuples(index=False):
        n, coll, size = int(r.nprocs), str(r.collective), int(r.msg_bytes)
        both = measured_sides(coll, str(r.variant), str(getattr(r, "guideline", "")), size)
        if both:  # two collectives, or two forms of one: each side as it was measured
            compared.update((n, *side) for side in both)
        elif r.kind in ("pattern", "library"):
            compared.update({(n, coll, size, "default"), (n, coll, size, str(r.variant))})
        else:  # monotony and split: the default at both sizes
            compared.update({(n, coll, size, "default"), (n, coll, int(r.ref_bytes), "default")})
    wanted = {side[:3] for side in compared}
    launches = measured.groupby(["nprocs", "collective", "msg_bytes", "variant"], observed=True)["launch_idx"].unique()
    out: dict[int, set[tuple[str, int, str]]] = {}
    for (n, coll, size, variant), ids in launches.items():
        job = (int(n), str(coll), int(size))
        if job not in wanted:
            continue
        default = launches.get((n, coll, size, "default"))
        company = default is not None and np.intersect1d(ids, default).size > 0
        if company or (*job, str(variant)) in compared:
            out.setdefault(job[0], set()).add((job[1], job[2], str(variant)))
    return {n: frozenset(s) for n, s in out.items()}
