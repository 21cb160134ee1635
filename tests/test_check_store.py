"""How often a `colltune check` walk opens the results database (issue 25: at most twice).

Judging stored measurements (--no-measure) opens it once to read the run and store the verdicts,
and the report once for every section of the page. A measuring check opens it once for its first
launches, its adaptive rounds and its verdicts (the runner writes every launch through that
store and opens none itself), and the report once."""

from __future__ import annotations

import dataclasses
import os
import traceback
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from check_synth import Truth, simulate, write_db
from click.testing import CliRunner

from colltune.cli import main
from colltune.store import Store
from colltune.verify import check

RUNNER = os.path.join("colltune", "measure", "runner.py")


def _count_opens(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every Store opened from now on: ('runner' if the measurement runner opened it, else
    'check', read_only)."""
    opened: list[tuple[str, bool]] = []
    real = Store.__init__

    def counting(self: Store, path: Any, *, read_only: bool = False) -> None:
        by_runner = any(f.filename.endswith(RUNNER) for f in traceback.extract_stack())
        opened.append(("runner" if by_runner else "check", read_only))
        real(self, path, read_only=read_only)

    monkeypatch.setattr(Store, "__init__", counting)
    return opened


def test_judging_and_its_report_open_the_store_once_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = write_db(tmp_path / "c.duckdb", simulate(
        Truth(factors={("bcast", "bcast_as_scatter_allgather"): 0.6}),
        {"bcast": ["default", "default#aa", "bcast_as_scatter_allgather"]}, [8, 1024], seed=12))
    opened = _count_opens(monkeypatch)
    r = CliRunner().invoke(main, ["check", "--no-measure", "--db", str(db), "--out", str(tmp_path / "out")])
    assert r.exit_code == 1, r.output
    assert opened == [("check", False), ("check", True)]   # judge and store; the page
    assert (tmp_path / "out" / "report.html").is_file()
    opened.clear()
    r = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "page")])
    assert r.exit_code == 0, r.output
    assert opened == [("check", True)]


@pytest.mark.slow
def test_measuring_check_opens_the_store_once_for_its_launches_and_rounds_and_once_for_its_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two launches leave every comparison untested (3 per side are needed): the round runs.
    db = tmp_path / "m.duckdb"
    opened = _count_opens(monkeypatch)
    r = CliRunner().invoke(main, ["check", "-c", "bcast", "-s", "8", "-n", "2", "-R", "2", "--min-reps", "5",
                                  "--max-reps", "10", "--time-budget", "0", "--no-barrier", "--rounds", "1",
                                  "--round-launches", "1", "--db", str(db), "--quiet", "--out", str(tmp_path / "out")])
    assert r.exit_code in (0, 1, 3), r.output
    assert "adaptive round 1/1" not in r.output   # --quiet
    assert opened == [("check", False), ("check", True)]   # launches, rounds, verdicts; the page
    with Store(db, read_only=True) as store:
        (run_id,) = store.runs()["run_id"]
        assert store.launches(run_id)["launch_idx"].tolist() == [0, 1, 2]
        assert len(store.derived("verdicts", run_id)) > 0


def test_a_later_look_reads_only_the_new_launches_and_judges_the_same(tmp_path: Path) -> None:
    """The looks of a check keep the measurements read before and read the later launches only,
    and only the columns judging needs: the same rows, in the same order, as one full read."""
    db = write_db(tmp_path / "c.duckdb", simulate(
        Truth(factors={("bcast", "bcast_as_scatter_allgather"): 0.6}),
        {"bcast": ["default", "default#aa", "bcast_as_scatter_allgather"]}, [8, 1024], seed=12))
    with Store(db, read_only=True) as store:
        full = check.run_of(store)
        first = int(full.measurements["launch_idx"].min())
        earlier = dataclasses.replace(
            full, measurements=full.measurements[full.measurements["launch_idx"] <= first + 3].reset_index(drop=True))
        later = check.run_of(store, None, earlier)
        every_column = store.run_rows(full.run_id).measurements
    assert 0 < len(earlier.measurements) < len(full.measurements)
    pd.testing.assert_frame_equal(later.measurements, full.measurements)
    pd.testing.assert_frame_equal(full.measurements, every_column[list(check.JUDGED_COLUMNS)].reset_index(drop=True))
    settings = check.CheckSettings()
    pd.testing.assert_frame_equal(check.judge(later, settings).verdicts.drop(columns="judged_at"),
                                  check.judge(full, settings).verdicts.drop(columns="judged_at"))
