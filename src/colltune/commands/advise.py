"""`colltune advise`: profile one run of an application, say what to change and what it gains."""

from __future__ import annotations

import json
from pathlib import Path

import click

from colltune.advise import ompi_cvars, output, profile_run, where
from colltune.advise import verify as verify_mod
from colltune.advise.analyze import analyze
from colltune.advise.launch import run_app
from colltune.advise.measure import measure_missing
from colltune.commands import nextsteps
from colltune.errors import ColltuneError
from colltune.mpi import build as build_mod
from colltune.mpi import libraries as mpi_mod
from colltune.mpi import runenv


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True,
              help="Results database of this machine (colltune check/bench).")
@click.option("--mpi", "mpi_spec", metavar="NAME|MPICC",
              help="MPI library of the application [default: the launcher's, else the embedded Open MPI]")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("advise"), show_default=True,
              help="Directory for the profile of the run and the recommended settings.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the findings as JSON to this file.")
@click.option("--from-profile", "from_profile", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Analyse this COLLTUNE_PROFILE_RUN directory instead of running COMMAND.")
@click.option("--measure", is_flag=True,
              help="Benchmark the application's points the database lacks (quick, interleaved), then advise.")
@click.option("--verify", is_flag=True,
              help="Then run COMMAND again with and without the advice and print predicted vs measured gain.")
@click.option("--runs", default=5, show_default=True, type=click.IntRange(1),
              help="--verify: runs per side (alternating); medians are compared.")
@click.option("--top", default=where.DEFAULT_TOP, show_default=True, type=click.IntRange(1),
              help="Collectives (and point-to-point calls) shown in the where-the-time-goes table.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def command(db_path: Path, mpi_spec: str | None, out_dir: Path, json_path: Path | None,
            from_profile: Path | None, measure: bool, verify: bool, runs: int, top: int,
            command: tuple[str, ...]) -> None:
    """Run COMMAND (an mpiexec/srun line) once with light profiling and advise.

    \b
      colltune advise --db colltune.duckdb -- mpiexec -n 4 ./app args
    First where the time goes (the top collectives by own cost, with calls, sizes, waiting,
    share, rank spread and call sites), then the findings: collective algorithms (from this machine's database), the eager threshold,
    mapping/oversubscription and the collectives' share of the run, each with the exact change.
    """
    if (from_profile is None or verify) and not command:
        raise click.UsageError("give the application's command line after `--`"
                               + ("" if verify else ", or --from-profile DIR"))
    lib = mpi_mod.resolve(mpi_spec) if mpi_spec else (
        (runenv.library_for_launcher(command[0]) if command else None) or mpi_mod.resolve(None))
    art = build_mod.ensure_built(lib) if command else None
    profile_dir = from_profile
    if profile_dir is None:
        profile_dir = out_dir / "profile-run"
        run_app(lib, art, command, profile_dir=profile_dir)
    run = profile_run.read(profile_dir)
    ompi_cvars.fill(run, lib.version, lib.mpicc, command)
    advice = analyze(run, db_path)
    if measure and advice.missing:
        try:
            measure_missing(advice.missing, db_path, mpi_spec or str(lib.mpicc))
        except ColltuneError as exc:
            # The application ran; the benchmark of its points did not: say which step failed.
            failed = ColltuneError(
                f"--measure: benchmarking the {len(advice.missing)} point(s) of the application that {db_path} "
                f"lacks failed (the profiled run of the application had succeeded; its profile is in "
                f"{profile_dir}): {exc.format_message()}\nadvise without measuring: "
                f"`{nextsteps.cli('advise', '--db', db_path, '--from-profile', profile_dir)}`")
            failed.exit_code = exc.exit_code
            raise failed from exc
        advice = analyze(run, db_path)
    files = output.write_files(advice, out_dir, lib)
    output.print_summary(advice, files, top=top)
    report = output.as_json(advice, files)
    if verify:
        profile = Path(files["profile"]) if "profile" in files else None
        keys = {(ch.point.collective, ch.point.nprocs, ch.point.bin) for ch in advice.choices}
        result = verify_mod.verify(lib, art, command, profile, output.env_settings(files),
                                   advice.predicted_saving_s, keys, out_dir / "verify-runs", runs)
        output.print_verification(result)
        report["verification"] = output.verification_json(result)
    (out_dir / "advise.json").write_text(json.dumps(report, indent=1) + "\n")
    output.remember(db_path, out_dir / "advise.json")
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=1) + "\n")
    if command:
        nextsteps.show(nextsteps.after_advise(db_path, command, out_dir, files, verified=verify,
                                              missing=len(advice.missing)))
