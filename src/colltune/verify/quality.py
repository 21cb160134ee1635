"""A quality score for an MPI installation, from the verdicts of one check.

Defined in docs/statistics.md: a *point* is (process count, collective, message size). Each point
gets the penalty of its worst violation (the largest slowdown of any guideline violated there),
graded by pgchecker's severity classes; the score is 100 * (1 - mean penalty) over all points
that had at least one decided comparison (violation or equivalence shown). 100 = no violation
anywhere; 0 = every point severely (>5x) violated. The cautious score ignores violations with a
barrier warning. A score never hides what was not decided: with untested or undecided
comparisons it is marked incomplete and says how many, and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from colltune.verify import stats
from colltune.verify.check import GUIDELINE_KINDS
from colltune.verify.decide import DECIDED, UNDECIDED, UNTESTED, Coverage

POINT = ["nprocs", "collective", "msg_bytes"]


@dataclass(frozen=True)
class QualityScore:
    score: float  # 0..100, NaN when nothing was tested
    points: int  # points with at least one tested comparison
    violated_points: int
    by_class: dict[str, int] = field(default_factory=dict)  # severity label -> number of points
    comparisons: int = 0
    untested: int = 0
    undecided: int = 0

    @property
    def complete(self) -> bool:
        return self.untested == 0 and self.undecided == 0

    def describe(self, coverage: Coverage | None = None) -> str:
        gaps = "; ".join(coverage.notes()) if coverage is not None else "; ".join(
            f"{n} of {self.comparisons} comparisons {what}"
            for n, what in ((self.untested, "untested"), (self.undecided, "undecided")) if n)
        if self.points == 0:
            return "no quality score: no comparison was decided" + (f" ({gaps})" if gaps else "")
        text = (f"{self.score:.1f}/100 ({self.violated_points} of {self.points} (collective, size) points "
                f"violate a guideline)")
        return f"{text}, INCOMPLETE: {gaps}" if gaps else text


def point_penalties(verdicts: pd.DataFrame, cautious: bool) -> pd.DataFrame:
    """One row per tested point: worst violating slowdown, severity label and penalty."""
    v = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS) & _decided(verdicts)].copy()
    if v.empty:
        return pd.DataFrame(columns=[*POINT, "worst_slowdown", "severity", "penalty"])
    counted = v["violation"].astype(bool)
    if cautious:
        counted &= ~v["barrier_warning"].astype(bool)
    v["counted_slowdown"] = v["slowdown"].where(counted)
    worst = v.groupby(POINT, sort=True)["counted_slowdown"].max().reset_index(name="worst_slowdown")
    classes = [stats.severity(s) for s in worst["worst_slowdown"].fillna(1.0)]
    worst["severity"] = [c[0] for c in classes]
    worst["penalty"] = [c[1] for c in classes]
    return worst


def _decided(verdicts: pd.DataFrame) -> pd.Series:
    if "verdict" in verdicts.columns and verdicts["verdict"].notna().all():
        return verdicts["verdict"].isin(DECIDED)
    return verdicts["p_value"].notna()  # verdicts stored before three-way verdicts


def quality_score(verdicts: pd.DataFrame, cautious: bool = True) -> QualityScore:
    g = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS)]
    state = g["verdict"] if "verdict" in g.columns else pd.Series(dtype=object)
    gaps = {"comparisons": int(len(g)), "untested": int((state == UNTESTED).sum()),
            "undecided": int((state == UNDECIDED).sum())}
    pts = point_penalties(verdicts, cautious)
    if pts.empty:
        return QualityScore(float("nan"), 0, 0, {}, **gaps)
    violated = pts[pts["worst_slowdown"].notna()]
    by_class = {label: int((violated["severity"] == label).sum()) for _, label, _ in stats.SEVERITY_CLASSES[1:]}
    return QualityScore(
        score=100.0 * (1.0 - float(pts["penalty"].mean())),
        points=int(len(pts)),
        violated_points=int(len(violated)),
        by_class=by_class,
        **gaps,
    )
