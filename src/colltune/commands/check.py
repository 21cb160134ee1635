"""`colltune check`: measure, then judge the performance guidelines; exit 0 clean, 1 violations, 2 error."""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from colltune.commands import bench_options
from colltune.measure import runner
from colltune.measure.settings import BenchError
from colltune.verify import check, stats, tables

# Piped output (CI logs, files) gets wide tables instead of rich's 80-column fallback.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)

# Verdicts need more launches than a measurement: ~100 comparisons are corrected together, and
# on this machine the per-launch ratio default/mock-up scatters by +-50%. With 10 launches two
# quick checks agreed on 96.9% of verdicts (min 94.6%), with 20 on 97.9% (min 96.4%); the full
# preset's long jobs make each launch's median precise enough for 10
# (benchmarks/reproducibility/README.md). bench's own default (5) is for measurements.
CHECK_DEFAULT_LAUNCHES = {"quick": 20, "full": 10, None: 20}



@click.command(context_settings={"max_content_width": 100})
@bench_options.bench_options
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("colltune.duckdb"),
              show_default=True, help="Results database (measurements are added, verdicts stored).")
@click.option("--no-measure", is_flag=True, help="Judge what the database already holds; measure nothing.")
@click.option("--run", "run_id", metavar="RUN_ID",
              help="With --no-measure: the run to judge [default: the latest with measurements].")
@click.option("--test", type=click.Choice([t.value for t in stats.Test]), default=stats.Test.PAIRED_T.value,
              show_default=True,
              help="One-sided test on per-launch medians: paired by launch (paired-t, signed-rank) or "
                   "unpaired (mwu = Wilcoxon rank-sum as seed 002, ks, welch).")
@click.option("--correction", type=click.Choice([c.value for c in stats.Correction]),
              default=stats.Correction.HOLM.value, show_default=True,
              help="Multiple-comparison correction over all comparisons of the check.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Error rate: family-wise (holm) or false discovery rate (bh).")
@click.option("--tolerance", type=click.FloatRange(0, 1, max_open=True), default=0.05, show_default=True,
              help="Smallest relative difference of medians (1 - variant/default) that counts as a violation.")
@click.option("--comparer", type=click.Choice(list(tables.COMPARERS)), default="grouped", show_default=True,
              help="Main table printed (pgchecker's comparers); totals always follow.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write every table as CSV and Parquet and report.html into this directory.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def command(db_path: Path, no_measure: bool, run_id: str | None, test: str, correction: str, alpha: float,
            tolerance: float, comparer: str, out_dir: Path | None, quiet: bool, **options: Any) -> None:
    """Check an MPI library against the self-consistent performance guidelines.

    Measures every collective with its mock-ups (and, with --library-algorithms, the library's
    own algorithms), R launches per process count (default here: 20, 10 with --preset full),
    then judges pattern,
    library, monotony and split-robustness guidelines with per-launch statistics, a correction
    for multiple comparisons and a practical tolerance. An A/A copy of each default calibrates
    the error rate. Exit code: 0 no violation, 1 violations found, 2 error.

    \b
    Examples:
      colltune check --preset quick -n 4 --out check-report
      colltune check --mpi mpich -n 2 --preset quick --library-algorithms
      colltune check --no-measure --db colltune.duckdb --test mwu --correction bh
      colltune check --preset full -n 4     (up to ~70 min here: 132 jobs x <= 3 s x 10 launches)
    """
    settings = check.CheckSettings(test=stats.Test(test), correction=stats.Correction(correction), alpha=alpha,
                                   tolerance=tolerance)
    if no_measure:
        given = [k for k, v in options.items() if v not in (None, (), [], False)]
        if given:
            raise click.UsageError(f"--no-measure judges stored measurements; drop "
                                   f"{', '.join('--' + g.replace('_', '-') for g in given)}")
    else:
        if run_id is not None:
            raise click.UsageError("--run selects a stored run: use it with --no-measure")
        if options.get("launches") is None:
            options["launches"] = CHECK_DEFAULT_LAUNCHES[options.get("preset")]
        bench_settings = bench_options.settings_from_options(options)
        try:
            run_id = runner.run(bench_settings, db_path, progress=not quiet, console=err_console,
                               command=shlex.join(["colltune", "check", *sys.argv[2:]]), kind="check")
        except KeyboardInterrupt:
            err_console.print(f"[yellow]interrupted:[/] finished launches are stored in {db_path}; complete them "
                              f"with `colltune bench --db {db_path} --resume latest`, or judge them now with "
                              f"`colltune check --no-measure --db {db_path}`")
            sys.exit(130)
        except BenchError as exc:
            raise BenchError(f"{exc}\nmeasurements finished so far are stored; judge them with "
                  f"`colltune check --no-measure --db {db_path}`")

    with console.status("judging ...") if not quiet else contextlib.nullcontext():
        result = check.check_db(db_path, run_id, settings)

    tables.print_check(result, console, comparer)
    for note in result.messages:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)
    if result.partial:
        err_console.print("[yellow]partial:[/] some verdicts rest on incomplete data (marked partial in the tables)")

    if out_dir is not None:
        from colltune.report import html as report

        all_tables = tables.all_tables(result)
        tables.write_csv(all_tables, out_dir)
        tables.write_parquet(all_tables, out_dir)
        ctx = report.ReportContext(db_path, result, stored=True)
        path = report.write_report_for(ctx, out_dir)
        console.print(f"tables (CSV, Parquet) and report: {out_dir}/  ->  file://{path.resolve()}", highlight=False)

    sys.exit(1 if len(result.violations()) else 0)
