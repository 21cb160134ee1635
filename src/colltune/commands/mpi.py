"""`colltune mpi`: the MPI libraries colltune can use, and building the C core for one."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from colltune.mpi import build as build_mod
from colltune.mpi import libraries as mpi_mod

console = Console()

mpi_option = click.option(
    "--mpi", "mpi_spec", metavar="NAME|MPICC",
    help="MPI library: openmpi, mpich, intel, or the path of its mpicc "
         "[default: the embedded Open MPI, else the first found]",
)


@click.group()
def command() -> None:
    """List MPI libraries, build colltune's C core for one, print run settings."""


@command.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_cmd(as_json: bool) -> None:
    """Show the MPI libraries found (embedded, project-local, COLLTUNE_MPI_PATH, I_MPI_ROOT, PATH)."""
    libraries, problems = mpi_mod.discover()
    if as_json:
        click.echo(json.dumps({"libraries": [lib.as_dict() for lib in libraries], "problems": problems}, indent=2))
        return
    table = Table(title="MPI libraries")
    for col in ("name", "version", "ABI family", "MPI", "mpicc", "mpiexec", "found via"):
        table.add_column(col, overflow="fold")
    for lib in libraries:
        table.add_row(lib.name, lib.short_version, lib.family, lib.mpi_version, str(lib.mpicc), str(lib.mpiexec), lib.origin)
    console.print(table)
    for problem in problems:
        console.print(f"[yellow]skipped[/] {problem}", highlight=False)
    if not libraries:
        raise mpi_mod.MpiError("no MPI library found: run `make setup` or pass --mpi /path/to/mpicc")


@command.command("build")
@mpi_option
@click.option("--force", is_flag=True, help="Rebuild even if a current build is cached.")
def build_cmd(mpi_spec: str | None, force: bool) -> None:
    """Build the C core (interposer, benchmark and selftest drivers) for one MPI library."""
    lib = mpi_mod.resolve(mpi_spec)
    with console.status(f"building the C core for {lib.name} ({lib.version[:40]}) ..."):
        art = build_mod.ensure_built(lib, force=force)
    console.print(f"built for [bold]{lib.name}[/] ({lib.family} ABI) in {art.dir}", soft_wrap=True)
    for label, path in (("interposer", art.libcolltune), ("benchmark", art.bench), ("selftest", art.selftest)):
        state = "" if path.exists() else "  [yellow](not built: sources missing)[/]"
        console.print(f"  {label:<11} {path}{state}", highlight=False, soft_wrap=True)


@command.command("env")
@mpi_option
@click.option("--force", "force_spec", metavar="SPEC", help="COLLTUNE_FORCE, e.g. bcast=bcast_as_allgatherv")
@click.option("--profile", type=click.Path(exists=True, dir_okay=False), help="Tuning profile to apply.")
@click.option("--verbose", is_flag=True, help="Print the counting table at MPI_Finalize.")
def env_cmd(mpi_spec: str | None, force_spec: str | None, profile: str | None, verbose: bool) -> None:
    """Print the settings for launching by hand or through srun (`export ...` lines)."""
    from colltune.mpi import runenv

    lib = mpi_mod.resolve(mpi_spec)
    art = build_mod.ensure_built(lib)
    env = runenv.rank_environment(lib, art, force=force_spec, profile=profile, verbose=verbose)
    click.echo(runenv.print_env(env, lib))
