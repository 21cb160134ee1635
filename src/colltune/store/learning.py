"""The tables of online selection: traced calls (`trace_runs`, `trace_calls`, written by
`colltune traces ingest` and `colltune learn`), a learning loop's batches (`learn_batches`), and
the labelled data `colltune learn` trains on (traced calls, the bench's per-launch medians)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from colltune.store.tables import SCHEMA, Tables, empty


class Learning(Tables):
    """The tables of online selection on an open file."""

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
            return empty(SCHEMA["trace_calls"])
        cols = ", ".join(f'"{c}"' for c in SCHEMA["trace_calls"].columns)
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
            return empty(SCHEMA["learn_batches"])
        cols = ", ".join(f'"{c}"' for c in SCHEMA["learn_batches"].columns)
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
