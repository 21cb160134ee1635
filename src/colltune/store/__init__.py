"""The results database (DuckDB): the only SQL and the only `import duckdb` (store/engine.py).

engine.py opens the file and turns DuckDB's errors into StoreError; tables.py creates, upgrades
and reads the tables schema.py declares; runs.py, learning.py and advice.py hold each table's
writers and queries; database.py joins them into `Store`."""

from colltune.store.advice import advise_side_file
from colltune.store.database import Store, open_when_free, read_run
from colltune.store.engine import StoreBusy, StoreError
from colltune.store.runs import RUN_KEY_COLUMNS, LaunchData, StoredRun, new_run_id

__all__ = ["RUN_KEY_COLUMNS", "LaunchData", "Store", "StoreBusy", "StoreError", "StoredRun", "advise_side_file",
           "new_run_id", "open_when_free", "read_run"]
