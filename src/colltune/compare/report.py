"""The HTML report of a comparison (compare.html): one self-contained file, like check's report.

It reuses colltune.report.html's page machinery (CSS, figure embedding, tables) and verify's
comparers for each configuration's own guideline verdicts; the sections here are the
comparison's: who is faster where (heat map of the ratio with its interval), best of both,
violations and quality side by side, worst slowdowns, A/A calibration, environment.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.ticker import NullFormatter, ScalarFormatter

from colltune import __version__
from colltune.compare import stats as cstats
from colltune.compare import tables as ct
from colltune.compare.data import environment_table
from colltune.compare.judge import Comparison
from colltune.paths import writable_dir
from colltune.report.context import interval_bars
from colltune.report.html import CSS, ReportContext, short_library_name
from colltune.verify import tables as vt

EXTRA_CSS = """
tr.afaster td{background:#e0f2f1} tr.bfaster td{background:#fce4ec} tr.same td{background:#f1f8e9}
tr.differs td{font-weight:600} .pair{font-weight:600}
"""


@dataclass
class CompareReport:
    cmp: Comparison
    page: ReportContext  # figure() and table() of the check report, for a page of our own

    def figure(self, fig: Any, alt: str) -> str:
        return self.page.figure(fig, alt)

    def table(self, df: pd.DataFrame, formats: dict[str, Callable[[Any], str]] | None = None,
              row_class: Callable[[pd.Series], str] | None = None) -> str:
        return self.page.table(df, formats, row_class)


def _ratio_fmt(x: Any) -> str:
    return vt.fmt_float(float(x), 2) if isinstance(x, (int, float)) else ""


def _verdict_class(r: pd.Series) -> str:
    return {"A faster": "afaster", "B faster": "bfaster", "no difference": "same"}.get(str(r.get("verdict")), "")


def _summary(rep: CompareReport) -> str:
    cmp = rep.cmp
    parts = []
    for _, r in ct.verdict_counts(cmp).iterrows():
        parts.append(f"<p class=lead><span class=pair>{html.escape(r['a'])} vs {html.escape(r['b'])}</span>: of "
                     f"{r['points']} points, <b>{html.escape(r['a'])}</b> is faster at <b>{r['A faster']}</b>, "
                     f"<b>{html.escape(r['b'])}</b> at <b>{r['B faster']}</b>; no difference (within "
                     f"&plusmn;{cmp.settings.tolerance:.0%}) at {r['no difference']}, undecided at {r['undecided']}.</p>")
    q = ct.quality_table(cmp).set_index("configuration")
    vio = ct.violations_table(cmp)
    vio = vio[vio["scope"] == "all comparisons"].set_index("configuration")
    cards = "".join(
        f'<div class="card"><div class="big">{_score(q.loc[label, "cautious"])}</div>{html.escape(label)} quality '
        f'(cautious)<br><small>brave {_score(q.loc[label, "brave"])}; violations {int(vio.loc[label, "brave"])} '
        f'brave, {int(vio.loc[label, "cautious"])} cautious</small></div>' for label in cmp.labels)
    flagged = int((cmp.calibration["faster"] != "").sum())
    cards += (f'<div class="card"><div class="big">{flagged}/{len(cmp.calibration)}</div>A/A points called faster'
              f'<br><small>identical copies across launches</small></div>')
    parts.append(f'<div class="cards">{cards}</div>')
    if cmp.messages:
        items = "".join(f"<li>{html.escape(m)}</li>" for m in cmp.messages)
        parts.append(f'<details class="notes" open><summary>{len(cmp.messages)} note(s)</summary><ul>{items}</ul></details>')
    return "".join(parts)


def _score(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.0f}"


def _environment(rep: CompareReport) -> str:
    cmp = rep.cmp
    runs = pd.DataFrame([{"configuration": m.label, "library": short_library_name(m.run.info), "run": m.run.run_id,
                          "database": str(m.run.db_path), "status": m.run.info.get("status", ""),
                          "settings": " ".join(f"{k}={v}" for k, v in m.config_env.items()),
                          "command": m.run.info.get("command", "")} for m in cmp.members])
    env = environment_table(cmp.members)
    return (rep.table(runs) + "<p>What differs between the configurations (bold), from each run's environment "
            "table:</p>" + rep.table(env, {"differs": lambda x: "differs" if x else ""},
                                     lambda r: "differs" if r["differs"] else ""))


def _method(rep: CompareReport) -> str:
    s = rep.cmp.settings
    low, high = cstats.band(s.tolerance)
    test = {"mwu": "two-sided Mann-Whitney U (exact without ties)",
            "welch-log": "two-sided Welch t-test on the logarithms"}[str(s.test)]
    return f"""<p>Every configuration measured the same grid in its own launches; the launches alternated
between the configurations (A B A B ...) so that the machine's drift hits all alike. The launch is the
unit: each point's default collective is reduced to its median per launch. Different libraries never
share a launch, so the comparison is unpaired.</p><ul>
<li>Ratio A/B = median of A's per-launch medians / median of B's (&gt; 1: B is faster); interval:
{s.confidence:.0%} percentile bootstrap resampling each side's launches.</li>
<li>Test: {test} on the per-launch medians, Holm-corrected over every point and pair, alpha = {s.alpha:g}.</li>
<li>"A faster" / "B faster": significant and the whole interval outside [{low:.3f}, {high:.3f}] (the faster
side saves more than {s.tolerance:.0%}). "No difference": the whole interval inside that band (equivalence).
"Undecided": neither (the interval reaches across an edge of the band, or the test is not significant). Points with fewer than {s.min_launches} launches on a side are not tested.</li>
<li>A/A calibration: for each configuration, its default in every other launch against its identical copy
(<code>default#aa</code>) in the launches between, judged the same way: a sound method calls none faster.</li>
<li>Guideline violations and quality scores: each configuration's own check (paired within its launches,
docs/statistics.md), counted at the compared points only.</li></ul>"""


def _heatmap(rep: CompareReport) -> str | None:
    v = rep.cmp.verdicts
    if v.empty:
        return None
    blocks = []
    for (a, b, p), grp in v.groupby(["a", "b", "nprocs"], sort=False):
        colls = sorted(grp["collective"].unique())
        sizes = sorted(grp["msg_bytes"].unique())
        mat = np.full((len(colls), len(sizes)), np.nan)
        fig, ax = plt.subplots(figsize=(1.6 + 1.25 * len(sizes), 0.9 + 0.5 * len(colls)))
        for r in grp.itertuples(index=False):
            i, j = colls.index(r.collective), sizes.index(r.msg_bytes)
            decided = r.verdict in ("A faster", "B faster")
            # log2(B/A): positive (green) where A is faster
            mat[i, j] = -math.log2(r.ratio) if decided and r.ratio > 0 else 0.0
            ci = "" if math.isnan(r.ci_low) else f"\n[{r.ci_low:.2f}, {r.ci_high:.2f}]"
            mark = {"no difference": " =", "undecided": " ?"}.get(r.verdict, "")
            color = "#fff" if abs(mat[i, j]) > 1.5 else "#222" if decided or r.verdict == "no difference" else "#888"
            ax.text(j, i, f"{r.ratio:.2f}{mark}{ci}", ha="center", va="center", fontsize=6.5, color=color)
        lim = max(1.0, float(np.nanmax(np.abs(mat)))) if np.isfinite(mat).any() else 1.0
        ax.imshow(mat, cmap="PiYG", norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto")
        ax.set_xticks(range(len(sizes)), [vt.fmt_bytes(n) for n in sizes], fontsize=7)
        ax.set_yticks(range(len(colls)), colls, fontsize=8)
        ax.set_title(f"{a} / {b}, {p} processes: green = {a} faster, pink = {b} faster", fontsize=9, loc="left")
        blocks.append(rep.figure(fig, f"ratio {a}/{b} at {p} processes"))
    return ("<p>Each cell: the ratio A/B of the default medians with its interval. Coloured only where a side is "
            "significantly faster by more than the tolerance (darker = larger ratio, log scale); "
            "<b>=</b> no difference (interval inside the band), <b>?</b> undecided.</p>" + "".join(blocks))


def _relative(rep: CompareReport) -> str:
    v = rep.cmp.verdicts
    fmt = {"msg_bytes": vt.fmt_bytes, "median_a_s": vt.fmt_time, "median_b_s": vt.fmt_time, "ratio": _ratio_fmt,
           "ci_low": _ratio_fmt, "ci_high": _ratio_fmt, "statistic": lambda x: vt.fmt_float(x, 1),
           "p_value": vt.fmt_p, "p_adjusted": vt.fmt_p}
    return f'<div class="scroll">{rep.table(v, fmt, _verdict_class)}</div>'


def _best(rep: CompareReport) -> str:
    b = ct.best_table(rep.cmp).drop(columns=["best_variant"])
    fmt = {"msg_bytes": vt.fmt_bytes, "fastest_default_s": vt.fmt_time, "slowest_default_s": vt.fmt_time,
           "best_s": vt.fmt_time, "gain_over_fastest_default": _ratio_fmt}
    return ("<p>Per point the configuration whose default is fastest, and the fastest variant measured anywhere "
            "(a mock-up or library algorithm of any configuration); gain = fastest default / that variant. "
            "Medians across configurations are descriptive (they never shared a launch); the verdicts above "
            "say which default differences are real.</p>" + rep.table(b, fmt))


def _violations(rep: CompareReport) -> str:
    cmp = rep.cmp
    vio = ct.violations_table(cmp)
    fig, ax = plt.subplots(figsize=(6.5, 2.6))
    tot = vio[vio["scope"] == "all comparisons"]
    x = np.arange(len(tot))
    ax.bar(x - 0.2, tot["brave"], 0.4, label="brave", color="#ef5350")
    ax.bar(x + 0.2, tot["cautious"], 0.4, label="cautious", color="#ffb74d")
    ax.set_xticks(x, tot["configuration"])
    ax.set_ylabel("guideline violations")
    ax.legend(frameon=False, fontsize=8)
    parts = [rep.figure(fig, "violations per configuration"), rep.table(vio)]
    for label in cmp.labels:
        g = vt.grouped_violation_table(cmp.guideline_verdicts(label))
        g = g[g["violations"] > 0]
        if len(g):
            shown = g[["nprocs", "collective", "msg_bytes", "default_median_s", "slowdown", "label", "guideline",
                       "variant_median_s", "barrier_warning"]]
            parts.append(f"<h3>{html.escape(label)}: fastest violating variant per point</h3>" + rep.table(
                shown, {"msg_bytes": vt.fmt_bytes, "default_median_s": vt.fmt_time, "variant_median_s": vt.fmt_time,
                        "slowdown": _ratio_fmt}))
    return ("<p>Each configuration judged against the self-consistent guidelines on its own, at the "
            "compared points. Brave counts every violation, cautious drops those within one "
            "MPI_Barrier.</p>" + "".join(parts))


def _quality(rep: CompareReport) -> str:
    q = ct.quality_table(rep.cmp)
    return ("<p>100 &times; (1 &minus; mean severity penalty) over the compared points (docs/statistics.md); "
            "comparable because every configuration covers the same points.</p>"
            + rep.table(q, {"cautious": lambda x: f"{x:.1f}", "brave": lambda x: f"{x:.1f}"}))


def _worst(rep: CompareReport) -> str:
    w = ct.worst_table(rep.cmp)
    if w.empty:
        return "<p>No point where one configuration is significantly slower.</p>"
    return rep.table(w, {"msg_bytes": vt.fmt_bytes, "slowdown": _ratio_fmt, "ratio": _ratio_fmt,
                         "ci_low": _ratio_fmt, "ci_high": _ratio_fmt, "p_adjusted": vt.fmt_p})


def _calibration(rep: CompareReport) -> str:
    cal = rep.cmp.calibration
    if cal.empty:
        return "<p>Not measured: no <code>default#aa</code> in these runs.</p>"
    counts = cal["verdict"].value_counts()
    fig, ax = plt.subplots(figsize=(7.2, 0.6 + 0.15 * len(cal)))
    y = np.arange(len(cal))
    low, high = cstats.band(rep.cmp.settings.tolerance)
    ax.axvspan(low, high, color="#2e7d32", alpha=0.12, lw=0)
    ax.axvline(1.0, color="#555", lw=0.8)
    r, lo, hi = cal["ratio"].to_numpy(float), cal["ci_low"].to_numpy(float), cal["ci_high"].to_numpy(float)
    ax.errorbar(r, y, xerr=interval_bars(r, lo, hi), fmt="o", ms=3, color="#1565c0",
                ecolor="#90caf9", elinewidth=2)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(y, [f"{a}: {c} {vt.fmt_bytes(n)}" for a, c, n in zip(cal["a"], cal["collective"], cal["msg_bytes"],
                                                                       strict=True)], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("ratio default / identical copy (disjoint launches), interval; green: the tolerance band")
    return (f"<p>{int((cal['faster'] != '').sum())} of {len(cal)} identical-copy points called faster "
            f"(no difference {int(counts.get('no difference', 0))}, undecided {int(counts.get('undecided', 0))}). "
            "With half the launches on each side the intervals are wider than those of the real comparison.</p>"
            + rep.figure(fig, "A/A calibration across launches"))


def _left_out(rep: CompareReport) -> str | None:
    lo = rep.cmp.left_out
    if lo.empty:
        return None
    return "<p>Measured by some configurations only: not compared.</p>" + rep.table(lo, {"msg_bytes": vt.fmt_bytes})


SECTIONS: list[tuple[str, str, Callable[[CompareReport], str | None]]] = [
    ("summary", "Summary", _summary), ("heatmap", "Which is faster where", _heatmap),
    ("best", "Best of both", _best), ("violations", "Guideline violations", _violations),
    ("quality", "Quality scores", _quality), ("worst", "Worst slowdowns", _worst),
    ("calibration", "A/A calibration", _calibration), ("environment", "Configurations and environment", _environment),
    ("method", "Method", _method), ("verdicts", "All verdicts", _relative), ("left-out", "Left out", _left_out),
]


def render(cmp: Comparison) -> str:
    first = cmp.members[0]
    rep = CompareReport(cmp, ReportContext(first.run.db_path, cmp.checks[first.label], stored=False))
    nav, body = [], []
    for sid, title, fn in SECTIONS:
        fragment = fn(rep)
        if fragment is None:
            continue
        nav.append(f'<a href="#{sid}">{html.escape(title)}</a>')
        body.append(f'<section id="{sid}"><h2>{html.escape(title)}</h2>{fragment}</section>')
    title = "colltune compare: " + " vs ".join(html.escape(m.label) for m in cmp.members)
    procs = ", ".join(map(str, sorted(cmp.common["nprocs"].unique())))
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{title}</title>"
            f"<style>{CSS}{EXTRA_CSS}</style></head><body><main><h1>{title}</h1>"
            f"<p class=sub>{len(cmp.common)} points at {procs or '?'} processes &middot; "
            + " &middot; ".join(f"{html.escape(m.label)}: {html.escape(short_library_name(m.run.info))}"
                                for m in cmp.members)
            + f"</p><nav>{''.join(nav)}</nav>{''.join(body)}<footer>colltune {__version__}</footer></main></body></html>")


def write_report(cmp: Comparison, out_dir: str | Path) -> Path:
    path = writable_dir(out_dir, "comparison report") / "compare.html"
    path.write_text(render(cmp), encoding="utf-8")
    return path
