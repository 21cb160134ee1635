"""The next selection table from the models (IOTA 4.5.2 and 4.6.2).

Per collective whose models are trained, per listed cell: the predicted runtime t_m of every
trained member, the performance vector 1/t_m normalised over them, the evidence (calls of each
member in the cell). Untrained members keep a uniform share 1/M (capped just below the best
trained member's weight, so the argmax is always a trained member). The cell is `exploit` when
every member has at least `min_cell_evidence` calls there and the best predicted member beats
the second by more than `margin`; otherwise `explore`. Collectives that are not trained are not
listed: the runtime explores them uniformly (`unlisted explore`).

Replication guard (`replicate`, not in the seed): a member other than the default becomes a
cell's best only if it was faster than the default in that cell in at least `replicate` runs
(trace runs, bench launches) and in more than half of the runs where both were measured there,
each run compared on its own (call-weighted mean of its per-point medians). Comparing within a
run pairs the two members under the same machine load; a model fitted over all runs cannot tell
a member that is faster from one that was drawn in quieter runs, and on a loaded machine the
run-to-run spread of microsecond collectives is far above the members' differences
(benchmarks/learn/README.md section 3). A held cell keeps exploring with the default on top.

Bench veto (`veto_tolerance`, not in the seed): where the database holds `colltune bench`/`check`
launches of the library with both the default and the cell's best member at the points the
application called in the cell, that member may replace the default only if bench does not measure
it slower there: it is vetoed when, launch by launch (the two members paired under the same load,
call-weighted over the points), it is slower than the default in a strict majority of the launches
and the median of its time ratios exceeds 1 + `veto_tolerance`. The replication guard does not
protect against picking the luckiest of a dozen noisy members (each beats the default in some
runs by chance, and the models pick the one that did most often); a synchronized benchmark of
hundreds of repetitions per launch is the stronger evidence of the two. A vetoed cell is held
like one that fails replication.

Where a cell is queried: at the points the application called in it (its message sizes and
layouts), weighted by calls, so the prediction is the one for the calls the cell stands for; at
the geometric cell centre (docs/select.md) only for cells without calls (`all_cells`). A cell
centre lies on the midpoint between two powers of two in log space, where the trees' split
thresholds between neighbouring observed sizes fall too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from colltune import catalog
from colltune.learn import draw
from colltune.learn.models import BENCH_RUN, CollectiveModels, features
from colltune.learn.table import (
    DEFAULT_BINS,
    Bins,
    Cell,
    CollectiveTable,
    SelectionTable,
    bin_centre,
)


@dataclass(frozen=True)
class SelectionSettings:
    margin: float = 0.05
    min_cell_evidence: int = 10
    bins: Bins = DEFAULT_BINS
    caps: tuple[float, float] = draw.DEFAULT_CAPS
    budget: int = 1000
    cell_budget: int = 100  # explored calls per communicator, collective and size bin (the table's `cellbudget`)
    all_cells: bool = False  # also list cells without calls (model inference at their centres)
    replicate: int = 3  # runs a non-default member must win against the default in (module doc); 0: off
    veto_tolerance: float = 0.05  # bench veto (module doc): median slowdown vs the default beyond this; inf: off


@dataclass
class CellReport:
    collective: str
    bins: Bins
    members: tuple[str, ...]
    predicted: dict[str, float]  # trained members only, seconds
    evidence: dict[str, int]
    calls: int  # calls of all members in the cell
    mode: str
    weights: tuple[float, ...]
    best: str
    held: bool = False  # a guard kept the default on top
    why: str = ""  # why it was held (bench veto, replication), for `learn table --show`

    @property
    def gain(self) -> float | None:
        """Predicted default time over the best member's time in this cell."""
        d = self.predicted.get(catalog.DEFAULT)
        return None if d is None else d / self.predicted[self.best]


def _bitlen(values: pd.Series) -> np.ndarray:
    """bit_length of non-negative integers below 2^53 (frexp is exact there)."""
    return np.frexp(np.maximum(values.to_numpy(float), 0.0))[1].astype(np.int64)


def with_bins(frame: pd.DataFrame, bins: Bins) -> pd.DataFrame:
    """The frame with columns s, n, p: the cell of each row under these bin counts."""
    return frame.assign(
        s=np.minimum(_bitlen(frame["msg_bytes"].astype(float).round()), bins[0] - 1),
        n=np.minimum(_bitlen(frame["nodes"].clip(lower=1).astype(float).round()) - 1, bins[1] - 1),
        p=np.minimum(_bitlen(frame["ppn"].clip(lower=1).astype(float).round()) - 1, bins[2] - 1))


def _weights(members: list[str], pred: dict[str, float]) -> tuple[float, ...]:
    trained = [m for m in members if m in pred]
    perf = {m: 1.0 / max(pred[m], 1e-12) for m in trained}
    total = sum(perf.values())
    share = {m: len(trained) / len(members) * perf[m] / total for m in trained}
    top = max(share.values())
    uniform = min(1.0 / len(members), 0.999 * top)
    return tuple(share.get(m, uniform) for m in members)


def _query_points(coll_points: pd.DataFrame, s: SelectionSettings) -> pd.DataFrame:
    """Distinct (msg_bytes, nodes, ppn) the collective was called with (calls summed), plus the
    centres of all other cells under `all_cells`; with their cells s, n, p."""
    pts = coll_points.groupby(["msg_bytes", "nodes", "ppn"], as_index=False)["n"].sum()
    pts = with_bins(pts.rename(columns={"n": "calls"}), s.bins)
    if s.all_cells:
        seen = set(zip(pts["s"], pts["n"], pts["p"], strict=True))
        centres = [(bin_centre("size", a), bin_centre("nodes", b), bin_centre("ppn", c), 0, a, b, c)
                   for a in range(s.bins[0]) for b in range(s.bins[1]) for c in range(s.bins[2])
                   if (a, b, c) not in seen]
        pts = pd.concat([pts, pd.DataFrame(centres, columns=["msg_bytes", "nodes", "ppn", "calls", "s", "n", "p"])],
                        ignore_index=True)
    return pts


def reports_for(cm: CollectiveModels, coll_points: pd.DataFrame, s: SelectionSettings) -> list[CellReport]:
    """One report per listed cell of one trained collective."""
    pts = _query_points(coll_points, s)
    x = features(pts["msg_bytes"].to_numpy(float), pts["nodes"].to_numpy(float), pts["ppn"].to_numpy(float))
    calls = pts["calls"].to_numpy(float)
    weight = np.maximum(calls, 1.0)
    trained = cm.trained_members()
    preds = {m: cm.models[m].predict(x) for m in trained}
    ev = _evidence(coll_points, s)
    runs = _per_run(coll_points, s) if s.replicate > 0 else {}
    bench = _bench_cells(coll_points, s)
    groups: dict[Bins, list[int]] = {}
    for i, k in enumerate(zip(pts["s"], pts["n"], pts["p"], strict=True)):
        groups.setdefault((int(k[0]), int(k[1]), int(k[2])), []).append(i)
    out = []
    for cell, idx in sorted(groups.items()):
        w = weight[idx]
        evidence = {m: ev.get((m, *cell), 0) for m in cm.members}
        pred = {m: float(np.dot(preds[m][idx], w) / w.sum()) for m in trained}
        ranked = sorted(trained, key=lambda m: pred[m])
        best = ranked[0]
        clear = len(ranked) == 1 or pred[ranked[1]] > pred[best] * (1.0 + s.margin)
        enough = len(trained) == len(cm.members) and min(evidence.values()) >= s.min_cell_evidence
        weights = _weights(cm.members, pred)
        why = (_hold_reason(best, bench.get(cell), runs.get(cell), s)
               if best != catalog.DEFAULT and catalog.DEFAULT in pred else "")
        if why:
            best, clear = catalog.DEFAULT, False
            top = max(weights)
            weights = tuple(top * 1.001 if m == catalog.DEFAULT else w for m, w in zip(cm.members, weights, strict=True))
        out.append(CellReport(cm.name, cell, tuple(cm.members), pred, evidence, int(calls[idx].sum()),
                              "exploit" if clear and enough else "explore", weights, best, bool(why), why))
    return out


def _per_run(coll_points: pd.DataFrame, s: SelectionSettings) -> dict[Bins, pd.DataFrame]:
    """Per cell: a frame run x member of the call-weighted mean of the run's per-point medians."""
    if "run" not in coll_points or coll_points["run"].isna().all():
        return {}
    b = with_bins(coll_points.rename(columns={"n": "calls"}), s.bins)
    b = b.assign(tw=b["time_s"] * b["calls"])
    sums = b.groupby(["s", "n", "p", "run", "member"])[["tw", "calls"]].sum()
    mean = (sums["tw"] / sums["calls"]).unstack("member")
    return {(int(k[0]), int(k[1]), int(k[2])): g.droplevel(["s", "n", "p"])
            for k, g in mean.groupby(level=["s", "n", "p"])}


def _wins(per_run: pd.DataFrame | None, best: str) -> tuple[int, int]:
    """(runs in which `best` was faster than the default in the cell, runs with both measured)."""
    if per_run is None or best not in per_run or catalog.DEFAULT not in per_run:
        return 0, 0
    both = per_run[[best, catalog.DEFAULT]].dropna()
    return int((both[best] < both[catalog.DEFAULT]).sum()), len(both)


def _bench_cells(coll_points: pd.DataFrame, s: SelectionSettings) -> dict[Bins, pd.DataFrame]:
    """Per cell: the bench/check launches' medians (run, msg_bytes, nodes, ppn, member, time_s)
    at the points the application called there, with w = its calls at the point; in a cell
    without traced calls, at every benched point (w = 1)."""
    if "run" not in coll_points or s.veto_tolerance == np.inf:
        return {}
    is_bench = coll_points["run"].astype(str).str.startswith(BENCH_RUN)
    if not is_bench.any():
        return {}
    key = ["msg_bytes", "nodes", "ppn"]
    called = coll_points[~is_bench].groupby(key, as_index=False)["n"].sum().rename(columns={"n": "w"})
    traced_cells = set(zip(*(with_bins(called, s.bins)[c] for c in ("s", "n", "p")), strict=True))
    bench = with_bins(coll_points[is_bench].drop(columns="n").merge(called, on=key, how="left"), s.bins)
    out = {}
    for k, rows in bench.groupby(["s", "n", "p"]):
        cell = (int(k[0]), int(k[1]), int(k[2]))
        rows = rows.dropna(subset=["w"]) if cell in traced_cells else rows.assign(w=1.0)
        if not rows.empty:
            out[cell] = rows[["run", *key, "member", "time_s", "w"]]
    return out


def bench_ratios(rows: pd.DataFrame, candidate: str) -> pd.Series:
    """Per bench launch: the candidate's time over the default's, call-weighted over the points
    where that launch measured both (rows as `_bench_cells` gives them)."""
    key = ["run", "msg_bytes", "nodes", "ppn"]
    t = rows.pivot_table(index=key, columns="member", values="time_s", aggfunc="median")
    if candidate not in t or catalog.DEFAULT not in t:
        return pd.Series(dtype=float)
    both = t[[candidate, catalog.DEFAULT]].dropna()
    w = rows.groupby(key)["w"].first().loc[both.index]
    num = (both[candidate] * w).groupby(level="run").sum()
    den = (both[catalog.DEFAULT] * w).groupby(level="run").sum()
    return (num / den)[den > 0]


def bench_veto(ratios: pd.Series, tolerance: float) -> float | None:
    """The median ratio when bench contradicts the traces: the candidate slower than the default
    in a strict majority of the launches and by more than `tolerance` at the median; else None.
    Both conditions: one launch out of two or a within-noise median is not a measurement of
    "slower"."""
    if ratios.empty:
        return None
    med = float(ratios.median())
    return med if 2 * int((ratios > 1.0).sum()) > len(ratios) and med > 1.0 + tolerance else None


def _hold_reason(best: str, bench: pd.DataFrame | None, per_run: pd.DataFrame | None,
                 s: SelectionSettings) -> str:
    """Why `best` may not replace the default in a cell ("" if it may): the bench veto, then the
    replication guard."""
    if bench is not None:
        ratios = bench_ratios(bench, best)
        veto = bench_veto(ratios, s.veto_tolerance)
        if veto is not None:
            return (f"bench measures {best} {veto:.2f}x slower than default "
                    f"({int((ratios > 1.0).sum())} of {len(ratios)} launches)")
    if s.replicate > 0:
        wins, both = _wins(per_run, best)
        if wins < s.replicate or 2 * wins <= both:
            return f"{best} beat default in {wins} of {both} runs (needs >= {s.replicate} and more than half)"
    return ""


def _evidence(coll_points: pd.DataFrame, s: SelectionSettings) -> dict[tuple[str, int, int, int], int]:
    """Calls of each member per cell."""
    b = with_bins(coll_points.rename(columns={"n": "calls"}), s.bins)
    sums = b.groupby(["member", "s", "n", "p"])["calls"].sum()
    return {(str(k[0]), int(k[1]), int(k[2]), int(k[3])): int(v) for k, v in sums.items()}


def build_table(models: dict[str, CollectiveModels], points: pd.DataFrame,
                settings: SelectionSettings = SelectionSettings(), *, generator: str = "",
                mpi: str = "", comments: tuple[str, ...] = ()) -> tuple[SelectionTable, list[CellReport]]:
    """The selection table for the next run and the per-cell reports behind it."""
    colls: dict[str, CollectiveTable] = {}
    reports: list[CellReport] = []
    for name, cm in sorted(models.items()):
        mine = points[points["collective"] == name]
        if not cm.trained or mine.empty:
            continue
        cells = reports_for(cm, mine, settings)
        reports += cells
        colls[name] = CollectiveTable(name, tuple(cm.members),
                                      {r.bins: Cell(r.mode, tuple(round(w, 6) for w in r.weights)) for r in cells})
    table = SelectionTable(collectives=colls, bins=settings.bins, caps=settings.caps, unlisted="explore",
                           budget=settings.budget, cell_budget=settings.cell_budget, generator=generator, mpi=mpi, comments=comments)
    return table, reports


def estimated_gain(reports: list[CellReport], calls: pd.DataFrame, bins: Bins) -> float | None:
    """Predicted time of `calls` (collective, msg_bytes, nodes, ppn rows, one per call) with the
    default everywhere over that with each cell's best member; None without default models."""
    if calls.empty:
        return None
    by_cell = {(r.collective, r.bins): r for r in reports}
    cnt = with_bins(calls, bins).groupby(["collective", "s", "n", "p"]).size()
    num = den = 0.0
    for (coll, a, b, c), k in cnt.items():
        r = by_cell.get((coll, (int(a), int(b), int(c))))
        if r is None or r.gain is None:
            continue
        num += k * r.predicted[catalog.DEFAULT]
        den += k * r.predicted[r.best]
    return num / den if den > 0 else None
