"""Runtime models per (collective, member): gradient-boosted trees, Tweedie objective (IOTA
4.5.1: right-skewed runtimes, 200 trees, no tuning), on three features (message bytes, nodes,
processes per node).

Training rows are points (collective, member, msg_bytes, nodes, ppn) per application run with
the median runtime of their calls and the call count as weight, so a database of a million
traced calls trains in the time of its distinct points, and one heavy-tail outlier (the max
over ranks catches every late rank) cannot move a member's estimate the way it moves a mean.
Labelled data comes from two places: traced calls of the library (trace_calls) and per-launch
medians of `colltune bench`/`check` of the same library (one point per launch, weight 1).

Only explored calls train by default (`explored_only`): their member is drawn at random per
call, so every member of a cell sees the same mix of the application's phases. The other calls
are not such a sample: the runtime's budget of explored calls runs out early in a run (per
communicator), and every later call takes the table's choice (or `default` while the cell is
unlisted), so those timings come from the application's later phases only, which can be
systematically faster or slower than the early ones (NWChem: the default's median at one point 2.3x
higher in its later calls; benchmarks/learn/README.md section 3), a bias a model would take for a member's merit.

Guards (IOTA): a member with fewer than `min_timings` timings is untrained (no model, its
share stays uniform); a collective with fewer than `min_members` trained members (at most its
portfolio size) is untrained as a whole and left to uniform exploration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import lightgbm as lgb
import numpy as np
import pandas as pd

from colltune import catalog
from colltune.store.database import Store

# run: the trace run, or `bench:<run id>:<launch>`, a point was measured in (the selection's
# replication guard compares members within one run)
POINT_COLUMNS = ["collective", "member", "msg_bytes", "nodes", "ppn", "time_s", "n", "run"]
BENCH_RUN = "bench:"


@dataclass(frozen=True)
class ModelSettings:
    trees: int = 200
    min_timings: int = 20
    min_members: int = 5
    learning_rate: float = 0.1
    num_leaves: int = 15
    explored_only: bool = True  # train on randomized draws only (module doc)


def features(msg_bytes: np.ndarray, nodes: np.ndarray, ppn: np.ndarray) -> np.ndarray:
    """log2 of the three features (trees do not care, people reading splits do)."""
    return np.column_stack([np.log2(np.asarray(msg_bytes, float) + 1.0), np.log2(np.maximum(nodes, 1.0)),
                            np.log2(np.maximum(ppn, 1.0))])


@dataclass
class MemberModel:
    member: str
    timings: int
    booster: lgb.Booster | None = None

    @property
    def trained(self) -> bool:
        return self.booster is not None

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predicted runtime in seconds at feature rows x (features())."""
        if self.booster is None:
            raise ValueError(f"member {self.member} is untrained")
        return np.asarray(self.booster.predict(x), float) * 1e-6


@dataclass
class CollectiveModels:
    name: str
    members: list[str]  # the portfolio the table may list, in runtime order
    models: dict[str, MemberModel] = field(default_factory=dict)
    trained: bool = False

    def trained_members(self) -> list[str]:
        return [m for m in self.members if m in self.models and self.models[m].trained]


def _valid_member(collective: str, name: str) -> bool:
    own = {v.name for v in catalog.load().variants_of(collective)}
    return name == catalog.DEFAULT or name in own or name.startswith(f"{catalog.LIB_PREFIX}{collective}:")


def training_points(store: Store, mpi_name: str | None, explored_only: bool = True
                    ) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Training points of one library (traced calls, only the explored ones by default, and
    bench/check medians) and the portfolios the runtime reported (newest trace run first wins)."""
    traced = store.trace_points(mpi_name, explored_only)
    parts = [traced[POINT_COLUMNS]] if not traced.empty else []
    portfolios: dict[str, list[str]] = {}
    for text in store.trace_portfolios(mpi_name):
        for coll, members in json.loads(text).items():
            portfolios.setdefault(coll, list(members))
    if mpi_name:
        bench = bench_points(store.library_medians(mpi_name))
        if not bench.empty:
            parts.append(bench)
    points = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=POINT_COLUMNS)
    return points, portfolios


def bench_points(medians: pd.DataFrame) -> pd.DataFrame:
    """Training points of bench/check per-launch medians (Store.library_medians): one per launch,
    weight 1, run `bench:<run id>:<launch>`; members no runtime table could name left out."""
    if medians.empty:
        return pd.DataFrame(columns=POINT_COLUMNS)
    ok = [_valid_member(c, v) for c, v in zip(medians["collective"], medians["variant"], strict=True)]
    bench = medians[ok].rename(columns={"variant": "member", "median_s": "time_s"})
    return bench.assign(n=1, run=BENCH_RUN + bench["launch"].astype(str))[POINT_COLUMNS]


def portfolio_of(collective: str, points: pd.DataFrame, portfolios: dict[str, list[str]]) -> list[str]:
    """Members a table may list: the runtime's portfolio where traces reported it; otherwise the
    default and the mock-ups with data (a `lib:` member is listed only once a runtime offered it)."""
    if collective in portfolios:
        return list(portfolios[collective])
    seen = set(points.loc[points["collective"] == collective, "member"])
    order = [catalog.DEFAULT] + [v.name for v in catalog.load().variants_of(collective)]
    return [m for m in order if m in seen or m == catalog.DEFAULT]


def _fit(rows: pd.DataFrame, weights: np.ndarray, s: ModelSettings) -> lgb.Booster:
    x = features(rows["msg_bytes"].to_numpy(), rows["nodes"].to_numpy(), rows["ppn"].to_numpy())
    y = np.maximum(rows["time_s"].to_numpy(float), 0.0) * 1e6  # microseconds: well-scaled logs
    params = {"objective": "tweedie", "tweedie_variance_power": 1.5, "learning_rate": s.learning_rate,
              "num_leaves": s.num_leaves, "min_data_in_leaf": 0, "min_sum_hessian_in_leaf": 1e-6,
              "min_data_in_bin": 1, "verbose": -1, "num_threads": 1, "deterministic": True, "seed": 1}
    data = lgb.Dataset(x, y, weight=weights, params={**params, "feature_pre_filter": False})
    return lgb.train(params, data, num_boost_round=s.trees)


def train(points: pd.DataFrame, portfolios: dict[str, list[str]],
          settings: ModelSettings = ModelSettings()) -> dict[str, CollectiveModels]:
    """One model per (collective, member) with enough timings; guards as in the module doc."""
    out: dict[str, CollectiveModels] = {}
    colls = sorted(set(points["collective"]) | set(portfolios))
    for coll in colls:
        members = portfolio_of(coll, points, portfolios)
        cm = CollectiveModels(coll, members)
        mine = points[points["collective"] == coll]
        for member in members:
            rows = mine[mine["member"] == member]
            timings = int(rows["n"].sum())
            model = MemberModel(member, timings)
            if timings >= settings.min_timings:
                model.booster = _fit(rows, rows["n"].to_numpy(float), settings)
            cm.models[member] = model
        cm.trained = len(cm.trained_members()) >= min(settings.min_members, len(members))
        out[coll] = cm
    return out
