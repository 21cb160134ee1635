"""`colltune validate`: tuned vs default, measured in the same launches."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from colltune.commands import bench_options, nextsteps
from colltune.errors import ColltuneError
from colltune.measure import runner
from colltune.measure.settings import PRESETS, SCALED, SIZES_SCALED, SIZES_UNSCALED
from colltune.tune import profile as prof
from colltune.tune import validate as val
from colltune.units import human_bytes
from colltune.verify import stats

console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)



def print_table(table, title: str) -> None:  # noqa: ANN001 - a DataFrame
    t = Table(title=title, title_justify="left")
    for col, justify in (("procs", "right"), ("collective", "left"), ("bytes", "right"), ("profile says", "left"),
                         ("speedup", "right"), ("CI", "right"), ("p slower", "right"), ("", "left")):
        t.add_column(col, justify=justify)
    for r in table.itertuples():
        variant = r.profile_variant if isinstance(r.profile_variant, str) else "library (A/A)"
        flag = "[red]SLOWER[/]" if r.slower else ("[green]faster[/]" if r.faster else "")
        t.add_row(str(r.nprocs), r.collective, human_bytes(int(r.msg_bytes)), variant, f"{r.speedup:.3f}x",
                  f"[{r.ci_low:.3f}, {r.ci_high:.3f}]", f"{r.p_slower_adjusted:.3g}", flag)
    console.print(t)


@click.command(name="validate", context_settings={"max_content_width": 100})
@bench_options.bench_options
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("colltune.duckdb"),
              show_default=True, help="Results database (the measurements and the validation are stored).")
@click.option("--run", "run_id", metavar="RUN_ID", default=None,
              help="Judge the stored run RUN_ID (measured with default and tuned) instead of measuring.")
@click.option("--test", type=click.Choice([t.value for t in stats.Test if t.paired]), default=stats.Test.PAIRED_T.value,
              show_default=True, help="One-sided paired test on per-launch medians.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True,
              help="Family-wise error rate (Holm over all points).")
@click.option("--tolerance", type=click.FloatRange(0, 1, max_open=True), default=0.05, show_default=True,
              help="A point is flagged slower only if tuned is significantly AND more than this much slower.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def command(db_path: Path, run_id: str | None, test: str, alpha: float, tolerance: float, quiet: bool,
            **options: Any) -> None:
    """Measure the tuned library (profile given with --profile) against the plain library.

    Runs the benchmark with the variants `default` and `tuned` interleaved in the same launches
    (tuned = exactly what the interposer does with the profile), then reports per (process
    count, collective, size) the speedup default/tuned with a bootstrap confidence interval and
    flags every point where tuned is significantly slower. By default it measures the
    collectives and process counts the profile was made for, at the benchmark's sizes plus the
    bounds of every rule; sizes the profile leaves to the library serve as an A/A control. Results go to the table
    `validations` of the database and into `colltune report`. Exit code 1 if any point is
    flagged slower.

    \b
    Example:
      colltune tune --db results.duckdb --out tuned.prof
      colltune validate --profile tuned.prof --db results.duckdb -R 10
    """
    profile_path = options.get("profile")
    if profile_path is None:
        raise click.UsageError("give the profile to validate: --profile FILE")
    try:
        profile = prof.read_profile(profile_path)
    except prof.ProfileError as exc:
        raise ColltuneError(f"invalid profile: {exc}")
    settings = val.ValidateSettings(test=stats.Test(test), alpha=alpha, tolerance=tolerance)

    if run_id is None:
        collectives, nprocs = val.default_scope(profile)
        options["collectives"] = options.get("collectives") or collectives
        options["nprocs"] = options.get("nprocs") or nprocs
        if not options.get("sizes"):
            preset = PRESETS.get(options.get("preset") or "", {}).get("sizes")
            base = preset or sorted({n for c in options["collectives"]
                                     for n in (SIZES_SCALED if c in SCALED else SIZES_UNSCALED)})
            options["sizes"] = val.default_sizes(profile, options["collectives"], base)
        extra = [v for v in (options.get("variants") or []) if v not in ("default", "tuned")]
        options["variants"] = ["default", "tuned", *extra]
        if options.get("aa") is None:
            options["aa"] = False
        bench_settings = bench_options.settings_from_options(options)
        try:
            run_id = runner.run(bench_settings, db_path, progress=not quiet, console=err_console,
                               command=shlex.join(["colltune", "validate", *sys.argv[2:]]), kind="validate")
        except KeyboardInterrupt:
            err_console.print(f"[yellow]interrupted:[/] finished launches are stored in {db_path}; complete them "
                              f"with `{nextsteps.cli('bench', '--db', db_path, '--resume', 'latest')}`",
                              highlight=False, soft_wrap=True)
            sys.exit(130)
    table = val.judge(val.measurements_of(db_path, run_id), profile, settings, run_id=run_id,
                      profile_path=str(Path(profile_path).resolve()), layouts=val.run_layouts(db_path, run_id))
    val.save(db_path, table)
    print_table(table, f"tuned vs default (run {run_id}, profile {profile.content_hash():016x})")
    s = val.summary(table)
    console.print(
        f"{s['replaced_points']} of {s['points']} points replaced by the profile: geometric-mean speedup "
        f"{s['geomean_speedup_replaced']:.3f}x; significantly faster at {s['faster']}, significantly slower "
        f"(> {tolerance:.0%}) at {s['slower']} ({s['slower_replaced']} of them replaced); "
        f"Holm at alpha={alpha}. Stored in {db_path} (table validations).", highlight=False)
    nextsteps.show(nextsteps.after_validate(db_path))
    sys.exit(1 if s["slower"] else 0)
