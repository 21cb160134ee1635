"""Figures of a learning loop: selection probabilities of the busiest cells over batches (seed
001 Fig. 5.10b) and regret / estimated gain / exploration per batch. Used by the report section
(colltune.report.sections.learn) and `colltune learn plot` (PNG files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from colltune.learn import draw  # noqa: E402
from colltune.learn.selection import with_bins  # noqa: E402
from colltune.learn.table import Bins, bin_range, parse_table  # noqa: E402
from colltune.store.database import Store  # noqa: E402
from colltune.units import human_bytes  # noqa: E402


def cell_probabilities(batches: pd.DataFrame, portfolios: dict[str, list[str]],
                       cells: list[tuple[str, Bins]]) -> pd.DataFrame:
    """Probability of each member per batch in each of `cells`, under the table the batch ran
    with: explore cells their capped probabilities, exploit cells 1 for the argmax, cells the
    table does not list uniform over the portfolio (`unlisted explore`) or the default."""
    rows = []
    for _, b in batches.iterrows():
        table = parse_table(str(b["table_text"]).encode())
        for coll, cell in cells:
            port = portfolios.get(coll, ["default"])
            found = table.cell(coll, cell)
            if found is None:
                probs = dict.fromkeys(port, 1.0 / len(port)) if table.unlisted == "explore" else \
                    {m: float(m == "default") for m in port}
            else:
                members, c = found
                p = draw.probabilities(c.weights, table.caps) if c.mode == "explore" else \
                    [float(i == draw.pick_exploit(c.weights)) for i in range(len(members))]
                probs = {m: dict(zip(members, p, strict=True)).get(m, 0.0) for m in port}
            rows += [(int(b["batch"]), coll, cell, m, v) for m, v in probs.items()]
    return pd.DataFrame(rows, columns=["batch", "collective", "cell", "member", "probability"])


def busiest_cells(store: Store, batches: pd.DataFrame, bins: Bins, n: int = 4) -> list[tuple[str, Bins]]:
    """The cells with the most calls in the loop's last batch (one per collective first)."""
    ids = [i for i in str(batches["trace_run_id"].iloc[-1]).split(",") if i]
    calls = pd.concat([store.trace_calls(i) for i in ids], ignore_index=True) if ids else pd.DataFrame()
    if calls.empty:
        return []
    counts = with_bins(calls, bins).groupby(["collective", "s", "n", "p"]).size().sort_values(ascending=False)
    firsts = counts.groupby(level=0).head(1)
    order = list(firsts.index) + [k for k in counts.index if k not in set(firsts.index)]
    return [(str(k[0]), (int(k[1]), int(k[2]), int(k[3]))) for k in order[:n]]


def loop_portfolios(store: Store, batches: pd.DataFrame) -> dict[str, list[str]]:
    runs = store.trace_runs()
    ids = {i for v in batches["trace_run_id"] for i in str(v).split(",")}
    out: dict[str, list[str]] = {}
    for text in runs.loc[runs["trace_run_id"].isin(ids), "portfolios"].dropna():
        for coll, members in json.loads(text).items():
            out.setdefault(coll, list(members))
    return out


def cell_label(coll: str, cell: Bins, bins: Bins) -> str:
    lo, hi = bin_range("size", cell[0], bins[0])
    size = f">= {human_bytes(lo)}" if hi is None else f"{human_bytes(lo)} to < {human_bytes(hi + 1)}"
    n_lo, _ = bin_range("nodes", cell[1], bins[1])
    p_lo, _ = bin_range("ppn", cell[2], bins[2])
    return f"{coll} {size}, {n_lo}+ nodes, {p_lo}+ ppn"


def fig_probabilities(probs: pd.DataFrame, coll: str, cell: Bins, bins: Bins) -> Any:
    mine = probs[(probs["collective"] == coll) & (probs["cell"] == cell)]
    wide = mine.pivot_table(index="batch", columns="member", values="probability", sort=False).fillna(0.0)
    fig, ax = plt.subplots(figsize=(7.2, 2.8))
    ax.stackplot(wide.index.to_numpy(), wide.to_numpy().T, labels=list(wide.columns), alpha=0.85)
    ax.set_xlim(wide.index.min(), wide.index.max() if len(wide) > 1 else wide.index.min() + 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("batch (table the batch ran with)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("selection probability")
    ax.set_title(cell_label(coll, cell, bins), fontsize=10, loc="left")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def fig_progress(batches: pd.DataFrame) -> Any:
    fig, ax = plt.subplots(figsize=(7.2, 2.8))
    x = batches["batch"].to_numpy()
    if batches["regret"].notna().any():
        ax.plot(x, 100 * batches["regret"].to_numpy(float), "o-", color="#c62828", label="regret of the exploit table (%)")
    if batches["est_gain"].notna().any():
        ax.plot(x, 100 * (batches["est_gain"].to_numpy(float) - 1), "s--", color="#2e7d32",
                label="estimated gain over default (%)")
    if batches["default_s"].notna().any():
        cost = 100 * (batches["collective_s"] / batches["oracle_s"] - 1).to_numpy(float)
        ax.plot(x, cost, "^:", color="#555", label="batch time over oracle (%, with exploration)")
    ax.axhline(0, color="#999", lw=0.8)
    ax.set_xlabel("batch")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("%")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    ax2 = ax.twinx()
    ax2.bar(x, batches["explored_calls"].to_numpy(float), alpha=0.15, color="#1565c0")
    ax2.set_ylabel("explored calls", color="#1565c0")
    return fig


def loop_figures(store: Store, loop_id: str | None = None) -> list[tuple[str, Any]]:
    """(name, figure) of the newest (or given) loop; empty without one."""
    batches = store.learn_batches(loop_id)
    if batches.empty:
        return []
    bins = parse_table(str(batches["table_text"].iloc[-1]).encode()).bins
    probs = cell_probabilities(batches, loop_portfolios(store, batches), busiest_cells(store, batches, bins))
    figs = [("progress", fig_progress(batches))]
    for i, ((coll, cell), _) in enumerate(probs.groupby(["collective", "cell"], sort=False)):
        figs.append((f"probabilities-{i}-{coll}", fig_probabilities(probs, coll, cell, bins)))
    return figs


def write_pngs(store: Store, out_dir: Path, loop_id: str | None = None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in loop_figures(store, loop_id):
        path = out_dir / f"learn-{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths
