"""The learning loop: run with the current table -> ingest the traces -> retrain -> next table.

A backend runs one batch (the simulator, or real launches of one or more applications under the
interposer's learning mode) and scores a table where it can (ground truth, or `colltune bench`
medians of the library at the points the application called). Everything else is the same for
both: the trace files, `ingest`, the models, the table.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from colltune import __version__, catalog
from colltune.errors import ColltuneError
from colltune.learn import traces
from colltune.learn.models import ModelSettings, train, training_points
from colltune.learn.selection import CellReport, SelectionSettings, build_table, estimated_gain
from colltune.learn.simulate import Simulator
from colltune.learn.table import SelectionTable, content_hash, format_table, write_table
from colltune.store.database import Store


@dataclass
class Launch:
    """One application run of a batch: where its traces are and what ran."""

    trace_dir: Path
    command: str
    app: str | None = None
    wall_s: float | None = None
    explored: int | None = None
    collective_s: float | None = None


@dataclass
class Score:
    regret: float | None = None  # exploit-only table vs the best member, over the batch's calls
    oracle_s: float | None = None
    default_s: float | None = None


class Backend(Protocol):
    source: str
    mpi_name: str
    mpi_version: str
    abi_family: str

    def run(self, table: SelectionTable, table_path: Path, batch: int, trace_root: Path) -> list[Launch]: ...

    def score(self, table: SelectionTable, calls: pd.DataFrame) -> Score: ...


@dataclass
class LoopSettings:
    batches: int
    table_out: Path
    trace_root: Path
    model: ModelSettings = field(default_factory=ModelSettings)
    selection: SelectionSettings = field(default_factory=SelectionSettings)


@dataclass
class BatchResult:
    batch: int
    row: dict[str, object]
    table: SelectionTable  # the next table, written after this batch
    reports: list[CellReport]
    models_trained: dict[str, bool]


def next_table(store: Store, backend: Backend, settings: LoopSettings, comment: str
               ) -> tuple[SelectionTable, list[CellReport], dict[str, bool]]:
    """Train on everything the database holds for this library and build the next table."""
    points, portfolios = training_points(store, backend.mpi_name, settings.model.explored_only)
    if points.empty:
        return SelectionTable(bins=settings.selection.bins, caps=settings.selection.caps,
                              budget=settings.selection.budget, cell_budget=settings.selection.cell_budget,
                              generator=f"colltune {__version__}",
                              mpi=backend.mpi_name, comments=(comment,)), [], {}
    models = train(points, portfolios, settings.model)
    table, reports = build_table(models, points, settings.selection, generator=f"colltune {__version__}",
                                 mpi=backend.mpi_name, comments=(comment,))
    return table, reports, {c: m.trained for c, m in models.items()}


def run_loop(store: Store, backend: Backend, settings: LoopSettings,
             on_batch: Callable[[BatchResult], None] | None = None) -> list[BatchResult]:
    loop_id = f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    table, _, _ = next_table(store, backend, settings, "written by colltune learn run (start)")
    results = []
    for batch in range(1, settings.batches + 1):
        write_table(table, settings.table_out)
        launches = backend.run(table, settings.table_out, batch, settings.trace_root / loop_id)
        run_ids = []
        for launch in launches:
            res = traces.ingest(launch.trace_dir, store, command=launch.command, batch=batch, app=launch.app,
                                mpi_name=backend.mpi_name, mpi_version=backend.mpi_version,
                                abi_family=backend.abi_family)
            run_ids.append(res.trace_run_id)
        calls = pd.concat([store.trace_calls(r) for r in run_ids], ignore_index=True)
        nxt, reports, trained = next_table(store, backend, settings,
                                           f"written by colltune learn run (loop {loop_id}, after batch {batch})")
        score = backend.score(nxt, calls)
        explored = [x.explored for x in launches if x.explored is not None]
        row = {
            "loop_id": loop_id, "batch": batch, "trace_run_id": ",".join(run_ids),
            "created": datetime.now(timezone.utc).replace(tzinfo=None), "source": backend.source,
            "table_hash": content_hash(format_table(table).encode()), "table_text": format_table(table),
            "wall_s": float(sum(x.wall_s or 0.0 for x in launches)), "traced_calls": len(calls),
            "explored_calls": int(sum(explored)) if explored else int((calls["mode"] == "explore").sum()),
            "collective_s": float(sum(x.collective_s for x in launches if x.collective_s is not None))
            if any(x.collective_s is not None for x in launches) else float(calls["runtime_s"].sum()),
            "est_gain": estimated_gain(reports, calls, settings.selection.bins), "regret": score.regret,
            "oracle_s": score.oracle_s, "default_s": score.default_s,
        }
        store.add_learn_batch(row)
        result = BatchResult(batch, row, nxt, reports, trained)
        results.append(result)
        if on_batch:
            on_batch(result)
        table = nxt
    write_table(table, settings.table_out)
    return results


# -- backends -----------------------------------------------------------------------------------


class SimulatedBackend:
    """The simulator as a backend; scores against its ground truth."""

    source = "simulate"
    abi_family = "simulated"

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.mpi_name = f"simulated:{sim.truth.name}"
        self.mpi_version = "colltune simulator"

    def run(self, table: SelectionTable, table_path: Path, batch: int, trace_root: Path) -> list[Launch]:
        out = self.sim.run(table, batch, trace_root / f"batch-{batch:03d}")
        return [Launch(out.trace_dir, f"simulate {self.sim.truth.name}", self.sim.truth.name, out.wall_s,
                       out.explored, out.collective_s)]

    def score(self, table: SelectionTable, calls: pd.DataFrame) -> Score:
        return Score(self.sim.regret(table), self.sim.oracle_s(), self.sim.default_s())


class ApplicationBackend:
    """Real launches under the interposer; scores with bench/check medians of the library.

    Each launch's standard output and error go to `<trace root>/batch-NNN-appK.log` (the
    application's own results: what a correctness check reads). `check`, when given, is a shell
    command run after every launch with COLLTUNE_LEARN_LOG (that file) and COLLTUNE_LEARN_BATCH in
    its environment; a non-zero exit stops the loop before the batch is ingested, like a failing
    launch: learning must never be bought with a wrong result."""

    source = "app"

    def __init__(self, lib: object, artifacts: object, commands: Sequence[Sequence[str]], store: Store,
                 check: str | None = None) -> None:
        self.lib, self.art, self.commands, self.store = lib, artifacts, [list(c) for c in commands], store
        self.check = check
        self.mpi_name = lib.name  # type: ignore[attr-defined]
        self.mpi_version = lib.short_version  # type: ignore[attr-defined]
        self.abi_family = lib.family  # type: ignore[attr-defined]
        self.medians = store.library_medians(self.mpi_name)

    def run(self, table: SelectionTable, table_path: Path, batch: int, trace_root: Path) -> list[Launch]:
        from colltune.learn.table import refuse_members_fixed_per_launch
        from colltune.mpi import launch, runenv

        refuse_members_fixed_per_launch(table, self.lib, str(table_path))  # type: ignore[arg-type]
        out = []
        for i, argv in enumerate(self.commands):
            trace_dir = trace_root / f"batch-{batch:03d}-app{i}"
            trace_dir.mkdir(parents=True, exist_ok=True)
            log = trace_root / f"batch-{batch:03d}-app{i}.log"
            env = runenv.rank_environment(self.lib, self.art, learn=table_path, trace_dir=trace_dir)  # type: ignore[arg-type]
            full, extra = runenv.inject(self.lib, argv, env)  # type: ignore[arg-type]
            started = datetime.now(timezone.utc)
            launcher_env = launch.launcher_env(self.lib, nprocs=launch.nprocs_of(argv))  # type: ignore[arg-type]
            with log.open("w") as sink:
                proc = subprocess.run(full, env={**launcher_env, **extra},  # type: ignore[arg-type]
                                      check=False, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT)
            wall = (datetime.now(timezone.utc) - started).total_seconds()
            if proc.returncode != 0:
                raise ColltuneError(f"batch {batch}: `{' '.join(argv)}` exited with {proc.returncode} (output in "
                                    f"{log}): {_tail(log)}")
            if self.check:
                self._check(batch, log)
            out.append(Launch(trace_dir, shlex.join(argv), None, wall))  # a shell line: the next steps rerun it
        return out

    def _check(self, batch: int, log: Path) -> None:
        env = {**os.environ, "COLLTUNE_LEARN_LOG": str(log.resolve()), "COLLTUNE_LEARN_BATCH": str(batch)}
        proc = subprocess.run(["sh", "-c", str(self.check)], env=env, check=False, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ColltuneError(f"batch {batch}: the check `{self.check}` failed (exit {proc.returncode}) on the "
                                f"application's output {log}: {(proc.stdout + proc.stderr).strip()[-800:]}")

    def score(self, table: SelectionTable, calls: pd.DataFrame) -> Score:
        return medians_score(table, calls, self.medians)


def medians_score(table: SelectionTable, calls: pd.DataFrame, medians: pd.DataFrame) -> Score:
    """Regret of the exploit-only table against the best single member measured by bench at the
    same (collective, msg_bytes, communicator size), over the calls that have such medians."""
    if calls.empty or medians.empty:
        return Score()
    med = medians.groupby(["collective", "msg_bytes", "nprocs", "variant"])["median_s"].median()
    frozen = table.frozen()
    chosen = oracle = default = 0.0
    cnt = calls.groupby(["collective", "msg_bytes", "comm_size", "nodes", "ppn"]).size()
    for (coll, nbytes, size, nodes, ppn), k in cnt.items():
        try:
            point = med.loc[(coll, nbytes, size)]
        except KeyError:
            continue
        found = frozen.cell(coll, frozen.bins_of(int(nbytes), int(nodes), int(ppn)))
        pick = found[0][int(np.argmax(found[1].weights))] if found else catalog.DEFAULT
        if pick not in point.index or catalog.DEFAULT not in point.index:
            continue
        chosen += k * float(point[pick])
        oracle += k * float(point.min())
        default += k * float(point[catalog.DEFAULT])
    if oracle <= 0:
        return Score()
    return Score(chosen / oracle - 1.0, oracle, default)


def _tail(path: Path, chars: int = 800) -> str:
    return path.read_text(errors="replace").strip()[-chars:]


__all__ = ["ApplicationBackend", "BatchResult", "Launch", "LoopSettings", "SimulatedBackend", "medians_score",
           "next_table", "run_loop"]
