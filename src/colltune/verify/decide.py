"""Three-way verdicts, corrected per family and spent over a fixed number of looks.

Every guideline comparison ends as one of (docs/statistics.md, "Three-way verdicts"):

  violation     ref significantly slower than alt (one-sided test, Holm-adjusted p <= alpha_look)
                and the relative difference beyond the tolerance;
  no violation  equivalence shown: the one-sided test that ref x (1 - tolerance) is faster than
                alt (stats.equivalence_test), Holm-adjusted over the same family, p <= alpha_look,
                i.e. the corrected upper confidence bound of the ratio lies inside the tolerance;
  undecided     neither;
  untested      too few launches for any test.

Adaptive rounds look at the data several times. The number of looks K is fixed before the
first launch (the run's settings), and each look is judged at alpha / K (Bonferroni spending
over looks, Holm within a look over the whole family): the chance of any false violation, or
of any false "no violation", over all looks together is at most alpha, whatever the dependence
between looks. A decision is kept from the look that first reached it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from colltune.verify import stats

GUIDELINE_KINDS = ("pattern", "library", "monotony", "split")
VIOLATION, NO_VIOLATION, UNDECIDED, UNTESTED = "violation", "no violation", "undecided", "untested"
DECIDED = (VIOLATION, NO_VIOLATION)


def decide(verdicts: pd.DataFrame, alpha: float, tolerance: float, correction: stats.Correction,
           looks: int) -> pd.DataFrame:
    """Corrections per family (guidelines; A/A calibration and tuned separately), then verdicts."""
    v = verdicts.copy()
    alpha_look = alpha / looks
    v["p_adjusted"] = np.nan
    v["p_equivalence_adjusted"] = np.nan
    families = [v["kind"].isin(GUIDELINE_KINDS), v["kind"] == "aa", v["kind"] == "tuned"]
    for mask in families:
        if mask.any():
            v.loc[mask, "p_adjusted"] = stats.adjust(v.loc[mask, "p_value"].to_numpy(dtype=float), correction)
            v.loc[mask, "p_equivalence_adjusted"] = stats.adjust(
                v.loc[mask, "p_equivalence"].to_numpy(dtype=float), correction)
    v["significant"] = (v["p_adjusted"] <= alpha_look).fillna(False).astype(bool)
    v["violation"] = [stats.is_violation(pa, rd, alpha_look, tolerance)
                      for pa, rd in zip(v["p_adjusted"], v["rel_diff"], strict=True)]
    equivalent = (v["p_equivalence_adjusted"] <= alpha_look).fillna(False).astype(bool)
    v["verdict"] = np.select([v["p_value"].isna(), v["violation"], equivalent],
                             [UNTESTED, VIOLATION, NO_VIOLATION], UNDECIDED)
    return v


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
        untested=int(len(untested)), untested_hint=hint,
        undecided_hint=(f"neither a violation nor equivalence within the tolerance could be shown; measure "
                        f"{more} or give the adaptive rounds more time (--round-budget)"))


def selection(verdicts: pd.DataFrame) -> dict[int, frozenset[tuple[str, int, str]]]:
    """Per process count, the (collective, size, variant) whose measurements decide the comparisons
    still open (undecided, or untested for want of launches): what an adaptive round measures."""
    open_ = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS) & verdicts["verdict"].isin((UNDECIDED, UNTESTED))]
    out: dict[int, set[tuple[str, int, str]]] = {}
    for r in open_.itertuples(index=False):
        sel = out.setdefault(int(r.nprocs), set())
        sel.add((str(r.collective), int(r.msg_bytes), "default"))
        if r.kind in ("pattern", "library"):
            sel.add((str(r.collective), int(r.msg_bytes), str(r.variant)))
        else:  # monotony and split: the default at the other size
            sel.add((str(r.collective), int(r.ref_bytes), "default"))
    return {n: frozenset(s) for n, s in out.items()}
