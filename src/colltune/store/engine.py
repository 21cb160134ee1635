"""The results database's engine: one DuckDB file, opened, written in transactions, closed.

The only module that imports duckdb. DuckDB's errors never leave the store: an open that fails
says why in the user's terms (another process holds the file, it is no database), and every
public method of the store raises StoreError naming the file (`engine_errors`), so callers know
one failure.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Self, TypeVar

import duckdb
import pandas as pd

from colltune.errors import ColltuneError
from colltune.paths import writable_file


class StoreError(ColltuneError):
    """The results database cannot be used; the message names the file and the fix."""


class StoreBusy(StoreError):
    """Another process holds the file right now (DuckDB allows one writer, or many readers)."""


def _open_failure(path: Path, exc: duckdb.Error) -> str:
    """Why DuckDB refused the file, in the user's terms."""
    text = str(exc)
    if pid := re.search(r"PID (\d+)", text):
        return (f"{path} is locked by another process (PID {pid.group(1)}), e.g. a colltune run still "
                "writing it; wait for it to finish or use another --db")
    if "not a valid DuckDB database" in text or "file is not a" in text.lower():
        return f"{path} is not a DuckDB database ({text}); give a new file name with --db"
    return f"cannot open {path} as a DuckDB database: {text}"


def _unusable(path: Path, why: str) -> StoreError:
    return StoreError(f"{path} cannot be used as a colltune results database ({why}); "
                      "give another --db, or measure anew into a new file")


E = TypeVar("E", bound="Engine")


def engine_errors(cls: type[E]) -> type[E]:
    """Every public method of `cls`, its own and inherited, raises StoreError, never DuckDB's
    own errors."""

    def guard(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def guarded(self: Engine, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except duckdb.Error as exc:
                raise _unusable(self.path, f"{name}: {exc}") from exc
        return guarded

    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("_"):
            setattr(cls, name, guard(name, member))
    return cls


class Engine:
    """One DuckDB file held open. Use as a context manager, or call close(). `_prepare` (the
    tables' creation, upgrade and version check) runs at every open."""

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
            self._prepare()
        except duckdb.Error as exc:  # e.g. a table of that name with other columns, a full disk
            self.con.close()
            raise _unusable(self.path, str(exc)) from exc

    def _prepare(self) -> None:
        """What an open does to the file before it is used."""

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def _rows_if_table(self, sql: str) -> list[tuple[Any, ...]] | None:
        """The rows of `sql`, None where a table it reads does not exist."""
        try:
            return self.con.execute(sql).fetchall()
        except duckdb.CatalogException:
            return None

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
