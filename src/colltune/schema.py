"""Every table of the results database, declared once (docs/architecture.md, "Results database").

The store (colltune.store) creates them, upgrades older databases by one rule (columns are only
ever added, at the end, NULL in old rows) and is the only code that runs SQL on them; the stages
read and write DataFrames through it. Measured data (runs ... measurements) is never rewritten;
derived data (verdicts, validations) is replaced per run when it is recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Table:
    name: str
    columns: dict[str, str]  # name -> DuckDB type, in contract order
    key: tuple[str, ...] = ()
    derived: bool = False  # replaced per run by the stage that computes it
    latest_by: str = ""  # column that orders runs for "the latest" of a derived table

    def ddl(self) -> str:
        cols = [f'"{c}" {t}' for c, t in self.columns.items()]
        if self.key:
            cols.append(f"PRIMARY KEY ({', '.join(self.key)})")
        return ", ".join(cols)


def _cols(spec: str) -> dict[str, str]:
    """'a INTEGER, b VARCHAR' -> {'a': 'INTEGER', 'b': 'VARCHAR'}."""
    return {name: typ.strip() for name, typ in (part.split(None, 1) for part in spec.split(","))}


# Column order of the `verdicts` table and of load_verdicts(); docs/statistics.md defines each.
VERDICT_COLUMNS: dict[str, str] = {
    "run_id": "VARCHAR",
    "nprocs": "INTEGER",
    "collective": "VARCHAR",
    "variant": "VARCHAR",
    "kind": "VARCHAR",
    "guideline": "VARCHAR",
    "msg_bytes": "BIGINT",
    "ref_bytes": "BIGINT",
    "k": "INTEGER",
    "lhs": "VARCHAR",
    "rhs": "VARCHAR",
    "default_median_s": "DOUBLE",
    "variant_median_s": "DOUBLE",
    "slowdown": "DOUBLE",
    "rel_diff": "DOUBLE",
    "ci_low": "DOUBLE",
    "ci_high": "DOUBLE",
    "statistic": "DOUBLE",
    "p_value": "DOUBLE",
    "p_adjusted": "DOUBLE",
    "significant": "BOOLEAN",
    "violation": "BOOLEAN",
    "barrier_warning": "BOOLEAN",
    "barrier_median_s": "DOUBLE",
    "n_launches": "INTEGER",
    "n_launches_default": "INTEGER",
    "n_launches_variant": "INTEGER",
    "raw_default_median_s": "DOUBLE",
    "raw_variant_median_s": "DOUBLE",
    "raw_p_value": "DOUBLE",
    "partial": "BOOLEAN",
    "note": "VARCHAR",
    "test": "VARCHAR",
    "correction": "VARCHAR",
    "alpha": "DOUBLE",
    "tolerance": "DOUBLE",
    "judged_at": "TIMESTAMP",
    # issue 17: three-way verdicts over sequential looks (docs/statistics.md)
    "verdict": "VARCHAR",  # violation | no violation | no practical violation | undecided | untested
    "p_equivalence": "DOUBLE",
    "p_equivalence_adjusted": "DOUBLE",
    "look": "INTEGER",  # the look (0 = after the first R launches) that decided, or the last
    "looks": "INTEGER",  # looks planned; each is judged at alpha / looks
    # the test that the difference lies beyond the tolerance (what a violation needs), and after
    # correction; p_value/p_adjusted stay the plain test of any difference (A/A calibration)
    "p_violation": "DOUBLE",
    "p_violation_adjusted": "DOUBLE",
    # issue 24: the node layout the launches of this process count ran on (one per run and
    # process count: a launch on another is refused); NULL when not recorded
    "nodes": "INTEGER",
    "ppn": "INTEGER",  # the most ranks on one node
    # issue 36, session 13: the equivalence margin (decide.MARGIN). A violation needs the test
    # beyond the tolerance's boundary widened by it; "no practical violation" the test inside it.
    # Without a margin (0, and in verdicts stored before it: NULL) they are p_violation and
    # p_equivalence.
    "margin": "DOUBLE",
    "p_violation_margin": "DOUBLE",
    "p_violation_margin_adjusted": "DOUBLE",
    "p_no_practical": "DOUBLE",
    "p_no_practical_adjusted": "DOUBLE",
}
# What `colltune validate` stores per point (docs/statistics.md, "Validation").
VALIDATION_COLUMNS: dict[str, str] = {
    "run_id": "VARCHAR",
    "nprocs": "INTEGER",
    "collective": "VARCHAR",
    "msg_bytes": "BIGINT",
    "profile_variant": "VARCHAR",  # what the profile names here (NULL: no rule, A/A point)
    "n_launches": "INTEGER",
    "default_median_s": "DOUBLE",
    "tuned_median_s": "DOUBLE",
    "speedup": "DOUBLE",
    "ci_low": "DOUBLE",
    "ci_high": "DOUBLE",
    "p_slower": "DOUBLE",
    "p_slower_adjusted": "DOUBLE",
    "p_faster": "DOUBLE",
    "p_faster_adjusted": "DOUBLE",
    "slower": "BOOLEAN",
    "faster": "BOOLEAN",
    "profile_hash": "VARCHAR",
    "profile_path": "VARCHAR",
    "test": "VARCHAR",
    "alpha": "DOUBLE",
    "tolerance": "DOUBLE",
    "confidence": "DOUBLE",
    "judged_at": "TIMESTAMP",
}
TABLES: dict[str, Table] = {t.name: t for t in (
    Table("meta", _cols("key VARCHAR, value VARCHAR"), key=("key",)),
    Table("runs", _cols(
        "run_id VARCHAR, created TIMESTAMP, kind VARCHAR, command VARCHAR, mpi_name VARCHAR, "
        "mpi_version VARCHAR, abi_family VARCHAR, settings JSON, status VARCHAR, finished TIMESTAMP"),
        key=("run_id",)),
    Table("launches", _cols(
        "run_id VARCHAR, launch_idx INTEGER, nprocs INTEGER, started TIMESTAMP, finished TIMESTAMP, "
        "status VARCHAR, message VARCHAR, repetition INTEGER, seed UBIGINT"),
        key=("run_id", "launch_idx")),
    Table("environment", _cols("run_id VARCHAR, launch_idx INTEGER, key VARCHAR, value VARCHAR")),
    Table("variants", _cols(
        "run_id VARCHAR, collective VARCHAR, variant VARCHAR, kind VARCHAR, guideline VARCHAR"),
        key=("run_id", "collective", "variant")),
    Table("jobs", _cols(
        "run_id VARCHAR, launch_idx INTEGER, nprocs INTEGER, collective VARCHAR, variant VARCHAR, "
        "msg_bytes BIGINT, datatype VARCHAR, op VARCHAR, root INTEGER, nrep INTEGER, "
        "stop_reason VARCHAR, rse DOUBLE, valid_reps INTEGER, cov_mean DOUBLE, cov_median DOUBLE, "
        "nrep_target INTEGER, window_s DOUBLE, resyncs INTEGER, skip_reason VARCHAR")),
    Table("measurements", _cols(
        "run_id VARCHAR, launch_idx INTEGER, nprocs INTEGER, collective VARCHAR, variant VARCHAR, "
        "msg_bytes BIGINT, rep INTEGER, warmup BOOLEAN, valid BOOLEAN, runtime_s DOUBLE, "
        "makespan_s DOUBLE, sync VARCHAR, start_s DOUBLE, end_s DOUBLE")),
    Table("verdicts", VERDICT_COLUMNS, derived=True, latest_by="judged_at"),
    # `colltune compare`: the runs measured together (launches alternating) or named together,
    # one row per configuration (docs/compare.md).
    Table("comparisons", _cols(
        "comparison_id VARCHAR, run_id VARCHAR, label VARCHAR, position INTEGER, mpi_spec VARCHAR, "
        "config_env JSON, command VARCHAR, created TIMESTAMP"),
        key=("comparison_id", "run_id")),
    Table("validations", VALIDATION_COLUMNS, derived=True, latest_by="judged_at"),
    # `colltune traces ingest` / `colltune learn` (docs/select.md, docs/learn.md): one row per
    # ingested trace directory (one application run), one row per traced call (joined over ranks).
    Table("trace_runs", _cols(
        "trace_run_id VARCHAR, ingested TIMESTAMP, trace_dir VARCHAR, command VARCHAR, app VARCHAR, "
        "batch INTEGER, mpi_name VARCHAR, mpi_version VARCHAR, abi_family VARCHAR, world_size INTEGER, "
        "nodes INTEGER, ppn INTEGER, seed UBIGINT, table_hash UBIGINT, records BIGINT, overflow BIGINT, "
        "wall_s DOUBLE, portfolios JSON"), key=("trace_run_id",)),
    Table("trace_calls", _cols(
        "trace_run_id VARCHAR, comm_id BIGINT, call_index BIGINT, collective VARCHAR, member VARCHAR, "
        "outcome VARCHAR, mode VARCHAR, reason INTEGER, msg_bytes BIGINT, comm_size INTEGER, nodes INTEGER, "
        "ppn INTEGER, size_bin INTEGER, nodes_bin INTEGER, ppn_bin INTEGER, runtime_s DOUBLE, "
        "ranks_traced INTEGER, start_s DOUBLE, redrawn BOOLEAN")),
    # `colltune advise`: one row per advice made with this database (docs/advise.md): the
    # application's command line, where its files went, and advise.json whole (`report`), which the
    # report's section "Application advice" shows. Before this table, a side file `<db>.advise`
    # listed the advise.json paths; the store imports it (colltune.store, "advice").
    Table("advice", _cols(
        "advice_id VARCHAR, created TIMESTAMP, command VARCHAR, out_dir VARCHAR, library VARCHAR, "
        "nprocs INTEGER, wall_s DOUBLE, predicted_saving_s DOUBLE, report JSON"), key=("advice_id",)),
    # `colltune learn run`: one row per batch (the table it ran with, what it cost, what it bought).
    Table("learn_batches", _cols(
        "loop_id VARCHAR, batch INTEGER, trace_run_id VARCHAR, created TIMESTAMP, source VARCHAR, "
        "table_hash UBIGINT, table_text VARCHAR, wall_s DOUBLE, traced_calls BIGINT, explored_calls BIGINT, "
        "collective_s DOUBLE, est_gain DOUBLE, regret DOUBLE, oracle_s DOUBLE, default_s DOUBLE"),
        key=("loop_id", "batch")),
)}

MEASUREMENT_COLUMNS = list(TABLES["measurements"].columns)
JOB_COLUMNS = list(TABLES["jobs"].columns)


def pandas_dtype(sql: str) -> str:
    """The pandas dtype of an empty column of this DuckDB type (typed empty frames)."""
    return {"VARCHAR": "object", "INTEGER": "Int64", "BIGINT": "Int64", "UBIGINT": "UInt64",
            "DOUBLE": "float64", "BOOLEAN": "bool", "TIMESTAMP": "datetime64[us]", "JSON": "object"}[sql]
