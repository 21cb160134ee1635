"""`colltune check`: exit codes, files, messages; one real run on the embedded Open MPI."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest
from check_synth import Truth, simulate, write_db
from click.testing import CliRunner

from colltune.cli import main
from colltune.verify import check


def _db(tmp_path: Path, factor: float) -> Path:
    truth = Truth(factors={("bcast", "bcast_as_scatter_allgather"): factor})
    return write_db(tmp_path / "c.duckdb", simulate(
        truth, {"bcast": ["default", "default#aa", "bcast_as_scatter_allgather"]}, [8, 1024], seed=12))


def test_exit_1_with_violations_and_files(tmp_path: Path) -> None:
    db = _db(tmp_path, 0.6)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["check", "--no-measure", "--db", str(db), "--out", str(out)])
    assert r.exit_code == 1, r.output
    assert "Grouped violations" in r.output and "Totals" in r.output and "A/A calibration passed" in r.output
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{t}.{ext}" for t in ("absolute_runtimes", "relative_runtimes", "violations", "detailed_violations",
                                "grouped_violations", "totals", "per_collective", "worst_slowdowns", "calibration",
                                "quality") for ext in ("csv", "parquet")] + ["report.html"])
    g = pd.read_parquet(out / "grouped_violations.parquet")
    assert g["variant"].tolist() == ["bcast_as_scatter_allgather"] * 2
    assert len(check.load_verdicts(db)) == 2 * 2 + 1 + 1  # 2 sizes x (mock-up, A/A) + monotony + split


def test_exit_0_without_violations(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["check", "--no-measure", "--db", str(_db(tmp_path, 1.3))])
    assert r.exit_code == 0, r.output


def test_settings_reach_the_verdicts(tmp_path: Path) -> None:
    db = _db(tmp_path, 0.6)
    r = CliRunner().invoke(main, ["check", "--no-measure", "--db", str(db), "--test", "mwu", "--correction", "bh",
                                  "--alpha", "0.01", "--tolerance", "0.5", "--margin", "0.02",
                                  "--comparer", "detailed"])
    assert r.exit_code == 0, r.output  # a 40% gain is below the 50% tolerance
    v = check.load_verdicts(db)
    assert set(v["test"]) == {"mwu"} and set(v["correction"]) == {"bh"}
    assert set(v["alpha"]) == {0.01} and set(v["tolerance"]) == {0.5} and set(v["margin"]) == {0.02}


def test_errors_exit_2_or_usage(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(main, ["check", "--no-measure", "--db", str(tmp_path / "missing.duckdb")])
    assert r.exit_code == 2 and "no results database at" in r.output
    r = runner.invoke(main, ["check", "--no-measure", "--db", str(_db(tmp_path, 1.0)), "-n", "4"])
    assert r.exit_code == 2 and "--no-measure judges stored measurements; drop --nprocs" in r.output
    r = runner.invoke(main, ["check", "--no-measure", "--db", str(tmp_path / "c.duckdb"), "--run", "nope"])
    assert r.exit_code == 2 and "no run 'nope'" in r.output


def test_partial_run_is_judged_and_flagged(tmp_path: Path) -> None:
    m = simulate(Truth(), {"bcast": ["default", "default#aa"]}, [8, 64], launches=4, seed=13)
    db = write_db(tmp_path / "p.duckdb", m[m["launch_idx"] < 3], status="interrupted")
    r = CliRunner().invoke(main, ["check", "--no-measure", "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert "partial:" in r.output and "is interrupted" in r.output


@pytest.mark.slow
def test_real_check_on_embedded_openmpi(tmp_path: Path) -> None:
    db = tmp_path / "real.duckdb"
    r = CliRunner().invoke(main, ["check", "-c", "bcast", "-s", "8,1024", "-n", "2", "-R", "3", "--min-reps", "5",
                                  "--max-reps", "20", "--time-budget", "0", "--rounds", "0", "--db", str(db),
                                  "--quiet", "--out", str(tmp_path / "out")])
    assert r.exit_code in (0, 1, 3), r.output  # 3: some comparisons undecided after 3 launches
    v = check.load_verdicts(db)
    with duckdb.connect(str(db), read_only=True) as con:
        status, kind = con.execute("SELECT status, kind FROM runs").fetchone()
    assert (status, kind) == ("complete", "check")
    # bcast: 2 mock-ups + A/A at 2 sizes, 1 monotony pair, 1 split pair
    assert sorted(v["kind"].value_counts().items()) == [("aa", 2), ("monotony", 1), ("pattern", 4), ("split", 1)]
    assert set(v["n_launches"]) == {3}  # no time budget: every median rests on >= 5 repetitions, none left out
    assert (tmp_path / "out" / "report.html").is_file()


@pytest.mark.slow
def test_a_planned_variant_measured_nowhere_is_named_with_why(tmp_path: Path, monkeypatch) -> None:
    """A variant the check planned but the driver measured at no size has no verdict: the check
    names it and the driver's reason, one line each (the MPICH neighborhood algorithms of the
    nonblocking form went unmeasured that way, without a word, in sessions 11 and 12). Here a
    256-byte scratch cap leaves allgather_as_alltoall (2 p n bytes), allgather_as_allreduce (p n)
    and allgather_as_allgatherv (its counts and displacements, 4 p ints) no size; the other
    mock-up needs none."""
    monkeypatch.setenv("COLLTUNE_SCRATCH_BYTES", "256")
    db = tmp_path / "dropped.duckdb"
    r = CliRunner().invoke(main, ["check", "-c", "allgather", "-s", "8,1024", "-n", "2", "-R", "2", "--min-reps", "5",
                                  "--max-reps", "10", "--time-budget", "0", "--rounds", "0", "--db", str(db),
                                  "--quiet"])
    assert r.exit_code in (0, 1, 3), r.output
    dropped = [line for line in r.output.splitlines() if line.startswith("dropped:")]
    assert dropped == [f"dropped: allgather {v} was planned but not measured: scratch (4 jobs)"
                       for v in ("allgather_as_allgatherv", "allgather_as_allreduce", "allgather_as_alltoall")]
    v = check.load_verdicts(db)
    assert "allgather_as_gather_bcast" in set(v["variant"])
    assert not {"allgather_as_allgatherv", "allgather_as_allreduce", "allgather_as_alltoall"} & set(v["variant"])


@pytest.mark.slow
def test_quick_check_spends_its_time_on_launches(tmp_path: Path) -> None:
    """--preset quick: 40 repetitions or 0.1 s per job, rounds as long as the first look, 12 s for
    the rounds; what the user gives wins. Each launch records OFI left out where the probe says
    it selects nothing, and the faster start's settings where it applies them (colltune.measure.startup)."""
    import json

    from colltune.measure import startup
    from colltune.mpi import build
    from colltune.mpi import libraries as mpi

    db = tmp_path / "q.duckdb"
    r = CliRunner().invoke(main, ["check", "--preset", "quick", "-c", "bcast", "-s", "8", "-n", "2", "-R", "3",
                                  "--max-reps", "30", "--rounds", "0", "--db", str(db), "--quiet"])
    assert r.exit_code in (0, 1, 3), r.output
    lib = mpi.resolve(None)
    expected = startup.rank_env(lib, build.ensure_built(lib))
    # every setting the probe may choose (OFI, UCX, uct/tcp left out; FAST_START's), whichever it chose
    probed = ("OMPI_MCA_mtl", "OMPI_MCA_btl", "OMPI_MCA_pml", *startup.FAST_START)
    with duckdb.connect(str(db), read_only=True) as con:
        settings = json.loads(con.execute("SELECT settings FROM runs").fetchone()[0])
        env = dict(con.execute("SELECT key, value FROM environment WHERE launch_idx = 0 AND key IN "
                               f"({', '.join('?' * len(probed))})", [f"env:{k}" for k in probed]).fetchall())
    assert (settings["stop"]["max_reps"], settings["stop"]["time_budget_s"]) == (30, 0.1)
    assert (settings["launches"], settings["round_launches"], settings["round_budget_s"]) == (3, 4, 30.0)
    assert {k.removeprefix("env:"): v for k, v in env.items()} == expected


def test_unproven_library_algorithms_are_one_line_and_refused_ones_name_their_classes(monkeypatch) -> None:
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from colltune.commands import check as check_command
    from colltune.measure import proof

    measured = ["lib:allreduce:ring", "lib:bcast:binomial", "lib:gather:linear", "MPI_Gatherv", "lib:bcast:pipeline#nonblocking"]
    result = SimpleNamespace(verdicts={"variant": measured}, run=SimpleNamespace(environment={}))
    out = Console(width=400, record=True, file=io.StringIO())
    check_command._print_unproven(result, out)   # no proof of the build: one line names all three
    assert out.export_text().splitlines() == [
        "unproven: 3 library algorithm(s) measured here serve no call until `colltune selftest` proves this build: "
        "lib:allreduce:ring, lib:bcast:binomial, lib:gather:linear (docs/select.md, \"The proof\")"]
    monkeypatch.setattr(proof, "refusals", lambda members, path: {"lib:allreduce:ring": ["in_place/none/any"],
                                                                 "lib:gather:linear": ["not proven"]})
    out = Console(width=400, record=True, file=io.StringIO())
    check_command._print_unproven(result, out)
    assert out.export_text().splitlines() == [
        "unproven: 1 library algorithm(s) measured here serve no call until `colltune selftest` proves this build: "
        "lib:gather:linear (docs/select.md, \"The proof\")",
        "refused: lib:allreduce:ring is measured but not served in in_place/none/any (docs/select.md, \"The proof\")"]


def test_a_crash_exits_70_not_the_violations_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python's own exit status for a traceback is 1, `check`'s "violations found": the Makefile's
    demo took a crash in check's plots for a result."""
    def crash(*args: object, **kwargs: object) -> None:
        raise ValueError("'xerr' must not contain negative values")

    monkeypatch.setattr(check, "check_db", crash)
    r = CliRunner().invoke(main, ["check", "--no-measure", "--db", str(_db(tmp_path, 1.0))])
    assert r.exit_code == 70
    assert "ValueError: 'xerr' must not contain negative values" in r.output
    assert "colltune: internal error (exit 70): a bug in colltune" in r.output
    monkeypatch.undo()
    r = CliRunner().invoke(main, ["check", "--no-measure", "--db", str(tmp_path / "missing.duckdb")])
    assert r.exit_code == 2   # expected failures keep their codes
