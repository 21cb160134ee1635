"""The results database (DuckDB): runs, launches, environment, variants, jobs, measurements.

Schema and meaning: docs/architecture.md ("Results database"), the contract with every reader.
Writers: `colltune bench` (through `colltune.measure.runner.run`) writes each launch in one transaction,
so an interrupted run keeps every finished launch. Readers return pandas DataFrames.
"""

from __future__ import annotations

import functools
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import duckdb
import pandas as pd

from colltune import schema
from colltune.errors import ColltuneError
from colltune.paths import writable_file
from colltune.schema import JOB_COLUMNS, MEASUREMENT_COLUMNS, SCHEMA_VERSION

_SCHEMA = schema.TABLES

RunStatus = Literal["running", "complete", "interrupted"]
LaunchStatus = Literal["ok", "failed", "interrupted"]



class StoreError(ColltuneError):
    """The results database cannot be used; the message names the file and the fix."""


class StoreBusy(StoreError):
    """Another process holds the file right now (DuckDB allows one writer, or many readers)."""


@dataclass
class LaunchData:
    """Everything one finished launch produced, ready to be written in one transaction."""

    launch_idx: int
    nprocs: int
    repetition: int
    seed: int
    started: datetime
    finished: datetime
    status: LaunchStatus = "ok"
    message: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    jobs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=JOB_COLUMNS[1:]))
    measurements: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=MEASUREMENT_COLUMNS[1:]))


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)



def new_run_id() -> str:
    return f"{_now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def _open_failure(path: Path, exc: duckdb.Error) -> str:
    """Why DuckDB refused the file, in the user's terms."""
    text = str(exc)
    if pid := re.search(r"PID (\d+)", text):
        return (f"{path} is locked by another process (PID {pid.group(1)}), e.g. a colltune run still "
                "writing it; wait for it to finish or use another --db")
    if "not a valid DuckDB database" in text or "file is not a" in text.lower():
        return f"{path} is not a DuckDB database ({text}); give a new file name with --db"
    return f"cannot open {path} as a DuckDB database: {text}"


def open_when_free(path: str | Path, *, read_only: bool = False, wait_s: float = 10.0) -> Store:
    """Open the database, waiting up to `wait_s` while another process holds it for a moment (a
    report or a reader during a run), instead of failing at once; other errors are raised."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return Store(path, read_only=read_only)
        except StoreBusy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


@dataclass
class StoredRun:
    """One run's rows as its judges read them: `info` is None where the database has no `runs`
    table (written by hand or an early tool); measurements are the valid, measured repetitions."""

    run_id: str
    info: dict[str, Any] | None
    launches: pd.DataFrame
    environment: pd.DataFrame
    variants: pd.DataFrame
    measurements: pd.DataFrame


# What a `measurements` table needs to be judged at all; other columns read as NULL where missing.
RUN_KEY_COLUMNS = ("run_id", "launch_idx", "nprocs", "collective", "variant", "msg_bytes", "runtime_s")


def read_run(path: str | Path, run_id: str | None = None) -> StoredRun:
    """One run (the latest with measurements if run_id is None), the file held only while it is
    read, so that a run in progress can write its next launches."""
    with Store(path, read_only=True) as store:
        return store.run_rows(run_id)


def advise_side_file(db: Path) -> Path:
    """Where `colltune advise` listed its advise.json files before the `advice` table: `<db>.advise`."""
    return db.with_name(db.name + ".advise")


def _advice_row(report: Mapping[str, Any], *, advice_id: str, created: datetime, command: str,
                out_dir: str) -> dict[str, Any]:
    return {"advice_id": advice_id, "created": created, "command": command, "out_dir": out_dir,
            "library": report.get("library"), "nprocs": report.get("nprocs"), "wall_s": report.get("wall_s"),
            "predicted_saving_s": report.get("predicted_saving_s"), "report": json.dumps(report)}


def _side_file_rows(side: Path) -> pd.DataFrame:
    """The advice a side file lists, as `advice` rows: every advise.json it names that can still be
    read (the old report section skipped the others too), created at the file's modification time
    (the side file kept no other), the command unknown. The ids are the same at every reading, so
    an import is never made twice."""
    rows = []
    for n, line in enumerate(side.read_text(errors="replace").splitlines()):
        path = Path(line.strip())
        try:
            report = json.loads(path.read_text()) if line.strip() else None
            created = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(tzinfo=None)
        except (OSError, ValueError):
            continue
        if isinstance(report, dict):
            rows.append(_advice_row(report, advice_id=f"{created:%Y%m%d-%H%M%S}-side{n}", created=created,
                                    command="", out_dir=str(path.parent)))
    return pd.DataFrame(rows, columns=list(_SCHEMA["advice"].columns))


def _empty(table: schema.Table) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=schema.pandas_dtype(t)) for c, t in table.columns.items()})


def _engine_errors(cls: type[Store]) -> type[Store]:
    """Every public method of the store raises StoreError, never DuckDB's own errors: callers
    know one failure, which names the file (the one place that imports duckdb is this module)."""

    def guard(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def guarded(self: Store, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except duckdb.Error as exc:
                raise StoreError(f"{self.path} cannot be used as a colltune results database ({name}: {exc}); "
                                 "give another --db, or measure anew into a new file") from exc
        return guarded

    for name, member in list(vars(cls).items()):
        if callable(member) and not name.startswith("_"):
            setattr(cls, name, guard(name, member))
    return cls


@_engine_errors
class Store:
    """One results database file. Use as a context manager, or call close()."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise StoreError(f"no results database at {self.path}: measure first with "
                             f"`colltune bench --db {self.path}`")
        if not read_only:
            writable_file(self.path, "results database")
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            busy = "lock" in str(exc).lower()
            raise (StoreBusy if busy else StoreError)(_open_failure(self.path, exc)) from exc
        try:
            if not read_only:
                self._create()
            self._check_version()
        except duckdb.Error as exc:  # e.g. a table of that name with other columns, a full disk
            self.con.close()
            raise StoreError(f"{self.path} cannot be used as a colltune results database ({exc}); "
                             "give another --db, or measure anew into a new file") from exc

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _create(self) -> None:
        # One catalog query for all tables: a query per table cost ~0.1 s per open, paid by every
        # launch a check stores (issue 17's wall time).
        have = self._all_columns()
        for table in _SCHEMA.values():
            if table.name not in have:
                self.con.execute(f"CREATE TABLE IF NOT EXISTS {table.name} ({table.ddl()})")
            else:
                self._add_missing_columns(table, have[table.name])
        self.con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        self._import_advise_side_file()

    def _import_advise_side_file(self) -> None:
        """The one migration that is not a column: the advice a `<db>.advise` side file lists moves
        into the `advice` table at the first read-write open, and the side file is renamed
        `<db>.advise.imported` (kept: it is the user's). Until then read-only readers see its
        advice too (advice())."""
        side = advise_side_file(self.path)
        if not side.is_file():
            return
        rows = _side_file_rows(side)
        have = {r[0] for r in self.con.execute("SELECT advice_id FROM advice").fetchall()}
        rows = rows[~rows["advice_id"].isin(have)]
        if not rows.empty:
            with self._transaction():
                self._append("advice", rows)
        with suppress(OSError):  # a side file that cannot be renamed is imported again, as no-op
            side.rename(side.with_name(side.name + ".imported"))

    def _add_missing_columns(self, table: schema.Table, have: list[str]) -> None:
        """The one upgrade rule: a database of an older colltune gets the columns added since, at
        the end, NULL in old rows. Readers of a read-only older database see them as NULL too."""
        for name, typ in table.columns.items():
            if name not in have:
                self.con.execute(f'ALTER TABLE {table.name} ADD COLUMN "{name}" {typ}')

    def _all_columns(self) -> dict[str, list[str]]:
        have: dict[str, list[str]] = {}
        for table, column in self.con.execute(
                "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main' "
                "ORDER BY table_name, column_index").fetchall():
            have.setdefault(table, []).append(column)
        return have

    def columns(self, table: str) -> list[str]:
        return [r[0] for r in self.con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ? "
            "ORDER BY column_index", [table]).fetchall()]

    def has_table(self, table: str) -> bool:
        return bool(self.columns(table))

    def _check_version(self) -> None:
        try:
            rows = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
            row = rows[0] if rows else None
        except duckdb.CatalogException:
            if self.has_table("measurements"):
                return  # written by hand or by an early tool: read as schema 1, tables as they are
            raise StoreError(f"{self.path} is not a colltune results database (no `measurements` table): it "
                             f"was not written by `colltune bench`; measure first with "
                             f"`colltune check --db {self.path}`") from None
        if row is None or int(row[0]) > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has results schema {row and row[0]}, this colltune reads "
                             f"up to {SCHEMA_VERSION}: upgrade colltune")

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    # -- writers ---------------------------------------------------------------------------

    def create_run(self, *, kind: str, command: str, mpi_name: str, mpi_version: str,
                   abi_family: str, settings: Mapping[str, Any],
                   variants: Iterable[tuple[str, str, str, str | None]], run_id: str | None = None) -> str:
        """A new run in status `running`; `variants` are (collective, variant, kind, guideline).
        `run_id` (from new_run_id): the writer locks it before the run exists (measure.runlock)."""
        run_id = run_id or new_run_id()
        with self._transaction():
            self.con.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', NULL)",
                [run_id, _now(), kind, command, mpi_name, mpi_version, abi_family,
                 json.dumps(dict(settings), default=str)])
            rows = [(run_id, c, v, k, g) for c, v, k, g in variants]
            if rows:
                self.con.executemany("INSERT OR IGNORE INTO variants VALUES (?, ?, ?, ?, ?)", rows)
        return run_id

    def set_run_status(self, run_id: str, status: RunStatus) -> None:
        finished = _now() if status == "complete" else None
        self.con.execute("UPDATE runs SET status = ?, finished = ? WHERE run_id = ?",
                         [status, finished, run_id])

    def write_launch(self, run_id: str, launch: LaunchData) -> None:
        """Replace whatever an earlier attempt left for this launch, all or nothing."""
        with self._transaction():
            self._delete_launch(run_id, launch.launch_idx)
            self.con.execute(
                "INSERT INTO launches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, launch.launch_idx, launch.nprocs, launch.started, launch.finished,
                 launch.status, launch.message, launch.repetition, launch.seed])
            # one statement, not executemany: DuckDB runs that row by row (~50 ms for a launch's keys)
            env = sorted(launch.environment.items())
            self._insert_frame("environment", ["run_id", "launch_idx", "key", "value"], run_id, pd.DataFrame(
                {"launch_idx": [launch.launch_idx] * len(env), "key": [k for k, _ in env],
                 "value": [str(v) for _, v in env]}))
            self._insert_frame("jobs", JOB_COLUMNS, run_id, launch.jobs)
            self._insert_frame("measurements", MEASUREMENT_COLUMNS, run_id, launch.measurements)

    def discard_run(self, run_id: str) -> None:
        """Remove a run that holds no launch (refused before anything was measured), all or nothing."""
        with self._transaction():
            for table in ("measurements", "jobs", "environment", "launches", "variants", "runs"):
                self.con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])

    def _insert_frame(self, table: str, columns: list[str], run_id: str, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        self._insert_from(table, frame.assign(run_id=run_id), columns)

    def _insert_from(self, table: str, frame: pd.DataFrame, columns: list[str]) -> None:
        """INSERT the frame's `columns` into `table`. A failed insert aborts DuckDB's transaction,
        after which even unregistering the frame fails: the insert's own error is the one raised."""
        self.con.register("ct_incoming", frame[columns])
        names = ", ".join(f'"{c}"' for c in columns)
        try:
            self.con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM ct_incoming")
        except duckdb.Error:
            with suppress(duckdb.Error):
                self.con.unregister("ct_incoming")
            raise
        self.con.unregister("ct_incoming")

    def _delete_launch(self, run_id: str, launch_idx: int) -> None:
        for table in ("launches", "environment", "jobs", "measurements"):
            self.con.execute(f"DELETE FROM {table} WHERE run_id = ? AND launch_idx = ?", [run_id, launch_idx])

    # -- readers ---------------------------------------------------------------------------

    def _frame(self, table: str, run_id: str | None, order: str, extra_where: str = "") -> pd.DataFrame:
        """Rows of a registered table in the registry's column order; columns an older database
        lacks come back as NULL, a table it lacks as an empty typed frame."""
        spec = _SCHEMA[table]
        have = set(self.columns(table))
        if not have:
            return _empty(spec)
        conds, params = (["run_id = ?"], [run_id]) if run_id else ([], [])
        if extra_where:
            conds.append(extra_where)
        where = f"WHERE {' AND '.join(conds)}" if conds else ""
        cols = ", ".join(f'"{c}"' if c in have else f'NULL::{typ} AS "{c}"' for c, typ in spec.columns.items())
        return self.con.execute(f"SELECT {cols} FROM {table} {where} ORDER BY {order}", params).fetchdf()

    def runs(self) -> pd.DataFrame:
        return self._frame("runs", None, "created")

    def run_info(self, run_id: str) -> dict[str, Any]:
        cur = self.con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id])
        row = cur.fetchone()
        if row is None:
            known = ", ".join(self.runs()["run_id"]) or "none"
            raise StoreError(f"no run {run_id!r} in {self.path}; runs there: {known}")
        info = dict(zip([d[0] for d in cur.description], row, strict=True))
        info["settings"] = json.loads(info["settings"]) if info["settings"] else {}
        return info

    def latest_run_id(self, *, status: RunStatus | None = None, measured: bool = False,
                      table: str = "runs") -> str | None:
        """The newest run: of a status, with measurements, or (table=a derived table) the one
        judged last. None if there is none."""
        if measured and not self._runs_known():
            rows = self.con.execute("SELECT run_id FROM measurements LIMIT 1").fetchall()
            return str(rows[0][0]) if rows else None
        if not self.has_table(table):
            return None
        if table != "runs":
            row = self.con.execute(f"SELECT run_id FROM {table} ORDER BY {_SCHEMA[table].latest_by} DESC "
                                   "LIMIT 1").fetchone()
            return None if row is None else str(row[0])
        conds, params = (["status = ?"], [status]) if status else ([], [])
        if measured:
            conds.append("EXISTS (SELECT 1 FROM measurements m WHERE m.run_id = runs.run_id)")
        where = f"WHERE {' AND '.join(conds)}" if conds else ""
        row = self.con.execute(f"SELECT run_id FROM runs {where} ORDER BY created DESC NULLS LAST LIMIT 1",
                               params).fetchone()
        return None if row is None else str(row[0])

    def run_rows(self, run_id: str | None = None) -> StoredRun:
        """See read_run."""
        if not self.has_table("measurements"):
            raise StoreError(f"{self.path} has no `measurements` table: it was not written by `colltune bench`")
        missing = set(RUN_KEY_COLUMNS) - set(self.columns("measurements"))
        if missing:
            raise StoreError(f"{self.path}: table `measurements` lacks column(s) {', '.join(sorted(missing))}; "
                             "the database is from an incompatible colltune version")
        if run_id is None:
            run_id = self.latest_run_id(measured=True)
            if run_id is None:
                raise StoreError("the database holds no measurements: the bench was interrupted before its first "
                                 "result; measure again")
        return StoredRun(run_id, self.run_info(run_id) if self._runs_known() else None,
                         self.launches(run_id), self.environment(run_id), self.variants(run_id),
                         self.measurements(run_id, valid_only=True, include_warmup=False))

    def _runs_known(self) -> bool:
        """Whether the database records its runs: a database written by hand or an early tool
        has measurements only (its `runs` table is missing, or empty where a read-write open
        created it)."""
        return self.has_table("runs") and self.con.execute("SELECT count(*) FROM runs").fetchone()[0] > 0

    def derived(self, table: str, run_id: str | None = None, order: str = "run_id") -> pd.DataFrame:
        """A derived table's rows of one run (default: the one judged last); empty if none."""
        run_id = run_id or self.latest_run_id(table=table)
        return _empty(_SCHEMA[table]) if run_id is None else self._frame(table, run_id, order)

    def launches(self, run_id: str | None = None) -> pd.DataFrame:
        return self._frame("launches", run_id, "run_id, launch_idx")

    def finished_launches(self, run_id: str) -> set[int]:
        rows = self.con.execute("SELECT launch_idx FROM launches WHERE run_id = ? AND status = 'ok'",
                                [run_id]).fetchall()
        return {int(r[0]) for r in rows}

    def environment(self, run_id: str | None = None) -> pd.DataFrame:
        return self._frame("environment", run_id, "run_id, launch_idx, key")

    def variants(self, run_id: str | None = None) -> pd.DataFrame:
        return self._frame("variants", run_id, "run_id, collective, variant")

    def jobs(self, run_id: str | None = None) -> pd.DataFrame:
        return self._frame("jobs", run_id, "run_id, launch_idx, collective, msg_bytes, variant")

    def measurements(self, run_id: str | None = None, *, valid_only: bool = False,
                     include_warmup: bool = True) -> pd.DataFrame:
        """Raw repetitions; valid_only also drops runtimes that are NULL or not finite."""
        where = []
        if valid_only:
            where.append("coalesce(valid, TRUE) AND runtime_s IS NOT NULL AND isfinite(runtime_s)")
        if not include_warmup:
            where.append("NOT coalesce(warmup, FALSE)")
        return self._frame("measurements", run_id, "run_id, launch_idx, collective, msg_bytes, variant, rep",
                           " AND ".join(where))

    # -- derived tables ----------------------------------------------------------------------

    def replace_derived(self, table: str, frame: pd.DataFrame) -> None:
        """Replace the rows of the run(s) in `frame` of a derived table (verdicts, validations),
        all or nothing."""
        spec = _SCHEMA[table]
        if not spec.derived:
            raise ValueError(f"{table} holds measured data: it is never replaced")
        columns = list(spec.columns)
        with self._transaction():
            for run_id in frame["run_id"].unique():
                self.con.execute(f"DELETE FROM {table} WHERE run_id = ?", [str(run_id)])
            self._insert_from(table, frame, columns)

    def launch_medians(self, run_id: str) -> pd.DataFrame:
        """Median runtime per (nprocs, collective, msg_bytes, variant, launch_idx), valid measured
        repetitions only: the launch-level values every verdict starts from."""
        return self.con.execute(
            "SELECT nprocs, collective, msg_bytes, variant, launch_idx, median(runtime_s) AS median_s "
            "FROM measurements WHERE run_id = ? AND coalesce(valid, TRUE) AND NOT coalesce(warmup, FALSE) "
            "GROUP BY ALL ORDER BY ALL", [run_id]).fetchdf()

    def run_counts(self, run_id: str) -> dict[str, int]:
        """Repetitions, launches with data, skipped (job, variant) pairs and jobs stopped by the
        time budget of one run."""
        reps, launches = self.con.execute(
            "SELECT count(*), count(DISTINCT launch_idx) FROM measurements WHERE run_id = ?", [run_id]).fetchall()[0]
        skipped, budget = self.con.execute(
            "SELECT count(*) FILTER (stop_reason = 'skipped'), count(*) FILTER (stop_reason = 'time_budget') "
            "FROM jobs WHERE run_id = ?", [run_id]).fetchall()[0]
        return {"repetitions": int(reps), "launches": int(launches), "skipped": int(skipped),
                "time_budget": int(budget)}

    def skip_reasons(self, run_id: str) -> list[tuple[str, str, int]]:
        """(variant, reason, jobs) of the pairs a run's driver found not applicable, most first."""
        rows = self.con.execute(
            "SELECT variant, coalesce(skip_reason, 'no reason given'), count(*) FROM jobs "
            "WHERE run_id = ? AND stop_reason = 'skipped' GROUP BY 1, 2 ORDER BY 3 DESC, 1", [run_id]).fetchall()
        return [(str(v), str(r), int(n)) for v, r, n in rows]

    # -- comparisons (colltune compare) -----------------------------------------------------

    def add_comparison_member(self, comparison_id: str, *, run_id: str, label: str, position: int,
                              mpi_spec: str, config_env: Mapping[str, str], command: str) -> None:
        """Link a run to a comparison under its configuration's label."""
        self.con.execute("INSERT INTO comparisons VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [comparison_id, run_id, label, position, mpi_spec,
                          json.dumps(dict(config_env)), command, _now()])

    def comparison_members(self, comparison_id: str | None = None) -> pd.DataFrame:
        """The runs of one comparison (default: the newest), in the order they were given."""
        if comparison_id is None and self.has_table("comparisons"):
            row = self.con.execute("SELECT comparison_id FROM comparisons ORDER BY created DESC LIMIT 1").fetchone()
            comparison_id = None if row is None else str(row[0])
        spec = _SCHEMA["comparisons"]
        if comparison_id is None or not self.has_table("comparisons"):
            return _empty(spec)
        cols = ", ".join(f'"{c}"' for c in spec.columns)
        return self.con.execute(f"SELECT {cols} FROM comparisons WHERE comparison_id = ? ORDER BY position",
                                [comparison_id]).fetchdf()

    # -- traces and learning (colltune traces / colltune learn) -------------------------------

    def _append(self, table: str, frame: pd.DataFrame) -> None:
        self._insert_from(table, frame, list(_SCHEMA[table].columns))

    def write_trace_run(self, run: Mapping[str, Any], calls: pd.DataFrame) -> None:
        """One ingested trace directory and its calls, all or nothing."""
        with self._transaction():
            self._append("trace_runs", pd.DataFrame([dict(run)]))
            if not calls.empty:
                self._append("trace_calls", calls.assign(trace_run_id=run["trace_run_id"]))

    def trace_runs(self) -> pd.DataFrame:
        return self._frame("trace_runs", None, "ingested, trace_run_id")

    def trace_calls(self, trace_run_id: str | None = None) -> pd.DataFrame:
        where = "trace_run_id = ?" if trace_run_id else ""
        if not self.has_table("trace_calls"):
            return _empty(_SCHEMA["trace_calls"])
        cols = ", ".join(f'"{c}"' for c in _SCHEMA["trace_calls"].columns)
        return self.con.execute(f"SELECT {cols} FROM trace_calls {'WHERE ' + where if where else ''} "
                                "ORDER BY trace_run_id, comm_id, call_index",
                                [trace_run_id] if where else []).fetchdf()

    def trace_points(self, mpi_name: str | None = None, explored_only: bool = False) -> pd.DataFrame:
        """Traced calls that their member served (of one library, default all; only the explored ones if asked) grouped per
        trace run by (collective, member, msg_bytes, nodes, ppn): time_s (median runtime) and n
        (calls), the training rows of colltune learn (a median per run and point, like bench's
        per-launch medians)."""
        if not self.has_table("trace_calls"):
            return pd.DataFrame(columns=["collective", "member", "msg_bytes", "nodes", "ppn", "time_s", "n", "run"])
        return self.con.execute(
            "SELECT c.collective, c.member, c.msg_bytes, c.nodes, c.ppn, median(c.runtime_s) AS time_s, "
            "count(*) AS n, c.trace_run_id AS run FROM trace_calls c JOIN trace_runs r USING (trace_run_id) "
            "WHERE (CAST(? AS VARCHAR) IS NULL OR r.mpi_name = ?) AND isfinite(c.runtime_s) AND c.runtime_s >= 0 "
            # a member that could not serve the call (a refused library algorithm) timed the library
            "AND c.outcome = 'applied' "
            + ("AND c.mode = 'explore' " if explored_only else "") +
            "GROUP BY c.trace_run_id, c.collective, c.member, c.msg_bytes, c.nodes, c.ppn ORDER BY ALL",
            [mpi_name, mpi_name]).fetchdf()

    def trace_layouts(self, mpi_name: str | None = None) -> pd.DataFrame:
        """Communicator layouts the traced calls of one library ran on: collective, comm_size,
        nodes, ppn, calls."""
        if not self.has_table("trace_calls"):
            return pd.DataFrame(columns=["collective", "comm_size", "nodes", "ppn", "calls"])
        return self.con.execute(
            "SELECT c.collective, c.comm_size, c.nodes, c.ppn, count(*) AS calls FROM trace_calls c "
            "JOIN trace_runs r USING (trace_run_id) WHERE (CAST(? AS VARCHAR) IS NULL OR r.mpi_name = ?) "
            "GROUP BY ALL ORDER BY ALL", [mpi_name, mpi_name]).fetchdf()

    def trace_portfolios(self, mpi_name: str | None = None) -> list[str]:
        """The runtime portfolios (JSON) recorded by the trace runs of one library, newest first."""
        if not self.has_table("trace_runs"):
            return []
        rows = self.con.execute(
            "SELECT portfolios FROM trace_runs WHERE (CAST(? AS VARCHAR) IS NULL OR mpi_name = ?) "
            "AND portfolios IS NOT NULL ORDER BY ingested DESC", [mpi_name, mpi_name]).fetchall()
        return [str(r[0]) for r in rows]

    # -- advice (colltune advise) -----------------------------------------------------------

    def add_advice(self, report: Mapping[str, Any], *, command: str, out_dir: str | Path) -> str:
        """Record one advice (advise.json's content, `report`); returns its id."""
        advice_id = new_run_id()
        self._append("advice", pd.DataFrame([_advice_row(report, advice_id=advice_id, created=_now(),
                                                         command=command, out_dir=str(out_dir))]))
        return advice_id

    def advice(self) -> pd.DataFrame:
        """Every advice made with this database, oldest first. Read-only, a database whose
        `<db>.advise` side file is not imported yet (no colltune has written it since) lists the
        side file's advice too."""
        stored = self._frame("advice", None, "created, advice_id")
        side = advise_side_file(self.path)
        if not (self.read_only and side.is_file()):
            return stored
        extra = _side_file_rows(side)
        extra = extra[~extra["advice_id"].isin(set(stored["advice_id"]))]
        if extra.empty:
            return stored
        both = extra if stored.empty else pd.concat([stored, extra], ignore_index=True)
        return both.sort_values(["created", "advice_id"], kind="stable").reset_index(drop=True)

    def latest_advice(self) -> dict[str, Any] | None:
        """advise.json of the newest advice, None without one."""
        rows = self.advice()
        return None if rows.empty else dict(json.loads(rows["report"].iloc[-1]))

    def add_learn_batch(self, row: Mapping[str, Any]) -> None:
        with self._transaction():
            self.con.execute("DELETE FROM learn_batches WHERE loop_id = ? AND batch = ?",
                             [row["loop_id"], row["batch"]])
            self._append("learn_batches", pd.DataFrame([dict(row)]))

    def learn_batches(self, loop_id: str | None = None) -> pd.DataFrame:
        """The batches of one loop (default: the newest loop)."""
        if loop_id is None and self.has_table("learn_batches"):
            row = self.con.execute("SELECT loop_id FROM learn_batches ORDER BY created DESC LIMIT 1").fetchone()
            loop_id = None if row is None else str(row[0])
        if loop_id is None:
            return _empty(_SCHEMA["learn_batches"])
        cols = ", ".join(f'"{c}"' for c in _SCHEMA["learn_batches"].columns)
        return self.con.execute(f"SELECT {cols} FROM learn_batches WHERE loop_id = ? ORDER BY batch",
                                [loop_id]).fetchdf()

    def library_medians(self, mpi_name: str) -> pd.DataFrame:
        """Per-launch medians of every bench/check run of one library, with the launch's node
        layout: labelled data for colltune learn (collective, variant, msg_bytes, nprocs, nodes,
        ppn, median_s, reps, launch: run id and launch index)."""
        if not self.has_table("runs"):
            return pd.DataFrame(columns=["collective", "variant", "msg_bytes", "nprocs", "nodes", "ppn",
                                         "median_s", "reps", "launch"])
        return self.con.execute(
            "WITH lay AS (SELECT run_id, launch_idx, max(CASE WHEN key = 'nodes' THEN TRY_CAST(value AS INTEGER) END) "
            "AS nodes, max(CASE WHEN key = 'ranks_per_node' THEN list_max(TRY_CAST(string_split(value, ',') AS INTEGER[])) END) "
            "AS ppn "
            "FROM environment GROUP BY ALL) "
            "SELECT m.collective, m.variant, m.msg_bytes, m.nprocs, coalesce(l.nodes, 1) AS nodes, "
            "coalesce(l.ppn, m.nprocs) AS ppn, median(m.runtime_s) AS median_s, count(*) AS reps, "
            "m.run_id || ':' || CAST(m.launch_idx AS VARCHAR) AS launch "
            "FROM measurements m JOIN runs r USING (run_id) LEFT JOIN lay l USING (run_id, launch_idx) "
            "WHERE r.mpi_name = ? AND r.kind IN ('bench', 'check') AND coalesce(m.valid, TRUE) "
            "AND NOT coalesce(m.warmup, FALSE) AND m.collective <> 'barrier' "
            "GROUP BY m.run_id, m.launch_idx, m.collective, m.variant, m.msg_bytes, m.nprocs, l.nodes, l.ppn "
            "ORDER BY ALL", [mpi_name]).fetchdf()

    def tables(self) -> list[str]:
        return [t for t in _SCHEMA if t != "meta" and self.has_table(t)] + self._other_tables()

    def _other_tables(self) -> list[str]:
        rows = self.con.execute("SELECT table_name FROM information_schema.tables "
                                "WHERE table_schema = 'main' ORDER BY table_name").fetchall()
        return [r[0] for r in rows if r[0] not in _SCHEMA]

    # -- export ----------------------------------------------------------------------------

    def export(self, out_dir: str | Path, fmt: Literal["parquet", "csv"],
               run_id: str | None = None) -> list[Path]:
        """Every table (also those other commands added, e.g. verdicts) to one file each."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for table in self.tables():
            cols = {r[0] for r in self.con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}
            where, params = ("WHERE run_id = ?", [run_id]) if run_id and "run_id" in cols else ("", [])
            frame = self.con.execute(f"SELECT * FROM {table} {where}", params).fetchdf()
            path = out / f"{table}.{fmt}"
            if fmt == "parquet":
                frame.to_parquet(path, index=False)
            else:
                frame.to_csv(path, index=False)
            written.append(path)
        return written
