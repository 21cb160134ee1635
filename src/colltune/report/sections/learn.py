"""Report section "Learning loop": the newest `colltune learn run` of the database (IOTA):
regret, estimated gain and exploration per batch, and the selection probabilities of the
busiest cells over batches (IOTA Fig. 5.10b)."""

from __future__ import annotations

import html

from colltune.learn.plots import loop_figures
from colltune.report.html import ReportContext, Section


def render(ctx: ReportContext) -> str | None:
    batches = ctx.store.learn_batches()
    if batches.empty:
        return None
    figures = [ctx.figure(fig, f"learning loop: {name}") for name, fig in loop_figures(ctx.store)]
    last = batches.iloc[-1]
    regret = last["regret"]
    regret_text = ("no ground truth or bench medians to score it against" if regret != regret or regret is None
                   else f"regret of its exploit-only table <b>{100 * float(regret):.2f}%</b> against the best "
                        + ("member of the ground truth" if last["source"] == "simulate" else
                           "member measured by colltune bench at the same points"))
    gain = last["est_gain"]
    lead = (f"Loop <code>{html.escape(str(last['loop_id']))}</code> ({html.escape(str(last['source']))}): "
            f"{len(batches)} batches; after the last, {regret_text}; estimated gain of the exploit choices over "
            f"the default on the last batch's calls "
            + ("-" if gain != gain or gain is None else f"<b>{float(gain):.3f}x</b>") + ". "
            "Probabilities are those of the table each batch ran with (batch 1: the starting table).")
    shown = batches[["batch", "wall_s", "traced_calls", "explored_calls", "collective_s", "est_gain", "regret",
                     "oracle_s", "default_s", "table_hash"]].copy()
    shown["table_hash"] = [f"{int(h):016x}" for h in shown["table_hash"]]
    return f'<p class="lead">{lead}</p><div class="plots">{"".join(figures)}</div>' + ctx.table(shown)


SECTIONS = [Section(id="learn", title="Learning loop", render=render, order=58)]
