"""`colltune report`: a self-contained HTML report of a check, from the results database."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


@click.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("colltune.duckdb"),
              show_default=True, help="Results database written by `colltune check` / `colltune bench`.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory for report.html (created if missing).")
@click.option("--run", "run_id", metavar="RUN_ID", help="Run to report [default: the latest run with measurements].")
def command(db_path: Path, out_dir: Path, run_id: str | None) -> None:
    """Write DIR/report.html: environment, method, violations, slowdown plots, heat map, A/A
    calibration, quality score and what to do about each violation.

    The page is one file (plots embedded) that opens from disk. It uses the verdicts stored by
    `colltune check`; a run that was never checked is judged with the default settings.
    """
    from colltune.report import html as report

    with console.status("rendering the report ..."):
        path = report.write_report(db_path, out_dir, run_id)
    console.print(f"report: {path}  (open it in a browser: file://{path.resolve()})", highlight=False)
