"""`colltune run`: launch an unmodified MPI application with the interposer in its ranks."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click

from colltune import interposer
from colltune.mpi import build as build_mod
from colltune.mpi import launch, runenv
from colltune.mpi import libraries as mpi_mod


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--mpi", "mpi_spec", metavar="NAME|MPICC",
              help="MPI library the application runs with: openmpi, mpich, intel or an mpicc path "
                   "[default: the library the launcher belongs to, else the embedded Open MPI]")
@click.option("--force", "force_spec", metavar="SPEC",
              help="Use these variants wherever applicable and proven, e.g. "
                   "bcast=bcast_as_scatter_allgather,allreduce=allreduce_as_reduce_bcast; "
                   "lib:<collective>:<algorithm> forces one of the library's own algorithms "
                   "(`colltune selftest` lists them), lib:<collective>:<algorithm>#nonblocking "
                   "one of its nonblocking form's on MPI_I<collective> (`colltune selftest "
                   "--nonblocking` proves them), ...#persistent one of its persistent form's on "
                   "MPI_<Collective>_init (`colltune selftest --persistent`)")
@click.option("--profile", type=click.Path(exists=True, dir_okay=False),
              help="Tuning profile (colltune tune) for the collectives --force does not name.")
@click.option("--learn", metavar="TABLE|-",
              help="Learning mode (docs/select.md): draw members by this selection table for the "
                   "collectives --force and --profile leave open; `-` explores uniformly.")
@click.option("--trace-dir", type=click.Path(file_okay=False),
              help="Traced ranks write rank-N.cttrace here at MPI_Finalize (colltune traces ingest).")
@click.option("--verbose", is_flag=True,
              help="Rank 0 prints the active settings and, at MPI_Finalize, calls per variant.")
@click.option("--dry-run", is_flag=True, help="Print the rewritten command line and exit.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def command(mpi_spec: str | None, force_spec: str | None, profile: str | None, learn: str | None,
            trace_dir: str | None, verbose: bool, dry_run: bool, command: tuple[str, ...]) -> None:
    """Run COMMAND (an mpiexec/mpirun/srun line) with the interposer in the ranks.

    \b
      colltune run --force bcast=bcast_as_scatter_allgather -- mpiexec -n 4 ./app args
      colltune run --mpi mpich --profile my.prof --verbose -- mpiexec -n 2 ./app
      colltune run --learn - --trace-dir traces/run1 -- mpiexec -n 4 ./app

    The settings go to the ranks only (Open MPI `-x`, MPICH/Intel `-genv`, srun `--export`),
    inserted right after the launcher; everything else is passed through. The exit status is
    the launcher's.
    """
    if mpi_spec:
        lib = mpi_mod.resolve(mpi_spec)
        _warn_other_install(lib, command[0])
    else:
        lib = runenv.library_for_launcher(command[0]) or mpi_mod.resolve(None)
    art = build_mod.current(lib)
    if art is None:  # rich only when there is something to show: it costs every launch ~30 ms
        from rich.console import Console

        with Console(stderr=True).status(f"building the C core for {lib.name} ..."):
            art = build_mod.ensure_built(lib)
    if force_spec or profile or learn or trace_dir:   # a mode that may serve calls: proven first
        from colltune.measure import proof

        proof.ensure_proven_shown(lib)
        warn_unproven_smpi_line(lib, command)
    if profile:
        _warn_layout(profile, command)
    env = interposer.rank_environment(lib, art, force=force_spec, profile=profile, verbose=verbose,
                                  learn=learn, trace_dir=trace_dir)
    argv, launcher_extra = runenv.inject(lib, list(command), env)
    if dry_run:
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in launcher_extra.items())
        click.echo(f"{prefix} {shlex.join(argv)}".strip())
        return
    proc = subprocess.run(argv, env={**launch.launcher_env(lib, nprocs=launch.nprocs_of(command)), **launcher_extra}, check=False)
    if proc.returncode != 0:
        _hint_oversubscribe(lib, command)
    sys.exit(proc.returncode)


def _warn_other_install(lib: mpi_mod.MpiLibrary, launcher: str) -> None:
    """Whether the launcher belongs to another install than the interposer's (e.g. `--mpi
    openmpi`, the embedded 5.0, with Debian's 4.1 mpiexec): programs built for it load its libmpi,
    and where the sonames match (both libmpi.so.40) the loader takes one library for both, which
    crashed a Fortran program in MPI_Init. The other ABI family is refused later (runenv.inject).
    Looked up only when the launcher is not the library's own: finding every install costs."""
    path = shutil.which(launcher)
    if path is None or Path(path).resolve() == lib.mpiexec.resolve():
        return
    launcher_lib = runenv.library_for_launcher(launcher)
    if (launcher_lib is None or launcher_lib.family != lib.family
            or launcher_lib.mpicc.resolve() == lib.mpicc.resolve()):
        return
    click.echo(f"colltune: warning: {launcher} is the launcher of {launcher_lib.short_version} "
               f"({launcher_lib.mpicc}), but the interposer is built for {lib.short_version} "
               f"({lib.mpicc}, `--mpi {lib.name}` names the first library of that name); a program "
               f"built against the launcher's library would load both and may crash: pass "
               f"`--mpi {launcher_lib.mpicc}`", err=True)


def warn_unproven_smpi_line(lib: mpi_mod.MpiLibrary, command: tuple[str, ...]) -> None:
    """Under SMPI the proof holds for the collectives it was made with (docs/smpi.md)."""
    from colltune.mpi import smpi

    if lib.family != "smpi":
        return
    try:
        why = smpi.unproven_choice(command[:smpi.program_index(list(command))])
    except smpi.SmpiError:
        return  # no program: the launch says so
    if why is not None:
        click.echo(f"colltune: no member serves this run: {why}", err=True)


def _warn_layout(path: str, command: tuple[str, ...]) -> None:
    """A profile measured on another node layout than the launch's (docs/cluster.md)."""
    from colltune.measure import confirm
    from colltune.tune import profile as prof

    try:
        layout = prof.read_profile(path).provenance.get("layout")
    except (OSError, ValueError):
        return  # the interposer reports a bad profile itself, with the line
    note = confirm.profile_layout_warning(path, layout, launch.planned_layout(command))
    if note:
        click.echo(f"colltune: warning: {note}", err=True)


def _hint_oversubscribe(lib: mpi_mod.MpiLibrary, command: tuple[str, ...]) -> None:
    """Open MPI refuses more ranks than cores unless told (--oversubscribe): after a failed launch
    that may be why, say so with the line that runs (colltune's own launches pass the flag)."""
    from colltune.commands import nextsteps

    nprocs = launch.nprocs_of(command)
    placed = any(w == "--oversubscribe" or w.startswith(("--map-by", "--host", "-H", "--hostfile")) for w in command)
    if (lib.family != "openmpi" or nprocs is None or placed or command[0].endswith("srun")
            or nprocs <= nextsteps.openmpi_slots()):
        return
    ours = sys.argv[1:sys.argv.index("--")] if "--" in sys.argv else ["run"]
    fixed = [command[0], "--oversubscribe", *command[1:]]
    print(f"colltune: if Open MPI said there are not enough slots: {nprocs} ranks on {nextsteps.openmpi_slots()} "
          f"cores need --oversubscribe:\n  $ {nextsteps.cli(*ours)} -- {shlex.join(fixed)}", file=sys.stderr)
