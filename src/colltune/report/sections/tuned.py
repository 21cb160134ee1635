"""Report section "Tuned vs default": on a validation run's page, that run's comparison of the
tuned library against the default; on other pages, the latest `colltune validate` of the
database."""

from __future__ import annotations

import html

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from colltune.report.context import interval_bars
from colltune.report.html import ReportContext, Section
from colltune.tune import validate as val
from colltune.units import human_bytes


def _validation(ctx: ReportContext, run_id: str | None) -> pd.DataFrame:
    """tune.validate.load on the page's open database."""
    return ctx.store.derived(val.VALIDATION_TABLE, run_id, order="collective, nprocs, msg_bytes")


def _table_for(ctx: ReportContext) -> pd.DataFrame:
    own = _validation(ctx, ctx.run_id)
    return own if not own.empty or ctx.kind == "validate" else _validation(ctx, None)


def _plot(ctx: ReportContext, table: pd.DataFrame) -> str:
    blocks = []
    for (p, coll), grp in table.groupby(["nprocs", "collective"], sort=True):
        grp = grp.sort_values("msg_bytes")
        fig, ax = plt.subplots(figsize=(7.2, 3.0))
        xs = np.arange(len(grp))
        y = grp["speedup"].to_numpy(float)
        err = np.vstack(interval_bars(y, grp["ci_low"].to_numpy(float), grp["ci_high"].to_numpy(float)))
        replaced = grp["profile_variant"].notna().to_numpy()
        colors = np.where(grp["slower"].to_numpy(bool), "#c62828",
                          np.where(grp["faster"].to_numpy(bool), "#2e7d32", "#555555"))
        ax.axhline(1.0, color="#555", lw=0.8)
        for i in range(len(grp)):
            ax.errorbar(xs[i], y[i], yerr=err[:, i:i + 1], fmt="o" if replaced[i] else "s", color=colors[i],
                        mfc=colors[i] if replaced[i] else "white", ms=6, capsize=3)
        ax.set_xticks(xs, [human_bytes(int(n)) for n in grp["msg_bytes"]], fontsize=8)
        ax.set_ylabel("speedup default / tuned")
        ax.set_xlabel("message size")
        ax.set_title(f"{coll}, {p} processes", fontsize=10, loc="left")
        ax.grid(axis="y", alpha=0.3)
        blocks.append(ctx.figure(fig, f"tuned vs default speedup of {coll} at {p} processes"))
    return f'<div class="plots">{"".join(blocks)}</div>'


def render(ctx: ReportContext) -> str | None:
    table = _table_for(ctx)
    if table.empty:
        if ctx.kind == "validate":
            return ('<p class="warn">This validation run was measured but never judged (it was interrupted?): '
                    f"judge it with <code>colltune validate --run {html.escape(ctx.run_id)} --profile PROFILE "
                    f"--db {html.escape(str(ctx.db_path))}</code>.</p>")
        return None
    s = val.summary(table)
    first = table.iloc[0]
    lead = (f"Validation run <code>{html.escape(str(first['run_id']))}</code> of profile "
            f"<code>{html.escape(str(first['profile_path']))}</code> (hash {html.escape(str(first['profile_hash']))}): "
            f"{s['replaced_points']} of {s['points']} measured points are replaced by the profile, geometric-mean "
            f"speedup there <b>{s['geomean_speedup_replaced']:.3f}x</b>; significantly faster at {s['faster']}, "
            f"significantly and more than {float(first['tolerance']):.0%} slower at <b>{s['slower']}</b> points "
            f"(Holm, alpha {float(first['alpha'])}, {float(first['confidence']):.0%} bootstrap intervals over "
            "launches). Points without a rule (hollow squares) measure the library against itself.")
    cls = "warn" if s["slower"] else "lead"
    shown = table[["nprocs", "collective", "msg_bytes", "profile_variant", "n_launches", "speedup", "ci_low",
                   "ci_high", "p_slower_adjusted", "faster", "slower"]].copy()
    shown["msg_bytes"] = [human_bytes(int(n)) for n in shown["msg_bytes"]]
    shown["profile_variant"] = [v if isinstance(v, str) else "library (A/A)" for v in shown["profile_variant"]]
    return (f'<p class="{cls}">{lead}</p>' + _plot(ctx, table)
            + ctx.table(shown, row_class=lambda r: "bad" if r["slower"] else ""))


SECTIONS = [Section(id="tuned", title="Tuned vs default", render=render, order=55, kinds=None)]
