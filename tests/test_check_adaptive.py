"""colltune.verify.adaptive: a check's first launches, its adaptive rounds and its stored verdicts,
on the embedded Open MPI (2 ranks)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from colltune.measure.settings import BenchSettings
from colltune.store import Store
from colltune.verify import adaptive, check

# bcast at one size: its two mock-ups and the A/A copy; a fixed number of repetitions per job.
SETTINGS = {"collectives": ["bcast"], "sizes": [8], "nprocs": [2], "launches": 2, "barrier": False,
            "stop": {"methods": [], "min_reps": 5, "max_reps": 10, "warmup": 1, "check_every": 5,
                     "time_budget_s": 0}}


def test_plan_rounds_defaults_by_preset() -> None:
    plain = adaptive.plan_rounds(BenchSettings(**SETTINGS))
    assert (plain.rounds, plain.round_launches, plain.round_budget_s) == (2, 1, 120.0)  # R/2, at least 1
    quick = adaptive.plan_rounds(BenchSettings.from_preset("quick", launches=8), round_budget_s=0)
    assert (quick.rounds, quick.round_launches, quick.round_budget_s) == (2, 10, 0)  # 8 + 10 + 20
    assert adaptive.measurement_defaults("quick") == {"launches": 8, "max_reps": 40, "time_budget_s": 0.1}
    assert adaptive.measurement_defaults(None) == {"launches": 10}
    assert [adaptive.decide.round_launches(3, k) for k in (1, 2, 3)] == [3, 6, 12]


@pytest.mark.slow
def test_a_round_measures_the_whole_jobs_of_the_open_comparisons(tmp_path: Path) -> None:
    """Two launches leave every comparison untested (3 per side are needed): round 1 measures
    their job once more, whole (the default, both mock-ups and the A/A copy: the same company as
    in the first launches), and the stored verdicts are the ones returned."""
    db = tmp_path / "a.duckdb"
    bench = adaptive.plan_rounds(BenchSettings(**SETTINGS), rounds=1, round_launches=1)
    events: list[adaptive.RoundEvent] = []
    result = adaptive.measure_and_judge(bench, db, check.CheckSettings(), command="test", on_round=events.append)
    assert events == [adaptive.RoundStart(round=1, rounds=1, open_=2, pairs=4, launches=1)]
    with Store(db, read_only=True) as store:
        (run_id,) = store.runs()["run_id"]
        launches = store.launches(run_id)
        env = store.environment(run_id)
        measured = store.measurements(run_id)
    assert launches["launch_idx"].tolist() == [0, 1, 2] and launches["repetition"].tolist() == [0, 1, 2]
    assert env[(env["key"] == "round")][["launch_idx", "value"]].values.tolist() == [[2, "1"]]
    # the round's launch started while launch 1 ended, before the look chose its jobs; it measured
    # only after launch 1 had exited (and the look was judged)
    fact = {(int(i), k): v for i, k, v in env[["launch_idx", "key", "value"]].itertuples(index=False)}
    started, finished = ([(t - pd.Timestamp(0)).total_seconds() for t in launches[c]] for c in ("started", "finished"))
    assert fact[2, "started_ahead"] == "true" and started[2] < finished[1] < float(fact[2, "measuring_from"])
    assert sorted(set(measured[measured["launch_idx"] == 2]["variant"])) == [
        "bcast_as_allgatherv", "bcast_as_scatter_allgather", "default", "default#aa"]
    v = result.verdicts.set_index("variant")
    assert v["n_launches"].to_dict() == {"bcast_as_allgatherv": 3, "bcast_as_scatter_allgather": 3,
                                         "default#aa": 3}
    stored = check.load_verdicts(db, run_id).set_index("variant")
    assert stored["n_launches"].to_dict() == v["n_launches"].to_dict()
    assert stored["verdict"].to_dict() == v["verdict"].to_dict()


def test_a_round_the_budget_cut_short_is_said() -> None:
    # issue 36: under load the 30 s budget gave a quick check's second round 1-13 of its 16
    # launches; the undecided comparisons it left are then explained by it
    assert adaptive.BudgetSpent(2, 30.0).describe() == "the round budget of 30 s was spent before round 2"
    assert adaptive.BudgetSpent(2, 30.0, 4, 16).describe() == (
        "the round budget of 30 s was spent during round 2, after 4 of its 16 launches: comparisons still "
        "undecided had fewer launches than planned (a loaded machine? --round-budget)")
