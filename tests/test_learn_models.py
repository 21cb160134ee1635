"""Models, their guards, the selection table built from them, the profile export, and the
bench-median score: on constructed points whose answers are known exactly."""

from __future__ import annotations

import pandas as pd
import pytest

from colltune.learn.export import to_profile
from colltune.learn.loop import medians_score
from colltune.learn.models import ModelSettings, train
from colltune.learn.selection import SelectionSettings, build_table, estimated_gain
from colltune.learn.table import SelectionTable, format_table, parse_table
from colltune.tune.profile import MAX_BYTES, format_profile, read_profile

AR = ["default", "allreduce_as_reduce_bcast", "allreduce_as_reducescatterblock_allgather"]


def _points(times: dict[str, float], counts: dict[str, int], msg_bytes: int = 64, nodes: int = 1,
            ppn: int = 4) -> pd.DataFrame:
    return pd.DataFrame([{"collective": "allreduce", "member": m, "msg_bytes": msg_bytes, "nodes": nodes,
                          "ppn": ppn, "time_s": t, "n": counts[m]} for m, t in times.items()])


def _build(points: pd.DataFrame, **kw: object):
    settings = ModelSettings(trees=200, min_members=int(kw.pop("min_members", 5)))  # type: ignore[call-overload]
    models = train(points, {"allreduce": AR}, settings)
    kw.setdefault("replicate", 0)  # one run: the replication guard has its own test
    return models, *build_table(models, points, SelectionSettings(**kw))  # type: ignore[arg-type]


def test_clear_best_with_evidence_is_exploited_with_the_performance_vector() -> None:
    pts = _points({"default": 10e-6, AR[1]: 5e-6, AR[2]: 20e-6}, {m: 30 for m in AR})
    models, table, reports = _build(pts)
    assert models["allreduce"].trained
    (r,) = reports
    assert (r.bins, r.mode, r.best, r.evidence) == ((7, 0, 2), "exploit", AR[1], {m: 30 for m in AR})
    assert r.predicted[AR[1]] == pytest.approx(5e-6, rel=1e-9)
    assert r.gain == pytest.approx(2.0, rel=1e-9)
    # 1/t normalised: 0.1, 0.2, 0.05 over 0.35
    assert table.collectives["allreduce"].cells[(7, 0, 2)].weights == (0.285714, 0.571429, 0.142857)
    assert parse_table(format_table(table).encode()) == SelectionTable(**{**table.__dict__, "comments": ()})


def test_close_members_or_thin_evidence_keep_exploring() -> None:
    close = _points({"default": 10e-6, AR[1]: 9.8e-6, AR[2]: 20e-6}, {m: 30 for m in AR})
    assert [r.mode for r in _build(close)[2]] == ["explore"]
    assert [r.best for r in _build(close)[2]] == [AR[1]]
    assert [r.mode for r in _build(close, margin=0.01)[2]] == ["exploit"]
    thin = pd.concat([_points({"default": 10e-6, AR[1]: 5e-6, AR[2]: 20e-6}, {m: 30 for m in AR}),
                      _points({"default": 10e-6, AR[1]: 5e-6, AR[2]: 20e-6}, {"default": 3, AR[1]: 4, AR[2]: 30},
                              msg_bytes=4096)])
    reports = _build(thin)[2]
    assert [(r.bins[0], r.mode) for r in reports] == [(7, "exploit"), (13, "explore")]


def test_untrained_member_keeps_a_uniform_share_and_untrained_collective_is_not_listed() -> None:
    pts = _points({"default": 10e-6, AR[1]: 5e-6, AR[2]: 20e-6}, {"default": 30, AR[1]: 30, AR[2]: 19})
    models, table, reports = _build(pts, min_members=2)
    assert models["allreduce"].trained_members() == AR[:2]
    (r,) = reports
    assert r.mode == "explore" and r.best == AR[1]
    assert table.collectives["allreduce"].cells[(7, 0, 2)].weights == (0.222222, 0.444444, 0.333333)
    # the seed's guard: fewer than min(5, portfolio) trained members -> not listed at all
    models, table, reports = _build(pts)
    assert not models["allreduce"].trained and table.collectives == {} and reports == []


def test_uniform_share_never_outweighs_the_best_trained_member() -> None:
    # four members, two trained and equal: each trained share is 2/4 * 1/2 = 0.25 = 1/4
    port = AR + ["allreduce_as_reducescatter_allgatherv"]
    pts = pd.DataFrame([{"collective": "allreduce", "member": m, "msg_bytes": 64, "nodes": 1, "ppn": 4,
                         "time_s": 10e-6, "n": 30 if i < 2 else 1} for i, m in enumerate(port)])
    models = train(pts, {"allreduce": port}, ModelSettings(trees=20, min_members=2))
    table, (r,) = build_table(models, pts, SelectionSettings(replicate=0))
    w = table.collectives["allreduce"].cells[(7, 0, 2)].weights
    assert w == (0.25, 0.25, 0.24975, 0.24975)
    assert port[w.index(max(w))] == r.best == "default"


def test_estimated_gain_over_the_calls() -> None:
    pts = pd.concat([_points({"default": 10e-6, AR[1]: 5e-6, AR[2]: 20e-6}, {m: 30 for m in AR}),
                     _points({"default": 30e-6, AR[1]: 60e-6, AR[2]: 40e-6}, {m: 30 for m in AR}, msg_bytes=4096)])
    reports = _build(pts)[2]
    calls = pd.DataFrame({"collective": ["allreduce"] * 3, "msg_bytes": [64, 64, 4096], "nodes": [1] * 3,
                          "ppn": [4] * 3})
    # default: 10 + 10 + 30 = 50; best: 5 + 5 + 30 = 40
    assert estimated_gain(reports, calls, (24, 4, 8)) == pytest.approx(50 / 40, rel=1e-6)


def test_profile_export(tmp_path) -> None:
    pts = pd.concat([_points({"default": 10e-6, AR[1]: 5e-6, AR[2]: 20e-6}, {m: 30 for m in AR}, msg_bytes=b)
                     for b in (64, 100, 4096)]
                    + [_points({"default": 10e-6, AR[1]: 20e-6, AR[2]: 5e-6}, {m: 30 for m in AR}, msg_bytes=1 << 30)]
                    + [_points({"default": 10e-6, AR[1]: 20e-6, AR[2]: 30e-6}, {m: 30 for m in AR}, msg_bytes=8)])
    reports = _build(pts)[2]
    layouts = pd.DataFrame([("allreduce", 4, 1, 4, 100), ("allreduce", 4, 2, 2, 3)],
                           columns=["collective", "comm_size", "nodes", "ppn", "calls"])
    res = to_profile(reports, layouts, (24, 4, 8), mpi="openmpi", source="test")
    assert (res.rules, res.library_cells, res.explore_cells) == (3, 0, 0)
    path = tmp_path / "l.prf"
    path.write_text(format_profile(res.profile))
    prof = read_profile(path)
    rules = [(r.lo, r.hi, r.variant) for r in prof.section("allreduce").blocks[0].rules]  # type: ignore[union-attr]
    assert rules == [(64, 127, AR[1]), (4096, 8191, AR[1]), (1 << 22, MAX_BYTES, AR[2])]
    assert prof.lookup("allreduce", 4, 100) == AR[1] and prof.lookup("allreduce", 4, 8) is None


def test_profile_export_per_layout(tmp_path) -> None:
    """Cells exploited on 1x4 and 2x2 (size 4) differ: one `nodes N ppn P` block per layout, no
    layout-free block for that size; size 2, learned on one layout only, keeps its `procs` block."""
    from colltune.learn.selection import CellReport
    from colltune.learn.table import count_bin

    def cell(size_bin: int, nodes: int, ppn: int, best: str, mode: str = "exploit") -> CellReport:
        bins = (size_bin, count_bin(nodes, 4), count_bin(ppn, 8))
        return CellReport("allreduce", bins, tuple(AR), {}, {}, 30, mode, (1 / 3,) * 3, best)

    reports = [cell(7, 1, 4, AR[1]), cell(13, 1, 4, "default"),     # 64 B, 4 KiB on one node
               cell(7, 2, 2, "default"), cell(13, 2, 2, AR[2]),     # the other way round across nodes
               cell(7, 4, 1, AR[1], mode="explore"),                # 4x1: still exploring, no block
               cell(7, 1, 2, AR[2])]                                 # size 2: one layout only
    layouts = pd.DataFrame([("allreduce", 4, 1, 4, 100), ("allreduce", 4, 2, 2, 50), ("allreduce", 4, 4, 1, 9),
                            ("allreduce", 2, 1, 2, 7)],
                           columns=["collective", "comm_size", "nodes", "ppn", "calls"])
    res = to_profile(reports, layouts, (24, 4, 8), mpi="openmpi", source="test")
    assert (res.rules, res.library_cells, res.explore_cells) == (3, 0, 1)
    path = tmp_path / "l.prof"
    path.write_text(format_profile(res.profile))
    prof = read_profile(path)
    blocks = prof.section("allreduce").blocks  # type: ignore[union-attr]
    assert [(b.procs_lo, b.layout, [(r.lo, r.hi, r.variant) for r in b.rules]) for b in blocks] == [
        (2, None, [(64, 127, AR[2])]),
        (4, (1, 4), [(64, 127, AR[1])]),
        (4, (2, 2), [(4096, 8191, AR[2])])]
    assert prof.lookup("allreduce", 4, 100, layout=(1, 4)) == AR[1]
    assert prof.lookup("allreduce", 4, 100, layout=(2, 2)) is None
    assert prof.lookup("allreduce", 4, 5000, layout=(2, 2)) == AR[2]
    assert prof.lookup("allreduce", 4, 100, layout=(4, 1)) is None   # not learned: the library
    assert prof.lookup("allreduce", 2, 100) == AR[2]


def test_medians_score_against_the_best_measured_member() -> None:
    table = parse_table(b"colltune-select 1\ncollective allreduce\n members default allreduce_as_reduce_bcast\n"
                        b" cell 7 0 2 exploit 0.3 0.7\n cell 13 0 2 exploit 0.7 0.3\nend\n")
    calls = pd.DataFrame({"collective": ["allreduce"] * 3, "msg_bytes": [64, 64, 4096], "comm_size": [4] * 3,
                          "nodes": [1] * 3, "ppn": [4] * 3})
    medians = pd.DataFrame([("allreduce", "default", 64, 4, 10e-6), ("allreduce", AR[1], 64, 4, 6e-6),
                            ("allreduce", "default", 4096, 4, 40e-6), ("allreduce", AR[1], 4096, 4, 30e-6)],
                           columns=["collective", "variant", "msg_bytes", "nprocs", "median_s"])
    s = medians_score(table, calls, medians)
    # chosen: 6 + 6 + 40 = 52; oracle: 6 + 6 + 30 = 42; default: 10 + 10 + 40 = 60
    assert (s.regret, s.oracle_s, s.default_s) == pytest.approx((52 / 42 - 1, 42e-6, 60e-6))


def test_bench_measurements_give_the_first_table_a_head_start(tmp_path) -> None:
    """A check of the library, no traces yet: its per-launch medians train the models, the A/A
    copy and library algorithms (not yet offered by a runtime) are not listed."""
    from check_synth import Truth, simulate, write_db

    from colltune.learn.models import training_points
    from colltune.store import Store

    truth = Truth(base={}, factors={("bcast", "bcast_as_scatter_allgather"): {1024: 0.5}})
    plan = {"bcast": ["default", "default#aa", "bcast_as_scatter_allgather", "bcast_as_allgatherv",
                      "lib:bcast:binomial"]}
    db = write_db(tmp_path / "c.duckdb", simulate(truth, plan, [8, 1024], launches=12, reps=10, seed=2))
    with Store(db) as store:  # opened for writing: adds the trace tables
        points, portfolios = training_points(store, "openmpi")
        assert training_points(store, "mpich")[0].empty
    assert portfolios == {}
    assert sorted(set(points["member"])) == ["bcast_as_allgatherv", "bcast_as_scatter_allgather", "default",
                                             "lib:bcast:binomial"]
    assert len(points) == 4 * 2 * 12 and set(points["n"]) == {1} and set(points["ppn"]) == {4}
    models = train(points, portfolios, ModelSettings(trees=100))
    assert models["bcast"].members == ["default", "bcast_as_allgatherv", "bcast_as_scatter_allgather"]  # catalog order
    table, reports = build_table(models, points, SelectionSettings(replicate=0))
    by_size = {r.bins[0]: r for r in reports}
    assert by_size[11].mode == "exploit" and by_size[11].best == "bcast_as_scatter_allgather"
    assert by_size[11].gain == pytest.approx(2.0, rel=0.1)
    assert table.collectives["bcast"].members == ("default", "bcast_as_allgatherv", "bcast_as_scatter_allgather")


def test_only_explored_calls_train_by_default(tmp_path) -> None:
    """An application whose late phase is slower: while the budget lasts (early) the members are
    drawn at random and the default is 2x faster than the mock-up; after it every call takes the
    default, in a phase where calls take 5x longer. Trained on every call, the default's median
    carries the late phase and the mock-up looks best; trained on the explored calls (the default),
    the members are compared on the same phase and the default wins."""
    import json

    from colltune.learn.models import training_points
    from colltune.store import Store

    rows = [("explore", m, t) for m, t in (("default", 1e-6), (AR[1], 2e-6)) for _ in range(30)]
    rows += [("exploit", "default", 5e-6)] * 300
    calls = pd.DataFrame([{"comm_id": 0, "call_index": i, "collective": "allreduce", "member": m,
                           "outcome": "applied", "mode": mode, "reason": 0, "msg_bytes": 64, "comm_size": 2,
                           "nodes": 1, "ppn": 2, "size_bin": 7, "nodes_bin": 0, "ppn_bin": 1, "runtime_s": t,
                           "ranks_traced": 2, "start_s": float(i), "redrawn": False}
                          for i, (mode, m, t) in enumerate(rows)])
    with Store(tmp_path / "t.duckdb") as store:
        run = dict.fromkeys(["ingested", "trace_dir", "command", "app", "batch", "mpi_version", "abi_family", "nodes",
                             "ppn", "seed", "table_hash", "records", "overflow", "wall_s"])
        store.write_trace_run({**run, "trace_run_id": "r1", "mpi_name": "mpich", "world_size": 2,
                               "portfolios": json.dumps({"allreduce": AR[:2]})}, calls)
        explored, portfolios = training_points(store, "mpich")
        every, _ = training_points(store, "mpich", explored_only=False)
    assert explored.set_index("member")["n"].to_dict() == {"default": 30, AR[1]: 30}
    assert every.set_index("member")["n"].to_dict() == {"default": 330, AR[1]: 30}
    settings = ModelSettings(trees=50, min_members=2)
    best = {}
    for name, pts in (("explored", explored), ("every", every)):
        _, reports = build_table(train(pts, portfolios, settings), pts, SelectionSettings(replicate=0))
        (r,) = reports
        best[name] = r.best
    assert best == {"explored": "default", "every": AR[1]}


@pytest.mark.parametrize(("wins", "runs", "held"), [(3, 4, False), (2, 4, True), (2, 2, True), (3, 3, False)])
def test_replication_guard(wins: int, runs: int, held: bool) -> None:
    """A mock-up becomes a cell's best only if it beat the default in >= 3 runs and in more than
    half of the runs where both ran; the models (mean over runs) favour it 2:1 in every case."""
    rows = []
    for r in range(runs):
        fast = r < wins
        rows += [("default", 10e-6, r), (AR[1], 5e-6 if fast else 10.5e-6, r), (AR[2], 30e-6, r)]
    pts = pd.DataFrame([{"collective": "allreduce", "member": m, "msg_bytes": 64, "nodes": 1, "ppn": 4,
                         "time_s": t, "n": 30, "run": f"r{r}"} for m, t, r in rows])
    models = train(pts, {"allreduce": AR}, ModelSettings(trees=200, min_members=3))
    table, (rep,) = build_table(models, pts, SelectionSettings(replicate=3))
    assert rep.predicted[AR[1]] < rep.predicted["default"]
    assert (rep.held, rep.best) == (held, "default" if held else AR[1])
    w = table.collectives["allreduce"].cells[(7, 0, 2)].weights
    assert AR[w.index(max(w))] == rep.best
    assert rep.mode == ("explore" if held else "exploit")
