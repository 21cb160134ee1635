"""The tables of a comparison (pgchecker's comparers, pgchecker 3.3, across configurations),
as DataFrames (the CSV/Parquet files) and rich tables (the terminal).

absolute  each configuration's default (its side: judge) median per point
relative  ratio of the defaults per pair of configurations, with interval, test and verdict
violations  each configuration's guideline violations, brave and cautious, at the compared points
grouped   one row per point: who is faster, the fastest default and the fastest variant anywhere
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
from rich.console import Console
from rich.table import Table

from colltune.catalog import AA
from colltune.compare.data import environment_table
from colltune.compare.judge import POINT, Comparison
from colltune.verify import check
from colltune.verify import tables as vt
from colltune.verify.quality import quality_score


def absolute_table(cmp: Comparison) -> pd.DataFrame:
    """Median of per-launch medians of each configuration's default, and its launches."""
    out = cmp.common.copy()
    for m in cmp.members:
        s = cmp.checks[m.label].summary
        s = s[s["variant"] == m.side].set_index(POINT)
        key = pd.MultiIndex.from_frame(out[POINT])
        out[f"{m.label} median_s"] = s["median_s"].reindex(key).to_numpy()
        out[f"{m.label} launches"] = s["n_launches"].reindex(key).to_numpy()
    return out


def relative_table(cmp: Comparison) -> pd.DataFrame:
    return cmp.verdicts.copy()


def violations_table(cmp: Comparison) -> pd.DataFrame:
    """Guideline violations of each configuration (verify.check's judging) at the compared points."""
    frames = []
    for label in cmp.labels:
        t = vt.totals_table(cmp.guideline_verdicts(label))
        t.insert(0, "configuration", label)
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def quality_table(cmp: Comparison) -> pd.DataFrame:
    rows = []
    for label in cmp.labels:
        v = cmp.guideline_verdicts(label)
        qc, qb = quality_score(v, cautious=True), quality_score(v, cautious=False)
        cal = check.calibration_summary(v, cmp.checks[label].settings.alpha)
        rows.append({"configuration": label, "cautious": qc.score, "brave": qb.score, "points": qc.points,
                     "violated_points_cautious": qc.violated_points, "violated_points_brave": qb.violated_points,
                     "aa_flagged": cal["violations"], "aa_comparisons": cal["comparisons"]})
    return pd.DataFrame(rows)


def best_table(cmp: Comparison) -> pd.DataFrame:
    """Per point: the fastest configuration's default, and the fastest variant of any configuration
    (descriptive medians: variants of different configurations never share a launch)."""
    summaries = []
    for m in cmp.members:
        s = cmp.checks[m.label].summary
        summaries.append(s[(s["variant"] != AA) & (s["collective"] != check.BARRIER)].assign(
            configuration=m.label, side=s["variant"] == m.side))
    allv = pd.concat(summaries, ignore_index=True).merge(cmp.common, on=POINT)
    rows = []
    for point, grp in allv.groupby(POINT, sort=True):
        d = grp[grp["side"]].sort_values("median_s", kind="stable")
        best = grp.sort_values("median_s", kind="stable").iloc[0]
        rows.append({**dict(zip(POINT, point, strict=True)),
                     "fastest_default": d.iloc[0]["configuration"], "fastest_default_s": float(d.iloc[0]["median_s"]),
                     "slowest_default": d.iloc[-1]["configuration"], "slowest_default_s": float(d.iloc[-1]["median_s"]),
                     "best_configuration": best["configuration"], "best_variant": best["variant"],
                     "best_label": check.variant_label(str(point[1]), str(best["variant"])),
                     "best_s": float(best["median_s"]),
                     "gain_over_fastest_default": float(d.iloc[0]["median_s"]) / float(best["median_s"])})
    return pd.DataFrame(rows, columns=[*POINT, "fastest_default", "fastest_default_s", "slowest_default",
                                       "slowest_default_s", "best_configuration", "best_variant", "best_label",
                                       "best_s", "gain_over_fastest_default"])


def grouped_table(cmp: Comparison) -> pd.DataFrame:
    """One row per point and pair: the verdict, then the best-of-both columns."""
    keep = [*POINT, "a", "b", "ratio", "ci_low", "ci_high", "p_adjusted", "verdict", "faster"]
    return cmp.verdicts[keep].merge(best_table(cmp), on=POINT, how="left")


def worst_table(cmp: Comparison, top: int = 10) -> pd.DataFrame:
    """Points where picking the slower configuration costs most (decided verdicts only)."""
    v = cmp.verdicts[cmp.verdicts["faster"] != ""].copy()
    v["slowdown"] = [r if f == b else 1.0 / r for r, f, b in zip(v["ratio"], v["faster"], v["b"], strict=True)]
    v["slower"] = [a if f == b else b for a, f, b in zip(v["a"], v["faster"], v["b"], strict=True)]
    v = v.sort_values("slowdown", ascending=False, kind="stable").head(top)
    return v[[*POINT, "slower", "faster", "slowdown", "ratio", "ci_low", "ci_high", "p_adjusted"]].reset_index(drop=True)


def verdict_counts(cmp: Comparison) -> pd.DataFrame:
    rows = []
    for (a, b), grp in cmp.verdicts.groupby(["a", "b"], sort=False):
        counts = grp["verdict"].value_counts()
        rows.append({"a": a, "b": b, "points": len(grp), "A faster": int(counts.get("A faster", 0)),
                     "B faster": int(counts.get("B faster", 0)), "no difference": int(counts.get("no difference", 0)),
                     "undecided": int(counts.get("undecided", 0))})
    return pd.DataFrame(rows, columns=["a", "b", "points", "A faster", "B faster", "no difference", "undecided"])


def all_tables(cmp: Comparison) -> dict[str, pd.DataFrame]:
    return {"absolute": absolute_table(cmp), "relative": relative_table(cmp), "violations": violations_table(cmp),
            "grouped": grouped_table(cmp), "best_of_both": best_table(cmp), "quality": quality_table(cmp),
            "worst_slowdowns": worst_table(cmp), "verdict_counts": verdict_counts(cmp),
            "calibration": cmp.calibration, "environment": environment_table(cmp.members),
            "left_out": cmp.left_out}


# ---------------------------------------------------------------------------------------------
# Terminal


def _ratio(r: pd.Series) -> str:
    ci = "" if math.isnan(r["ci_low"]) else f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
    return f"{r['ratio']:.2f}{ci}"


def _style(verdict: str) -> str | None:
    return {"A faster": "cyan", "B faster": "magenta", "no difference": "green"}.get(verdict)


def render_grouped(cmp: Comparison) -> Table:
    t = vt._table("Which is faster (ratio A/B of the defaults' medians (--side: the sides') [CI]; best of both)",
                  [("procs", "right"), ("collective", "left"), ("size", "right"), ("A", "left"), ("B", "left"),
                   ("A/B [CI]", "right"), ("p adj.", "right"), ("verdict", "left"), ("fastest variant anywhere", "left"),
                   ("its median", "right"), ("gain", "right")],
                  caption="gain = fastest default / fastest variant anywhere (descriptive)")
    for _, r in grouped_table(cmp).iterrows():
        best = f"{r['best_label']} ({r['best_configuration']})" if isinstance(r["best_label"], str) else ""
        vt._add_row(t, str(r["nprocs"]), r["collective"], vt.fmt_bytes(r["msg_bytes"]), r["a"], r["b"], _ratio(r),
                    vt.fmt_p(r["p_adjusted"]), r["faster"] + " faster" if r["faster"] else r["verdict"], best,
                    vt.fmt_time(r["best_s"]), vt.fmt_float(r["gain_over_fastest_default"], 2), style=_style(r["verdict"]))
    return t


def render_absolute(cmp: Comparison) -> Table:
    a = absolute_table(cmp)
    t = vt._table("Default medians per configuration (median of per-launch medians)",
                  [("procs", "right"), ("collective", "left"), ("size", "right")]
                  + [(f"{m.label}", "right") for m in cmp.members])
    for _, r in a.iterrows():
        vt._add_row(t, str(r["nprocs"]), r["collective"], vt.fmt_bytes(r["msg_bytes"]),
                    *(f"{vt.fmt_time(r[f'{m.label} median_s'])} ({int(r[f'{m.label} launches'])})" for m in cmp.members))
    return t


def render_relative(cmp: Comparison) -> Table:
    t = vt._table("Relative: ratio of the defaults' (--side: the sides') medians A/B per pair", [
        ("procs", "right"), ("collective", "left"), ("size", "right"), ("A", "left"), ("B", "left"),
        ("launches", "right"), ("A/B [CI]", "right"), ("p", "right"), ("p adj.", "right"), ("verdict", "left")])
    for _, r in cmp.verdicts.iterrows():
        vt._add_row(t, str(r["nprocs"]), r["collective"], vt.fmt_bytes(r["msg_bytes"]), r["a"], r["b"],
                    f"{r['n_a']}/{r['n_b']}", _ratio(r), vt.fmt_p(r["p_value"]), vt.fmt_p(r["p_adjusted"]),
                    r["verdict"], style=_style(r["verdict"]))
    return t


def render_violations(cmp: Comparison) -> Table:
    t = vt._table("Guideline violations per configuration (compared points)",
                  [("configuration", "left"), ("scope", "left"), ("tested", "right"), ("brave", "right"),
                   ("cautious", "right")])
    for _, r in violations_table(cmp).iterrows():
        vt._add_row(t, r["configuration"], r["scope"], str(r["tested"]), str(r["brave"]), str(r["cautious"]))
    return t


COMPARERS: dict[str, Callable[[Comparison], Table]] = {
    "grouped": render_grouped, "absolute": render_absolute, "relative": render_relative,
    "violations": render_violations,
}


def print_comparison(cmp: Comparison, console: Console, comparer: str = "grouped") -> None:
    console.print(COMPARERS[comparer](cmp))
    counts = verdict_counts(cmp)
    for _, r in counts.iterrows():
        console.print(f"[bold]{r['a']} vs {r['b']}[/]: {r['points']} points: {r['a']} faster at {r['A faster']}, "
                      f"{r['b']} faster at {r['B faster']}, no difference at {r['no difference']}, undecided at "
                      f"{r['undecided']}", highlight=False)
    undecided = cmp.verdicts[(cmp.verdicts["verdict"] == "undecided") & cmp.verdicts["note"].str.contains("over")]
    if len(undecided):
        console.print(f"{len(undecided)} undecided point(s) had launches over twice their configuration's median "
                      "(a noisy or shared node; see the note column of relative.csv)", highlight=False)
    q = quality_table(cmp)
    console.print("Quality (cautious / brave): " + "; ".join(
        f"{r.configuration} {r.cautious:.1f} / {r.brave:.1f}" for r in q.itertuples(index=False)), highlight=False)
    cal = cmp.calibration
    if len(cal):
        flagged = int((cal["faster"] != "").sum())
        console.print(f"A/A calibration across launches: {flagged} of {len(cal)} identical-copy points called faster, "
                      f"{int((cal['verdict'] == 'no difference').sum())} no difference", highlight=False)
