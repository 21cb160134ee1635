"""Table `advice`: what `colltune advise` recorded, and the side file that held it before.

Before the table, advise listed its advise.json files in a side file `<db>.advise`. The first
read-write open imports them and renames the side file `<db>.advise.imported` (kept: it is the
user's); until then a read-only reader sees its advice as if it were in the table, never twice
(the imported rows' ids derive from the side file).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from colltune.store.runs import new_run_id, now
from colltune.store.tables import SCHEMA, Tables


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
    return pd.DataFrame(rows, columns=list(SCHEMA["advice"].columns))


class Advice(Tables):
    """Table `advice` on an open file, the side file imported at a read-write open."""

    def _migrate(self) -> None:
        """The one migration that is not a column: the side file's advice moves into the table."""
        super()._migrate()
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

    def add_advice(self, report: Mapping[str, Any], *, command: str, out_dir: str | Path) -> str:
        """Record one advice (advise.json's content, `report`); returns its id."""
        advice_id = new_run_id()
        self._append("advice", pd.DataFrame([_advice_row(report, advice_id=advice_id, created=now(),
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
