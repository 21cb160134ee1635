"""`colltune mpi`: the MPI libraries colltune can use, and building the C core for one."""

from __future__ import annotations

import json

import click
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from colltune.mpi import build as build_mod
from colltune.mpi import libraries as mpi_mod
from colltune.terminal import natural_width, shorten_path

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
    if libraries:
        console.print(_libraries_view(libraries, console.width))
    for problem in problems:
        console.print(f"[yellow]skipped[/] {problem}", highlight=False)
    if not libraries:
        raise mpi_mod.MpiError("no MPI library found: run `make setup` or pass --mpi /path/to/mpicc")


_MIN_PATH = 28  # narrower path cells lose what tells libraries apart: list one path per line


def _libraries_table(libraries: list[mpi_mod.MpiLibrary], path_width: int | None) -> Table:
    table = Table(title="MPI libraries", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  collapse_padding=True)
    for col in ("name", "version", "ABI", "MPI", "found via", "mpicc", "mpiexec"):
        table.add_column(col, no_wrap=True)
    for lib in libraries:
        paths = [str(lib.mpicc), str(lib.mpiexec)]
        if path_width is not None:
            paths = [shorten_path(p, path_width) if path_width else "" for p in paths]
        table.add_row(lib.name, lib.short_version, lib.family, lib.mpi_version, lib.origin, *paths)
    return table


def _libraries_view(libraries: list[mpi_mod.MpiLibrary], width: int) -> RenderableType:
    """A table with whole paths where they fit, shortened ones where they stay readable, else a
    list (terminal.py says why)."""
    whole = _libraries_table(libraries, None)
    if natural_width(console, whole) <= width:
        return whole
    path_width = (width - natural_width(console, _libraries_table(libraries, 0))) // 2
    if path_width >= _MIN_PATH:
        return _libraries_table(libraries, path_width)
    lines = [Text("MPI libraries", style="italic")]
    for lib in libraries:
        lines.append(Text.assemble((lib.name, "bold"), f"  {lib.short_version}  ({lib.family} ABI, "
                                   f"MPI {lib.mpi_version}, found via {lib.origin})"))
        for label, path in (("mpicc", lib.mpicc), ("mpiexec", lib.mpiexec)):
            lines.append(Text(f"  {label:<8} {shorten_path(path, max(width - 11, 1))}", no_wrap=True))
    return Group(*lines)


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
@click.option("--learn", metavar="TABLE|-", help="Selection table of the learning mode (`-`: uniform).")
@click.option("--trace-dir", type=click.Path(file_okay=False), help="Where traced ranks write rank-N.cttrace.")
@click.option("--verbose", is_flag=True, help="Print the counting table at MPI_Finalize.")
@click.option("-n", "--nprocs", type=click.IntRange(1), default=None,
              help="Process count of the example launch line [default: the profile's, else 4].")
def env_cmd(mpi_spec: str | None, force_spec: str | None, profile: str | None, learn: str | None,
            trace_dir: str | None, verbose: bool, nprocs: int | None) -> None:
    """Print the settings for launching by hand or through srun: `eval "$(colltune mpi env ...)"`
    sets them in the shell, and the launch line it shows then runs as printed."""
    from colltune.commands import nextsteps
    from colltune import interposer
    from colltune.mpi import runenv

    lib = mpi_mod.resolve(mpi_spec)
    art = build_mod.ensure_built(lib)
    if force_spec or profile or learn or trace_dir:
        from colltune.measure import proof

        proof.ensure_proven_shown(lib)
    env = interposer.rank_environment(lib, art, force=force_spec, profile=profile, verbose=verbose,
                                  learn=learn, trace_dir=trace_dir)
    if nprocs is None:
        nprocs = _profile_nprocs(profile) or 4
    click.echo(runenv.print_env(env, lib, nextsteps.launch_words(lib, nprocs, for_hand=True),
                                nextsteps.root_exports(lib)))


def _profile_nprocs(profile: str | None) -> int | None:
    """The largest process count a profile was made for (its provenance), if it says."""
    if profile is None:
        return None
    from colltune.tune.profile import read_profile

    counts = [int(x) for x in read_profile(profile).provenance.get("nprocs", "").split() if x.isdigit()]
    return max(counts) if counts else None
