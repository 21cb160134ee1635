"""colltune.verify.check, tables and quality on synthetic databases with known truth."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from check_synth import Truth, simulate, write_db

from colltune.verify import check, quality, stats, tables

SIZES = [8, 1024, 65536, 1048576]
PLAN = {
    "bcast": ["default", "default#aa", "bcast_as_scatter_allgather", "bcast_as_allgatherv"],
    "allreduce": ["default", "default#aa", "allreduce_as_reduce_bcast", "lib:allreduce:ring"],
}
REQUIRED = ["run_id", "nprocs", "collective", "variant", "kind", "guideline", "msg_bytes", "default_median_s",
            "variant_median_s", "slowdown", "rel_diff", "ci_low", "ci_high", "p_value", "p_adjusted", "significant",
            "violation", "barrier_warning", "n_launches", "partial"]


def _violations(v: pd.DataFrame) -> set[tuple[str, str, str, int]]:
    hit = v[v["violation"]]
    return {(r.kind, r.collective, r.variant, int(r.msg_bytes)) for r in hit.itertuples()}


@pytest.fixture()
def known_db(tmp_path: Path) -> Path:
    truth = Truth(factors={
        ("bcast", "bcast_as_scatter_allgather"): {65536: 0.75, 1048576: 0.5},
        ("bcast", "bcast_as_allgatherv"): 1.5,
        ("allreduce", "lib:allreduce:ring"): {1024: 0.6},
    })
    return write_db(tmp_path / "r.duckdb", simulate(truth, PLAN, SIZES, launches=10, seed=1))


def test_known_truth_pattern_and_library_violations(known_db: Path) -> None:
    res = check.check_db(known_db)
    assert _violations(res.verdicts) == {
        ("pattern", "bcast", "bcast_as_scatter_allgather", 65536),
        ("pattern", "bcast", "bcast_as_scatter_allgather", 1048576),
        ("library", "allreduce", "lib:allreduce:ring", 1024),
    }
    v = res.verdicts.set_index(["collective", "variant", "msg_bytes", "kind"])
    row = v.loc[("bcast", "bcast_as_scatter_allgather", 1048576, "pattern")]
    assert row["guideline"] == "GL10" and row["rhs"] == "MPI_Scatter + MPI_Allgather"
    # paired by launch: the median over launches of default/variant, recomputed here with SQL
    with duckdb.connect(str(known_db), read_only=True) as con:
        ratio = con.execute(
            "WITH m AS (SELECT launch_idx, variant, median(runtime_s) AS t FROM measurements "
            "WHERE collective = 'bcast' AND msg_bytes = 1048576 GROUP BY ALL) "
            "SELECT median(d.t / v.t) FROM m d JOIN m v USING (launch_idx) "
            "WHERE d.variant = 'default' AND v.variant = 'bcast_as_scatter_allgather'").fetchone()[0]
    assert row["slowdown"] == pytest.approx(ratio, rel=1e-12)
    assert row["slowdown"] == pytest.approx(2.0, rel=0.03)  # truth: 2x, 10% per-rep noise
    assert row["ci_low"] < row["rel_diff"] < row["ci_high"]
    assert row["n_launches"] == 10 and not row["partial"]
    # 4 sizes x (2 variants + A/A) + 3 monotony + 3 split per collective
    assert len(res.verdicts) == 2 * (4 * 3 + 3 + 3)
    assert res.calibration()["comparisons"] == 8 and res.calibration()["violations"] == 0
    assert res.calibration()["passed"] is True
    assert not res.partial and res.messages == []


def test_holm_family_excludes_aa_and_counts_every_split_pair(known_db: Path) -> None:
    res = check.judge(check.load_run(known_db))
    v = res.verdicts
    guideline = v[v["kind"] != "aa"]
    # family = 16 pattern/library + 6 monotony + 6 split pairs (k <= 64, or adjacent sizes: 3 per
    # collective; 8 B -> 64 KiB with k = 8192 is not tested)
    assert len(guideline) == 28
    assert set(guideline[guideline["kind"] == "split"]["k"]) == {128, 64, 16}
    smallest = guideline["p_value"].min()
    assert guideline["p_adjusted"].min() == pytest.approx(min(1.0, smallest * 28))


def test_monotony_and_split_violations(tmp_path: Path) -> None:
    truth = Truth(factors={
        # 1 KiB takes 3x its model time: slower than 64 KiB (monotony)
        ("bcast", "default"): {1024: 3.0, 1048576: 3.0},
        ("bcast", "default#aa"): {1024: 3.0, 1048576: 3.0},
        # 1 MiB takes 3x: 660 us > 16 x T(64 KiB) = 370 us (split-robustness, k = 16)
    })
    db = write_db(tmp_path / "m.duckdb", simulate(truth, {"bcast": ["default", "default#aa"]}, SIZES, seed=2))
    v = check.check_db(db).verdicts
    assert _violations(v) == {("monotony", "bcast", "default", 1024), ("split", "bcast", "default", 1048576)}
    split = v[(v["kind"] == "split") & v["violation"]].iloc[0]
    assert (split["ref_bytes"], split["k"]) == (65536, 16)
    assert split["lhs"] == "MPI_Bcast(1 MiB)" and split["rhs"] == "16 x MPI_Bcast(64 KiB)"
    mono = v[(v["kind"] == "monotony") & v["violation"]].iloc[0]
    assert mono["ref_bytes"] == 65536 and mono["rhs"] == "MPI_Bcast(64 KiB)"


def test_tolerance_blocks_small_but_significant_effects(tmp_path: Path) -> None:
    truth = Truth(factors={("bcast", "bcast_as_scatter_allgather"): 0.97})  # 3% faster everywhere
    db = write_db(tmp_path / "t.duckdb", simulate(truth, {"bcast": ["default", "bcast_as_scatter_allgather"]},
                                                  SIZES, launch_sigma=0.001, rep_sigma=0.01, seed=3))
    strict = check.judge(check.load_run(db), check.CheckSettings(tolerance=0.05)).verdicts
    lax = check.judge(check.load_run(db), check.CheckSettings(tolerance=0.01)).verdicts
    pattern = strict[strict["kind"] == "pattern"]
    assert pattern["significant"].all() and not pattern["violation"].any()
    assert lax[lax["kind"] == "pattern"]["violation"].all()


def test_barrier_warning_gives_brave_and_cautious_counts(tmp_path: Path) -> None:
    # bcast base 3 us: a 25% gain (0.75 us) is within one 2 us barrier -> warning
    truth = Truth(base={"bcast": 3e-6}, per_byte=0.0, factors={("bcast", "bcast_as_scatter_allgather"): 0.75})
    db = write_db(tmp_path / "b.duckdb", simulate(truth, {"bcast": ["default", "bcast_as_scatter_allgather"]},
                                                  [8, 16], seed=4))
    v = check.check_db(db).verdicts
    pat = v[v["kind"] == "pattern"]
    assert pat["violation"].all() and pat["barrier_warning"].all()
    assert pat["barrier_median_s"].iloc[0] == pytest.approx(2e-6, rel=0.1)
    tot = tables.totals_table(v).set_index("scope")
    assert (tot.loc["pattern", "brave"], tot.loc["pattern", "cautious"]) == (2, 0)


def test_grouped_table_picks_fastest_violating_variant(tmp_path: Path) -> None:
    truth = Truth(factors={("allreduce", "allreduce_as_reduce_bcast"): 0.7, ("allreduce", "lib:allreduce:ring"): 0.5})
    db = write_db(tmp_path / "g.duckdb", simulate(truth, {"allreduce": ["default", "allreduce_as_reduce_bcast",
                                                                       "lib:allreduce:ring"]}, SIZES, seed=5))
    g = tables.grouped_violation_table(check.check_db(db).verdicts)
    assert len(g) == 4
    assert (g["violations"] == 2).all()
    assert (g["variant"] == "lib:allreduce:ring").all()
    assert g["slowdown"].tolist() == pytest.approx([2.0] * 4, rel=0.08)


# --- incomplete and malformed databases -----------------------------------------------------------

def test_interrupted_run_marks_partial_and_says_why(tmp_path: Path) -> None:
    m = simulate(Truth(), PLAN, SIZES, launches=6, seed=6)
    # the bench died during launch 5: allreduce variants there never ran
    m = m[~((m["launch_idx"] == 5) & (m["collective"] == "allreduce"))]
    # and a mock-up measured in only 2 launches cannot be tested at all
    m = m[~((m["variant"] == "bcast_as_allgatherv") & (m["launch_idx"] >= 2))]
    db = write_db(tmp_path / "i.duckdb", m, status="interrupted", launch_status={5: "interrupted"})
    res = check.check_db(db)
    assert res.partial
    assert any("interrupted" in msg and "resume" in msg for msg in res.messages)
    assert any("launch 5" in msg for msg in res.messages)
    v = res.verdicts
    thin = v[v["variant"] == "bcast_as_allgatherv"]
    assert thin["p_value"].isna().all() and not thin["violation"].any()
    assert thin["note"].str.contains("too few launches \\(2 < 3\\)").all()
    assert v["partial"].all()  # the run is not complete: every verdict is provisional


def test_variant_missing_in_some_launches_is_partial_in_complete_run(tmp_path: Path) -> None:
    m = simulate(Truth(), {"bcast": ["default", "bcast_as_allgatherv"]}, [8], launches=6, seed=7)
    m = m[~((m["variant"] == "bcast_as_allgatherv") & (m["launch_idx"] == 0))]
    v = check.check_db(write_db(tmp_path / "p.duckdb", m)).verdicts
    row = v[v["kind"] == "pattern"].iloc[0]
    assert row["partial"] and row["note"] == "measured in 5 of 6 launches" and row["n_launches"] == 5


def test_missing_database(tmp_path: Path) -> None:
    with pytest.raises(check.CheckError, match="no results database at .*colltune check --db"):
        check.load_run(tmp_path / "nope.duckdb")


def test_not_a_duckdb_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.duckdb"
    bad.write_text("this is not a database\n")
    with pytest.raises(check.CheckError, match="is not a DuckDB database"):
        check.load_run(bad)


def test_database_without_measurements(tmp_path: Path) -> None:
    db = tmp_path / "e.duckdb"
    duckdb.connect(str(db)).close()
    with pytest.raises(check.CheckError, match="no `measurements` table"):
        check.load_run(db)
    write_db(db, simulate(Truth(), {"bcast": ["default"]}, [8]).iloc[0:0])
    with pytest.raises(check.CheckError, match="no measurements"):
        check.load_run(db)


def test_measurements_with_missing_columns(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE measurements (run_id VARCHAR, runtime_s DOUBLE)")
    with pytest.raises(check.CheckError, match="lacks column\\(s\\) collective, launch_idx, msg_bytes"):
        check.load_run(db)


def test_unknown_run_lists_the_known_ones(known_db: Path) -> None:
    with pytest.raises(check.CheckError, match="no run 'zzz'.*run-1"):
        check.load_run(known_db, "zzz")


def test_without_runs_table_or_barrier_or_default(tmp_path: Path) -> None:
    m = simulate(Truth(), {"bcast": ["bcast_as_allgatherv"], "allreduce": ["default", "default#aa"]}, [8, 64],
                 barrier_s=None, seed=8)
    db = write_db(tmp_path / "n.duckdb", m, tables=("measurements",))
    res = check.check_db(db)
    assert any("no `runs` table" in s for s in res.messages)
    assert any("no barrier measured" in s for s in res.messages)
    assert any("MPI_Bcast at 4 processes: the default was not measured" in s for s in res.messages)
    assert set(res.verdicts["collective"]) == {"allreduce"}
    assert not res.verdicts["barrier_warning"].any()


def test_too_few_launches_for_any_significance_is_explained(tmp_path: Path) -> None:
    m = simulate(Truth(factors={("bcast", "bcast_as_scatter_allgather"): 0.5}),
                 {"bcast": ["default", "bcast_as_scatter_allgather"]}, SIZES, launches=3, seed=9)
    res = check.check_db(write_db(tmp_path / "f.duckdb", m), settings=check.CheckSettings(test=stats.Test.MWU))
    assert not res.verdicts["violation"].any()
    assert any("smallest attainable p-value is 0.05" in s and "measure more launches" in s for s in res.messages)


# --- storing and loading --------------------------------------------------------------------------

def test_verdicts_round_trip_and_replace(known_db: Path) -> None:
    empty = check.load_verdicts(known_db)
    assert empty.empty and list(empty.columns) == list(check.VERDICT_COLUMNS)
    first = check.check_db(known_db)
    stored = check.load_verdicts(known_db)
    assert set(REQUIRED) <= set(stored.columns)
    assert len(stored) == len(first.verdicts)
    assert stored["violation"].sum() == first.verdicts["violation"].sum()
    # judging again with other settings replaces, never duplicates
    check.check_db(known_db, settings=check.CheckSettings(correction=stats.Correction.BH))
    again = check.load_verdicts(known_db, "run-1")
    assert len(again) == len(first.verdicts) and set(again["correction"]) == {"bh"}


def test_load_verdicts_defaults_to_latest_judged_run(tmp_path: Path) -> None:
    db = tmp_path / "two.duckdb"
    write_db(db, simulate(Truth(), {"bcast": ["default", "default#aa"]}, [8], seed=10), run_id="a")
    write_db(db, simulate(Truth(), {"bcast": ["default", "default#aa"]}, [8], seed=11), run_id="b",
             created=pd.Timestamp("2026-11-22 05:00").to_pydatetime())
    assert check.load_run(db).run_id == "b"  # latest created
    check.check_db(db, "b")
    check.check_db(db, "a")
    assert set(check.load_verdicts(db)["run_id"]) == {"a"}  # latest judged
    assert set(check.load_verdicts(db, "b")["run_id"]) == {"b"}


def test_files_for_every_table(known_db: Path, tmp_path: Path) -> None:
    res = check.check_db(known_db)
    all_tables = tables.all_tables(res)
    csvs = tables.write_csv(all_tables, tmp_path / "out")
    pqs = tables.write_parquet(all_tables, tmp_path / "out")
    assert len(csvs) == len(pqs) == len(all_tables) == 10
    grouped_csv = pd.read_csv(tmp_path / "out" / "grouped_violations.csv")
    grouped_pq = pd.read_parquet(tmp_path / "out" / "grouped_violations.parquet")
    assert len(grouped_csv) == len(grouped_pq) == 8
    assert grouped_pq["violations"].sum() == 3


# --- quality score --------------------------------------------------------------------------------

def _verdict(coll: str, n: int, slowdown: float, violation: bool, barrier: bool = False, kind: str = "pattern") -> dict:
    return {"nprocs": 4, "collective": coll, "msg_bytes": n, "kind": kind, "slowdown": slowdown,
            "violation": violation, "barrier_warning": barrier, "p_value": 0.001}


def test_quality_score_hand_computed() -> None:
    v = pd.DataFrame([
        _verdict("bcast", 8, 1.3, True),           # tolerable 0.25
        _verdict("bcast", 8, 2.5, True),           # same point, worst counts: very critical 0.75
        _verdict("bcast", 64, 1.05, True, True),   # good 0.1, but barrier warning
        _verdict("reduce", 8, 0.8, False),         # no violation
        _verdict("reduce", 64, 7.0, True, kind="monotony"),  # severe 1.0
        _verdict("reduce", 64, 1.0, False, kind="aa"),  # calibration: never scored
    ])
    brave = quality.quality_score(v, cautious=False)
    assert brave.points == 4 and brave.violated_points == 3
    assert brave.score == pytest.approx(100 * (1 - (0.75 + 0.1 + 0 + 1.0) / 4))
    cautious = quality.quality_score(v, cautious=True)
    assert cautious.violated_points == 2
    assert cautious.score == pytest.approx(100 * (1 - (0.75 + 1.0) / 4))
    assert cautious.by_class == {"good": 0, "tolerable": 0, "critical": 0, "very critical": 1, "severe": 1}
    assert math.isnan(quality.quality_score(v.iloc[0:0]).score)


# --- error rates of the whole procedure on synthetic runs ------------------------------------------

def _trial(seed: int, launches: int = 10) -> pd.DataFrame:
    truth = Truth(factors={("bcast", "bcast_as_scatter_allgather"): 0.75})  # 25% faster everywhere
    m = simulate(truth, {"bcast": ["default", "default#aa", "bcast_as_scatter_allgather", "bcast_as_allgatherv"]},
                 SIZES, launches=launches, reps=5, launch_sigma=0.1, seed=seed, barrier_s=None)
    run = check.RunData(Path("memory"), f"t{seed}", {"status": "complete"}, {}, pd.DataFrame(), pd.DataFrame(), m)
    return check.judge(run, check.CheckSettings(n_resamples=200)).verdicts


def test_error_rates_of_the_full_check() -> None:
    """A/A and a null mock-up (same truth as default) must stay at or below alpha; a 25% faster
    mock-up must be found. Rates measured over 60 runs here (200 per configuration in docs/statistics.md)."""
    trials = 60
    aa_runs_flagged = null_runs_flagged = detected = 0
    for seed in range(trials):
        v = _trial(seed)
        aa_runs_flagged += bool(v[v["kind"] == "aa"]["violation"].any())
        null_runs_flagged += bool(v[v["variant"] == "bcast_as_allgatherv"]["violation"].any())
        fast = v[v["variant"] == "bcast_as_scatter_allgather"]
        detected += int(fast["violation"].sum())
    assert aa_runs_flagged / trials <= 0.05
    assert null_runs_flagged / trials <= 0.05
    assert detected / (trials * len(SIZES)) >= 0.95


def test_zero_runtimes_do_not_crash_the_paired_test(tmp_path: Path) -> None:
    m = simulate(Truth(), {"bcast": ["default", "default#aa"]}, [8], launches=5, seed=14)
    m.loc[(m["launch_idx"] == 0) & (m["variant"] == "default"), "runtime_s"] = 0.0  # below timer resolution
    v = check.check_db(write_db(tmp_path / "z.duckdb", m)).verdicts
    aa = v[v["kind"] == "aa"].iloc[0]
    assert aa["n_launches"] == 4 and aa["partial"] and aa["note"] == "measured in 4 of 5 launches"


def test_calibration_line_tells_untested_from_unmeasured():
    # -R 2: default#aa was measured, but no comparison had the launches for a test; the line
    # used to say "no default#aa variant in this run".
    from types import SimpleNamespace

    def line(kinds_p: list[tuple[str, float]]) -> str:
        verdicts = pd.DataFrame({"kind": [k for k, _ in kinds_p], "p_value": [p for _, p in kinds_p],
                                 "raw_p_value": [p for _, p in kinds_p], "violation": [False] * len(kinds_p)})
        result = SimpleNamespace(calibration=lambda: check.calibration_summary(verdicts, 0.05),
                                 settings=check.CheckSettings())
        return tables.render_calibration(result)

    assert line([("aa", math.nan), ("aa", math.nan), ("pattern", 0.5)]) == (
        "A/A calibration: not tested (2 identical-copy comparisons measured, each on too few launches "
        "for a test: `--launches 3` or more)")
    assert line([("pattern", 0.5)]) == "A/A calibration: not measured (no default#aa variant in this run)"
    assert line([("aa", 0.5)]).startswith("A/A calibration [green]passed[/]: 0 of 1")
