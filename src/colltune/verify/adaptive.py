"""A check's measuring and judging: the first R launches, then adaptive rounds (issue 17).

After the first R launches per process count, each round judges the run so far and measures
again only the jobs of the comparisons still open (undecided, or untested for want of
launches), each job whole (decide.selection), R' launches per process count in round 1, doubled every further round, until all are
decided, the planned rounds are done or their time budget is spent. The number of rounds is
fixed before the first launch: it sets the alpha of every look (docs/statistics.md, "Running
it"). The verdicts of the last look are stored in the run's database.

`colltune check` and any other command that wants verdicts it can trust (`advise --measure`)
call `measure_and_judge` with settings from `plan_rounds`; what to print about a round is the
caller's (`on_round`). It opens the database once: the store receives the first launches and the
rounds' (measure.runner writes them through it), reads every look and stores the verdicts; while
it is open, another process is told the database is in use (docs/architecture.md, "Results
database").
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from colltune.measure import runner
from colltune.measure.settings import BenchSettings
from colltune.store.database import Store, open_when_free
from colltune.verify import check, decide, stats

# Verdicts need more launches than a measurement: ~100 comparisons are corrected together, and
# on this machine the per-launch ratio default/mock-up scatters by +-50%. With 10 launches two
# quick checks agreed on 96.9% of verdicts (min 94.6%), with 20 on 97.9% (min 96.4%); the full
# preset's long jobs make each launch's median precise enough for 10
# (benchmarks/reproducibility/README.md). bench's own default (5) is for measurements.
DEFAULT_LAUNCHES: dict[str | None, int] = {"quick": 8, "irregular": 8, "nonblocking": 8, "neighborhood": 8,
                                              "full": 10, None: 10}
# Rounds are planned up front (each look is judged at its share of alpha); the budget bounds the
# wall time they may take. On the quiet machine a quick check's rounds (8 + 16 launches) take
# ~11 s; under load the same launches take 2-3x longer, and a 12 s budget then cut them short
# where they mattered most: the violation sets of five checks at load 1.4-3.5 overlapped 51%
# (benchmarks/verdicts/README.md).
DEFAULT_ROUNDS = 2
DEFAULT_ROUND_BUDGET_S: dict[str | None, float] = {"quick": 30.0, "irregular": 30.0, "nonblocking": 30.0,
                                                   "neighborhood": 30.0, "full": 1200.0,
                                                   None: 120.0}
# A quick check spends its time on launches, the unit that decides, rather than on repetitions:
# the per-launch ratio of two variants scatters by tens of percent between launches here, while
# 40 repetitions already put a launch's median within ~2% (A/A ratios). Round launches measure
# only the open comparisons' jobs (a few tenths of a second each once Open MPI starts without
# OFI), so a round has at least as many launches as the first look (docs/statistics.md, "Running
# it"). --preset quick plans 8 + 10 + 20: with 8 + 8 + 16, ten quiet checks agreed on 88.5-91.3% of
# their violation sets (worst pair 70-80%; comparisons ~10% past the tolerance decided in ~2 of 3
# checks), with 8 + 10 + 20 on 96.4% (worst 90%); the error rates of both plans are in
# docs/measurement.md (benchmarks/verification/futility_calibration.py --plan).
QUICK_STOP: dict[str, Any] = {"max_reps": 40, "time_budget_s": 0.1}
ROUND_LAUNCHES_PER_R: dict[str | None, float] = {"quick": 1.25, "irregular": 1.0, "nonblocking": 1.0,
                                                   "neighborhood": 1.0, "full": 0.5, None: 0.5}


# A deterministic simulator (MpiLibrary.deterministic: SimGrid SMPI, whose launches measure no
# computation) repeats its times in every launch and repetition up to the rounding of its event
# times (docs/smpi.md, "Deterministic times"): more launches and repetitions add no information,
# only cost (a 1024-rank launch spends ~1.5 CPU-min starting). Its check measures one launch of one
# repetition after one warm-up per point, with no adaptive rounds (nothing is left that launches
# could decide), and judges the exact ratios (decide.exact_effect).
EXACT_PLAN: dict[str, Any] = {"launches": 1, "min_reps": 1, "max_reps": 1, "warmup": 1}


def measurement_defaults(preset: str | None, exact: bool = False) -> dict[str, Any]:
    """What a check measures unless told otherwise, beyond bench's own defaults: its launches
    per process count and, with --preset quick, its stopping rule; for a deterministic simulator
    (`exact`) EXACT_PLAN."""
    if exact:
        return dict(EXACT_PLAN)
    return {"launches": DEFAULT_LAUNCHES[preset],
            **(QUICK_STOP if preset in ("quick", "irregular", "nonblocking", "neighborhood") else {})}


def plan_rounds(bench: BenchSettings, rounds: int | None = None, round_launches: int | None = None,
                round_budget_s: float | None = None, exact: bool = False) -> BenchSettings:
    """`bench` with its adaptive rounds planned; None: the default of its preset (none for a
    deterministic simulator, `exact`)."""
    per_r = ROUND_LAUNCHES_PER_R[bench.preset]
    return bench.model_copy(update={
        "rounds": (0 if exact else DEFAULT_ROUNDS) if rounds is None else rounds,
        "round_launches": round_launches or max(1, math.ceil(bench.launches * per_r)),
        "round_budget_s": DEFAULT_ROUND_BUDGET_S[bench.preset] if round_budget_s is None else round_budget_s})


@dataclass(frozen=True)
class RoundStart:
    """A round about to measure: `open_` comparisons open, `pairs` (collective, size, variant)
    measured again in `launches` launches per process count."""

    round: int
    rounds: int
    open_: int
    pairs: int
    launches: int


@dataclass(frozen=True)
class BudgetSpent:
    """The rounds' time budget ran out before round `round`, or during it after `measured` of its
    `planned` launches per process count."""

    round: int
    budget_s: float
    measured: int | None = None
    planned: int | None = None

    def describe(self) -> str:
        if self.measured is None:
            return f"the round budget of {self.budget_s:g} s was spent before round {self.round}"
        return (f"the round budget of {self.budget_s:g} s was spent during round {self.round}, after "
                f"{self.measured} of its {self.planned} launches: comparisons still undecided had fewer launches "
                "than planned (a loaded machine? --round-budget)")


RoundEvent = RoundStart | BudgetSpent


def measure_and_judge(bench: BenchSettings, db_path: str | Path, settings: check.CheckSettings, *,
                      command: str, kind: str = "check", progress: bool = False, console: Console | None = None,
                      on_round: Callable[[RoundEvent], None] | None = None, save: bool = True,
                      close_later: bool = False) -> check.CheckResult:
    """Measure a new run of `bench` into `db_path`, its adaptive rounds included, then judge it
    and (`save`) store the verdicts, all on one open store (created if need be). Ctrl-C and a
    failed launch raise as in measure.runner.run, with every finished launch stored.
    `close_later`: the store is closed in the background once everything is stored (DuckDB's
    checkpoint at the close, ~0.1 s, releases the GIL: the caller prints its tables meanwhile)
    and the caller must call `wait_closed()` before it opens the database again or exits."""
    store = open_when_free(db_path)
    try:
        # one runner session: a round's first launch starts while the look before's last one ends
        with runner.Session(prelude=stats.preload) as session:
            run_id = runner.run(bench, store, progress=progress, console=console, command=command, kind=kind,
                                session=session)
            result = rounds(bench, store, run_id, settings, on_round, save=save, session=session)
    except BaseException:
        store.close()
        raise
    if not close_later:
        store.close()
        return result
    thread = threading.Thread(target=_close, args=(store,), name="colltune-store-close")
    thread.start()
    _closing.append(thread)
    return result


_closing: list[threading.Thread] = []  # stores being closed in the background (measure_and_judge)
_close_errors: list[BaseException] = []


def _close(store: Store) -> None:
    try:
        store.close()
    except BaseException as exc:  # raised again by wait_closed, in the caller's thread
        _close_errors.append(exc)


def wait_closed() -> None:
    """Wait for the stores measure_and_judge(close_later=True) closes in the background; raise
    what a close raised."""
    while _closing:
        _closing.pop().join()
    if _close_errors:
        raise _close_errors.pop(0)


def rounds(bench: BenchSettings, store: Store, run_id: str, settings: check.CheckSettings,
           on_round: Callable[[RoundEvent], None] | None = None, *, save: bool = True,
           session: runner.Session | None = None) -> check.CheckResult:
    """The adaptive rounds of a measured run on an open (writable) store, then its verdicts
    (stored if `save`). No launch starts after the budget; the verdicts are those of every look
    measured by then. `session`: the runner's session of the run's launches (a launch it started
    ahead for round 1 is used or stopped)."""
    spent: list[BudgetSpent] = []

    def notify(event: RoundEvent) -> None:
        if isinstance(event, BudgetSpent):
            spent.append(event)
        if on_round is not None:
            on_round(event)

    deadline = time.monotonic() + bench.round_budget_s if bench.round_budget_s > 0 else None
    run: check.RunData | None = None  # the run as last read, while no launch has been added since
    earlier: check.RunData | None = None  # the run as last read: later looks read only new launches
    cache: decide.EffectCache = {}  # every look judges the earlier looks again: their effects are kept
    looks_memo: check.LookMemo = {}  # and the earlier looks themselves, on the same launches
    for round_ in range(1, bench.rounds + 1):
        if deadline is not None and time.monotonic() >= deadline:
            notify(BudgetSpent(round_, bench.round_budget_s))
            break
        run = earlier = check.run_of(store, run_id, earlier)
        # Only the choice of jobs rests on this look: no bootstrap CI, no pooled p-value.
        result = check.judge(run, settings, details=False, cache=cache, looks_memo=looks_memo)
        todo = decide.selection(result.verdicts, run.measurements, result.futile)
        if not todo:
            break
        launches = decide.round_launches(bench.round_launches, round_)
        notify(RoundStart(round_, bench.rounds, sum(1 for v in result.judged()["verdict"] if v not in decide.DECIDED),
                          sum(len(s) for s in todo.values()), launches))
        after = (int(run.launches["launch_idx"].max()), int(run.launches["repetition"].max()))
        measured = runner.extend(bench, store, run_id, todo, launches, round_, after, deadline, session)
        run = None
        if measured < launches * len(todo):  # launches per process count, summed over them
            notify(BudgetSpent(round_, bench.round_budget_s, measured // max(len(todo), 1), launches))
            break
    result = check.judge(run or check.run_of(store, run_id, earlier), settings, cache=cache, looks_memo=looks_memo)
    # A round cut short is found in the stored launches (check.judge); one never started is not.
    result.messages.extend(event.describe() for event in spent if event.measured is None)
    if save:
        check.store_verdicts(store, result.verdicts)
    return result
