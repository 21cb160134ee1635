"""Report section "Application advice": the latest `colltune advise` made with this database
(its `advice` table): findings, time per collective and call site, size histogram, imbalance,
and what --verify measured."""

from __future__ import annotations

import html
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from colltune.advise import topology, where
from colltune.report.html import ReportContext, Section


def _plots(ctx: ReportContext, report: dict[str, Any]) -> str:
    points = report["points"]
    if not points:
        return ""
    blocks = []
    sites: dict[str, float] = {}
    for p in points:
        share = p["total_s"] / max(sum(p["sites"].values()), 1)
        for site, calls in p["sites"].items():
            key = f"{p['collective']} @ {site}"
            sites[key] = sites.get(key, 0.0) + share * calls
    top = sorted(sites.items(), key=lambda kv: -kv[1])[:12]
    fig, ax = plt.subplots(figsize=(7.2, 0.35 * len(top) + 1))
    ax.barh([k for k, _ in top][::-1], [v * 1e3 for _, v in top][::-1], color="#1565c0")
    ax.set_xlabel("time (ms, slowest rank, split over sites by calls)")
    ax.set_title("time per collective and call site", fontsize=10, loc="left")
    blocks.append(ctx.figure(fig, "time per collective and call site"))

    fig, ax = plt.subplots(figsize=(7.2, 3.0))
    for coll in sorted({p["collective"] for p in points}):
        mine = [p for p in points if p["collective"] == coll and p["bin"] >= 0]
        ax.bar(np.array([p["bin"] for p in mine]) + 0.1 * len(blocks), [p["calls"] for p in mine],
               width=0.4, label=coll, alpha=0.8)
    ax.set_xlabel("message size bin (log2 bytes)")
    # (a light path's sample: a size bin's calls are then an estimate, advise.json's calls_interval)
    ax.set_ylabel("calls (some estimated)" if any(p.get("calls_interval") for p in points) else "calls")
    ax.legend(fontsize=8)
    ax.set_title("collective message sizes", fontsize=10, loc="left")
    blocks.append(ctx.figure(fig, "histogram of collective message sizes"))

    ranks = sorted({int(r) for p in points for r in p["per_rank_s"]})
    per_rank = [sum(p["per_rank_s"].get(str(r), 0.0) for p in points) for r in ranks]
    fig, ax = plt.subplots(figsize=(7.2, 2.6))
    ax.bar(ranks, [t * 1e3 for t in per_rank], color="#6a1b9a")
    ax.set_xlabel("rank")
    ax.set_ylabel("ms in collectives")
    ax.set_title("imbalance: time in collectives per rank (late ranks wait less)", fontsize=10, loc="left")
    blocks.append(ctx.figure(fig, "time in collectives per rank"))
    return f'<div class="plots">{"".join(blocks)}</div>'


def _where_table(report: dict[str, Any], top: int = 10) -> str:
    """Where the time goes (advise.json's "where", advise/where.py): the same rows as the
    terminal, with every call site; absent from reports of colltune before it."""
    table = report.get("where")
    if not table:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("call", "calls/rank", "bytes: mean (range)", "own cost",
                                             "waiting", "share", "slowest rank", "fastest rank",
                                             "call sites (calls, time)"))
    body = []
    for r in table["collectives"][:top] + table["p2p"][:top]:
        size = where.fmt_size(where.TimeRow(r["kind"], r["name"], bytes_mean=r["bytes_mean"],
                                            bytes_min=r["bytes_min"], bytes_max=r["bytes_max"]))
        sites = "<br>".join(f"<code>{html.escape(s['site'])}</code> {_site_calls(s)}, {where.fmt_s(s['time_s'])}"
                            for s in r["sites"])
        cells = (html.escape(r["name"]), f"{r['calls']:,}", size, where.fmt_s(r["own_s"]), where.fmt_s(r["wait_s"]),
                 f"{100 * r['share']:.1f}%", f"{r['slowest_rank']} ({where.fmt_s(r['slowest_s'])})",
                 f"{r['fastest_rank']} ({where.fmt_s(r['fastest_s'])})", sites)
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return ("<h3>Where the time goes</h3><p>Collectives by own cost, then point-to-point calls; "
            "figures of each call's slowest rank, share of the wall time "
            f"{table['wall_s']:.3f} s; ~: a site's calls estimated from a sample (95% interval), "
            f"its function's total exact.</p><table><tr>{head}</tr>{''.join(body)}</table>")


def _site_calls(site: dict) -> str:
    """A call site's calls; an estimate (a light path's sample) with `~` and its interval."""
    if not site.get("calls_estimated"):
        return f"{site['calls']:,}"
    lo, hi = site["calls_interval"]
    return f"~{site['calls']:,} ({lo:,}-{hi:,})"


def render(ctx: ReportContext) -> str | None:
    report = ctx.store.latest_advice()
    if report is None:
        return None
    items = "".join(
        f"<li><b>{html.escape(f['title'])}</b>"
        + (f" (predicted saving {f['saving_s'] * 1e3:.2f} ms)" if f["saving_s"] is not None else "")
        + "".join(f"<br><code>{html.escape(k)}: {html.escape(v)}</code>" for k, v in f["changes"].items())
        + (f"<br><i>check before changing the source:</i> {html.escape(f['check'])}" if f.get("check") else "")
        + ("<ul class=\"evidence\">" + "".join(f"<li>{html.escape(e)}</li>" for e in f["evidence"]) + "</ul>"
           if f.get("evidence") else "")
        + "</li>" for f in report["findings"])
    lead = (f"<p class=\"lead\">{report['nprocs']} ranks of {html.escape(report['library'])}, wall "
            f"{report['wall_s']:.3f} s; predicted saving {report['predicted_saving_s'] * 1e3:.2f} ms.</p>")
    if report.get("environment"):
        lead += "<p>" + "<br>".join(html.escape(line) for line in topology.describe(report["environment"])) + "</p>"
    verify = report.get("verification")
    if verify:
        lead += (f"<p>--verify: measured gain {verify['measured_gain_s'] * 1e3:.1f} ms vs predicted "
                 f"{verify['predicted_gain_s'] * 1e3:.1f} ms: {html.escape(verify['agreement'])}</p>")
        # per changed point (when there are several) and per call pattern (reports since they exist)
        points = verify.get("points") or []
        details = [f["verdict"] for f in (points if len(points) > 1 else []) + (verify.get("patterns") or [])]
        if details:
            lead += "<ul>" + "".join(f"<li>{html.escape(d)}</li>" for d in details) + "</ul>"
    return lead + _where_table(report) + f"<ol>{items}</ol>" + _plots(ctx, report)


SECTIONS = [Section(id="advise", title="Application advice", render=render, order=58)]
