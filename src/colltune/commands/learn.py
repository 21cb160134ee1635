"""`colltune learn`: selection tables from traces, the tuning loop, its simulator (docs/learn.md)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pandas as pd
from rich.console import Console
from rich.live import Live

from colltune.commands import nextsteps
from colltune.commands.bench_options import platform_option
from colltune.commands.run import warn_unproven_smpi_line
from colltune.errors import ColltuneError
from colltune.learn.models import ModelSettings, train, training_points
from colltune.learn.selection import CellReport, SelectionSettings, build_table
from colltune.learn.table import SelectionTable, write_table
from colltune.store.database import Store

err = Console(stderr=True)


def _out() -> Console:
    """Wide when not a terminal: the cell table names members in full in files and pipes."""
    return Console() if sys.stdout.isatty() else Console(width=200)


def _settings(f: Callable[..., Any]) -> Callable[..., Any]:
    """The model and selection options every subcommand shares."""
    opts = [
        click.option("--mpi-name", default=None, metavar="NAME",
                     help="library whose data to learn from, as recorded (openmpi, mpich, simulated:NAME) "
                          "[default: the only one in the database]"),
        click.option("--trees", type=click.IntRange(1), default=200, show_default=True,
                     help="boosted trees per model"),
        click.option("--min-timings", type=click.IntRange(1), default=20, show_default=True,
                     help="timings a member needs to be trained"),
        click.option("--min-members", type=click.IntRange(1), default=5, show_default=True,
                     help="trained members a collective needs (at most its portfolio size)"),
        click.option("--margin", type=click.FloatRange(0), default=0.05, show_default=True,
                     help="the best member must beat the second by more than this to exploit"),
        click.option("--min-cell-evidence", type=click.IntRange(0), default=10, show_default=True,
                     help="calls every member needs in a cell before it may exploit"),
        click.option("--replicate", type=click.IntRange(0), default=3, show_default=True,
                     help="runs in which a member must beat the default in a cell (and in more than half of "
                          "the runs with both) before it may replace it there; 0: off"),
        click.option("--veto-tolerance", type=click.FloatRange(0), default=0.05, show_default=True,
                     help="bench veto: a member may not replace the default in a cell where bench/check "
                          "launches in the database measure it slower than the default at the cell's called "
                          "points in most launches and by more than this at the median; inf: off"),
        click.option("--budget", type=click.IntRange(0), default=1000, show_default=True,
                     help="explored calls per communicator and run (written into the table)"),
        click.option("--cell-budget", type=click.IntRange(0), default=100, show_default=True,
                     help="at most this many of them per collective and message-size bin, so the budget "
                          "is spread over the cells (written into the table)"),
        click.option("--train-on", type=click.Choice(["explored", "all"]), default="explored", show_default=True,
                     help="traced calls that train the models: the randomly drawn ones, or also those the "
                          "table or the spent budget decided (biased by the application's phases)"),
        click.option("--all-cells", is_flag=True,
                     help="also list cells without calls (model inference at their centres)"),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _model(kw: dict[str, Any]) -> ModelSettings:
    return ModelSettings(trees=kw["trees"], min_timings=kw["min_timings"], min_members=kw["min_members"],
                         explored_only=kw["train_on"] == "explored")


def _selection(kw: dict[str, Any]) -> SelectionSettings:
    return SelectionSettings(margin=kw["margin"], min_cell_evidence=kw["min_cell_evidence"], budget=kw["budget"],
                             cell_budget=kw["cell_budget"], all_cells=kw["all_cells"], replicate=kw["replicate"],
                             veto_tolerance=kw["veto_tolerance"])


def _library_name(store: Store, given: str | None) -> str:
    names = set(store.trace_runs()["mpi_name"].dropna()) | set(store.runs()["mpi_name"].dropna())
    if given is not None:
        if given not in names:
            raise ColltuneError(f"no data of library {given!r} in {store.path}; it holds: "
                                f"{', '.join(sorted(names)) or 'nothing'}")
        return given
    if len(names) != 1:
        raise ColltuneError(f"{store.path} holds data of {', '.join(sorted(names)) or 'no library'}; "
                            "name one with --mpi-name" if names else
                            f"{store.path} holds no traces or measurements; run `colltune learn run` first")
    return names.pop()


def _learn(store: Store, kw: dict[str, Any]) -> tuple[str, SelectionTable, list[CellReport]]:
    name = _library_name(store, kw["mpi_name"])
    points, portfolios = training_points(store, name, _model(kw).explored_only)
    models = train(points, portfolios, _model(kw))
    untrained = [c for c, m in models.items() if not m.trained]
    if untrained:
        err.print(f"untrained (explored uniformly): {', '.join(untrained)}")
    table, reports = build_table(models, points, _selection(kw), generator="colltune learn table", mpi=name,
                                 comments=(f"written by colltune learn table from {store.path}",))
    return name, table, reports


@click.group(context_settings={"max_content_width": 100})
def command() -> None:
    """Learn selection tables from traces of real runs, run after run (docs/learn.md)."""


@command.command("table")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True, help="results database")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write the selection table here (COLLTUNE_SELECT)")
@click.option("--show", is_flag=True, help="print the table's cells readably")
@_settings
def table_cmd(db_path: Path, out_path: Path | None, show: bool, **kw: Any) -> None:
    """Train on the database and write the next selection table."""
    from colltune.learn.view import cells_table

    with Store(db_path, read_only=True) as store:
        name, table, reports = _learn(store, kw)
    if out_path is not None:
        write_table(table, out_path)
        err.print(f"wrote {out_path}: {sum(len(c.cells) for c in table.collectives.values())} cells of "
                  f"{len(table.collectives)} collectives")
    if show or out_path is None:
        _out().print(cells_table(reports, table.bins, f"selection table for {name} from {db_path}"))


@command.command("export")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True, help="results database")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="profile to write (colltune run --profile, validate, export --native)")
@_settings
def export_cmd(db_path: Path, out_path: Path, **kw: Any) -> None:
    """Write the exploit-only result as an ordinary colltune profile."""
    from colltune.learn.export import to_profile
    from colltune.tune.profile import write_profile

    with Store(db_path, read_only=True) as store:
        name, table, reports = _learn(store, kw)
        layouts = store.trace_layouts(name)
        bench = store.library_medians(name)
        launch_argv, native = _launch_and_native(store, name)
    if not bench.empty:
        extra = bench.groupby(["collective", "nprocs", "nodes", "ppn"], as_index=False).size()
        extra = extra.rename(columns={"nprocs": "comm_size", "size": "calls"})
        layouts = pd.concat([layouts, extra], ignore_index=True)
    res = to_profile(reports, layouts, table.bins, mpi=name, source=f"colltune learn {db_path}")
    write_profile(res.profile, out_path)
    err.print(f"wrote {out_path}: {res.rules} rules; {res.explore_cells} cells still exploring (not exported)"
              + (f"; {res.library_cells} exploit cells choose a library algorithm (lib:), which a profile "
                 "cannot name: they are left out (the library decides there); to apply them run with the "
                 "selection table itself, frozen (colltune run --learn TABLE, docs/select.md)"
                 if res.library_cells else ""), highlight=False, soft_wrap=True)
    if native:
        from colltune.tune.native_export import writable_segments

        native = native if writable_segments(db_path, native) else None  # offer only what export can write
    nextsteps.show(nextsteps.after_learn_export(db_path, out_path, launch_argv, native, res.rules))


def _launch_and_native(store: Store, name: str) -> tuple[list[str] | None, str | None]:
    """For the next steps: the application's launch line as the newest learning run of library
    `name` recorded it, and `name` if the latest check in the database found one of its
    algorithms faster than its default (what `export --native` writes)."""
    runs = store.trace_runs()
    runs = runs[(runs["mpi_name"] == name) & runs["command"].fillna("").astype(bool)]
    argv = shlex.split(str(runs.sort_values("ingested")["command"].iloc[-1])) if len(runs) else None
    verdicts = store.derived("verdicts") if store.has_table("verdicts") else pd.DataFrame()
    won = False  # a library algorithm beat the default somewhere: export --native has a file to write
    if not verdicts.empty and name in nextsteps.NATIVE:
        from colltune.tune.native_export import choices_from_verdicts

        won = bool(choices_from_verdicts(verdicts))
    return argv, (name if won else None)


@command.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--batches", type=click.IntRange(1), required=True, help="runs (batches) to learn from")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True, help="results database (may hold other "
              "applications and process counts of the same library: they all feed the models)")
@click.option("--table-out", type=click.Path(dir_okay=False, path_type=Path), default=Path("colltune-learn.sel"),
              show_default=True, help="where each batch's table is written (the last one stays)")
@click.option("--trace-root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="trace directories go under here [default: colltune-traces next to --db]")
@click.option("--simulate", "truth", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="run the simulator on this ground truth (docs/learn.md) instead of an application")
@click.option("--mpi", "mpi_spec", default=None, metavar="NAME|MPICC",
              help="MPI library the application runs with [default: the launcher's]; smpi: SimGrid's "
                   "simulated ranks, `-- smpirun -np N ./app` (docs/smpi.md)")
@platform_option
@click.option("--also", "also", multiple=True, metavar="CMD",
              help="another launch line run in every batch (an application group), e.g. "
                   "--also 'mpiexec -n 2 ./other'")
@click.option("--check", "check", default=None, metavar="CMD",
              help="shell command run after every launch to check the application's results; "
                   "$COLLTUNE_LEARN_LOG is the launch's output, $COLLTUNE_LEARN_BATCH the batch; "
                   "a non-zero exit stops the loop (e.g. --check 'grep -q Success=1 $COLLTUNE_LEARN_LOG')")
@_settings
@click.argument("command_argv", nargs=-1, type=click.UNPROCESSED)
def run_cmd(batches: int, db_path: Path, table_out: Path, trace_root: Path | None, truth: Path | None,
            mpi_spec: str | None, also: tuple[str, ...], check: str | None, command_argv: tuple[str, ...], **kw: Any) -> None:
    """Repeat: run the application in learning mode, ingest its traces, retrain, write the next table.

    \b
      colltune learn run --batches 10 --db app.duckdb -- mpiexec -n 4 ./app args
      colltune learn run --batches 4 --mpi smpi --platform fattree-64x16 -- \\
          smpirun -np 256 --cfg=smpi/coll-selector:mpich ./app args
      colltune learn run --batches 10 --db sim.duckdb --simulate truth.toml
    """
    from colltune.learn.loop import ApplicationBackend, LoopSettings, SimulatedBackend, run_loop
    from colltune.learn.view import progress_table

    trace_root = trace_root or db_path.resolve().parent / "colltune-traces"
    settings = LoopSettings(batches, table_out, trace_root, _model(kw), _selection(kw))
    with Store(db_path) as store:
        if truth is not None:
            if command_argv or also or check:
                raise ColltuneError("--simulate runs the simulator: give no launch command")
            from colltune.learn.simulate import Simulator, load_truth

            backend: Any = SimulatedBackend(Simulator(load_truth(truth)))
        else:
            if not command_argv:
                raise ColltuneError("give the launch command after `--`, e.g. `colltune learn run --batches 5 "
                                    "-- mpiexec -n 4 ./app`, or --simulate TRUTH.toml")
            from colltune.mpi import build, runenv
            from colltune.mpi import libraries as mpi_mod

            lib = mpi_mod.resolve(mpi_spec) if mpi_spec else (
                runenv.library_for_launcher(command_argv[0]) or mpi_mod.resolve(None))
            with err.status(f"building the C core for {lib.name} ..."):
                art = build.ensure_built(lib)
            from colltune.measure import proof

            proof.ensure_proven_shown(lib)
            for line in (list(command_argv), *(shlex.split(a) for a in also)):
                warn_unproven_smpi_line(lib, tuple(line))
            backend = ApplicationBackend(lib, art, [list(command_argv), *(shlex.split(a) for a in also)], store,
                                         check)
        done: list[Any] = []
        out_console = _out()
        with Live(progress_table(done), console=out_console, refresh_per_second=4) as live:
            def show(result: Any) -> None:
                done.append(result)
                live.update(progress_table(done))
            run_loop(store, backend, settings, show)
        out_console.line()
    err.print(f"last table: {table_out}; traces under {trace_root}", highlight=False, soft_wrap=True)
    nextsteps.show(nextsteps.after_learn_run(db_path, nextsteps.out_dir_for(db_path) / "learned.prof"))


@command.command("plot")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("colltune.duckdb"), show_default=True, help="results database")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="directory for the PNG files")
@click.option("--loop", "loop_id", default=None, help="loop id [default: the newest loop]")
def plot_cmd(db_path: Path, out_dir: Path, loop_id: str | None) -> None:
    """PNGs of a loop: regret/gain/exploration per batch, selection probabilities of the busiest
    cells over batches. `colltune report` shows the same as a section."""
    from colltune.learn.plots import write_pngs

    with Store(db_path, read_only=True) as store:
        paths = write_pngs(store, out_dir, loop_id)
    if not paths:
        raise ColltuneError(f"no learning loop in {db_path}; run `colltune learn run` first")
    for p in paths:
        click.echo(str(p))
