"""The built-in sections of the report: summary, environment, method, grouped verdicts, advice,
slowdown plots, heat map, calibration, quality, details (orders are multiples of 10). All but the
environment are about a check's verdicts and appear on the pages of checked runs only
(colltune.report.context.CHECKED_KINDS); colltune.report.html registers SECTIONS."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import BoundaryNorm, ListedColormap

from colltune.measure import confirm
from colltune.report.context import CHECKED_KINDS, ReportContext, Section, interval_bars
from colltune.verify import check, stats, tables
from colltune.verify.advice import KIND_INTRO, advice, library_family
from colltune.verify.quality import point_penalties, quality_score

T = tables

SECTIONS: list[Section] = []

Render = Callable[[ReportContext], "str | None"]


def _section(id_: str, title: str, order: int, kinds: tuple[str, ...] | None = CHECKED_KINDS) -> Callable[[Render], Render]:
    def deco(fn: Render) -> Render:
        SECTIONS.append(Section(id_, title, fn, order, kinds))
        return fn
    return deco


@_section("summary", "Summary", 10)
def _summary(ctx: ReportContext) -> str:
    v = ctx.verdicts
    tot = T.totals_table(v).set_index("scope")
    q = quality_score(v, cautious=True)
    qb = quality_score(v, cautious=False)
    cal = ctx.result.calibration()
    pts = tot.loc["points (collective, size)"]
    parts = []
    if ctx.result.partial:
        parts.append('<p class="warn"><b>Partial results.</b> Some comparisons lack launches or the run did not '
                     "complete; the affected verdicts are marked partial below.</p>")
    if cal["passed"] is False:
        parts.append('<p class="warn"><b>The A/A calibration failed:</b> the check flagged an identical copy of '
                     "the default as different. Treat the violations below with suspicion: the machine was "
                     "probably too noisy or the launches too few (see A/A calibration).</p>")
    if ctx.result.scheduler is not None:  # why most comparisons stay undecided: the machine, not the library
        said = check.scheduler_note(ctx.result.scheduler).removeprefix("scheduler-bound launches: ")
        parts.append(f'<p class="warn"><b>Scheduler-bound launches:</b> {html.escape(said)}.</p>')
    if v["violation"][v["kind"].isin(check.GUIDELINE_KINDS)].any():
        lead = (f"<b>{int(tot.loc['all comparisons', 'brave'])}</b> guideline violations "
                f"(<b>{int(tot.loc['all comparisons', 'cautious'])}</b> without barrier warning) in "
                f"{int(tot.loc['all comparisons', 'tested'])} tested comparisons; "
                f"{int(pts['brave'])} of {int(pts['tested'])} (collective, size) points have a faster "
                f"mock-up or library algorithm.")
    elif ctx.result.coverage().complete:
        lead = (f"No guideline violation in {int(tot.loc['all comparisons', 'tested'])} tested comparisons: "
                "at the measured sizes the library is self-consistent.")
    else:
        lead = "No guideline violation found, but not everything was decided."
    parts.append(f"<p class=lead>{lead}</p>")
    gaps = ctx.result.coverage().notes()
    if gaps:
        parts.append('<p class="warn"><b>Not decided:</b> ' + html.escape("; ".join(gaps))
                     + ". These comparisons are neither counted as violations nor as clean.</p>")
    parts.append(f'<div class="cards"><div class="card"><div class="big">{_score(q.score)}</div>quality score '
                 f'(cautious{"" if q.complete else ", incomplete"})<br><small>brave {_score(qb.score)}</small></div>'
                 f'<div class="card"><div class="big">{int(tot.loc["all comparisons", "brave"])}</div>violations '
                 f'(brave)<br><small>cautious {int(tot.loc["all comparisons", "cautious"])}</small></div>'
                 f'<div class="card"><div class="big">{_cal_badge(cal)}</div>A/A calibration<br><small>'
                 f'{cal["violations"]} of {cal["comparisons"]} identical copies flagged</small></div></div>')
    if ctx.result.messages:
        items = "".join(f"<li>{html.escape(m)}</li>" for m in ctx.result.messages)
        parts.append(f'<details class="notes"><summary>{len(ctx.result.messages)} note(s) on the data</summary>'
                     f"<ul>{items}</ul></details>")
    return "".join(parts)


def _score(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.0f}"


def _cal_badge(cal: dict[str, Any]) -> str:
    return {True: '<span class="ok">passed</span>', False: '<span class="bad">failed</span>',
            None: '<span class="na">n/a</span>'}[cal["passed"]]


@_section("environment", "Environment", 20, kinds=None)
def _environment(ctx: ReportContext) -> str:
    info = ctx.info
    keep = ["run_id", "created", "kind", "command", "mpi_name", "mpi_version", "abi_family", "status"]
    rows = [(k, info[k]) for k in keep if k in info and info[k] is not None]
    rows.append(("process counts", ", ".join(map(str, ctx.nprocs))))
    # every launch's layout, not the first's only
    layouts = confirm.run_layouts(ctx.store.environment(ctx.run_id), ctx.store.launches(ctx.run_id))
    rows += [(f"node layout, {n} processes", "; ".join(said)) for n, said in sorted(layouts.items())]
    run = ctx.run_data
    launches = run.launches
    if not launches.empty and "status" in launches.columns:
        rows.append(("launches", ", ".join(f"{n} {s}" for s, n in launches["status"].value_counts().items())))
    env = run.environment
    shown = {str(v) for _, v in rows}
    # The bench records some run facts per launch too; show each fact once.
    rows += sorted((k, v) for k, v in env.items()
                   if not k.startswith("cvar:") and not (k in info and str(v) in shown))
    out = ctx.table(pd.DataFrame(rows, columns=["", "value"]))
    settings = info.get("settings")
    if isinstance(settings, dict) and settings:
        rows_ = settings_rows(settings)
        out += (f"<details><summary>{len(rows_)} measurement setting{'s' if len(rows_) != 1 else ''} of the run</summary>"
                + ctx.table(pd.DataFrame(rows_, columns=["setting", "value"])) + "</details>")
    cvars = sorted((k.removeprefix("cvar:"), v) for k, v in env.items() if k.startswith("cvar:"))
    if cvars:
        out += (f"<details><summary>{len(cvars)} MPI_T control variables of the library at the first launch"
                f"</summary>{ctx.table(pd.DataFrame(cvars, columns=['control variable', 'value']))}</details>")
    return out


def settings_rows(settings: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """The run's measurement settings (BenchSettings as stored) as (setting, value) rows: nested
    groups (the stopping rules) as `group.setting`, lists comma-separated, unset as `-`."""
    rows: list[tuple[str, str]] = []
    for key, value in settings.items():
        if isinstance(value, dict):
            rows += settings_rows(value, f"{prefix}{key}.")
        elif isinstance(value, (list, tuple)):
            rows.append((prefix + key, ", ".join(map(str, value)) or "-"))
        else:
            rows.append((prefix + key, "-" if value is None else str(value)))
    return rows


@_section("method", "Method", 30)
def _method(ctx: ReportContext) -> str:
    s = ctx.result.settings
    test = {
        "paired-t": "one-sided t-test on the per-launch log-ratios log(default/variant), paired by launch",
        "trimmed-t": "one-sided Yuen t-test on the 10%-trimmed mean of the per-launch log-ratios "
                     "log(default/variant), paired by launch",
        "screened-t": "one-sided t-test on the per-launch log-ratios log(default/variant), paired by launch, "
                      "without wild launches (4x and 8 robust standard deviations or more from the median "
                      "ratio; below 16 launches the 10%-trimmed Yuen t-test)",
        "signed-rank": "one-sided Wilcoxon signed-rank test on the per-launch log-ratios, paired by launch",
        "mwu": "one-sided Mann-Whitney U (Wilcoxon rank-sum) on the per-launch medians, unpaired",
        "ks": "one-sided Kolmogorov-Smirnov on the per-launch medians, unpaired",
        "welch": "one-sided Welch t-test on the per-launch medians, unpaired",
        "welch-log": "one-sided Welch t-test on the log per-launch medians, unpaired",
    }[str(s.test)]
    slowdown = ("the median over launches of the per-launch slowdown (default median / variant median within "
                "the launch)" if s.test.paired else "median of the default's per-launch medians / median of the "
                "variant's")
    corr = {"holm": "Holm (family-wise error rate)", "bh": "Benjamini-Hochberg (false discovery rate)"}[str(s.correction)]
    src = ("the verdicts stored by <code>colltune check</code>" if ctx.stored
           else "verdicts computed now with the default settings (none were stored)")
    n = int(ctx.verdicts["n_launches"].median()) if len(ctx.verdicts) else 0
    return f"""
<p>This report shows {src}. Every variant of a collective is measured interleaved, in random order,
within the same launches (one launch = one <code>mpiexec</code>). The launch is the experimental unit:
each (variant, size) is reduced to its median in each launch, here typically {n} launches.
Because all variants share each launch, a launch that runs slow (another job, a bad process placement)
slows every variant alike; comparing the variants launch by launch removes that noise.</p>
<ul>
<li><b>Pattern</b> guidelines: the library's collective should not be slower than its mock-up
(GL1-GL22, RS1-RS2). <b>Library</b>: the default should not be slower than one of the library's own
algorithms. <b>Monotony</b>: a size should not be slower than the next larger measured size.
<b>Split</b>: a size should not be slower than k calls with a smaller size (k = smallest multiple
covering it, estimated as k times the smaller size's time; only the smallest violating k is shown).</li>
<li>Test: {test}; H1 "the default is slower". Correction across all comparisons of the check
(every split pair tested counts; the A/A copies form their own family): {corr}, alpha = {s.alpha:g}.</li>
<li>A violation needs significance <i>and</i> a relative difference (1 - 1/slowdown) above the tolerance
of {s.tolerance:.0%}; its bootstrap {s.confidence:.0%} interval (resampling launches) is shown with it.
Slowdown = {slowdown}.</li>
<li>Barrier warning (*): the faster side runs shorter than one MPI_Barrier, or the gain is smaller than
one barrier. <i>Brave</i> counts include them, <i>cautious</i> counts do not.</li>
<li>Calibration: the default is measured twice (<code>default#aa</code>) and judged like a variant;
with a sound method it is flagged at most at the stated rate.</li>
</ul>"""


@_section("grouped", "Violations by collective and size", 40)
def _grouped(ctx: ReportContext) -> str:
    g = T.grouped_violation_table(ctx.verdicts)
    if g.empty:
        return "<p>No pattern or library comparison in this run.</p>"
    g = g.copy()
    g["fastest violating variant"] = [f"{lab}{'*' if bw else ''}" for lab, bw in zip(g["label"], g["barrier_warning"], strict=True)]
    out = g[["nprocs", "collective", "msg_bytes", "n_launches", "default_median_s", "slowdown",
             "fastest violating variant", "guideline", "variant_median_s", "partial"]].rename(columns={
        "nprocs": "procs", "msg_bytes": "size", "n_launches": "launches", "default_median_s": "default median",
        "variant_median_s": "its median"})
    fmt = {"size": T.fmt_bytes, "default median": T.fmt_time, "its median": T.fmt_time,
           "slowdown": lambda x: T.fmt_float(x, 2)}
    def cls(r: pd.Series) -> str:
        if not r["fastest violating variant"]:
            return ""
        return "warnrow" if r["fastest violating variant"].endswith("*") else "violation"
    mono = ctx.verdicts[T.side_violations(ctx.verdicts)]
    extra = ""
    if len(mono):
        m = mono[["nprocs", "guideline", "lhs", "rhs", "slowdown", "rel_diff", "ci_low", "ci_high", "p_adjusted",
                  "barrier_warning"]].rename(columns={"nprocs": "procs", "lhs": "should not be slower",
                                                      "rhs": "than", "p_adjusted": "p (adj.)",
                                                      "barrier_warning": "barrier warning"})
        extra = ("<h3>Monotony, split-robustness and form violations</h3>" +
                 ctx.table(m, {"slowdown": lambda x: T.fmt_float(x, 2), "rel_diff": T.fmt_pct, "ci_low": T.fmt_pct,
                               "ci_high": T.fmt_pct, "p (adj.)": T.fmt_p}))
    return ("<p>One row per collective and size; where mock-ups or library algorithms are significantly "
            "faster, the fastest of them. * = barrier warning.</p>" + ctx.table(out, fmt, cls) + extra)


@_section("undecided", "Undecided comparisons: why", 45)
def _undecided(ctx: ReportContext) -> str | None:
    u = T.undecided_table(ctx.verdicts)
    if u.empty:
        return None
    u = u.assign(why=[str(n).removeprefix("undecided: ") for n in u["note"]]).drop(columns="note").rename(columns={
        "nprocs": "procs", "lhs": "should not be slower", "rhs": "than", "msg_bytes": "size",
        "n_launches": "launches"})
    return ("<p>Neither a violation nor equivalence within the tolerance could be shown for these: each says "
            "where its launches put it, how far its test got and what would decide it. They are counted neither as "
            "violations nor as clean (docs/statistics.md).</p>"
            + ctx.table(u, {"size": T.fmt_bytes, "slowdown": lambda x: T.fmt_float(x, 2)}))


@_section("advice", "What to do", 50)
def _advice(ctx: ReportContext) -> str:
    v = ctx.verdicts
    family = library_family(ctx.info)
    # Pattern/library: one item per (collective, size), the fastest violating variant (grouped view).
    picked = []
    g = T.grouped_violation_table(v)
    for _, r in g[g["violations"] > 0].iterrows():
        hit = v[(v["nprocs"] == r["nprocs"]) & (v["collective"] == r["collective"]) &
                (v["msg_bytes"] == r["msg_bytes"]) & (v["variant"] == r["variant"]) &
                v["kind"].isin(["pattern", "library"])]
        picked.append(hit.iloc[0])
    picked += [row for _, row in v[v["kind"].isin(["monotony", "split"]) & v["violation"]].iterrows()]
    if not picked:
        return "<p>Nothing to do: no violation was found.</p>"
    out = []
    for kind in ("pattern", "library", "monotony", "split"):
        rows = sorted((r for r in picked if r["kind"] == kind), key=lambda r: (r["nprocs"], r["collective"], r["msg_bytes"]))
        if not rows:
            continue
        title, intro = KIND_INTRO[kind]
        items = "".join(
            f"<li><b>{html.escape(r['collective'])} {T.fmt_bytes(r['msg_bytes'])}, {r['nprocs']} processes:</b> "
            f"{_code_spans(html.escape(advice(r, family)))}</li>" for r in rows)
        out.append(f"<h3>{html.escape(title)} ({len(rows)})</h3>"
                   f"<p>{_code_spans(html.escape(intro.format(db=ctx.db_path)))}</p><ul class=advice>{items}</ul>")
    return "".join(out)


def _code_spans(text: str) -> str:
    parts = text.split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


@_section("slowdown", "Slowdown per collective", 60)
def _slowdown_plots(ctx: ReportContext) -> str:
    v = ctx.verdicts[ctx.verdicts["kind"].isin(["pattern", "library"])]
    if v.empty:
        return None  # type: ignore[return-value]
    tol = ctx.result.settings.tolerance
    limit = 1.0 / (1.0 - tol)
    blocks = []
    for (p, coll), grp in v.groupby(["nprocs", "collective"], sort=True):
        fig, ax = plt.subplots(figsize=(7.2, 3.4))
        sizes = sorted(grp["msg_bytes"].unique())
        x_of = {n: i for i, n in enumerate(sizes)}
        top = max(2.0, float(np.nanmax(grp["slowdown"])) * 1.15)
        ax.axhspan(0, limit, color="#2e7d32", alpha=0.10, lw=0)
        ax.axhspan(limit, top, color="#c62828", alpha=0.10, lw=0)
        ax.axhline(1.0, color="#555", lw=0.8)
        for (var, label), vg in grp.groupby(["variant", "rhs"], sort=True):
            vg = vg.sort_values("msg_bytes")
            xs = [x_of[n] for n in vg["msg_bytes"]]
            line, = ax.plot(xs, vg["slowdown"], "-", lw=1.2, label=label)
            vio = vg["violation"].to_numpy(bool)
            warn = vg["barrier_warning"].to_numpy(bool)
            ys = vg["slowdown"].to_numpy()
            xs_a = np.array(xs)
            ax.plot(xs_a[vio & ~warn], ys[vio & ~warn], "o", color=line.get_color(), ms=7)
            ax.plot(xs_a[vio & warn], ys[vio & warn], "o", color=line.get_color(), ms=7, mfc="white", mew=1.8)
            ax.plot(xs_a[~vio], ys[~vio], ".", color=line.get_color(), ms=5)
        ax.set_xticks(range(len(sizes)), [T.fmt_bytes(n) for n in sizes], rotation=0, fontsize=8)
        ax.set_ylim(0, top)
        ax.set_xlim(-0.3, len(sizes) - 0.7)
        ax.set_ylabel("slowdown of the default")
        ax.set_xlabel("message size")
        ax.set_title(f"{check.variant_label(coll, 'default')}, {p} processes", fontsize=10, loc="left")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        ax.grid(axis="y", alpha=0.3)
        blocks.append(ctx.figure(fig, f"slowdown of {coll} at {p} processes"))
    return ("<p>Slowdown = default median / variant median. Red zone: the variant is more than "
            f"{tol:.0%} faster than the default (a violation if also significant: large dots; hollow = barrier "
            "warning; small dots = not significant). Green zone: no violation.</p>"
            f'<div class="plots">{"".join(blocks)}</div>')


SEVERITY_COLORS = ["#e8f5e9", "#c5e1a5", "#ffe082", "#ffb74d", "#ef5350", "#8e0000"]


@_section("heatmap", "Heat map of slowdowns", 70)
def _heatmap(ctx: ReportContext) -> str | None:
    v = ctx.verdicts
    pts = point_penalties(v, cautious=False)
    # Points with comparisons still open are never drawn as clean ("ok"): they read "?".
    state = v["verdict"] if "verdict" in v.columns else pd.Series("", index=v.index)
    open_ = v[v["kind"].isin(check.GUIDELINE_KINDS) & state.isin(("undecided", "untested"))]
    unsure = {(int(p), str(c), int(n)) for p, c, n in open_[["nprocs", "collective", "msg_bytes"]].itertuples(
        index=False, name=None)}
    extra = pd.DataFrame([{"nprocs": p, "collective": c, "msg_bytes": n, "worst_slowdown": math.nan}
                          for p, c, n in sorted(unsure)], columns=["nprocs", "collective", "msg_bytes",
                                                                    "worst_slowdown"])
    known = set(zip(pts["nprocs"], pts["collective"], pts["msg_bytes"], strict=True)) if len(pts) else set()
    extra = extra[[(p, c, n) not in known for p, c, n in zip(extra["nprocs"], extra["collective"],
                                                             extra["msg_bytes"], strict=True)]]
    pts = pd.concat([pts, extra], ignore_index=True) if len(extra) else pts
    if pts.empty:
        return None
    warned = v[v["violation"] & v["barrier_warning"] & v["kind"].isin(check.GUIDELINE_KINDS)]
    blocks = []
    bounds = [0.0] + [b for b, _, _ in stats.SEVERITY_CLASSES[:-1]] + [1e9]
    cmap = ListedColormap(SEVERITY_COLORS)
    norm = BoundaryNorm(bounds, cmap.N)
    for p, grp in pts.groupby("nprocs", sort=True):
        colls = sorted(grp["collective"].unique())
        sizes = sorted(grp["msg_bytes"].unique())
        mat = np.full((len(colls), len(sizes)), np.nan)
        decided = {(r["collective"], r["msg_bytes"]) for _, r in grp.iterrows() if r["collective"] is not None
                   and (int(p), str(r["collective"]), int(r["msg_bytes"])) not in unsure}
        for _, r in grp.iterrows():
            if (r["collective"], r["msg_bytes"]) in decided or not math.isnan(r["worst_slowdown"]):
                mat[colls.index(r["collective"]), sizes.index(r["msg_bytes"])] = (
                    r["worst_slowdown"] if not math.isnan(r["worst_slowdown"]) else 0.5)
        fig, ax = plt.subplots(figsize=(1.2 + 0.75 * len(sizes), 0.9 + 0.42 * len(colls)))
        ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, norm=norm, aspect="auto")
        for i, coll in enumerate(colls):
            for j, n in enumerate(sizes):
                val = mat[i, j]
                if np.isnan(val):
                    txt = "?" if (int(p), coll, int(n)) in unsure else ""
                elif val <= 1.0:
                    txt = "ok" if (int(p), coll, int(n)) not in unsure else "?"
                else:
                    star = "*" if ((warned["nprocs"] == p) & (warned["collective"] == coll) &
                                   (warned["msg_bytes"] == n)).any() else ""
                    txt = f"{val:.2f}{star}"
                ax.text(j, i, txt, ha="center", va="center", fontsize=7,
                        color="white" if (not np.isnan(val) and val > 2.0) else "#222")
        ax.set_xticks(range(len(sizes)), [T.fmt_bytes(n) for n in sizes], fontsize=7, rotation=45, ha="right")
        ax.set_yticks(range(len(colls)), colls, fontsize=8)
        ax.set_title(f"{p} processes: worst violating slowdown per point", fontsize=9, loc="left")
        blocks.append(ctx.figure(fig, f"heat map of slowdowns at {p} processes"))
    legend = "".join(f'<span class="sev" style="background:{c};color:{"#fff" if i >= 4 else "#222"}">'
                     f'{html.escape(label)}'
                     f'{"" if math.isinf(b) else f" &le; {b:g}x"}</span>'
                     for i, (c, (b, label, _)) in enumerate(zip(SEVERITY_COLORS, stats.SEVERITY_CLASSES, strict=True)))
    return ("<p>Each cell: the largest slowdown of any violated guideline (pattern, library, monotony, split) "
            "at that collective and size; <i>ok</i> = no violation (every comparison there decided); <i>?</i> = no "
            "violation found but some comparison there undecided or untested; * = barrier warning. Colours are the "
            f"severity classes of docs/statistics.md: {legend}</p>" + "".join(blocks))


@_section("calibration", "A/A calibration", 80)
def _calibration(ctx: ReportContext) -> str:
    cal = ctx.result.calibration()
    if cal["comparisons"] == 0:
        return ("<p>Not measured: this run has no <code>default#aa</code> variant, so the error rate of the "
                "check on this machine was not verified.</p>")
    aa = ctx.verdicts[ctx.verdicts["kind"] == "aa"].sort_values(["nprocs", "collective", "msg_bytes"])
    fig, ax = plt.subplots(figsize=(7.2, 0.6 + 0.16 * len(aa)))
    y = np.arange(len(aa))
    tol = ctx.result.settings.tolerance
    ax.axvspan(-tol, tol, color="#2e7d32", alpha=0.12, lw=0)
    ax.axvline(0, color="#555", lw=0.8)
    rd, lo, hi = aa["rel_diff"].to_numpy(), aa["ci_low"].to_numpy(), aa["ci_high"].to_numpy()
    ax.errorbar(rd, y, xerr=interval_bars(rd, lo, hi), fmt="o", ms=3, color="#1565c0",
                ecolor="#90caf9", elinewidth=2)
    ax.set_yticks(y, [f"{c} {T.fmt_bytes(n)} ({p})" for c, n, p in zip(aa["collective"], aa["msg_bytes"],
                                                                         aa["nprocs"], strict=True)], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("relative difference default vs identical copy (1 - copy/default), 95% CI")
    img = ctx.figure(fig, "A/A calibration")
    verdict = ("passed: the check does not see differences that are not there"
               if cal["passed"] else "FAILED: the check flags identical code; treat its violations with suspicion "
               "(noisy machine? too few launches?)")
    return (f"<p>The default was measured twice within the same launches and the copy judged like a variant. "
            f"Result: <b>{verdict}</b>. {cal['violations']} of {cal['comparisons']} comparisons flagged as "
            f"violations (stated error rate {cal['alpha']:.0%}); before correction {cal['uncorrected_significant']} "
            f"had p &le; {cal['alpha']:g} (rate {cal['uncorrected_rate']:.1%}; binomial p against alpha "
            f"{cal['binomial_p']:.2g}). On pooled raw repetitions instead of per-launch medians: "
            f"{cal['pooled_raw_significant']} (rate {cal['pooled_raw_rate']:.1%}).</p>" + img)


@_section("quality", "Quality score", 90)
def _quality(ctx: ReportContext) -> str:
    qt = T.quality_table(ctx.verdicts)
    qt.columns = [c.removeprefix("points_").replace("_", " ") for c in qt.columns]
    return ("<p>100 &times; (1 &minus; mean penalty) over every tested (processes, collective, size) point; a "
            "point's penalty is that of its worst violation's severity class (good 0.1, tolerable 0.25, critical "
            "0.5, very critical 0.75, severe 1). Cautious ignores barrier-warned violations. See "
            "docs/statistics.md.</p>" + ctx.table(qt, {"score": lambda x: f"{x:.1f}" if not math.isnan(x) else ""}))


@_section("details", "All verdicts", 200)
def _details(ctx: ReportContext) -> str:
    d = T.detailed_violation_table(ctx.verdicts)
    fmt = {"msg_bytes": T.fmt_bytes, "ref_bytes": T.fmt_bytes, "default_median_s": T.fmt_time,
           "variant_median_s": T.fmt_time, "raw_default_median_s": T.fmt_time, "raw_variant_median_s": T.fmt_time,
           "slowdown": lambda x: T.fmt_float(x, 3), "rel_diff": T.fmt_pct, "ci_low": T.fmt_pct, "ci_high": T.fmt_pct,
           "p_value": T.fmt_p, "p_adjusted": T.fmt_p, "raw_p_value": T.fmt_p,
           "k": lambda x: "" if pd.isna(x) else str(int(x))}
    return (f"<details><summary>{len(d)} comparisons (raw = pooled repetitions, for reference)</summary>"
            f'<div class="scroll">{ctx.table(d, fmt, lambda r: "violation" if r["violation"] else "")}</div></details>')


