"""Judging a comparison: per point and pair of configurations, which is faster (compare.stats);
per configuration, its guideline verdicts (verify.check) on the common points; the A/A
calibration of the unpaired method; and the fastest choice at every point.

A *point* is (process count, collective, message size). Each configuration is represented there
by its side (data.Member.side: `default`, the library's blocking call, unless `--side` names
another form of the call or one of the library's algorithms). Only points whose side was measured
by every configuration are compared; the others are listed as left out.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from colltune.catalog import AA, DEFAULT
from colltune.compare import stats as cstats
from colltune.compare.data import Member
from colltune.verify import check
from colltune.verify import stats as vstats
from colltune.verify.decide import JudgeSettings

POINT = ["nprocs", "collective", "msg_bytes"]
VERDICT_COLUMNS = [*POINT, "a", "b", "n_a", "n_b", "median_a_s", "median_b_s", "ratio", "ci_low", "ci_high",
                   "statistic", "p_value", "p_adjusted", "verdict", "faster", "note"]
Samples = dict[tuple[int, str, int], np.ndarray]
# A launch whose median is this many times the median of its configuration's launches ran in a
# different regime (ranks descheduled, sharing a core): named in the note, as the usual reason
# for an undecided verdict on a shared node (benchmarks/compare/README.md).
SLOW_LAUNCH = 2.0


class CompareSettings(JudgeSettings):
    """How verdicts between configurations are reached (docs/compare.md)."""

    test: vstats.Test = vstats.Test.MWU
    min_launches: int = Field(3, ge=2, description="launches per side below which a point is not tested")

    @field_validator("test")
    @classmethod
    def _two_sided(cls, value: vstats.Test) -> vstats.Test:
        if value not in cstats.TESTS:
            raise ValueError(f"a comparison tests with {', '.join(cstats.TESTS)}, not {value}")
        return value


@dataclass
class Comparison:
    members: list[Member]
    settings: CompareSettings
    verdicts: pd.DataFrame  # VERDICT_COLUMNS, one row per pair of configurations and point
    calibration: pd.DataFrame  # the same columns, a = default, b = default#aa of one configuration
    checks: dict[str, check.CheckResult]  # label -> its guideline verdicts (all points)
    common: pd.DataFrame  # POINT rows compared
    left_out: pd.DataFrame  # POINT + measured_by + missing_from
    messages: list[str]

    @property
    def labels(self) -> list[str]:
        return [m.label for m in self.members]

    def guideline_verdicts(self, label: str) -> pd.DataFrame:
        """A configuration's guideline verdicts at the compared points only, so that counts and
        quality scores of different configurations cover the same ground."""
        v = self.checks[label].verdicts
        keys = pd.MultiIndex.from_frame(v[POINT].astype({"nprocs": int, "msg_bytes": int}))
        common = pd.MultiIndex.from_frame(self.common[POINT])
        return v[keys.isin(common)].reset_index(drop=True)


def default_samples(member: Member, variant: str = DEFAULT) -> dict[tuple[int, str, int], tuple[np.ndarray, np.ndarray]]:
    """Per point: (launch ids, per-launch medians) of one variant."""
    m = member.run.measurements
    m = m[(m["variant"] == variant) & (m["collective"] != check.BARRIER)]
    out = {}
    for (p, coll, n), grp in m.groupby(POINT, sort=True):
        out[(int(p), str(coll), int(n))] = vstats.per_launch_medians(grp["launch_idx"].to_numpy(),
                                                                      grp["runtime_s"].to_numpy())
    return out


def _points(members: Sequence[Member]) -> tuple[list[tuple[int, str, int]], pd.DataFrame, list[Samples]]:
    samples = [{k: v[1] for k, v in default_samples(m, m.side).items()} for m in members]
    every = sorted(set().union(*samples))
    common = [k for k in every if all(k in s for s in samples)]
    rows = []
    for k in every:
        if k in common:
            continue
        have = [m.label for m, s in zip(members, samples, strict=True) if k in s]
        rows.append({"nprocs": k[0], "collective": k[1], "msg_bytes": k[2], "measured_by": ", ".join(have),
                     "missing_from": ", ".join(m.label for m in members if m.label not in have)})
    return common, pd.DataFrame(rows, columns=[*POINT, "measured_by", "missing_from"]), samples


def _row(point: tuple[int, str, int], a: str, b: str, x: np.ndarray, y: np.ndarray,
         settings: CompareSettings) -> dict[str, object]:
    r = cstats.compare_point(x, y, settings.test, settings.confidence, settings.n_resamples, settings.seed)
    testable = min(r.n_a, r.n_b) >= settings.min_launches
    slow = [f"{label}: {n} of {len(s)} launches over {SLOW_LAUNCH:g}x its median"
            for label, s in ((a, x), (b, y)) if (n := cstats.slow_launches(s, SLOW_LAUNCH))]
    return {"nprocs": point[0], "collective": point[1], "msg_bytes": point[2], "a": a, "b": b,
            "n_a": r.n_a, "n_b": r.n_b, "median_a_s": float(np.median(x)), "median_b_s": float(np.median(y)),
            "ratio": r.ratio, "ci_low": r.ci.low if testable else math.nan, "ci_high": r.ci.high if testable else math.nan,
            "statistic": r.test.statistic if testable else math.nan, "p_value": r.test.p_value if testable else math.nan,
            "note": "; ".join(([] if testable else [f"too few launches ({min(r.n_a, r.n_b)} < "
                                                    f"{settings.min_launches}): not tested"]) + slow)}


def _decide(rows: list[dict[str, object]], settings: CompareSettings) -> pd.DataFrame:
    """Holm over the family, then the verdict of each row."""
    v = pd.DataFrame(rows, columns=[c for c in VERDICT_COLUMNS if c not in ("p_adjusted", "verdict", "faster")])
    v["p_adjusted"] = vstats.holm(v["p_value"].to_numpy(dtype=float)) if len(v) else []
    verdicts = [cstats.decide(vstats.Interval(r.ci_low, r.ci_high), r.p_adjusted, settings.alpha,
                              settings.tolerance) for r in v.itertuples(index=False)]
    v["verdict"] = [str(x) for x in verdicts]
    v["faster"] = [r.a if x is cstats.Verdict.A_FASTER else r.b if x is cstats.Verdict.B_FASTER else ""
                   for r, x in zip(v.itertuples(index=False), verdicts, strict=True)]
    return v[VERDICT_COLUMNS]


def calibration_rows(member: Member, settings: CompareSettings) -> list[dict[str, object]]:
    """A/A across launches: the default in every other launch against its identical copy
    (default#aa) in the launches between, judged exactly like two configurations. Disjoint
    launches make the two sides as independent as two libraries' launches are."""
    base, copy = default_samples(member), default_samples(member, AA)
    rows = []
    for point in sorted(set(base) & set(copy)):
        ids = np.union1d(base[point][0], copy[point][0])
        even, odd = ids[0::2], ids[1::2]
        x = base[point][1][np.isin(base[point][0], even)]
        y = copy[point][1][np.isin(copy[point][0], odd)]
        if x.size and y.size:
            rows.append(_row(point, member.label, f"{member.label} (A/A copy)", x, y, settings))
    return rows


def compare(members: Sequence[Member], settings: CompareSettings | None = None,
            check_settings: check.CheckSettings | None = None) -> Comparison:
    """Every verdict of a comparison of two or more configurations."""
    settings = settings or CompareSettings()
    members = list(members)
    common, left_out, samples = _points(members)
    messages: list[str] = [f"{m.label}: {p}" for m in members for p in m.run.problems]
    messages += [f"{m.label} is judged by {m.side} at every point (--side)" for m in members if m.side != DEFAULT]
    if len(left_out):
        messages.append(f"{len(left_out)} point(s) were not measured by every configuration and are left out "
                        f"(see the left-out table); {len(common)} are compared")
    if not common:
        messages.append("the configurations share no measured point: nothing to compare")
    rows = [_row(k, a.label, b.label, sa[k], sb[k], settings)
            for (a, sa), (b, sb) in itertools.combinations(zip(members, samples, strict=True), 2) for k in common]
    verdicts = _decide(rows, settings)
    calibration = _decide([r for m in members for r in calibration_rows(m, settings)], settings)
    _power_message(verdicts, settings, messages)
    checks = {m.label: check.judge(m.run, check_settings) for m in members}
    return Comparison(members, settings, verdicts, calibration, checks,
                      pd.DataFrame(common, columns=POINT), left_out, messages)


def _power_message(verdicts: pd.DataFrame, settings: CompareSettings, messages: list[str]) -> None:
    tested = verdicts[verdicts["p_value"].notna()]
    if tested.empty:
        return
    n = int(min(tested["n_a"].min(), tested["n_b"].min()))
    best = vstats.min_attainable_p(n, n, settings.test, two_sided=True)
    if best > settings.alpha / len(tested):
        messages.append(f"with {n} launches per configuration the exact test's smallest p-value is {best:.2g}, above "
                        f"the {settings.alpha / len(tested):.2g} Holm needs for the first of {len(tested)} points: no "
                        "point can be called faster; measure more launches (-R) or use --test welch-log")
