"""`colltune advise`: one profiling run of an application, what to change and what it gains.
The steps are advise/pipeline.py's; this module parses the options and prints."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from colltune.advise import output, pipeline, where
from colltune.advise.analyze import Advice
from colltune.commands import nextsteps
from colltune.errors import ColltuneError
from colltune.mpi import libraries as mpi_mod
from colltune.mpi import runenv
from colltune.verify import adaptive

err_console = Console(stderr=True)


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True,
              help="Results database of this machine (colltune check/bench); the advice is recorded there.")
@click.option("--mpi", "mpi_spec", metavar="NAME|MPICC",
              help="MPI library of the application [default: the launcher's, else the embedded Open MPI]")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("advise"), show_default=True,
              help="Directory for the profiling run's files (profile-run/), the tuning profile advise.prof "
                   "and the recommended settings.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the findings as JSON to this file.")
@click.option("--from-profile-run", "from_run", type=click.Path(exists=True, file_okay=False, path_type=Path),
              metavar="DIR", help="Analyse this earlier profiling run (e.g. advise/profile-run, a "
                                  "COLLTUNE_PROFILE_RUN directory) instead of running COMMAND.")
@click.option("--from-profile", "from_run_old", type=click.Path(exists=True, file_okay=False, path_type=Path),
              hidden=True)  # its name before the profiling run had a word of its own
@click.option("--measure", is_flag=True,
              help="Benchmark the application's points the database lacks, judged as `colltune check` does "
                   "(quick preset, adaptive rounds), then advise.")
@click.option("--verify", is_flag=True,
              help="Then run COMMAND again with and without the advice and print predicted vs measured gain, "
                   "in total, per changed point and per call pattern.")
@click.option("--runs", default=5, show_default=True, type=click.IntRange(1),
              help="--verify: runs per side (alternating); medians are compared.")
@click.option("--top", default=where.DEFAULT_TOP, show_default=True, type=click.IntRange(1),
              help="Collectives (and point-to-point calls) shown in the where-the-time-goes table.")
@click.option("--layer", "layers", multiple=True, metavar="GLOB",
              help="A communication layer of the application (repeatable): a glob of a library's file name "
                   "(libPstream.so) or of a function (MPIU_*). A call site is the first frame outside MPI and "
                   "the layers; layers are also found from the data (a call through which several functions "
                   "reach MPI).")
@click.option("--explain", "explain", multiple=True, type=click.IntRange(1), metavar="N",
              help="Finding N in full (repeatable): its evidence, what to check, the exact change per "
                   "library. Alone, of the last advice in --out (its advise.json), without running anything.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def command(db_path: Path, mpi_spec: str | None, out_dir: Path, json_path: Path | None,
            from_run: Path | None, from_run_old: Path | None, measure: bool, verify: bool, runs: int, top: int,
            layers: tuple[str, ...], explain: tuple[int, ...], command: tuple[str, ...]) -> None:
    """Run COMMAND (an mpiexec/srun line) once as a profiling run and advise.

    \b
      colltune advise --db colltune.duckdb -- mpiexec -n 4 ./app args
    First where the time goes (the top collectives by own cost, with calls, sizes, waiting,
    share, rank spread and call sites), then the findings: collective algorithms (from this machine's database), the eager threshold,
    mapping/oversubscription, call patterns one call could replace and the collectives' share of the
    run, each with the exact change.
    """
    from_run = from_run or from_run_old
    if explain and from_run is None and not command:
        _explain_saved(out_dir, explain)
        return
    if (from_run is None or verify) and not command:
        raise click.UsageError("give the application's command line after `--`"
                               + ("" if verify else ", or --from-profile-run DIR"))
    lib = mpi_mod.resolve(mpi_spec) if mpi_spec else (
        (runenv.library_for_launcher(command[0]) if command else None) or mpi_mod.resolve(None))
    plan = pipeline.Plan(db_path, lib, command, out_dir, from_run, measure, verify, runs, mpi_spec, layers)
    def summary(advice: Advice, files: dict[str, str]) -> None:
        # One screen: the summary takes what the next steps (printed last) leave of it.
        steps = nextsteps.after_advise(db_path, command, out_dir, files, verified=verify,
                                       missing=len(advice.missing)) if command else []
        room = output.SCREEN - len(nextsteps.printed_lines(steps, width=where.WIDTH)) if steps else None
        output.print_summary(advice, files, top=top, room=room)

    try:
        outcome = pipeline.advise(plan, on_advice=summary, on_round=_print_round)
    except pipeline.MeasureError as exc:
        # The application ran; the benchmark of its points did not: say which step failed.
        failed = ColltuneError(
            f"--measure: benchmarking the {exc.points} point(s) of the application that {db_path} lacks failed "
            f"(the profiling run of the application had succeeded; its files are in {exc.run_dir}): "
            f"{exc.format_message()}\nadvise without measuring: "
            f"`{nextsteps.cli('advise', '--db', db_path, '--from-profile-run', exc.run_dir)}`")
        failed.exit_code = exc.exit_code
        raise failed from exc
    if explain:
        output.print_explained(outcome.advice.findings, explain, outcome.advice.run.wall_ns / 1e9)
    if outcome.verification is not None:
        output.print_verification(outcome.verification, findings=outcome.advice.findings)
    if outcome.not_recorded:
        err_console.print(f"[yellow]note:[/] the advice is not recorded in {db_path} ({outcome.not_recorded}): "
                          f"`colltune report` will not show it; its files are in {out_dir}", highlight=False)
    if json_path is not None:
        json_path.write_text((out_dir / "advise.json").read_text())
    if command:
        nextsteps.show(nextsteps.after_advise(db_path, command, out_dir, outcome.files, verified=verify,
                                              missing=len(outcome.advice.missing)), width=where.WIDTH)


def _explain_saved(out_dir: Path, numbers: tuple[int, ...]) -> None:
    saved = out_dir / "advise.json"
    try:
        report = json.loads(saved.read_text())
    except (OSError, ValueError) as exc:
        raise ColltuneError(f"--explain: cannot read {saved} ({exc}); run `colltune advise --out {out_dir} "
                            "-- COMMAND` first, or give the --out of an earlier advice") from exc
    output.print_explained(report["findings"], numbers, report["wall_s"])


def _print_round(event: adaptive.RoundEvent) -> None:
    if isinstance(event, adaptive.BudgetSpent):
        err_console.print(f"[yellow]--measure:[/] {event.describe()}", highlight=False)
    else:
        err_console.print(f"--measure: adaptive round {event.round}/{event.rounds}: {event.open_} "
                          f"comparison(s) open, measuring {event.pairs} (collective, size, variant) again in "
                          f"{event.launches} launch(es)", highlight=False)
