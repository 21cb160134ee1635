"""`colltune export`: the results database as Parquet or CSV files (one per table)."""

from __future__ import annotations

import importlib
from pathlib import Path

import click

from colltune.errors import ColltuneError
from colltune.store.database import Store


def _native_exporter() -> object | None:
    """The tuning module's exporter of library tuning files, where installed."""
    try:
        return importlib.import_module("colltune.tune.native_export")
    except ModuleNotFoundError as exc:
        if exc.name == "colltune.tune.native_export":
            return None
        raise


@click.command(context_settings={"max_content_width": 100})
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True, help="results database")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet",
              show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="directory for one file per table")
@click.option("--run", "run_id", default=None, help="only this run (default: every run)")
@click.option("--native", type=click.Choice(["openmpi", "mpich", "intel"]), default=None,
              help="also write the library's own tuning file (and the settings that make the library "
                   "read it) from a check's verdicts on the library's algorithms")
def command(db_path: Path, fmt: str, out_dir: Path, run_id: str | None, native: str | None) -> None:
    """Write every table of the results database (runs, launches, environment, variants, jobs,
    measurements, verdicts, ...) to OUT as Parquet or CSV."""
    with Store(db_path, read_only=True) as store:
        if run_id is not None:
            store.run_info(run_id)
        written = store.export(out_dir, fmt, run_id)  # type: ignore[arg-type]
    for path in written:
        click.echo(str(path))
    if native is not None:
        exporter = _native_exporter()
        if exporter is None:
            raise ColltuneError("--native is not part of this installation of colltune")
        names = {"openmpi": "openmpi-dynamic-rules.conf", "mpich": "mpich-selection.json",
                 "intel": "intel-mpi.env"}
        path = exporter.export(db_path, native, out_dir / names[native],  # type: ignore[attr-defined]
                               run_id=run_id)
        click.echo(str(path))
        settings = exporter.settings_path(path, native)  # type: ignore[attr-defined]
        if settings != path:
            click.echo(str(settings))
        from colltune.commands import nextsteps

        nextsteps.show(nextsteps.after_export_native(settings, native, _largest_nprocs(db_path, run_id)),
                       note=f"{nextsteps.APP} stands for your program and its arguments")


def _largest_nprocs(db_path: Path, run_id: str | None) -> int:
    """The largest process count the exported verdicts were measured at (the file's rules cover
    the counts measured)."""
    from colltune.verify.check import load_verdicts

    verdicts = load_verdicts(db_path, run_id)
    counts = verdicts.loc[verdicts["kind"] == "library", "nprocs"] if len(verdicts) else []
    return int(max(counts)) if len(counts) else 4
