"""Measuring a comparison: one bench run per configuration, launches alternating between them.

Each configuration gets an ordinary run (same settings, same grid, its own library), linked to
the others by a comparison id in the store's `comparisons` table. Launch r of every configuration
runs before launch r+1 of any (A B A B ...), so slow drift of the machine (other jobs, thermal
state) hits every configuration alike; within a launch the driver interleaves the variants as
`colltune bench` does. The launches themselves are measured by colltune.measure.runner.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone

from rich.console import Console

from colltune.compare.config import CompareError, Config
from colltune.measure import runner
from colltune.measure.planning import LaunchSpec, launch_plan, validate
from colltune.measure.settings import BenchSettings
from colltune.mpi.algorithms import algorithm_key
from colltune.store.database import Store


def new_comparison_id() -> str:
    return f"cmp-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def settings_for(base: BenchSettings, config: Config) -> BenchSettings:
    """The bench settings of one configuration: the shared grid with its own library."""
    return BenchSettings(**{**base.model_dump(), "mpi": config.mpi})


def alternate(specs: Sequence[Sequence[LaunchSpec]]) -> list[tuple[int, LaunchSpec]]:
    """(configuration index, launch) in measuring order: repetition by repetition, within one
    repetition every configuration's launches in turn (A B A B ...)."""
    rounds = max((s.repetition for per in specs for s in per), default=-1) + 1
    order: list[tuple[int, LaunchSpec]] = []
    for r in range(rounds):
        for i, per in enumerate(specs):
            order += [(i, s) for s in per if s.repetition == r]
    return order


def describe(configs: Sequence[Config], base: BenchSettings) -> list[str]:
    """What `measure` would do, without launching (validates every configuration)."""
    lines = [f"{len(configs)} configurations, launches alternating:"]
    specs = []
    for c in configs:
        settings = settings_for(base, c)
        with c.applied():
            detail = runner.describe(settings)
        lines.append(f"  {c.describe()} ({detail[0]})")
        specs.append(launch_plan(settings, algorithm_key(validate(settings))))
    order = alternate(specs)
    lines.append(f"{len(order)} launches: " + " ".join(
        f"{configs[i].label}[{s.repetition}]" for i, s in order[: 4 * len(configs)])
        + (" ..." if len(order) > 4 * len(configs) else ""))
    lines += [f"each configuration: {line}" if not line.startswith(" ") else line
              for line in runner.describe(settings_for(base, configs[0]))[1:]]
    return lines


def measure(configs: Sequence[Config], base: BenchSettings, db_path: str, *, command: str,
            console: Console | None = None, progress: bool = True) -> str:
    """Measure every configuration into `db_path`; returns the comparison id. Ctrl-C or a failed
    launch leaves every run `interrupted` with its finished launches stored (`resume` measures
    the rest), and re-raises."""
    prepared: list[runner.PreparedRun] = []
    for c in configs:
        with c.applied():
            prepared.append(runner.prepare(settings_for(base, c), db_path, command=command, kind="compare"))
    comparison_id = new_comparison_id()
    with Store(db_path) as store:
        for pos, (c, p) in enumerate(zip(configs, prepared, strict=True)):
            store.add_comparison_member(comparison_id, run_id=p.run_id, label=c.label, position=pos,
                                        mpi_spec=c.mpi, config_env=c.env, command=command)
    _measure_alternating(configs, prepared, db_path, console, progress)
    return comparison_id


def resume(db_path: str, comparison_id: str | None = None, *, console: Console | None = None,
           progress: bool = True) -> str:
    """Measure the missing launches of an interrupted comparison (default: the newest), still
    alternating, with each run's stored settings; returns the comparison id."""
    with Store(db_path) as store:
        rows = store.comparison_members(comparison_id)
    if rows.empty:
        raise CompareError(f"{db_path} holds no comparison to resume; start one with --mpi or --config")
    configs = [Config(str(r.label), str(r.mpi_spec), json.loads(r.config_env or "{}"))
               for r in rows.itertuples(index=False)]
    prepared = []
    for c, r in zip(configs, rows.itertuples(index=False), strict=True):
        with c.applied():
            prepared.append(runner.reopen(db_path, str(r.run_id)))
    _measure_alternating(configs, prepared, db_path, console, progress)
    return str(rows.iloc[0]["comparison_id"])


def _measure_alternating(configs: Sequence[Config], prepared: Sequence[runner.PreparedRun], db_path: str,
                         console: Console | None, progress: bool) -> None:
    order = alternate([p.specs for p in prepared])
    try:
        with runner.progress_bar(console, disable=not progress) as bar:
            task = bar.add_task("launches", total=len(order))
            for i, spec in order:
                bar.update(task, description=f"launch {spec.repetition + 1} of {configs[i].label} "
                                             f"({spec.nprocs} procs)")
                with configs[i].applied():
                    runner.measure_launch(prepared[i], spec)
                bar.advance(task)
    except BaseException:
        with Store(db_path) as store:
            for p in prepared:
                store.set_run_status(p.run_id, "interrupted")
        raise
    with Store(db_path) as store:
        for p in prepared:
            store.set_run_status(p.run_id, "complete")
