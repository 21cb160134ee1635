"""`colltune profile`: show a tuning profile, import PGMPITuneLib `.prf` profiles."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from colltune import catalog
from colltune.tune import prf as prf_format
from colltune.tune import profile as prof
from colltune.tune import profile_view

console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)



@click.group(name="profile")
def command() -> None:
    """Inspect and convert tuning profiles (format: docs/profile.md)."""


def _variants_table() -> Table:
    table = Table(title="variants a profile may name (per collective)", title_justify="left")
    for col in ("collective", "variant", "guideline", "replaced by", "scratch bytes"):
        table.add_column(col)
    for v in catalog.load().variants:
        table.add_row(v.collective, v.name, v.guideline, v.rhs, v.scratch)
    return table


@command.command(name="show")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--variants", is_flag=True, help="Also list every variant a profile may name.")
@click.option("--check", "check_only", is_flag=True, help="Only validate: print 'ok' and the hash, exit 1 if invalid.")
def show(path: Path | None, variants: bool, check_only: bool) -> None:
    """Print the profile PATH: provenance, content hash, and the rules per collective.

    Exits 1 with "FILE:LINE: what is wrong" if the profile is invalid (the interposer would
    ignore it with the same message).
    """
    if path is None and not variants:
        raise click.UsageError("give a profile PATH, or --variants to list the variants")
    if path is not None:
        try:
            p = prof.read_profile(path)
        except prof.ProfileError as exc:
            err_console.print(f"[bold red]invalid profile:[/] {exc}", highlight=False)
            sys.exit(1)
        if check_only:
            click.echo(f"ok {path} hash={p.content_hash():016x} rules={p.rule_count()}")
        else:
            console.print(profile_view.render(p))
    if variants:
        console.print(_variants_table())


@command.command(name="import")
@click.argument("prf", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Profile to write.")
@click.option("--mpi-name", default=None, help="Provenance: MPI library the .prf files were measured with.")
@click.option("--machine", default=None, help="Provenance: machine the .prf files were measured on.")
def import_(prf: tuple[Path, ...], out: Path, mpi_name: str | None, machine: str | None) -> None:
    """Convert PGMPITuneLib profiles PRF... (one collective and process count each) into one
    colltune profile.

    \b
    Example:
      colltune profile import scatter_1024.prf allgather_4.prf --out tuned.prof
    """
    extra = {k: v for k, v in (("mpi", mpi_name), ("machine", machine)) if v}
    p = prf_format.import_prf(list(prf), provenance=extra)
    prof.write_profile(p, out)
    console.print(
        f"wrote {out}: {p.rule_count()} rules for {len(p.sections)} collectives "
        f"(hash {p.content_hash():016x}); apply it with COLLTUNE_PROFILE={out}",
        highlight=False,
    )
