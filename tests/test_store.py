"""The results database: schema, one transaction per launch, readers, export."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from colltune import schema
from colltune.schema import JOB_COLUMNS, MEASUREMENT_COLUMNS
from colltune.store import LaunchData, Store, StoreError

T0 = datetime(2026, 11, 22, 5, 0, 0)


def _launch(idx: int, reps: int = 4, status: str = "ok") -> LaunchData:
    meas = pd.DataFrame({
        "launch_idx": idx, "nprocs": 4, "collective": "bcast",
        "variant": ["default", "bcast_as_allgatherv"] * reps,
        "msg_bytes": 8, "rep": [i // 2 for i in range(2 * reps)],
        "warmup": [i < 2 for i in range(2 * reps)], "valid": True,
        "runtime_s": [1e-6 * (i + 1) for i in range(2 * reps)], "makespan_s": None,
        "sync": "dissemination", "start_s": [0.1 * i for i in range(2 * reps)],
        "end_s": [0.1 * i + 1e-6 for i in range(2 * reps)]})
    jobs = pd.DataFrame([{"launch_idx": idx, "nprocs": 4, "collective": "bcast", "variant": v,
                          "msg_bytes": 8, "datatype": "byte", "op": None, "root": 0, "nrep": reps - 1,
                          "stop_reason": "max_reps", "rse": 0.01, "valid_reps": reps - 1,
                          "cov_mean": None, "cov_median": None, "nrep_target": None,
                          "window_s": None, "resyncs": 0, "skip_reason": None}
                         for v in ("default", "bcast_as_allgatherv")], columns=JOB_COLUMNS[1:])
    return LaunchData(launch_idx=idx, nprocs=4, repetition=idx, seed=99 + idx, started=T0,
                      finished=T0, status=status, environment={"cpu_model": "x", "nodes": "1"},  # type: ignore[arg-type]
                      jobs=jobs, measurements=meas[MEASUREMENT_COLUMNS[1:]])


def _run(store: Store) -> str:
    return store.create_run(kind="bench", command="colltune bench -n 4", mpi_name="openmpi",
                            mpi_version="Open MPI v5.0.11", abi_family="openmpi",
                            settings={"launches": 2, "nprocs": [4]},
                            variants=[("bcast", "default", "default", None),
                                      ("bcast", "bcast_as_allgatherv", "mockup", "GL9")])


def test_roundtrip_and_plain_sql(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    with Store(db) as store:
        run_id = _run(store)
        store.write_launch(run_id, _launch(0))
        store.write_launch(run_id, _launch(1))
        store.set_run_status(run_id, "complete")
        assert store.finished_launches(run_id) == {0, 1}
        info = store.run_info(run_id)
        assert info["status"] == "complete" and info["settings"] == {"launches": 2, "nprocs": [4]}
        m = store.measurements(run_id)
        assert len(m) == 16 and list(m.columns) == MEASUREMENT_COLUMNS
        assert len(store.measurements(run_id, include_warmup=False)) == 12
        assert list(store.jobs(run_id).columns) == JOB_COLUMNS
        assert set(store.variants(run_id).kind) == {"default", "mockup"}
        env = store.environment(run_id)
        assert sorted(env.key.unique()) == ["cpu_model", "nodes"] and len(env) == 4
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT variant, count(*) FROM measurements WHERE NOT warmup GROUP BY 1 ORDER BY 1"
                       ).fetchall() == [("bcast_as_allgatherv", 6), ("default", 6)]
    con.close()


def test_launches_written_together_are_the_launches_written_one_by_one(tmp_path: Path) -> None:
    """write_launches (the runner's batches): the same rows as write_launch per launch, and a
    launch written again replaces its earlier rows."""
    tables = ("launches", "environment", "jobs", "measurements")
    rows = {}
    for name, write in (("one", lambda s, r: [s.write_launch(r, _launch(i)) for i in (0, 1, 2)]),
                        ("batch", lambda s, r: (s.write_launches(r, [_launch(0, reps=9)]),
                                                s.write_launches(r, [_launch(0), _launch(1), _launch(2)]),
                                                s.write_launches(r, [])))):
        with Store(tmp_path / f"{name}.duckdb") as store:
            run_id = _run(store)
            write(store, run_id)
            rows[name] = {t: store.con.execute(f"SELECT * EXCLUDE (run_id) FROM {t} ORDER BY ALL").fetchall()
                          for t in tables}
    assert rows["batch"] == rows["one"]
    assert [len(rows["one"][t]) for t in tables] == [3, 6, 6, 24]


def test_a_failed_write_leaves_nothing_of_that_launch(tmp_path: Path) -> None:
    with Store(tmp_path / "r.duckdb") as store:
        run_id = _run(store)
        store.write_launch(run_id, _launch(0))
        bad = _launch(1)
        bad.measurements = bad.measurements.assign(rep="not a number")
        with pytest.raises(StoreError, match="r.duckdb cannot be used as a colltune results database "
                                             "\\(write_launch: "):  # DuckDB's error, wrapped
            store.write_launch(run_id, bad)
        assert store.finished_launches(run_id) == {0}
        assert set(store.measurements(run_id).launch_idx) == {0}
        assert set(store.environment(run_id).launch_idx) == {0}
        assert set(store.jobs(run_id).launch_idx) == {0}


def test_rewriting_a_launch_replaces_it(tmp_path: Path) -> None:
    with Store(tmp_path / "r.duckdb") as store:
        run_id = _run(store)
        store.write_launch(run_id, LaunchData(launch_idx=0, nprocs=4, repetition=0, seed=1, started=T0,
                                              finished=T0, status="failed", message="exit code 1"))
        assert store.finished_launches(run_id) == set()
        assert store.launches(run_id).message.tolist() == ["exit code 1"]
        store.write_launch(run_id, _launch(0, reps=5))
        assert store.finished_launches(run_id) == {0}
        assert len(store.measurements(run_id)) == 10


def test_export_every_table(tmp_path: Path) -> None:
    with Store(tmp_path / "r.duckdb") as store:
        run_id = _run(store)
        store.write_launch(run_id, _launch(0))
        # a table of a newer colltune that this one does not know is exported too
        store.con.execute("CREATE TABLE extra_notes (run_id VARCHAR, guideline VARCHAR)")
        store.con.execute("INSERT INTO extra_notes VALUES (?, 'GL9')", [run_id])
        for fmt in ("parquet", "csv"):
            files = store.export(tmp_path / fmt, fmt)  # type: ignore[arg-type]
            assert sorted(f.name for f in files) == sorted(
                f"{t}.{fmt}" for t in ("runs", "launches", "environment", "variants", "jobs",
                                       "measurements", "verdicts", "comparisons", "validations", "trace_runs",
                                       "trace_calls", "advice", "learn_batches", "extra_notes"))
        back = pd.read_parquet(tmp_path / "parquet" / "measurements.parquet")
        assert len(back) == 8 and sorted(back.runtime_s) == sorted(store.measurements(run_id).runtime_s)
        assert len(pd.read_csv(tmp_path / "csv" / "extra_notes.csv")) == 1
        assert len(pd.read_csv(tmp_path / "csv" / "verdicts.csv")) == 0


def test_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results database at .*colltune bench --db"):
        Store(tmp_path / "missing.duckdb", read_only=True)
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).close()
    with pytest.raises(StoreError, match="not a colltune results database"):
        Store(other, read_only=True)
    with Store(tmp_path / "r.duckdb") as store:
        _run(store)
        with pytest.raises(StoreError, match="no run 'nope'"):
            store.run_info("nope")


def test_older_database_gets_new_columns(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("CREATE TABLE measurements (run_id VARCHAR, launch_idx INTEGER, runtime_s DOUBLE)")
    con.execute("INSERT INTO measurements VALUES ('old', 0, 1e-6)")
    con.close()
    with Store(db, read_only=True) as store:  # read-only: missing columns read as NULL
        m = store.measurements("old")
        assert list(m.columns) == MEASUREMENT_COLUMNS
        assert m.runtime_s.tolist() == [1e-6] and m.start_s.isna().all()
    with Store(db) as store:  # writable: the columns are added at the end of the table
        assert store.columns("measurements") == ["run_id", "launch_idx", "runtime_s",
                                                  *MEASUREMENT_COLUMNS[2:9], *MEASUREMENT_COLUMNS[10:]]
        m = store.measurements("old")
        assert list(m.columns) == MEASUREMENT_COLUMNS
        assert m.runtime_s.tolist() == [1e-6] and m.start_s.isna().all()


def test_export_command(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from colltune.commands.export import command

    db = tmp_path / "r.duckdb"
    with Store(db) as store:
        run_id = _run(store)
        store.write_launch(run_id, _launch(0))
        other = _run(store)
        store.write_launch(other, _launch(0, reps=6))
    result = CliRunner().invoke(command, ["--db", str(db), "--format", "csv", "--out", str(tmp_path / "x"),
                                          "--run", run_id])
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(tmp_path / "x" / "measurements.csv")) == 8
    result = CliRunner().invoke(command, ["--db", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "y")])
    assert result.exit_code == 2 and "no results database" in result.output
    result = CliRunner().invoke(command, ["--db", str(db), "--out", str(tmp_path / "y"), "--run", "nope"])
    assert result.exit_code == 2 and "no run 'nope'" in result.output


def _import_v1(tmp_path: Path) -> Path:
    """tests/data/results-v1: a check (bcast, allreduce at 8 B and 1 KiB, 2 ranks, 3 launches) written
    by colltune 0.1.0 with schema 1, exported with DuckDB's EXPORT DATABASE (Parquet)."""
    import duckdb

    src = Path(__file__).parent / "data" / "results-v1"
    db = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(db))
    con.execute((src / "schema.sql").read_text())
    for table in ("environment", "jobs", "launches", "measurements", "meta", "runs", "variants", "verdicts"):
        con.execute(f"INSERT INTO {table} SELECT * FROM read_parquet('{src / table}.parquet')")
    con.close()
    return db


def test_a_database_of_the_first_release_still_opens(tmp_path: Path) -> None:
    from colltune.verify import check

    db = _import_v1(tmp_path)
    with Store(db, read_only=True) as store:
        runs = store.runs()
        assert list(runs["status"]) == ["complete"] and list(runs["kind"]) == ["check"]
        run_id = str(runs["run_id"][0])
        assert store.latest_run_id(measured=True) == run_id
        assert store.latest_run_id(table="verdicts") == run_id
        assert set(store.measurements(run_id)["collective"]) == {"bcast", "allreduce", "barrier"}
    stored = check.load_verdicts(db)
    assert len(stored) == 18 and set(stored["collective"]) == {"bcast", "allreduce"}
    # judged again by today's code: same points, and the upgrade adds today's columns
    result = check.check_db(db)
    assert len(result.verdicts) == len(stored)
    with Store(db) as store:
        assert set(schema.VERDICT_COLUMNS) <= set(store.derived("verdicts").columns)


def test_open_when_free_waits_for_a_reader(tmp_path: Path) -> None:
    """A run opens the database only to write; a reader holding it for a moment (the user's
    `colltune report`, a test polling) must not make the run fail."""
    import subprocess
    import sys

    from colltune.store import StoreBusy, open_when_free

    db = tmp_path / "busy.duckdb"
    Store(db).close()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ok', flush=True); "
        "time.sleep(1.5)"), str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        with pytest.raises(StoreBusy):
            Store(db)
        with open_when_free(db, wait_s=30) as store:  # returns once the holder has let go
            # the kernel releases the lock as the holder exits, a moment before it is waitable
            assert holder.wait(timeout=10) == 0
            assert store.runs().empty
    finally:
        holder.kill()
        holder.wait()


def test_a_failed_insert_reports_its_own_error(tmp_path: Path) -> None:
    """DuckDB aborts the transaction of a failed insert; the error the caller sees is the
    insert's (here a text where a number belongs), not the abort that unregistering then hits."""
    import pandas as pd

    from colltune.store import StoreError

    calls = pd.DataFrame([{"comm_id": "not a number", "call_index": 0, "collective": "bcast", "member": "default",
                           "outcome": "applied", "mode": "exploit", "reason": 0, "msg_bytes": 8, "comm_size": 2,
                           "nodes": 1, "ppn": 2, "size_bin": 4, "nodes_bin": 0, "ppn_bin": 1, "runtime_s": 1e-6,
                           "ranks_traced": 2, "start_s": 0.0, "redrawn": False}])
    run = dict.fromkeys(["ingested", "trace_dir", "command", "app", "batch", "mpi_version", "abi_family", "nodes",
                         "ppn", "seed", "table_hash", "records", "overflow", "wall_s", "portfolios"])
    with Store(tmp_path / "t.duckdb") as store:
        with pytest.raises(StoreError) as err:
            store.write_trace_run({**run, "trace_run_id": "r1", "mpi_name": "mpich", "world_size": 2}, calls)
        assert "not a number" in str(err.value) and "aborted" not in str(err.value)
        assert store.trace_runs().empty   # all or nothing
