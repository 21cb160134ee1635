"""The results database (DuckDB) as one object: `Store`, every table's concern in one class.

Schema and meaning: docs/architecture.md ("Results database"), the contract with every reader.
Writers: `colltune bench` (through `colltune.measure.runner`) writes each launch in one
transaction, so an interrupted run keeps every finished launch. Readers return pandas DataFrames.
"""

from __future__ import annotations

import time
from pathlib import Path

from colltune.store.advice import Advice
from colltune.store.engine import StoreBusy, engine_errors
from colltune.store.learning import Learning
from colltune.store.runs import Runs, StoredRun


@engine_errors
class Store(Runs, Learning, Advice):
    """One results database file, opened (and, read-write, created or upgraded) at construction.
    Use as a context manager, or call close()."""


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


def read_run(path: str | Path, run_id: str | None = None) -> StoredRun:
    """One run (the latest with measurements if run_id is None), the file held only while it is
    read, so that a run in progress can write its next launches."""
    with Store(path, read_only=True) as store:
        return store.run_rows(run_id)
