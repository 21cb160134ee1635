"""`colltune check`: measure, then judge the performance guidelines.

Exit 0: every comparison decided, no violation; 1: violations; 3: no violation found but some
comparisons undecided or untested (never reported as clean); 2: error."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from colltune import catalog
from colltune.commands import bench_options, nextsteps
from colltune.measure.settings import BenchError
from colltune.mpi import libraries
from colltune.verify import adaptive, check, decide, stats, tables

# Piped output (CI logs, files) gets wide tables instead of rich's 80-column fallback.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)

@click.command(context_settings={"max_content_width": 100})
@bench_options.bench_options
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("colltune.duckdb"),
              show_default=True, help="Results database (measurements are added, verdicts stored).")
@click.option("--no-measure", is_flag=True, help="Judge what the database already holds; measure nothing.")
@click.option("--run", "run_id", metavar="RUN_ID",
              help="With --no-measure: the run to judge [default: the latest with measurements].")
@click.option("--test", type=click.Choice([t.value for t in stats.Test]), default=stats.Test.SCREENED_T.value,
              show_default=True,
              help="One-sided test on per-launch medians: paired by launch (screened-t: the paired t without "
                   "wild launches, 4x or more from the median ratio; trimmed-t; paired-t, signed-rank) or "
                   "unpaired (mwu = Wilcoxon rank-sum, ks, welch).")
@click.option("--correction", type=click.Choice([c.value for c in stats.Correction]),
              default=stats.Correction.HOLM.value, show_default=True,
              help="Multiple-comparison correction over all comparisons of the check.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Error rate: family-wise (holm) or false discovery rate (bh).")
@click.option("--tolerance", type=click.FloatRange(0, 1, max_open=True), default=0.05, show_default=True,
              help="Smallest relative difference of medians (1 - variant/default) that counts as a violation.")
@click.option("--margin", type=click.FloatRange(0, 1, max_open=True), default=decide.MARGIN, show_default=True,
              help="Equivalence margin: a violation must lie beyond the tolerance's boundary 1/(1 - tolerance) "
                   "widened by this share; a comparison shown below the widened boundary is 'no practical "
                   "violation' (0: none).")
@click.option("--comparer", type=click.Choice(list(tables.COMPARERS)), default="grouped", show_default=True,
              help="Main table printed (pgchecker's comparers); totals always follow.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write every table as CSV and Parquet and report.html into this directory.")
@click.option("--rounds", type=click.IntRange(0, 10), default=None,
              help=f"Adaptive rounds after the first R launches, measuring again only the jobs of undecided comparisons "
                   f"[default: {adaptive.DEFAULT_ROUNDS}; 0: none].")
@click.option("--round-launches", type=click.IntRange(1), default=None,
              help="Launches per process count in the first adaptive round, doubled in each further "
                   "round [default: 1.25 R with --preset quick (8 + 10 + 20 launches), else R/2].")
@click.option("--round-budget", type=click.FloatRange(0), default=None, metavar="SECONDS",
              help="Wall time for all adaptive rounds [default: 30 with --preset quick, 1200 with full, "
                   "else 120; 0: no limit].")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def command(db_path: Path, no_measure: bool, run_id: str | None, test: str, correction: str, alpha: float,
            tolerance: float, margin: float, comparer: str, out_dir: Path | None, quiet: bool, rounds: int | None,
            round_launches: int | None, round_budget: float | None, **options: Any) -> None:
    """Check an MPI library against the self-consistent performance guidelines.

    Measures every collective with its mock-ups (and, with --library-algorithms, the library's
    own algorithms), R launches per process count (default here: 10, 8 with --preset quick),
    then judges pattern,
    library, monotony and split-robustness guidelines with per-launch statistics, a correction
    for multiple comparisons and a practical tolerance: each comparison is a violation (beyond the
    tolerance by more than its margin), no violation (equivalence shown), no practical violation
    (shown within the tolerance's margin) or undecided. Adaptive rounds then measure again only the jobs
    of the undecided ones (every variant of such a job, as in the first launches), within a time
    budget. An A/A copy of each default calibrates the error rate.
    Exit code: 0 all decided, no violation; 1 violations found; 3 none found but some
    comparisons undecided or untested; 2 error.

    \b
    Examples:
      colltune check --preset quick -n 4 --out check-report
      colltune check --mpi mpich -n 2 --preset quick --library-algorithms
      colltune check --no-measure --db colltune.duckdb --test mwu --correction bh
      colltune check --preset full -n 4     (up to ~70 min here: 132 jobs x <= 3 s x 10 launches)
    """
    standalone = _standalone()
    if standalone:
        # What is imported by now (pandas, DuckDB, rich, ...) stays to the end: the collector need
        # not walk it in every full pass of the judging (~0.03 s of CPU per judgement of a quick check).
        # An exit through an error tears the interpreter down as usual, everything collectable again.
        gc.freeze()
        atexit.register(gc.unfreeze)
    settings = check.CheckSettings(test=stats.Test(test), correction=stats.Correction(correction), alpha=alpha,
                                   tolerance=tolerance, margin=margin)
    if no_measure:
        given = [k for k, v in {**options, "rounds": rounds, "round_launches": round_launches,
                                "round_budget": round_budget}.items() if v not in (None, (), [], False)]
        if given:
            raise click.UsageError(f"--no-measure judges stored measurements; drop "
                                   f"{', '.join('--' + g.replace('_', '-') for g in given)}")
        with console.status("judging ...") if not quiet else contextlib.nullcontext():
            result = check.check_db(db_path, run_id, settings)
    else:
        if run_id is not None:
            raise click.UsageError("--run selects a stored run: use it with --no-measure")
        exact = libraries.resolve(options.get("mpi_spec")).deterministic  # SMPI: one launch per point
        for name, value in adaptive.measurement_defaults(options.get("preset"), exact).items():
            options[name] = value if options.get(name) is None else options[name]
        bench_settings = adaptive.plan_rounds(bench_options.settings_from_options(options), rounds,
                                              round_launches, round_budget, exact)
        try:
            result = adaptive.measure_and_judge(
                bench_settings, db_path, settings, command=shlex.join(["colltune", "check", *sys.argv[2:]]),
                progress=not quiet, console=err_console, on_round=lambda event: _print_round(event, quiet),
                close_later=True)
        except KeyboardInterrupt:
            err_console.print(f"[yellow]interrupted:[/] finished launches are stored in {db_path}; complete them "
                              f"with `{nextsteps.cli('bench', '--db', db_path, '--resume', 'latest')}`, or judge "
                              f"them now with `{nextsteps.cli('check', '--no-measure', '--db', db_path)}`",
                              highlight=False, soft_wrap=True)
            sys.exit(130)
        except BenchError as exc:
            raise BenchError(f"{exc}\nmeasurements finished so far are stored; judge them with "
                             f"`{nextsteps.cli('check', '--no-measure', '--db', db_path)}`")

    try:
        tables.print_check(result, console, comparer)
        for note in result.messages:
            err_console.print(f"[yellow]note:[/] {note}", highlight=False)
        if result.partial:
            err_console.print("[yellow]partial:[/] some verdicts rest on incomplete data (marked partial in the "
                              "tables)")
    finally:
        # the tables were printed while the database closed (its checkpoint): ~0.1 s of the check's wall
        adaptive.wait_closed()
    _print_dropped(result, err_console)
    _print_unproven(result, err_console)

    if out_dir is not None:
        from colltune.report import html as report

        all_tables = tables.all_tables(result)
        tables.write_csv(all_tables, out_dir)
        tables.write_parquet(all_tables, out_dir)
        ctx = report.ReportContext(db_path, result, stored=True)
        path = report.write_report_for(ctx, out_dir)
        console.print(f"tables (CSV, Parquet) and report: {out_dir}/  ->  file://{path.resolve()}", highlight=False)
    nextsteps.show(nextsteps.after_check(db_path, out_dir, has_report=out_dir is not None))

    _exit(result.coverage().exit_code, standalone)


def _standalone() -> bool:
    """Whether this is the `colltune` process itself, writing to its own standard streams (not a
    caller's in-process invocation, e.g. click's CliRunner, whose process goes on afterwards)."""
    return sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__


def _exit(code: int, standalone: bool) -> None:
    """Exit with `code`. The command's own process ends without the interpreter's teardown: by
    now the database is closed, the temporary launch directory removed and every file written,
    and tearing down pandas, SciPy and DuckDB module by module cost ~0.15-0.25 s of CPU at the
    end of every check (issue 36: a quick check's wall time)."""
    if not standalone:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _print_round(event: adaptive.RoundEvent, quiet: bool) -> None:
    if isinstance(event, adaptive.BudgetSpent):
        err_console.print(f"[yellow]adaptive rounds:[/] {event.describe()}", highlight=False)
    elif not quiet:
        err_console.print(f"adaptive round {event.round}/{event.rounds}: {event.open_} comparison(s) open, "
                          f"measuring {event.pairs} (collective, size, variant) in {event.launches} "
                          f"launch(es) per process count", highlight=False)


bench_options.state_launches_default(
    command, f"{adaptive.DEFAULT_LAUNCHES[None]}, {adaptive.DEFAULT_LAUNCHES['quick']} with --preset quick")


def dropped_variants(result: check.CheckResult) -> list[tuple[str, str, str]]:
    """(collective, variant, why) of every variant the run planned and measured nowhere: the
    driver's reasons (jobs.skip_reason), else the plan's (it left the variant out)."""
    planned = result.run.variants
    if planned.empty:
        return []
    # the distinct pairs first: zipping the measurements row by row (~100,000 repetitions in a quick
    # check) cost ~0.3 s of every check's wall (issue 36, session 14)
    pairs = result.run.measurements[["collective", "variant"]].drop_duplicates()
    measured = set(zip(pairs["collective"], pairs["variant"], strict=True))
    missing = [(str(c), str(v)) for c, v in zip(planned["collective"], planned["variant"], strict=True)
               if (str(c), str(v)) not in measured and str(c) != "barrier"]
    if not missing:
        return []
    from colltune.store import Store

    with Store(result.run.db_path, read_only=True) as store:
        skipped = store.skipped_pairs(result.run.run_id)
    out = []
    for coll, variant in missing:
        reasons = [f"{r} ({n} job{'s' if n > 1 else ''})" for c, v, r, n in skipped if (c, v) == (coll, variant)]
        out.append((coll, variant, "; ".join(reasons) if reasons else
                    "left out by the plan (its reason: `colltune bench --dry-run` with the run's options)"))
    return out


def _print_dropped(result: check.CheckResult, err_console: Console) -> None:
    """A variant planned and measured nowhere has no verdict: say so, and why, one line each."""
    for coll, variant, why in dropped_variants(result):
        err_console.print(f"[yellow]dropped:[/] {coll} {variant} was planned but not measured: {why}",
                          highlight=False, soft_wrap=True)


def _print_unproven(result: check.CheckResult, err_console: Console) -> None:
    """Library algorithms may be measured unproven; say where the proof keeps them from serving."""
    measured = sorted({str(v) for v in result.verdicts.get("variant", [])
                       if str(v).startswith("lib:") and catalog.form_of(str(v)) == "blocking"})
    if not measured:
        return
    from colltune.measure import proof

    refused = proof.refusals(measured, proof.proof_of_run(result.run.environment))
    unproven = [m for m, classes in refused.items() if classes == ["not proven"]]
    if unproven:
        # One line for them all: the build has no proof yet, which is the usual case, not 27 warnings.
        err_console.print(f"[yellow]unproven:[/] {len(unproven)} library algorithm(s) measured here serve "
                          f"no call until `colltune selftest` proves this build: {', '.join(unproven)} "
                          f"(docs/select.md, \"The proof\")", highlight=False)
    for member, classes in refused.items():
        if member not in unproven:
            err_console.print(f"[yellow]refused:[/] {member} is measured but not served in "
                              f"{', '.join(classes)} (docs/select.md, \"The proof\")", highlight=False)
