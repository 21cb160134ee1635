"""Simulation backend (IOTA 5.4.7): an application that calls collectives with a given mix of
sizes and communicators, whose member runtimes come from a ground truth, with configurable noise,
skew and arrival imbalance and no communication at all.

It behaves like a run under the interposer's learning mode: the same draws (colltune.learn.draw
through SelectionTable.choose, seed per run, per-communicator call counters), a budget of
explored calls spread over cells by the table's `cellbudget`, a sample of traced ranks, and real
trace files (colltune.learn.traces.write_trace) that go through the same ingest -> train -> table path as a real application's.

Ground truth (TOML, docs/learn.md):
  name = "..."
  [app]     nprocs, nodes, calls (per run), seed, noise (lognormal sigma of each rank's duration),
            skew (share of calls with a heavy-tail slowdown, 1 + Pareto(2), seen by every rank),
            imbalance (mean arrival lateness of a rank, exponential, as a fraction of the call's
            time: early ranks wait inside the call), traced_ranks, budget (explored calls per
            communicator and run, like the runtime; overrides the table's `budget` as
            COLLTUNE_SELECT_BUDGET does; default: the table's), cell_budget (explored calls per
            communicator, collective and size bin and run, the runtime's rule; overrides the
            table's `cellbudget` as COLLTUNE_SELECT_CELL_BUDGET does; default: the table's),
            trace_cap (records per rank)
  [[app.mix]]  collective, msg_bytes = [...], share, comm_size (default nprocs: MPI_COMM_WORLD)
  [[member]]   collective, name, alpha_us, beta_ns (per byte), factor (default 1),
               ranges = [{lo, hi, factor}] (bytes inclusive: the factor there instead)
The true time of a member for a call is (alpha + beta * bytes) * log2(2 * comm_size) * factor.
The first member of each collective must be `default`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from colltune import catalog
from colltune.errors import ColltuneError
from colltune.learn import draw
from colltune.learn.table import SelectionTable, content_hash, format_table
from colltune.learn.traces import TraceFile, calls_array, write_trace


class TruthError(ColltuneError):
    """A ground-truth file is unusable; the message names the file and the field."""


@dataclass(frozen=True)
class MemberTruth:
    name: str
    alpha_us: float
    beta_ns: float
    factor: float = 1.0
    ranges: tuple[tuple[int, int, float], ...] = ()

    def time(self, msg_bytes: np.ndarray, comm_size: np.ndarray) -> np.ndarray:
        f = np.full(len(msg_bytes), self.factor)
        for lo, hi, factor in self.ranges:
            f = np.where((msg_bytes >= lo) & (msg_bytes <= hi), factor, f)
        return (self.alpha_us * 1e-6 + self.beta_ns * 1e-9 * msg_bytes) * np.log2(2.0 * comm_size) * f


@dataclass(frozen=True)
class MixEntry:
    collective: str
    msg_bytes: tuple[int, ...]
    share: float
    comm_size: int


@dataclass
class GroundTruth:
    name: str
    nprocs: int
    nodes: int
    calls: int
    seed: int = 1
    noise: float = 0.05
    skew: float = 0.0
    imbalance: float = 0.0
    traced_ranks: int = 4
    budget: int | None = None  # None: the table's `budget`
    cell_budget: int | None = None  # None: the table's `cellbudget`
    trace_cap: int = 1_000_000
    mix: list[MixEntry] = field(default_factory=list)
    members: dict[str, list[MemberTruth]] = field(default_factory=dict)


def load_truth(path: str | Path) -> GroundTruth:
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text())
        app = raw["app"]
        names = catalog.load().collective_names()
        members: dict[str, list[MemberTruth]] = {}
        for m in raw["member"]:
            ranges = tuple((int(r["lo"]), int(r["hi"]), float(r["factor"])) for r in m.get("ranges", ()))
            members.setdefault(m["collective"], []).append(MemberTruth(
                m["name"], float(m["alpha_us"]), float(m["beta_ns"]), float(m.get("factor", 1.0)), ranges))
        mix = [MixEntry(e["collective"], tuple(int(b) for b in e["msg_bytes"]), float(e["share"]),
                        int(e.get("comm_size", app["nprocs"]))) for e in app["mix"]]
        truth = GroundTruth(
            name=str(raw.get("name", p.stem)), nprocs=int(app["nprocs"]), nodes=int(app.get("nodes", 1)),
            calls=int(app["calls"]), seed=int(app.get("seed", 1)), noise=float(app.get("noise", 0.05)),
            skew=float(app.get("skew", 0.0)), imbalance=float(app.get("imbalance", 0.0)),
            traced_ranks=int(app.get("traced_ranks", 4)), budget=int(app["budget"]) if "budget" in app else None,
            cell_budget=int(app["cell_budget"]) if "cell_budget" in app else None, trace_cap=int(app.get("trace_cap", 1_000_000)),
            mix=mix, members=members)
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise TruthError(f"{p}: not a usable ground truth ({type(exc).__name__}: {exc}); see docs/learn.md") from None
    for coll, ms in truth.members.items():
        if coll not in names:
            raise TruthError(f"{p}: unknown collective {coll!r}")
        if ms[0].name != catalog.DEFAULT:
            raise TruthError(f"{p}: the first member of {coll} must be 'default' (runtime index 0)")
    for e in truth.mix:
        if e.collective not in truth.members:
            raise TruthError(f"{p}: the mix calls {e.collective}, which has no [[member]] entries")
        if not 1 <= e.comm_size <= truth.nprocs:
            raise TruthError(f"{p}: comm_size {e.comm_size} of {e.collective} outside 1..{truth.nprocs}")
    if truth.nprocs % truth.nodes:
        raise TruthError(f"{p}: nprocs {truth.nprocs} is not a multiple of nodes {truth.nodes}")
    return truth


@dataclass
class BatchRun:
    trace_dir: Path
    wall_s: float
    explored: int
    collective_s: float  # noise-free time of the calls as run (with the draws)


class Simulator:
    """One simulated application: the same call sequence every run (an application repeats its
    work), new draws and noise every run (the runtime's seed is new at every MPI_Init)."""

    def __init__(self, truth: GroundTruth) -> None:
        self.truth = truth
        rng = np.random.default_rng(truth.seed)
        shares = np.array([e.share for e in truth.mix], float)
        pick = rng.choice(len(truth.mix), size=truth.calls, p=shares / shares.sum())
        ppn_world = truth.nprocs // truth.nodes
        comm_ids = {size: i for i, size in enumerate(sorted({e.comm_size for e in truth.mix}, reverse=True))}
        rows, counters = [], {}
        for k in pick:
            e = truth.mix[k]
            cid = comm_ids[e.comm_size] if e.comm_size != truth.nprocs else 0
            idx = counters.get(cid, 0)
            counters[cid] = idx + 1
            nodes = -(-e.comm_size // ppn_world)  # ranks 0..c-1: block placement
            rows.append((e.collective, int(rng.choice(e.msg_bytes)), cid, idx, e.comm_size, nodes,
                         min(e.comm_size, ppn_world)))
        self.calls = pd.DataFrame(rows, columns=["collective", "msg_bytes", "comm_id", "call_index", "comm_size",
                                                 "nodes", "ppn"])
        self.portfolios = {c: [m.name for m in ms] for c, ms in truth.members.items()}
        # true[c][i]: time of portfolio member i of collective c for every call (NaN for other collectives)
        b = self.calls["msg_bytes"].to_numpy(float)
        size = self.calls["comm_size"].to_numpy(float)
        self.true = {c: np.array([np.where(self.calls["collective"] == c, m.time(b, size), np.nan) for m in ms])
                     for c, ms in truth.members.items()}

    def member_times(self) -> np.ndarray:
        """(calls x max members) true times, NaN where a collective has fewer members."""
        width = max(len(v) for v in self.true.values())
        out = np.full((len(self.calls), width), np.nan)
        for c, t in self.true.items():
            rows = (self.calls["collective"] == c).to_numpy()
            out[rows, :t.shape[0]] = t[:, rows].T
        return out

    def choices(self, table: SelectionTable | None, seed: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Member index and outcome code (2 exploit, 3 explore) of every call under `table` with
        the runtime's budget rule (explored calls per communicator, at most the cell budget per
        communicator, collective and size bin; beyond either an explore cell takes its best
        member, an unlisted cell the library); seed None: the frozen
        (exploit-only) version, no draws."""
        tab = table if table is not None else SelectionTable()
        if seed is None:
            tab = tab.frozen()
        members = np.zeros(len(self.calls), dtype=np.int64)
        outcome = np.full(len(self.calls), 2, dtype=np.int64)
        per_comm: dict[int, int] = {}
        per_cell: dict[tuple[int, str, int], int] = {}
        budget = self.truth.budget if self.truth.budget is not None else tab.budget
        cell_cap = self.truth.cell_budget if self.truth.cell_budget is not None else tab.cell_budget
        for i, (coll, nbytes, cid, idx, _, nodes, ppn) in enumerate(self.calls.itertuples(index=False)):
            port = self.portfolios[coll]
            bins = tab.bins_of(nbytes, nodes, ppn)
            found = tab.cell(coll, bins)
            key = (cid, coll, bins[0])  # the communicator fixes the nodes and ppn bins
            mode = found[1].mode if found else ("exploit" if tab.unlisted != "explore" else "explore")
            if mode == "explore" and seed is not None and per_comm.get(cid, 0) < budget \
                    and per_cell.get(key, 0) < cell_cap:
                name, _ = tab.choose(coll, bins, port, seed, cid, idx)
                per_comm[cid] = per_comm.get(cid, 0) + 1
                per_cell[key] = per_cell.get(key, 0) + 1
                outcome[i] = 3
            elif found is not None:
                name = found[0][draw.pick_exploit(found[1].weights)]
            else:
                name = catalog.DEFAULT  # unlisted beyond the budget, or unlisted library: the library
            members[i] = port.index(name) if name in port else 0
        return members, outcome

    def call_times(self, members: np.ndarray) -> np.ndarray:
        return self.member_times()[np.arange(len(members)), members]

    def run(self, table: SelectionTable | None, batch: int, trace_dir: Path) -> BatchRun:
        t = self.truth
        seed = draw.splitmix64((t.seed << 20) ^ batch)
        rng = np.random.default_rng(seed & 0xFFFFFFFF)
        members, outcome = self.choices(table, seed)
        true_t = self.call_times(members)
        n = len(true_t)
        slow = np.where(rng.random(n) < t.skew, 1.0 + rng.pareto(2.0, n), 1.0)
        ranks = min(t.traced_ranks, t.nprocs)
        late = rng.exponential(1.0, (ranks, n)) * t.imbalance * true_t if t.imbalance > 0 else np.zeros((ranks, n))
        noise = np.exp(rng.normal(0.0, t.noise, (ranks, n)))
        in_comm = np.arange(ranks)[:, None] < self.calls["comm_size"].to_numpy()[None, :]
        late_max = np.where(in_comm, late, 0.0).max(axis=0)
        dur = true_t * slow * noise + (late_max - late)  # early ranks wait inside the call
        gap = 5e-6  # application work between calls
        clock = np.concatenate([[0.0], np.cumsum(true_t * slow + late_max + gap)[:-1]])
        coll_idx = self.calls["collective"].map({c: i for i, c in enumerate(catalog.load().collective_names())})
        tab_bytes = format_table(table).encode() if table is not None else b""
        trace_dir.mkdir(parents=True, exist_ok=True)
        wall = float(clock[-1] + true_t[-1] * slow[-1] + late_max[-1]) if n else 0.0
        for r in range(ranks):
            mine = np.flatnonzero(in_comm[r])
            kept, lost = mine[:t.trace_cap], max(0, len(mine) - t.trace_cap)
            rec = calls_array(len(kept))
            c = self.calls.iloc[kept]
            rec["comm_id"], rec["call_index"] = c["comm_id"], c["call_index"]
            rec["collective"], rec["member"], rec["outcome"] = coll_idx.iloc[kept], members[kept], outcome[kept]
            rec["msg_bytes"] = c["msg_bytes"]
            rec["comm_size"], rec["nodes"], rec["ppn"] = c["comm_size"], c["nodes"], c["ppn"]
            rec["start"], rec["duration"] = clock[kept] + late[r, kept], dur[r, kept]
            write_trace(trace_dir / f"rank-{r}.cttrace", TraceFile(
                r, t.nprocs, seed, content_hash(tab_bytes) if table is not None else 0, lost, wall,
                self.portfolios, rec))
        return BatchRun(trace_dir, wall, int((outcome == 3).sum()), float(true_t.sum()))

    # -- scores against the ground truth ----------------------------------------------------

    def oracle_s(self) -> float:
        return float(np.nansum(np.nanmin(self.member_times(), axis=1)))

    def default_s(self) -> float:
        return float(self.member_times()[:, 0].sum())

    def frozen_s(self, table: SelectionTable | None) -> float:
        """Time of the call sequence with the exploit-only version of `table`."""
        return float(self.call_times(self.choices(table, None)[0]).sum())

    def regret(self, table: SelectionTable | None) -> float:
        return self.frozen_s(table) / self.oracle_s() - 1.0

    def cell_truth(self, bins: tuple[int, int, int]) -> pd.DataFrame:
        """Per visited (collective, cell): calls, true mean time per member, the best member."""
        t = SelectionTable(bins=bins)
        times = self.member_times()
        rows = []
        cells = [(c, t.bins_of(b, n, p)) for c, b, n, p in
                 zip(self.calls["collective"], self.calls["msg_bytes"], self.calls["nodes"], self.calls["ppn"], strict=True)]
        frame = pd.DataFrame({"collective": [c for c, _ in cells], "cell": [k for _, k in cells]})
        for (coll, cell), idx in frame.groupby(["collective", "cell"]).indices.items():
            port = self.portfolios[coll]
            mean = np.nanmean(times[idx, :len(port)], axis=0)
            rows.append({"collective": coll, "cell": cell, "calls": len(idx),
                         "times": dict(zip(port, mean.tolist(), strict=True)), "best": port[int(np.argmin(mean))]})
        return pd.DataFrame(rows)
