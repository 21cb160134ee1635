"""The bench veto: bench/check launches of the library in the database overrule traces that favour
a member bench measures slower than the default (planted points, exact answers)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from colltune.learn.models import ModelSettings, train
from colltune.learn.selection import SelectionSettings, bench_veto, build_table
from colltune.learn.view import cells_table

AR = ["default", "allreduce_as_reduce_bcast", "allreduce_as_reducescatterblock_allgather"]


def _traces() -> list[dict[str, object]]:
    """4 trace runs at 64 B in which AR[1] is 2x faster than the default every time: the models
    and the replication guard both pick it."""
    return [{"collective": "allreduce", "member": m, "msg_bytes": 64, "nodes": 1, "ppn": 4, "time_s": t, "n": 30,
             "run": f"trace-{r}"} for r in range(4) for m, t in (("default", 10e-6), (AR[1], 5e-6), (AR[2], 30e-6))]


def _bench(member_times: dict[str, list[float]], msg_bytes: int = 64) -> list[dict[str, object]]:
    """Per-launch medians of a bench run (one point per launch and member, as training_points reads them)."""
    return [{"collective": "allreduce", "member": m, "msg_bytes": msg_bytes, "nodes": 1, "ppn": 4, "time_s": t, "n": 1,
             "run": f"bench:b1:{k}"} for m, ts in member_times.items() for k, t in enumerate(ts)]


def _cell(rows: list[dict[str, object]], **kw: object):
    pts = pd.DataFrame(rows)
    models = train(pts, {"allreduce": AR}, ModelSettings(trees=200, min_members=3))
    table, (rep,) = build_table(models, pts, SelectionSettings(**kw))  # type: ignore[arg-type]
    w = table.collectives["allreduce"].cells[(7, 0, 2)].weights
    assert AR[w.index(max(w))] == rep.best  # the argmax the runtime and the frozen table use
    return rep


SLOWER = {"default": [2e-6, 2e-6, 2e-6], AR[1]: [3.4e-6, 3.6e-6, 3.0e-6], AR[2]: [6e-6, 6e-6, 6e-6]}


def test_a_member_faster_in_traces_but_slower_in_bench_is_vetoed() -> None:
    rep = _cell(_traces() + _bench(SLOWER))
    assert rep.predicted[AR[1]] < rep.predicted["default"] / 1.9  # the traces' verdict, bench points weigh 1
    assert (rep.held, rep.best, rep.mode) == (True, "default", "explore")
    assert rep.why == f"bench measures {AR[1]} 1.70x slower than default (3 of 3 launches)"
    # the replication guard alone lets it through: 4 trace runs won, 3 bench launches lost
    assert (_cell(_traces() + _bench(SLOWER), veto_tolerance=np.inf).best,) == (AR[1],)


def test_a_member_faster_in_both_is_chosen() -> None:
    rep = _cell(_traces() + _bench({"default": [2e-6] * 3, AR[1]: [1.5e-6, 2.1e-6, 1.0e-6], AR[2]: [6e-6] * 3}))
    assert (rep.held, rep.best, rep.mode, rep.why) == (False, AR[1], "exploit", "")


def test_without_bench_data_the_choice_is_unchanged() -> None:
    rep = _cell(_traces())
    assert (rep.held, rep.best, rep.mode, rep.why) == (False, AR[1], "exploit", "")
    assert _cell(_traces(), veto_tolerance=np.inf).weights == rep.weights


def test_only_the_points_the_application_called_count() -> None:
    """Bench at 100 B (same size bin, never called) measures AR[1] slower; at the called 64 B
    it measures AR[1] faster: no veto."""
    faster = {"default": [2e-6] * 3, AR[1]: [1.5e-6] * 3, AR[2]: [6e-6] * 3}
    rep = _cell(_traces() + _bench(faster) + _bench(SLOWER, msg_bytes=100))
    assert (rep.held, rep.best) == (False, AR[1])
    rep = _cell(_traces() + _bench(SLOWER, msg_bytes=100))
    assert (rep.held, rep.best) == (False, AR[1])


def test_replication_hold_says_why() -> None:
    rows = [r for r in _traces() if r["run"] in ("trace-0", "trace-1")]
    rep = _cell(rows, replicate=3)
    assert (rep.held, rep.best) == (True, "default")
    assert rep.why == f"{AR[1]} beat default in 2 of 2 runs (needs >= 3 and more than half)"


@pytest.mark.parametrize(("ratios", "vetoed"), [
    ([1.7, 1.8, 1.5], 1.7),     # slower in every launch
    ([1.04, 1.04, 1.04], None),  # slower, but within the tolerance
    ([0.9, 1.3], None),          # one launch of two: no majority
    ([0.9, 1.3, 1.4], 1.3),      # two of three, median beyond the tolerance
    ([0.5, 0.6, 2.0], None),     # faster in most launches
    ([], None),                  # no paired launch
])
def test_veto_rule(ratios: list[float], vetoed: float | None) -> None:
    assert bench_veto(pd.Series(ratios, dtype=float), 0.05) == vetoed


def test_show_prints_why_a_cell_is_held() -> None:
    rep = _cell(_traces() + _bench(SLOWER))
    console = Console(width=300, record=True)
    console.print(cells_table([rep], (24, 4, 8), "t"))
    line = next(x for x in console.export_text().splitlines() if "allreduce" in x)
    assert line.split("│")[-2].strip() == f"held: bench measures {AR[1]} 1.70x slower than default (3 of 3 launches)"
