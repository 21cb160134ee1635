"""What a report section gets: the run the page is about, its check result (for pages of runs
that are judged as checks) and helpers to embed plots and tables; and the Section record.

Sections live in colltune.report.check_sections (the check's own), colltune.report.sections.*
(plug-ins); colltune.report.html assembles the page. Both import this module, and it imports
neither, so nothing imports in a circle.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, never a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from colltune.store.database import Store  # noqa: E402
from colltune.verify import check  # noqa: E402

# Run kinds whose pages are a check's: their runs are judged against the guidelines (a bench or a
# compare run that was never checked is judged when the page is made, with the default settings).
CHECKED_KINDS = ("check", "bench", "compare")


@dataclass
class ReportContext:
    db_path: Path
    result: check.CheckResult | None  # None: a page of a run that is not judged as a check (validate)
    stored: bool  # verdicts came from the database (else judged now with default settings)
    figures: int = 0
    run: check.RunData | None = None  # the run, when there is no check result
    # The database, opened read-only once for the whole page (by build_context, else at the first
    # section that reads it) and closed when the page is written: sections read `ctx.store`.
    open_store: Store | None = field(default=None, repr=False)

    @property
    def store(self) -> Store:
        if self.open_store is None:
            self.open_store = check.open_store(self.db_path, read_only=True)
        return self.open_store

    def close(self) -> None:
        if self.open_store is not None:
            self.open_store.close()
            self.open_store = None

    @property
    def run_data(self) -> check.RunData:
        if self.result is not None:
            return self.result.run
        assert self.run is not None, "a ReportContext needs a check result or a run"
        return self.run

    @property
    def run_id(self) -> str:
        return self.run_data.run_id

    @property
    def kind(self) -> str:
        """The kind of run the page is about: check, bench, compare, validate."""
        return str(self.info.get("kind") or "check")

    @property
    def verdicts(self) -> pd.DataFrame:
        return self.result.verdicts if self.result is not None else pd.DataFrame(columns=list(check.VERDICT_COLUMNS))

    @property
    def summary(self) -> pd.DataFrame:
        return self.result.summary if self.result is not None else pd.DataFrame()

    @property
    def info(self) -> dict[str, Any]:
        return self.run_data.info

    @property
    def nprocs(self) -> list[int]:
        """Process counts of the page's run: of its verdicts, else of its launches, else of its
        settings."""
        if len(self.verdicts):
            return sorted(int(n) for n in self.verdicts["nprocs"].unique())
        launches = self.run_data.launches
        if len(launches) and "nprocs" in launches.columns:
            return sorted(int(n) for n in launches["nprocs"].dropna().unique())
        return sorted(int(n) for n in (self.info.get("settings") or {}).get("nprocs") or [])

    def figure(self, fig: Any, alt: str) -> str:
        """Embed a matplotlib figure as a PNG data URI and close it."""
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.figures += 1
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        return f'<img class="plot" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'

    def table(self, df: pd.DataFrame, formats: dict[str, Callable[[Any], str]] | None = None,
              row_class: Callable[[pd.Series], str] | None = None) -> str:
        formats = formats or {}
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
        body = []
        for _, r in df.iterrows():
            cells = "".join(
                f"<td>{html.escape(formats[c](r[c]) if c in formats else cell(r[c]))}</td>" for c in df.columns
            )
            cls = f' class="{row_class(r)}"' if row_class else ""
            body.append(f"<tr{cls}>{cells}</tr>")
        return f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def interval_bars(center: np.ndarray, low: np.ndarray, high: np.ndarray) -> list[np.ndarray]:
    """matplotlib's error bar lengths (below, above) of estimates and their intervals: none
    where an end is unknown, and none on a side where the estimate lies outside its interval
    (an interval of another statistic than the estimate's, e.g. a median's around a ratio of
    means, need not contain it; matplotlib refuses a negative length)."""
    return [np.clip(np.nan_to_num(center - low), 0, None), np.clip(np.nan_to_num(high - center), 0, None)]


def cell(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else ""
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


@dataclass(frozen=True)
class Section:
    """A part of the page. `kinds`: the run kinds whose pages show it (None: every page); a
    plug-in that says nothing appears on the pages of checked runs, as before kinds existed."""

    id: str
    title: str
    render: Callable[[ReportContext], str | None]
    order: int = 100
    kinds: tuple[str, ...] | None = CHECKED_KINDS

    def shown_on(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds
