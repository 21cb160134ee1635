"""Measured runs: `runs`, `launches`, `environment`, `variants`, `jobs`, `measurements` written
launch by launch, each launch in one transaction (an interrupted run keeps every finished
launch), and read back as their judges read them; the derived tables computed from a run
(`verdicts`, `validations`) and the runs a comparison links (`comparisons`)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

import pandas as pd

from colltune.schema import JOB_COLUMNS, MEASUREMENT_COLUMNS
from colltune.store.engine import StoreError
from colltune.store.tables import SCHEMA, Tables, empty

RunStatus = Literal["running", "complete", "interrupted"]
LaunchStatus = Literal["ok", "failed", "interrupted"]

# What a `measurements` table needs to be judged at all; other columns read as NULL where missing.
RUN_KEY_COLUMNS = ("run_id", "launch_idx", "nprocs", "collective", "variant", "msg_bytes", "runtime_s")


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def new_run_id() -> str:
    return f"{now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


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


class Runs(Tables):
    """The measured runs' tables, the derived tables and comparisons on an open file."""

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
                [run_id, now(), kind, command, mpi_name, mpi_version, abi_family,
                 json.dumps(dict(settings), default=str)])
            rows = [(run_id, c, v, k, g) for c, v, k, g in variants]
            if rows:
                self.con.executemany("INSERT OR IGNORE INTO variants VALUES (?, ?, ?, ?, ?)", rows)
        return run_id

    def set_run_status(self, run_id: str, status: RunStatus) -> None:
        finished = now() if status == "complete" else None
        self.con.execute("UPDATE runs SET status = ?, finished = ? WHERE run_id = ?",
                         [status, finished, run_id])

    def write_launch(self, run_id: str, launch: LaunchData) -> None:
        """Replace whatever an earlier attempt left for this launch, all or nothing."""
        self._write_launches(run_id, [launch])

    def write_launches(self, run_id: str, launches: list[LaunchData]) -> None:
        """write_launch for several launches in one transaction: each DELETE scans its whole table
        and each INSERT has a fixed cost, ~30 ms per launch of a quick check on a results file of
        ten checks (a check writes 32 launches)."""
        self._write_launches(run_id, launches)

    def _write_launches(self, run_id: str, launches: list[LaunchData]) -> None:
        if not launches:
            return
        ids = [launch.launch_idx for launch in launches]
        marks = ", ".join("?" * len(ids))
        with self._transaction():
            for table in ("launches", "environment", "jobs", "measurements"):
                self.con.execute(f"DELETE FROM {table} WHERE run_id = ? AND launch_idx IN ({marks})", [run_id, *ids])
            self._insert_frame("launches", ["run_id", "launch_idx", "nprocs", "started", "finished", "status",
                                            "message", "repetition", "seed"], run_id, pd.DataFrame(
                {"launch_idx": ids, "nprocs": [x.nprocs for x in launches],
                 "started": [x.started for x in launches], "finished": [x.finished for x in launches],
                 "status": [x.status for x in launches], "message": [x.message for x in launches],
                 "repetition": [x.repetition for x in launches], "seed": [x.seed for x in launches]}))
            # one statement per table, not executemany: DuckDB runs that row by row (~50 ms for a launch's keys)
            env = [(x.launch_idx, k, str(v)) for x in launches for k, v in sorted(x.environment.items())]
            self._insert_frame("environment", ["run_id", "launch_idx", "key", "value"], run_id,
                               pd.DataFrame(env, columns=["launch_idx", "key", "value"]))
            for table, columns, frames in (("jobs", JOB_COLUMNS, [x.jobs for x in launches]),
                                           ("measurements", MEASUREMENT_COLUMNS, [x.measurements for x in launches])):
                frames = [f for f in frames if not f.empty]
                if frames:
                    self._insert_frame(table, columns, run_id, pd.concat(frames, ignore_index=True))

    def discard_run(self, run_id: str) -> None:
        """Remove a run that holds no launch (refused before anything was measured), all or nothing."""
        with self._transaction():
            for table in ("measurements", "jobs", "environment", "launches", "variants", "runs"):
                self.con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])

    def _insert_frame(self, table: str, columns: list[str], run_id: str, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        self._insert_from(table, frame.assign(run_id=run_id), columns)

    # -- readers ---------------------------------------------------------------------------

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
            row = self.con.execute(f"SELECT run_id FROM {table} ORDER BY {SCHEMA[table].latest_by} DESC "
                                   "LIMIT 1").fetchone()
            return None if row is None else str(row[0])
        conds, params = (["status = ?"], [status]) if status else ([], [])
        if measured:
            conds.append("EXISTS (SELECT 1 FROM measurements m WHERE m.run_id = runs.run_id)")
        where = f"WHERE {' AND '.join(conds)}" if conds else ""
        row = self.con.execute(f"SELECT run_id FROM runs {where} ORDER BY created DESC NULLS LAST LIMIT 1",
                               params).fetchone()
        return None if row is None else str(row[0])

    def run_rows(self, run_id: str | None = None, *, only: Sequence[str] | None = None,
                 after_launch: int | None = None) -> StoredRun:
        """One run (the latest with measurements if run_id is None), as its judges read it: of
        the measurements only the columns `only` names (all: None), of launches after
        `after_launch` (a judge that holds the earlier ones)."""
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
                         self.measurements(run_id, valid_only=True, include_warmup=False, only=only,
                                           after_launch=after_launch))

    def _runs_known(self) -> bool:
        """Whether the database records its runs: a database written by hand or an early tool
        has measurements only (its `runs` table is missing, or empty where a read-write open
        created it)."""
        return self.has_table("runs") and self.con.execute("SELECT count(*) FROM runs").fetchone()[0] > 0

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
                     include_warmup: bool = True, only: Sequence[str] | None = None,
                     after_launch: int | None = None) -> pd.DataFrame:
        """Raw repetitions; valid_only also drops runtimes that are NULL or not finite; `only`
        these columns; `after_launch`: of later launches only."""
        where = [] if after_launch is None else [f"launch_idx > {int(after_launch)}"]
        if valid_only:
            where.append("coalesce(valid, TRUE) AND runtime_s IS NOT NULL AND isfinite(runtime_s)")
        if not include_warmup:
            where.append("NOT coalesce(warmup, FALSE)")
        return self._frame("measurements", run_id, "run_id, launch_idx, collective, msg_bytes, variant, rep",
                           " AND ".join(where), only)

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

    def skipped_pairs(self, run_id: str) -> list[tuple[str, str, str, int]]:
        """(collective, variant, reason, jobs) of the pairs a run's driver did not measure."""
        rows = self.con.execute(
            "SELECT collective, variant, coalesce(skip_reason, 'no reason given'), count(*) FROM jobs "
            "WHERE run_id = ? AND stop_reason = 'skipped' GROUP BY 1, 2, 3 ORDER BY 1, 2, 4 DESC, 3",
            [run_id]).fetchall()
        return [(str(c), str(v), str(r), int(n)) for c, v, r, n in rows]

    # -- derived tables ----------------------------------------------------------------------

    def replace_derived(self, table: str, frame: pd.DataFrame) -> None:
        """Replace the rows of the run(s) in `frame` of a derived table (verdicts, validations),
        all or nothing."""
        spec = SCHEMA[table]
        if not spec.derived:
            raise ValueError(f"{table} holds measured data: it is never replaced")
        columns = list(spec.columns)
        with self._transaction():
            for run_id in frame["run_id"].unique():
                self.con.execute(f"DELETE FROM {table} WHERE run_id = ?", [str(run_id)])
            self._insert_from(table, frame, columns)

    def derived(self, table: str, run_id: str | None = None, order: str = "run_id") -> pd.DataFrame:
        """A derived table's rows of one run (default: the one judged last); empty if none."""
        run_id = run_id or self.latest_run_id(table=table)
        return empty(SCHEMA[table]) if run_id is None else self._frame(table, run_id, order)

    # -- comparisons (colltune compare) -----------------------------------------------------

    def add_comparison_member(self, comparison_id: str, *, run_id: str, label: str, position: int,
                              mpi_spec: str, config_env: Mapping[str, str], command: str) -> None:
        """Link a run to a comparison under its configuration's label."""
        self.con.execute("INSERT INTO comparisons VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [comparison_id, run_id, label, position, mpi_spec,
                          json.dumps(dict(config_env)), command, now()])

    def comparison_members(self, comparison_id: str | None = None) -> pd.DataFrame:
        """The runs of one comparison (default: the newest), in the order they were given."""
        if comparison_id is None and self.has_table("comparisons"):
            row = self.con.execute("SELECT comparison_id FROM comparisons ORDER BY created DESC LIMIT 1").fetchone()
            comparison_id = None if row is None else str(row[0])
        spec = SCHEMA["comparisons"]
        if comparison_id is None or not self.has_table("comparisons"):
            return empty(spec)
        cols = ", ".join(f'"{c}"' for c in spec.columns)
        return self.con.execute(f"SELECT {cols} FROM comparisons WHERE comparison_id = ? ORDER BY position",
                                [comparison_id]).fetchdf()
