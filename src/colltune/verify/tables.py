"""pgchecker's comparers (pgchecker, 3.3) as tables, rendered with rich and written to CSV/Parquet.

Each builder is a pure function of the verdicts (and, for the runtime comparers, the per-variant
summary of check.summarize) returning a DataFrame whose columns are the file format. Times are
seconds in the files and formatted (ns/us/ms/s) only in the terminal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from colltune import catalog as catalog_mod
from colltune.paths import writable_dir
from colltune.units import human_bytes
from colltune.verify.check import GUIDELINE_KINDS, CheckResult, variant_label
from colltune.verify.comparisons import FORM_PAIRS
from colltune.verify.quality import quality_score

PATTERN_KINDS = ("pattern", "library")
# Guidelines whose ref is not the collective's default (a persistent form against the other
# forms): no faster alternative to the default, so they are listed by their two sides with the
# monotony and split violations, not in the grouped view.
OTHER_REF = tuple(f.guideline for f in FORM_PAIRS if f.ref != catalog_mod.DEFAULT)


def side_violations(verdicts: pd.DataFrame) -> pd.Series:
    """Violations listed by their two sides: monotony, split and the OTHER_REF guidelines."""
    return (verdicts["kind"].isin(["monotony", "split"]) | verdicts["guideline"].isin(OTHER_REF)) & verdicts["violation"]


# ---------------------------------------------------------------------------------------------
# Formatting


def fmt_bytes(n: float | int | None) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return ""
    return human_bytes(int(n))


def fmt_time(s: float | None) -> str:
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_p(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "-"
    return f"{p:.2g}"


def fmt_float(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.{digits}f}"


def fmt_pct(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{100 * x:+.1f}%"


# ---------------------------------------------------------------------------------------------
# Table builders


def _labels(df: pd.DataFrame, var_col: str = "variant") -> list[str]:
    cat = catalog_mod.load()
    return [variant_label(c, v, cat) for c, v in zip(df["collective"], df[var_col], strict=True)]


def absolute_runtimes(summary: pd.DataFrame) -> pd.DataFrame:
    """AbsRuntimeComparer: the median (of per-launch medians) of every measured variant."""
    s = summary.sort_values(["nprocs", "collective", "msg_bytes", "kind", "variant"]).copy()
    s["label"] = _labels(s)
    return s[["nprocs", "collective", "msg_bytes", "variant", "label", "n_launches", "n_samples",
              "median_s", "mean_s"]].reset_index(drop=True)


def relative_runtimes(summary: pd.DataFrame) -> pd.DataFrame:
    """RelRuntimeComparer: default median / variant median (pgchecker's slowdown; default = 1)."""
    s = absolute_runtimes(summary)
    base = s[s["variant"] == "default"].set_index(["nprocs", "collective", "msg_bytes"])["median_s"]
    key = pd.MultiIndex.from_frame(s[["nprocs", "collective", "msg_bytes"]])
    s["relative_runtime"] = base.reindex(key).to_numpy() / s["median_s"].to_numpy()
    return s[["nprocs", "collective", "msg_bytes", "variant", "label", "median_s", "relative_runtime"]]


def violation_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """ViolationComparer: per variant and size, test statistic, p-values and the verdict."""
    v = verdicts[verdicts["kind"].isin(PATTERN_KINDS + ("aa",))].copy()
    v = v.sort_values(["nprocs", "collective", "variant", "msg_bytes"])
    return v[["nprocs", "collective", "variant", "rhs", "guideline", "msg_bytes", "n_launches", "variant_median_s",
              "test", "statistic", "p_value", "p_adjusted", "p_equivalence_adjusted", "verdict", "violation",
              "barrier_warning"]].reset_index(drop=True)


def detailed_violation_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """DetailedViolationComparer: both medians, slowdown, relative difference with CI, every kind."""
    v = verdicts.sort_values(["kind", "nprocs", "collective", "msg_bytes", "variant"])
    return v[["nprocs", "kind", "guideline", "collective", "msg_bytes", "ref_bytes", "k", "lhs", "rhs",
              "n_launches", "default_median_s", "variant_median_s", "slowdown", "rel_diff", "ci_low", "ci_high",
              "test", "p_value", "p_adjusted", "p_equivalence", "p_equivalence_adjusted", "verdict", "look",
              "violation", "barrier_warning", "raw_default_median_s",
              "raw_variant_median_s", "raw_p_value", "partial", "note"]].reset_index(drop=True)


def grouped_violation_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """GroupedViolationComparer: one row per (collective, size), the fastest violating variant.
    Grouped once, not filtered per point (a check prints it twice: ~30 points, 0.1-0.3 s a time)."""
    cols = ["nprocs", "collective", "msg_bytes", "n_launches", "default_median_s", "violations", "undecided",
            "untested", "slowdown",
            "variant", "label", "guideline", "variant_median_s", "barrier_warning", "partial"]
    v = verdicts[verdicts["kind"].isin(PATTERN_KINDS) & ~verdicts["guideline"].isin(OTHER_REF)]
    if v.empty:
        return pd.DataFrame(columns=cols)
    keys = ["nprocs", "collective", "msg_bytes"]
    violation = v["violation"].astype(bool)
    points = v.groupby(keys, sort=True)
    out = pd.DataFrame({
        "n_launches": points["n_launches_default"].max().astype(int),
        "default_median_s": v.groupby(keys, sort=True).head(1).set_index(keys)["default_median_s"].astype(float),
        "violations": violation.groupby([v[k] for k in keys], sort=True).sum().astype(int),
        "undecided": (v["verdict"] == "undecided").groupby([v[k] for k in keys], sort=True).sum().astype(int),
        "untested": (v["verdict"] == "untested").groupby([v[k] for k in keys], sort=True).sum().astype(int),
        "partial": points["partial"].any().astype(bool),
    })
    # The fastest violating variant of each point: a stable sort keeps the first of equal medians.
    best = v[violation].sort_values("variant_median_s", kind="stable").groupby(keys, sort=True).head(1)
    best = best.set_index(keys).reindex(out.index)
    out["slowdown"] = best["slowdown"].astype(float)
    out["variant"] = best["variant"].fillna("").astype(str)
    out["label"] = best["rhs"].fillna("").astype(str)
    out["guideline"] = best["guideline"].fillna("").astype(str)
    out["variant_median_s"] = best["variant_median_s"].astype(float)
    out["barrier_warning"] = best["barrier_warning"].fillna(False).astype(bool)
    out = out.reset_index()
    out[["nprocs", "msg_bytes"]] = out[["nprocs", "msg_bytes"]].astype("int64")
    return out[cols]


def totals_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Counts per guideline kind: tested comparisons, violations brave (all) and cautious, comparisons
    shown free of violation (equivalence), undecided and untested, and (last) shown within the
    tolerance's margin ("no practical violation"; a point decided so counts under no_violation)."""
    rows = []
    judged = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS)]
    for kind in ("pattern", "library", "monotony", "split"):
        k = judged[judged["kind"] == kind]
        rows.append(_count_row(kind, k))
    g = grouped_violation_table(verdicts)
    rows.append({"scope": "points (collective, size)", "tested": int(len(g)),
                 "brave": int((g["violations"] > 0).sum()),
                 "cautious": int(((g["violations"] > 0) & ~g["barrier_warning"]).sum()),
                 "no_violation": int(((g["violations"] == 0) & (g["undecided"] == 0) & (g["untested"] == 0)).sum()),
                 "undecided": int(((g["violations"] == 0) & (g["undecided"] > 0)).sum()),
                 "untested": int(((g["violations"] == 0) & (g["undecided"] == 0) & (g["untested"] > 0)).sum()),
                 "no_practical": 0})
    rows.append(_count_row("all comparisons", judged))
    return pd.DataFrame(rows, columns=["scope", "tested", "brave", "cautious", "no_violation", "undecided",
                                       "untested", "no_practical"])


def _count_row(scope: str, v: pd.DataFrame) -> dict[str, object]:
    tested = v[v["p_value"].notna()]
    vio = tested[tested["violation"].astype(bool)]   # an empty object column would select columns
    return {"scope": scope, "tested": int(len(tested)), "brave": int(len(vio)),
            "cautious": int((~vio["barrier_warning"]).sum()),
            "no_violation": int((tested["verdict"] == "no violation").sum()),
            "undecided": int((tested["verdict"] == "undecided").sum()), "untested": int(len(v) - len(tested)),
            "no_practical": int((tested["verdict"] == "no practical violation").sum())}


def per_collective_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    judged = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS)]
    rows = []
    for (p, coll), grp in judged.groupby(["nprocs", "collective"], sort=True):
        tested = grp[grp["p_value"].notna()]
        vio = tested[tested["violation"]]
        rows.append({"nprocs": p, "collective": coll, "tested": int(len(tested)), "brave": int(len(vio)),
                     "cautious": int((~vio["barrier_warning"]).sum()),
                     "pattern": int((vio["kind"] == "pattern").sum()), "library": int((vio["kind"] == "library").sum()),
                     "monotony": int((vio["kind"] == "monotony").sum()), "split": int((vio["kind"] == "split").sum()),
                     "worst_slowdown": float(vio["slowdown"].max()) if len(vio) else math.nan})
    return pd.DataFrame(rows, columns=["nprocs", "collective", "tested", "brave", "cautious", "pattern", "library",
                                       "monotony", "split", "worst_slowdown"])


def worst_slowdowns_table(verdicts: pd.DataFrame, top: int = 10) -> pd.DataFrame:
    v = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS) & verdicts["violation"]]
    v = v.sort_values("slowdown", ascending=False).head(top)
    return v[["nprocs", "kind", "guideline", "collective", "msg_bytes", "lhs", "rhs", "slowdown", "rel_diff",
              "ci_low", "ci_high", "p_adjusted", "barrier_warning"]].reset_index(drop=True)


def calibration_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    v = verdicts[verdicts["kind"] == "aa"].sort_values(["nprocs", "collective", "msg_bytes"])
    return v[["nprocs", "collective", "msg_bytes", "n_launches", "default_median_s", "variant_median_s", "rel_diff",
              "p_value", "p_adjusted", "violation", "raw_p_value"]].reset_index(drop=True)


def quality_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for mode, cautious in (("cautious", True), ("brave", False)):
        q = quality_score(verdicts, cautious)
        rows.append({"mode": mode, "score": q.score, "points": q.points, "violated_points": q.violated_points,
                     "complete": q.complete, "comparisons": q.comparisons, "untested": q.untested,
                     "undecided": q.undecided,
                     **{f"points_{k.replace(' ', '_')}": n for k, n in q.by_class.items()}})
    return pd.DataFrame(rows)


def all_tables(result: CheckResult) -> dict[str, pd.DataFrame]:
    """Every table of a check, by file stem."""
    v = result.verdicts
    return {
        "absolute_runtimes": absolute_runtimes(result.summary),
        "relative_runtimes": relative_runtimes(result.summary),
        "violations": violation_table(v),
        "detailed_violations": detailed_violation_table(v),
        "grouped_violations": grouped_violation_table(v),
        "totals": totals_table(v),
        "per_collective": per_collective_table(v),
        "worst_slowdowns": worst_slowdowns_table(v),
        "calibration": calibration_table(v),
        "quality": quality_table(v),
    }


# ---------------------------------------------------------------------------------------------
# Writers


def write_csv(tables: dict[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    writable_dir(out_dir, "tables")
    paths = []
    for name, df in tables.items():
        path = out_dir / f"{name}.csv"
        df.to_csv(path, index=False)
        paths.append(path)
    return paths


def write_parquet(tables: dict[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    writable_dir(out_dir, "tables")
    paths = []
    for name, df in tables.items():
        path = out_dir / f"{name}.parquet"
        # Object columns mixing str and NaN are stored as strings so every reader agrees.
        clean = df.copy()
        for col in clean.columns:
            if clean[col].dtype == object:
                clean[col] = clean[col].map(lambda x: None if x is None or (isinstance(x, float) and math.isnan(x))
                                            else str(x))
        clean.to_parquet(path, index=False)
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------
# Terminal rendering


# Identifiers that must never be cut inside a narrow terminal; long descriptions wrap instead.
_KEEP_WHOLE = {"collective", "guideline", "GL", "size", "test", "verdict", "kind"}


class _Table(Table):
    """A terminal table that may leave out the process-count column (one count: said in the title)."""

    skip_procs: bool = False


def _table(title: str, columns: list[tuple[str, str]], caption: str | None = None,
           nprocs: pd.Series | None = None, layout: str = "") -> _Table:
    skip = nprocs is not None and columns[0][0] == "procs" and nprocs.nunique() == 1
    if skip:
        title = f"{title}, {int(nprocs.iloc[0])} processes{layout}"  # type: ignore[union-attr]
        columns = columns[1:]
    t = _Table(title=title, caption=caption, box=box.SIMPLE_HEAD, title_justify="left", caption_justify="left",
               title_style="bold", collapse_padding=True, pad_edge=False)
    t.skip_procs = skip
    for name, justify in columns:
        # A narrow terminal wraps headers between words and long descriptions, never inside a
        # word or a figure: each column is at least as wide as its longest header word.
        text = justify == "left" and name not in _KEEP_WHOLE
        t.add_column(name, justify=justify,  # type: ignore[arg-type]
                     min_width=max((len(w) for w in name.split()), default=1), ratio=1 if text else None)
    return t


def _add_row(t: _Table, *cells: str, style: str | None = None) -> None:
    """Cells are data, never markup (variant names may contain brackets)."""
    if t.skip_procs:
        cells = cells[1:]
    for column, cell in zip(t.columns, cells):
        if column.justify == "right" or str(column.header) in _KEEP_WHOLE:
            column.min_width = max(column.min_width or 0, len(cell))  # figures stay on one line
    t.add_row(*(escape(c) for c in cells), style=style)


def _layout(verdicts: pd.DataFrame) -> str:
    """The title's layout, like ' on 2 nodes x 2', when the verdicts say one (docs/cluster.md)."""
    if not {"nodes", "ppn"} <= set(verdicts.columns):
        return ""
    shapes = verdicts[["nodes", "ppn"]].dropna().drop_duplicates()
    if len(shapes) != 1 or verdicts[["nodes", "ppn"]].isna().any().any():
        return ""
    nodes, ppn = (int(x) for x in shapes.iloc[0])
    return f" on {nodes} node{'s' if nodes > 1 else ''} x {ppn}"


def render_grouped(verdicts: pd.DataFrame, only_violations: bool = False) -> Table:
    g = grouped_violation_table(verdicts)
    if only_violations:
        g = g[g["violations"] > 0]
    t = _table("Grouped violations (fastest violating variant per collective and size)",
               [("procs", "right"), ("collective", "left"), ("size", "right"), ("R", "right"),
                ("default", "right"), ("slower", "right"), ("fastest violating variant", "left"),
                ("GL", "left"), ("its median", "right"), ("not decided", "left")],
               caption="R: launches (+ partial: some launches incomplete); slower: default / fastest violating "
                       "variant; * barrier warning: the difference is within one MPI_Barrier (counted brave, "
                       "not cautious)",
               nprocs=g["nprocs"], layout=_layout(verdicts))
    for _, r in g.iterrows():
        name = r["label"] + ("*" if r["barrier_warning"] else "") if r["violations"] else ""
        style = ("yellow" if r["barrier_warning"] else "red") if r["violations"] else None
        _add_row(t, str(r["nprocs"]), r["collective"], fmt_bytes(r["msg_bytes"]),
                  str(r["n_launches"]) + ("+" if r["partial"] else ""), fmt_time(r["default_median_s"]),
                  fmt_float(r["slowdown"], 2), name, r["guideline"], fmt_time(r["variant_median_s"]),
                  _gaps(r), style=style)
    return t


def _gaps(r: pd.Series) -> str:
    """Comparisons of the point that are not decided: never shown as clean."""
    parts = [f"{int(r[c])} {c}" for c in ("undecided", "untested") if r[c]]
    return ", ".join(parts) if parts else ""


def render_detailed(verdicts: pd.DataFrame, kinds: tuple[str, ...] | None = None) -> Table:
    """The violations of `kinds` by their two sides; None: those of side_violations."""
    d = detailed_violation_table(verdicts)
    d = d[d["kind"].isin(kinds) & d["violation"]] if kinds else d[side_violations(d).to_numpy()]
    title = " and ".join(kinds).capitalize() if kinds else "Monotony, split and form"
    t = _table(f"{title} violations",
               [("procs", "right"), ("guideline", "left"), ("should not be slower", "left"), ("than", "left"),
                ("slowdown", "right"), ("rel. diff [95% CI]", "right"), ("p adj.", "right"), ("test", "left")],
               nprocs=d["nprocs"])
    for _, r in d.iterrows():
        _add_row(t, str(r["nprocs"]), r["guideline"], r["lhs"], r["rhs"] + ("*" if r["barrier_warning"] else ""),
                  fmt_float(r["slowdown"], 2),
                  f"{fmt_pct(r['rel_diff'])} [{fmt_pct(r['ci_low'])}, {fmt_pct(r['ci_high'])}]", fmt_p(r["p_adjusted"]),
                  str(r["test"]))
    return t


def render_totals(verdicts: pd.DataFrame) -> Table:
    tt = totals_table(verdicts)
    practical = bool(tt["no_practical"].any())  # the column only where a margin decided something
    t = _table("Totals", [("", "left"), ("tested", "right"), ("violations (brave)", "right"),
                          ("cautious", "right"), ("no violation", "right"), ("undecided", "right"),
                          ("untested", "right")] + ([("no practical violation", "right")] if practical else []))
    for _, r in tt.iterrows():
        _add_row(t, r["scope"], str(r["tested"]), str(r["brave"]), str(r["cautious"]), str(r["no_violation"]),
                 str(r["undecided"]), str(r["untested"]), *([str(r["no_practical"])] if practical else []))
    return t


def render_per_collective(verdicts: pd.DataFrame) -> Table:
    pc = per_collective_table(verdicts)
    t = _table("Per collective", [("procs", "right"), ("collective", "left"), ("tested", "right"), ("brave", "right"),
                                  ("cautious", "right"), ("pattern", "right"), ("library", "right"),
                                  ("monotony", "right"), ("split", "right"), ("worst", "right")],
               caption="worst: the largest slowdown of a violation",
               nprocs=pc["nprocs"])
    for _, r in pc.iterrows():
        _add_row(t, *(str(r[c]) for c in ("nprocs", "collective", "tested", "brave", "cautious", "pattern",
                                         "library", "monotony", "split")), fmt_float(r["worst_slowdown"], 2))
    return t


def render_worst(verdicts: pd.DataFrame, top: int = 10) -> Table:
    w = worst_slowdowns_table(verdicts, top)
    t = _table(f"Worst slowdowns (top {top})", [("procs", "right"), ("guideline", "left"), ("should not be slower", "left"),
                                                ("than", "left"), ("size", "right"), ("slowdown", "right"),
                                                ("95% CI of rel. diff", "right")], nprocs=w["nprocs"])
    for _, r in w.iterrows():
        _add_row(t, str(r["nprocs"]), r["guideline"], r["lhs"], r["rhs"] + ("*" if r["barrier_warning"] else ""),
                  fmt_bytes(r["msg_bytes"]), fmt_float(r["slowdown"], 2),
                  f"[{fmt_pct(r['ci_low'])}, {fmt_pct(r['ci_high'])}]")
    return t


def render_runtimes(summary: pd.DataFrame, relative: bool = False) -> Table:
    if relative:
        r = relative_runtimes(summary)
        t = _table("Relative runtimes (default median / variant median)",
                   [("procs", "right"), ("collective", "left"), ("size", "right"), ("variant", "left"),
                    ("relative", "right")], nprocs=r["nprocs"])
        for _, x in r.iterrows():
            _add_row(t, str(x["nprocs"]), x["collective"], fmt_bytes(x["msg_bytes"]), x["label"],
                      fmt_float(x["relative_runtime"], 3))
        return t
    a = absolute_runtimes(summary)
    t = _table("Absolute runtimes (median of per-launch medians)",
               [("procs", "right"), ("collective", "left"), ("size", "right"), ("variant", "left"),
                ("launches", "right"), ("samples", "right"), ("median", "right"), ("mean", "right")],
               nprocs=a["nprocs"])
    for _, x in a.iterrows():
        _add_row(t, str(x["nprocs"]), x["collective"], fmt_bytes(x["msg_bytes"]), x["label"], str(x["n_launches"]),
                  str(x["n_samples"]), fmt_time(x["median_s"]), fmt_time(x["mean_s"]))
    return t


def undecided_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The guideline comparisons left undecided, each with why (its note, decide.undecided_reason)."""
    v = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS) & (verdicts["verdict"] == "undecided")]
    return v[["nprocs", "collective", "guideline", "lhs", "rhs", "msg_bytes", "n_launches", "slowdown",
              "note"]].reset_index(drop=True)


def render_undecided(verdicts: pd.DataFrame) -> Table | None:
    v = undecided_table(verdicts)
    if v.empty:
        return None
    t = _table(f"Undecided comparisons ({len(v)}): why", [("procs", "right"), ("guideline", "left"),
                                                         ("should not be slower", "left"),
                                                         ("than", "left"), ("launches", "right"), ("why", "left")],
               nprocs=v["nprocs"])
    for _, r in v.iterrows():
        _add_row(t, str(r["nprocs"]), str(r["guideline"]), str(r["lhs"]), str(r["rhs"]), str(r["n_launches"]),
                 str(r["note"]).removeprefix("undecided: "))
    return t


def render_calibration(result: CheckResult) -> str:
    c = result.calibration()
    if c["comparisons"] == 0 and c["untested"]:
        return (f"A/A calibration: not tested ({c['untested']} identical-copy comparisons measured, each on too "
                f"few launches for a test: `--launches {result.settings.min_launches}` or more)")
    if c["comparisons"] == 0:
        return "A/A calibration: not measured (no default#aa variant in this run)"
    state = {True: "[green]passed[/]", False: "[red]FAILED[/]", None: "n/a"}[c["passed"]]
    return (f"A/A calibration {state}: {c['violations']} of {c['comparisons']} identical-copy comparisons flagged "
            f"(uncorrected p <= {c['alpha']:g}: {c['uncorrected_significant']}, "
            f"rate {c['uncorrected_rate']:.1%}; stated error rate {c['alpha']:.0%})")


COMPARERS: dict[str, Callable[[CheckResult], Table]] = {
    "absolute": lambda r: render_runtimes(r.summary, relative=False),
    "relative": lambda r: render_runtimes(r.summary, relative=True),
    "violation": lambda r: _render_violation(r.verdicts),
    "detailed": lambda r: render_detailed(r.verdicts, ("pattern", "library", "monotony", "split")),
    "grouped": lambda r: render_grouped(r.verdicts),
}


def _render_violation(verdicts: pd.DataFrame) -> Table:
    v = violation_table(verdicts)
    t = _table("Violations per variant", [("procs", "right"), ("collective", "left"), ("variant", "left"),
                                          ("guideline", "left"), ("size", "right"), ("launches", "right"),
                                          ("median", "right"), ("test", "left"), ("p", "right"),
                                          ("p adj.", "right"), ("verdict", "left")], nprocs=v["nprocs"])
    for _, r in v.iterrows():
        _add_row(t, str(r["nprocs"]), r["collective"], r["rhs"] + ("*" if r["barrier_warning"] else ""), r["guideline"],
                  fmt_bytes(r["msg_bytes"]), str(r["n_launches"]), fmt_time(r["variant_median_s"]),
                  str(r["test"]), fmt_p(r["p_value"]), fmt_p(r["p_adjusted"]), str(r["verdict"]),
                  style="red" if r["violation"] else ("yellow" if r["verdict"] in ("undecided", "untested") else None))
    return t


def print_check(result: CheckResult, console: Console, comparer: str = "grouped") -> None:
    """The terminal output of `colltune check`: the chosen comparer, then totals and quality."""
    v = result.verdicts
    console.print(COMPARERS[comparer](result))
    if comparer == "grouped" and side_violations(v).any():
        console.print(render_detailed(v))
    console.print(render_totals(v))
    if v["violation"].any():
        console.print(render_per_collective(v))
        console.print(render_worst(v))
    if (undecided := render_undecided(v)) is not None:
        console.print(undecided)
    console.print(render_calibration(result))
    qc, qb = quality_score(v, cautious=True), quality_score(v, cautious=False)
    cov = result.coverage()
    console.print(f"Quality score: [bold]{escape(qc.describe(cov))}[/] cautious; brave {qb.score:.1f}/100")
    console.print(f"[bold]Verdict:[/] {escape(cov.headline())}")
