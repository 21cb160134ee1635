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
@click.option("--run", "run_id", metavar="RUN_ID",
              help="Run to report, of any kind [default: the latest run of --kind].")
@click.option("--kind", type=click.Choice(["check", "validate", "bench", "compare"]), default="check",
              show_default=True, help="Without --run: report the latest run of this kind (if the database "
                                      "has none, the latest run with measurements).")
def command(db_path: Path, out_dir: Path, run_id: str | None, kind: str) -> None:
    """Write DIR/report.html about one run, rendered as what it is.

    A check's page: environment, method, violations, slowdown plots, heat map, A/A calibration,
    quality score, what to do about each violation, and the latest validation of a tuning profile
    ("Tuned vs default"). It uses the verdicts stored by `colltune check`; a bench run that was
    never checked is judged with the default settings. A validation's page: tuned vs default and
    the environment. The page is one file (plots embedded) that opens from disk.
    """
    from colltune.report import html as report

    with console.status("rendering the report ..."):
        ctx = report.build_context(db_path, run_id, kind)
        path = report.write_report_for(ctx, out_dir)
    console.print(f"report of {ctx.kind} run {ctx.run_id}: {path}  (open it in a browser: file://{path.resolve()})",
                  highlight=False, soft_wrap=True)
