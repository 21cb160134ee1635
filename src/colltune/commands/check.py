"""`colltune check`: measure, then judge the performance guidelines.

Exit 0: every comparison decided, no violation; 1: violations; 3: no violation found but some
comparisons undecided or untested (never reported as clean); 2: error."""

from __future__ import annotations

import contextlib
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from colltune.commands import bench_options
from colltune.measure import runner
from colltune.measure.settings import BenchError, BenchSettings
from colltune.verify import check, decide, stats, tables

# Piped output (CI logs, files) gets wide tables instead of rich's 80-column fallback.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)

# Verdicts need more launches than a measurement: ~100 comparisons are corrected together, and
# on this machine the per-launch ratio default/mock-up scatters by +-50%. With 10 launches two
# quick checks agreed on 96.9% of verdicts (min 94.6%), with 20 on 97.9% (min 96.4%); the full
# preset's long jobs make each launch's median precise enough for 10
# (benchmarks/reproducibility/README.md). bench's own default (5) is for measurements.
CHECK_DEFAULT_LAUNCHES = {"quick": 8, "full": 10, None: 10}
# Adaptive rounds (issue 17): after the first R launches, launches measure only the jobs of
# comparisons still undecided. Rounds are planned up front (each look is judged at
# alpha / (1 + rounds)); the budget bounds the wall time they may take. On the quiet machine a
# quick check's rounds (8 + 16 launches) take ~11 s; under load the same launches take 2-3x
# longer, and a 12 s budget then cut them short where they mattered most: the violation sets of
# five checks at load 1.4-3.5 overlapped 51% (benchmarks/verdicts/README.md).
CHECK_DEFAULT_ROUNDS = 2
CHECK_DEFAULT_ROUND_BUDGET_S = {"quick": 30.0, "full": 1200.0, None: 120.0}
# A quick check spends its time on launches, the unit that decides, rather than on repetitions:
# the per-launch ratio of two variants scatters by tens of percent between launches here, while
# 40 repetitions already put a launch's median within ~2% (A/A ratios). Round launches measure
# only the open comparisons' jobs (a few tenths of a second each once Open MPI starts without
# OFI), so a round has as many launches as the first look (docs/statistics.md, "Running it").
CHECK_QUICK_STOP = {"max_reps": 40, "time_budget_s": 0.1}
CHECK_ROUND_LAUNCHES_PER_R = {"quick": 1.0, "full": 0.5, None: 0.5}



@click.command(context_settings={"max_content_width": 100})
@bench_options.bench_options
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("colltune.duckdb"),
              show_default=True, help="Results database (measurements are added, verdicts stored).")
@click.option("--no-measure", is_flag=True, help="Judge what the database already holds; measure nothing.")
@click.option("--run", "run_id", metavar="RUN_ID",
              help="With --no-measure: the run to judge [default: the latest with measurements].")
@click.option("--test", type=click.Choice([t.value for t in stats.Test]), default=stats.Test.TRIMMED_T.value,
              show_default=True,
              help="One-sided test on per-launch medians: paired by launch (trimmed-t: robust to a wild "
                   "launch; paired-t, signed-rank) or "
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
@click.option("--rounds", type=click.IntRange(0, 10), default=None,
              help=f"Adaptive rounds after the first R launches, measuring only undecided comparisons "
                   f"[default: {CHECK_DEFAULT_ROUNDS}; 0: none].")
@click.option("--round-launches", type=click.IntRange(1), default=None,
              help="Launches per process count in the first adaptive round, doubled in each further "
                   "round [default: R with --preset quick, else R/2].")
@click.option("--round-budget", type=click.FloatRange(0), default=None, metavar="SECONDS",
              help="Wall time for all adaptive rounds [default: 30 with --preset quick, 1200 with full, "
                   "else 120; 0: no limit].")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def command(db_path: Path, no_measure: bool, run_id: str | None, test: str, correction: str, alpha: float,
            tolerance: float, comparer: str, out_dir: Path | None, quiet: bool, rounds: int | None,
            round_launches: int | None, round_budget: float | None, **options: Any) -> None:
    """Check an MPI library against the self-consistent performance guidelines.

    Measures every collective with its mock-ups (and, with --library-algorithms, the library's
    own algorithms), R launches per process count (default here: 10, 8 with --preset quick),
    then judges pattern,
    library, monotony and split-robustness guidelines with per-launch statistics, a correction
    for multiple comparisons and a practical tolerance: each comparison is a violation, no
    violation (equivalence shown) or undecided. Adaptive rounds then measure only the undecided
    ones, within a time budget. An A/A copy of each default calibrates the error rate.
    Exit code: 0 all decided, no violation; 1 violations found; 3 none found but some
    comparisons undecided or untested; 2 error.

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
        given = [k for k, v in {**options, "rounds": rounds, "round_launches": round_launches,
                                "round_budget": round_budget}.items() if v not in (None, (), [], False)]
        if given:
            raise click.UsageError(f"--no-measure judges stored measurements; drop "
                                   f"{', '.join('--' + g.replace('_', '-') for g in given)}")
    else:
        if run_id is not None:
            raise click.UsageError("--run selects a stored run: use it with --no-measure")
        if options.get("launches") is None:
            options["launches"] = CHECK_DEFAULT_LAUNCHES[options.get("preset")]
        preset = options.get("preset")
        if preset == "quick":
            for name, value in CHECK_QUICK_STOP.items():
                options[name] = value if options.get(name) is None else options[name]
        bench_settings = bench_options.settings_from_options(options)
        per_r = CHECK_ROUND_LAUNCHES_PER_R[preset]
        bench_settings = bench_settings.model_copy(update={
            "rounds": CHECK_DEFAULT_ROUNDS if rounds is None else rounds,
            "round_launches": round_launches or max(1, math.ceil(bench_settings.launches * per_r)),
            "round_budget_s": CHECK_DEFAULT_ROUND_BUDGET_S[preset] if round_budget is None else round_budget})
        try:
            run_id = runner.run(bench_settings, db_path, progress=not quiet, console=err_console,
                               command=shlex.join(["colltune", "check", *sys.argv[2:]]), kind="check")
            _adaptive_rounds(bench_settings, db_path, run_id, settings, quiet)
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
    _print_unproven(db_path, result, err_console)

    if out_dir is not None:
        from colltune.report import html as report

        all_tables = tables.all_tables(result)
        tables.write_csv(all_tables, out_dir)
        tables.write_parquet(all_tables, out_dir)
        ctx = report.ReportContext(db_path, result, stored=True)
        path = report.write_report_for(ctx, out_dir)
        console.print(f"tables (CSV, Parquet) and report: {out_dir}/  ->  file://{path.resolve()}", highlight=False)

    sys.exit(result.coverage().exit_code)


def _adaptive_rounds(bench: BenchSettings, db_path: Path, run_id: str, settings: check.CheckSettings,
                     quiet: bool) -> None:
    """Measure the undecided comparisons' jobs again, round by round, until all are decided, the
    planned rounds are done or the budget is spent (no launch starts after it)."""
    start = time.monotonic()
    deadline = start + bench.round_budget_s if bench.round_budget_s > 0 else None
    for round_ in range(1, bench.rounds + 1):
        if deadline is not None and time.monotonic() >= deadline:
            err_console.print(f"[yellow]adaptive rounds:[/] budget of {bench.round_budget_s:g} s spent before "
                              f"round {round_}", highlight=False)
            return
        result = check.judge(check.load_run(db_path, run_id), settings, details=False)
        todo = decide.selection(result.verdicts)
        if not todo:
            return
        open_ = sum(1 for v in result.judged()["verdict"] if v not in decide.DECIDED)
        launches = round_launches(bench.round_launches, round_)
        if not quiet:
            err_console.print(f"adaptive round {round_}/{bench.rounds}: {open_} comparison(s) open, measuring "
                              f"{sum(len(s) for s in todo.values())} (collective, size, variant) in "
                              f"{launches} launch(es) per process count", highlight=False)
        runner.extend(bench, db_path, run_id, todo, launches, round_, deadline)


def round_launches(first: int, round_: int) -> int:
    """Launches per process count of adaptive round `round_` (1, 2, ...): doubled every round.
    What is still open after a round is the comparisons whose per-launch ratios scatter most
    (launches in two modes, 1.0 or 1.7 by launch), the ones more launches decide; and a round's
    launches are short, measuring only their jobs."""
    return first * 2 ** (round_ - 1)



bench_options.state_launches_default(
    command, f"{CHECK_DEFAULT_LAUNCHES[None]}, {CHECK_DEFAULT_LAUNCHES['quick']} with --preset quick")


def _print_unproven(db_path: Path, result: check.CheckResult, err_console: Console) -> None:
    """Library algorithms may be measured unproven; say where the proof keeps them from serving."""
    measured = sorted({str(v) for v in result.verdicts.get("variant", []) if str(v).startswith("lib:")})
    if not measured:
        return
    from colltune.measure import proof
    from colltune.store import Store

    with Store(db_path, read_only=True) as store:
        env = store.environment(result.run.run_id)
    refused = proof.refusals(measured, proof.proof_of_run(dict(zip(env["key"], env["value"], strict=True))))
    for member, classes in refused.items():
        err_console.print(f"[yellow]unproven:[/] {member} is measured but not served in "
                          f"{', '.join(classes)} (docs/select.md, \"The proof\")", highlight=False)
