"""`colltune traces`: trace files of the learning mode into the results database (docs/select.md)."""

from __future__ import annotations

from pathlib import Path

import click

from colltune.learn import traces as tr


@click.group(context_settings={"max_content_width": 100})
def command() -> None:
    """Trace files written by `colltune run --learn ... --trace-dir DIR`."""


@command.command("ingest")
@click.argument("trace_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True, help="results database")
@click.option("--command", "app_command", default="", help="the launch line the traces come from")
@click.option("--app", default=None, help="application name [default: the program of --command]")
@click.option("--batch", type=int, default=None, help="batch number of a learning loop")
@click.option("--mpi", "mpi_spec", default=None, metavar="NAME|MPICC",
              help="MPI library the application ran with (recorded as its identity)")
def ingest(trace_dir: Path, db_path: Path, app_command: str, app: str | None, batch: int | None,
           mpi_spec: str | None) -> None:
    """Load TRACE_DIR/rank-N.cttrace (one application run) into trace_runs and trace_calls."""
    ident = {}
    if mpi_spec:
        from colltune.mpi import libraries

        lib = libraries.resolve(mpi_spec)
        ident = {"mpi_name": lib.name, "mpi_version": lib.short_version, "abi_family": lib.family}
    res = tr.ingest(trace_dir, db_path, command=app_command, batch=batch, app=app, **ident)
    click.echo(f"trace run {res.trace_run_id}: {res.ranks} rank files, {res.records} records, "
               f"{res.calls} calls, {res.overflow} calls not recorded"
               + (" (traces closed at their record or time bound: raise COLLTUNE_TRACE_RECORDS or "
                  "COLLTUNE_TRACE_SECONDS to keep more)" if res.overflow else ""))
    if res.unrewarded:
        click.echo(f"{res.unrewarded} nonblocking calls or persistent requests without a reward (completed "
                   "together with other requests: MPI_Waitall/any/some, or never completed): explored, "
                   "not used for training")
    if res.disagreements:
        click.echo(f"warning: the ranks disagree on the collective or member of {res.disagreements} calls "
                   "(rank-inconsistent draws); those calls keep the lowest traced rank's values", err=True)
