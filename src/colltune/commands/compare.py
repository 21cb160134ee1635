"""`colltune compare`: MPI libraries, machines or configurations side by side (docs/compare.md)."""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from colltune.commands import bench_options
from colltune.compare import config, data, judge
from colltune.compare import measure as cmeasure
from colltune.compare import stats as cstats
from colltune.compare import tables as ctables
from colltune.measure.settings import BenchError
from colltune.verify import stats as vstats
from colltune.verify import tables as vtables

console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)

# The unpaired test across launches has less power than check's paired one, and on a shared
# node whole launches run slow: 20 launches per configuration, as in benchmarks/compare, where two
# quick comparisons of Open MPI and MPICH at 2 ranks took 65-120 s each.
COMPARE_DEFAULT_LAUNCHES = 20


@click.command(context_settings={"max_content_width": 100})
@click.argument("sources", nargs=-1, metavar="[[LABEL=]DB[@RUN]]...")
@bench_options.bench_options
@click.option("--config", "config_specs", multiple=True, metavar="LABEL:LIB[:VAR=VALUE ...]",
              help="A configuration to measure: a label, an MPI library and shell-quoted settings set for its "
                   "launches (e.g. after:openmpi:OMPI_MCA_coll_tuned_use_dynamic_rules=1); repeat it.")
@click.option("--side", "side_specs", multiple=True, metavar="[LABEL=]VARIANT",
              help="The variant that stands for configuration LABEL (every one without LABEL=) at each point, "
                   "instead of its blocking call: default#nonblocking, default#persistent or one of the "
                   "library's algorithms (lib:allreduce:ring#nonblocking); when measuring, list it in --variants "
                   "too. Repeat it per configuration.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("colltune.duckdb"),
              show_default=True, help="Results database to measure into, or to read the newest comparison of.")
@click.option("--comparison", "comparison_id", metavar="ID", help="Without measuring: the comparison of --db to judge.")
@click.option("--resume", metavar="ID", help="Measure the missing launches of an interrupted comparison of --db "
                                              "(`latest`: the newest), alternating as before, then compare it.")
@click.option("--test", type=click.Choice([t.value for t in cstats.TESTS]), default=cstats.TESTS[0].value,
              show_default=True, help="Two-sided unpaired test on per-launch medians of the defaults.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True,
              help="Family-wise error rate (Holm over every point and pair).")
@click.option("--tolerance", type=click.FloatRange(0, 1, max_open=True), default=0.05, show_default=True,
              help="Share of time the faster side must save to be called faster; the band of 'no difference'.")
@click.option("--comparer", type=click.Choice(list(ctables.COMPARERS)), default="grouped", show_default=True,
              help="Main table printed.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write every table as CSV and Parquet and compare.html into this directory.")
@click.option("--dry-run", is_flag=True, help="Print the configurations and the launch order; measure nothing.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def command(sources: tuple[str, ...], config_specs: tuple[str, ...], side_specs: tuple[str, ...], db_path: Path,
            comparison_id: str | None,
            resume: str | None, test: str, alpha: float, tolerance: float, comparer: str, out_dir: Path | None, dry_run: bool,
            quiet: bool, **options: Any) -> None:
    """Compare MPI libraries (or machines, or two configurations of one library) collective by
    collective: which is faster where, with a verdict per point ("A faster", "B faster", "no
    difference", "undecided"), each one's guideline violations and quality score, and the
    fastest choice anywhere.

    \b
    Measure (launches alternate between the configurations, A B A B ...):
      colltune compare --mpi openmpi,mpich -n 2 --preset quick --out cmp
      colltune compare --config base:openmpi \\
          --config dyn:openmpi:OMPI_MCA_coll_tuned_use_dynamic_rules=1 -n 2 --preset quick
    Nonblocking calls, and a library algorithm of them, against each other:
      colltune compare --mpi openmpi,mpich -c allreduce --variants default#nonblocking \\
          --side default#nonblocking -n 2
      colltune compare --config own:openmpi --config ring:openmpi -c allreduce \\
          --variants default#nonblocking,lib:allreduce:ring#nonblocking \\
          --side own=default#nonblocking --side ring=lib:allreduce:ring#nonblocking -n 4
    Compare databases measured earlier or elsewhere ([LABEL=]DB[@RUN]):
      colltune compare old=before.duckdb new=after.duckdb --out cmp
      colltune compare --db colltune.duckdb            (its newest comparison)
      colltune compare --db colltune.duckdb --resume latest   (after Ctrl-C or a failed launch)
    """
    mpi_spec = options.pop("mpi_spec", None)
    mpi_list = [s.strip() for s in (mpi_spec or "").split(",") if s.strip()]
    measuring = bool(mpi_list or config_specs)
    given = [k for k, v in options.items() if v not in (None, (), [], False)]
    if sources and measuring:
        raise click.UsageError("give databases to compare, or configurations to measure (--mpi/--config), not both")
    if resume is not None and (sources or measuring or given):
        raise click.UsageError("--resume uses the comparison's stored configurations and settings; give only --db")
    if not measuring and given:
        raise click.UsageError(f"{', '.join('--' + g.replace('_', '-') for g in given)} set how to measure: "
                               "add --mpi A,B or --config to measure, or drop them to compare stored runs")
    settings = judge.CompareSettings(test=vstats.Test(test), alpha=alpha, tolerance=tolerance)

    if measuring:
        configs = config.configurations(mpi_list, config_specs)
        if options.get("launches") is None:
            options["launches"] = COMPARE_DEFAULT_LAUNCHES
        base = bench_options.settings_from_options(options)
        for label, side in data.parse_sides(side_specs, [c.label for c in configs]).items():
            if side not in (base.variants or ["default"]):
                raise click.UsageError(f"--side {label}={side}: the runs measure only what --variants lists; "
                                       f"add {side} to --variants")
        if dry_run:
            for line in cmeasure.describe(configs, base):
                click.echo(line)
            return
        command_line = shlex.join(["colltune", "compare", *sys.argv[2:]])
        try:
            comparison_id = cmeasure.measure(configs, base, str(db_path), command=command_line,
                                             console=err_console, progress=not quiet)
        except KeyboardInterrupt:
            err_console.print(f"[yellow]interrupted:[/] finished launches are stored in {db_path}; measure the "
                              f"rest with `colltune compare --db {db_path} --resume latest`, or compare them as "
                              f"they are with `colltune compare --db {db_path}`")
            sys.exit(130)
        except BenchError as exc:
            raise BenchError(f"{exc}\nevery configuration's launches so far are stored; measure the rest with "
                             f"`colltune compare --db {db_path} --resume latest` (not bench --resume: the launches "
                             f"would no longer alternate), or compare what was measured with "
                             f"`colltune compare --db {db_path}`") from None
    if resume is not None:
        try:
            comparison_id = cmeasure.resume(str(db_path), None if resume == "latest" else resume,
                                            console=err_console, progress=not quiet)
        except KeyboardInterrupt:
            err_console.print(f"[yellow]interrupted:[/] resume again with `colltune compare --db {db_path} "
                              "--resume latest`")
            sys.exit(130)
        except BenchError as exc:
            raise BenchError(f"{exc}\nresume the comparison again with `colltune compare --db {db_path} "
                             "--resume latest`") from None
    members = data.from_sources(sources) if sources else data.from_comparison(db_path, comparison_id)
    data.require_two(members)
    data.set_sides(members, side_specs)
    if dry_run:
        for m in members:
            click.echo(f"{m.label}: run {m.run.run_id} in {m.run.db_path}")
        return

    with console.status("judging ...") if not quiet else contextlib.nullcontext():
        result = judge.compare(members, settings)
    ctables.print_comparison(result, console, comparer)
    for note in result.messages:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)
    if len(result.left_out):
        err_console.print("[yellow]left out:[/] " + "; ".join(
            f"{r.collective} {vtables.fmt_bytes(r.msg_bytes)} at {r.nprocs} procs (only {r.measured_by})"
            for r in result.left_out.itertuples(index=False)), highlight=False)
    if out_dir is not None:
        all_tables = ctables.all_tables(result)
        vtables.write_csv(all_tables, out_dir)
        vtables.write_parquet(all_tables, out_dir)
        from colltune.compare import report

        path = report.write_report(result, out_dir)
        console.print(f"tables (CSV, Parquet) and report: {out_dir}/  ->  file://{path.resolve()}", highlight=False)


# The shared bench option --mpi names one library; here it lists the libraries to compare.
for _param in command.params:
    if _param.name == "mpi_spec" and isinstance(_param, click.Option):
        _param.help = "libraries to compare, comma-separated: openmpi,mpich[,intel] (names or mpicc paths)"
        _param.metavar = "LIST"


bench_options.state_launches_default(command, str(COMPARE_DEFAULT_LAUNCHES))
