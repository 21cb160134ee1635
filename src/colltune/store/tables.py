"""The tables of the results database as schema.py declares them: created, upgraded, version
checked at every open; read back in the registry's column order; exported.

One upgrade rule (docs/architecture.md, "Results database"): a database of an older colltune gets
the columns added since, at the end, NULL in old rows, when opened for writing; opened read-only,
its readers see them as NULL.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import pandas as pd

from colltune import schema
from colltune.schema import SCHEMA_VERSION
from colltune.store.engine import Engine, StoreError

SCHEMA = schema.TABLES


def empty(table: schema.Table) -> pd.DataFrame:
    """A table's rows where it has none: an empty frame of its columns and types."""
    return pd.DataFrame({c: pd.Series(dtype=schema.pandas_dtype(t)) for c, t in table.columns.items()})


class Tables(Engine):
    """The registry's tables on an open file; `_migrate` moves what an older colltune kept
    elsewhere into them, at a read-write open."""

    def _prepare(self) -> None:
        if not self.read_only:
            self._create()
        self._check_version()

    def _create(self) -> None:
        # One catalog query for all tables: a query per table cost ~0.1 s per open, paid by every
        # launch a check stores (issue 17's wall time).
        have = self._all_columns()
        self.__dict__.pop("_known_columns", None)
        for table in SCHEMA.values():
            if table.name not in have:
                self.con.execute(f"CREATE TABLE IF NOT EXISTS {table.name} ({table.ddl()})")
            else:
                self._add_missing_columns(table, have[table.name])
        self.con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        self._migrate()

    def _migrate(self) -> None:
        """Migrations that are not columns (the advice side file: store/advice.py)."""

    def _add_missing_columns(self, table: schema.Table, have: list[str]) -> None:
        """The one upgrade rule: a database of an older colltune gets the columns added since, at
        the end, NULL in old rows. Readers of a read-only older database see them as NULL too."""
        self.__dict__.pop("_known_columns", None)
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
        # Kept per open file once the table exists: a read of one run asks 7 times (~4 ms each,
        # ~0.03 s of each of a check's looks: issue 36, session 15). This connection's own DDL
        # (_create, at the open) is the only one while the file is held: DuckDB lets no other
        # process write it meanwhile.
        known: dict[str, list[str]] = self.__dict__.setdefault("_known_columns", {})
        if table in known:
            return list(known[table])
        have = [r[0] for r in self.con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ? "
            "ORDER BY column_index", [table]).fetchall()]
        if have:
            known[table] = have
        return list(have)

    def has_table(self, table: str) -> bool:
        return bool(self.columns(table))

    def _check_version(self) -> None:
        rows = self._rows_if_table("SELECT value FROM meta WHERE key = 'schema_version'")
        if rows is None:
            if self.has_table("measurements"):
                return  # written by hand or by an early tool: read as schema 1, tables as they are
            raise StoreError(f"{self.path} is not a colltune results database (no `measurements` table): it "
                             f"was not written by `colltune bench`; measure first with "
                             f"`colltune check --db {self.path}`")
        row = rows[0] if rows else None
        if row is None or int(row[0]) > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has results schema {row and row[0]}, this colltune reads "
                             f"up to {SCHEMA_VERSION}: upgrade colltune")

    def _append(self, table: str, frame: pd.DataFrame) -> None:
        self._insert_from(table, frame, list(SCHEMA[table].columns))

    def _frame(self, table: str, run_id: str | None, order: str, extra_where: str = "",
               only: Sequence[str] | None = None) -> pd.DataFrame:
        """Rows of a registered table in the registry's column order (or just the columns `only`
        names, in its order); columns an older database lacks come back as NULL, a table it lacks
        as an empty typed frame."""
        spec = SCHEMA[table]
        have = set(self.columns(table))
        if not have:
            return empty(spec) if only is None else empty(spec)[list(only)]
        conds, params = (["run_id = ?"], [run_id]) if run_id else ([], [])
        if extra_where:
            conds.append(extra_where)
        where = f"WHERE {' AND '.join(conds)}" if conds else ""
        wanted = spec.columns.items() if only is None else [(c, spec.columns[c]) for c in only]
        cols = ", ".join(f'"{c}"' if c in have else f'NULL::{typ} AS "{c}"' for c, typ in wanted)
        return self.con.execute(f"SELECT {cols} FROM {table} {where} ORDER BY {order}", params).fetchdf()

    def tables(self) -> list[str]:
        return [t for t in SCHEMA if t != "meta" and self.has_table(t)] + self._other_tables()

    def _other_tables(self) -> list[str]:
        rows = self.con.execute("SELECT table_name FROM information_schema.tables "
                                "WHERE table_schema = 'main' ORDER BY table_name").fetchall()
        return [r[0] for r in rows if r[0] not in SCHEMA]

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
