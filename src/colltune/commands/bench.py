"""`colltune bench`: measure collectives and their variants into the results database."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click
import pandas as pd
from rich.console import Console
from rich.table import Table

from colltune.commands import bench_options, nextsteps
from colltune.measure import runner
from colltune.measure.settings import BenchSettings
from colltune.store.database import Store
from colltune.store.engine import StoreError
from colltune.terminal import fits

MAX_SKIP_REASONS = 8


def _print_overview(store: Store, run_id: str, console: Console) -> None:
    """Descriptive only: median over launches of the per-launch median, default vs the fastest
    other variant. Whether a difference is real is `colltune check`'s question."""
    med = store.launch_medians(run_id)
    med = med[med["collective"] != "barrier"]
    per_variant = (med.groupby(["nprocs", "collective", "msg_bytes", "variant"])["median_s"]
                   .agg(["median", "count"]).reset_index())
    others = per_variant[~per_variant["variant"].isin(["default", "default#aa"])]
    best = others.loc[others.groupby(["nprocs", "collective", "msg_bytes"])["median"].idxmin()]
    default = per_variant[per_variant["variant"] == "default"]
    merged = default.merge(best, on=["nprocs", "collective", "msg_bytes"], how="left", suffixes=("", "_best"))
    rows = [(r.nprocs, r.collective, r.msg_bytes, r.median, r.count,
             r.variant_best if pd.notna(r.variant_best) else None,
             r.median_best if pd.notna(r.median_best) else None)
            for r in merged.itertuples(index=False)]
    if not rows:
        return
    title = "median of per-launch medians (descriptive; verdicts: colltune check)"
    table = Table(title=title, title_justify="left", box=None, header_style="bold", pad_edge=False,
                  collapse_padding=True)
    for name, justify in (("procs", "right"), ("collective", "left"), ("bytes", "right"),
                          ("default us", "right"), ("launches", "right"),
                          ("fastest other", "left"), ("us", "right"), ("default/it", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    lines: list[str] = []
    for nprocs, coll, size, med, launches, best, best_med in rows:
        ratio = f"{med / best_med:.2f}" if best_med else ""
        other = best or ""  # whole: it is what --force and --variants take
        table.add_row(str(nprocs), coll, str(size), f"{med * 1e6:.2f}", str(launches), other,
                      f"{best_med * 1e6:.2f}" if best_med else "", ratio)
        lines.append(f"{nprocs} procs {coll} {size} B: default {med * 1e6:.2f} us ({launches} launches)"
                     + (f"; fastest other {other} {best_med * 1e6:.2f} us, default/it {ratio}" if best_med else ""))
    if fits(console, table):
        console.print(table)
    else:  # a narrow terminal: one line per point, wrapped between words, never inside a name
        console.print(title, style="bold", highlight=False)
        for line in lines:
            console.print(line, highlight=False)


@click.command(context_settings={"max_content_width": 100})
@bench_options.bench_options
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True, help="results database")
@click.option("--resume", "resume", default=None, metavar="RUN_ID",
              help="complete an interrupted run (`latest`: the newest interrupted one, or one left "
                   "`running` by a process that is gone); its stored settings are used")
@click.option("--quiet", is_flag=True, help="no progress bar")
@click.option("--dry-run", is_flag=True, help="print the launches and jobs, measure nothing")
def command(db_path: Path, resume: str | None, quiet: bool, dry_run: bool, **options: Any) -> None:
    """Measure the latency of collectives and their variants, R launches per process count,
    every variant of a job interleaved in random order within each launch; raw repetitions go
    into a DuckDB database (query it with plain SQL, export with `colltune export`).

    \b
    Examples:
      colltune bench --preset quick -n 4
      colltune bench -c allreduce,bcast -s 8,1KiB,64KiB -n 2,4 -R 10 --sync window
      colltune bench --mpi mpich -n 2 --preset quick --library-algorithms
      colltune bench --resume latest
    """
    console = Console(stderr=True)
    if resume is not None:
        given = [k for k, v in options.items() if v not in (None, (), [], False)]
        if given:
            raise click.UsageError(f"--resume uses the run's stored settings; drop "
                                   f"{', '.join('--' + g.replace('_', '-') for g in given)}")
        if resume == "latest":
            try:
                resume, note = runner.resumable_run(db_path)
            except StoreError as exc:
                raise click.UsageError(str(exc)) from None
            if resume is None:
                raise click.UsageError(f"no interrupted run in {db_path}{note}")
            if note:
                console.print(f"[yellow]{note}[/]", highlight=False)
        settings = None
    else:
        settings = bench_options.settings_from_options(options)
    if dry_run:
        if settings is None:
            with Store(db_path, read_only=True) as store:
                settings = BenchSettings(**store.run_info(resume)["settings"])  # type: ignore[arg-type]
        for line in runner.describe(settings):
            click.echo(line)
        return
    try:
        run_id = runner.run(settings if settings is not None else BenchSettings(),
                           db_path, resume_run_id=resume, progress=not quiet, console=console,
                           command=shlex.join(["colltune", "bench", *sys.argv[2:]]))
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted:[/] finished launches are stored in {db_path}; "
                      f"complete the run with `{nextsteps.cli('bench', '--db', db_path, '--resume', 'latest')}`",
                      highlight=False, soft_wrap=True)
        sys.exit(130)
    with Store(db_path, read_only=True) as store:
        if not quiet:
            _print_overview(store, run_id, console)
        counts = store.run_counts(run_id)
        skips = store.skip_reasons(run_id)
    console.print(f"run [bold]{run_id}[/]: {counts['repetitions']} repetitions from {counts['launches']} launches "
                  f"in {db_path}"
                  + (f"; {counts['skipped']} variant/job pairs not applicable" if counts["skipped"] else "")
                  + (f"; {counts['time_budget']} jobs stopped by the time budget" if counts["time_budget"] else ""))
    for variant, reason, jobs in skips[:MAX_SKIP_REASONS]:
        console.print(f"  not applicable: {variant} ({jobs} job{'s' if jobs > 1 else ''}): {reason}", highlight=False)
    if len(skips) > MAX_SKIP_REASONS:
        console.print(f"  ... and {len(skips) - MAX_SKIP_REASONS} more (table jobs, column skip_reason)", highlight=False)
    click.echo(run_id)
