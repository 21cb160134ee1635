"""The steps of `colltune advise`, in order (docs/advise.md): the application's profiling run (or
one made before), the analysis, `--measure` (the points the database lacks, measured and judged
with check's adaptive rounds, advise/measure.py), the files that apply the advice, `--verify`,
and the advice recorded in the results database (table `advice`). The command parses the options
and prints: what it prints between the steps comes to it through `on_advice` (the summary, before
--verify's runs start) and `on_round` (--measure's adaptive rounds).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colltune.advise import mapping, ompi_cvars, output, patterns, profile_run, where
from colltune.advise import verify as verify_mod
from colltune.advise.analyze import Advice, analyze
from colltune.advise.launch import run_app
from colltune.advise.measure import measure_missing
from colltune.errors import ColltuneError
from colltune.measure.proof import proof_path
from colltune.mpi.algorithms import algorithm_key
from colltune.mpi import build as build_mod
from colltune.mpi.libraries import MpiLibrary
from colltune.store.database import open_when_free
from colltune.store.engine import StoreError
from colltune.verify import adaptive, check

RUN_DIR = "profile-run"     # the profiling run's rank files, under --out


@dataclass(frozen=True)
class Plan:
    """What one `colltune advise` does (its options)."""

    db: Path
    lib: MpiLibrary
    command: tuple[str, ...]           # the application's launch line; () with from_run alone
    out_dir: Path
    from_run: Path | None = None       # an earlier profiling run, analysed instead of running command
    measure: bool = False
    verify: bool = False
    runs: int = 5
    mpi_spec: str | None = None        # --mpi as given, for --measure's runs
    layers: tuple[str, ...] = ()       # --layer: communication layers named by the user


@dataclass
class Outcome:
    advice: Advice
    files: dict[str, str]              # what write_files wrote
    report: dict[str, Any]             # advise.json
    run_dir: Path                      # the profiling run analysed
    verification: verify_mod.Verification | None = None
    measured: list[check.CheckResult] = field(default_factory=list)
    advice_id: str | None = None       # its row in the database's `advice` table
    not_recorded: str | None = None    # why it has none (the database was in use, ...)


class MeasureError(ColltuneError):
    """--measure failed after the profiling run had succeeded; `run_dir` holds that run."""

    def __init__(self, cause: ColltuneError, points: int, run_dir: Path) -> None:
        super().__init__(cause.format_message())
        self.exit_code = cause.exit_code
        self.points, self.run_dir = points, run_dir


def advised_patterns(advice: Advice) -> list[patterns.Pattern]:
    """The call patterns that have a finding (those below patterns.NEGLIGIBLE do not)."""
    wall_s = advice.run.wall_ns / 1e9
    return [p for p in advice.call_patterns if p.saving_s is None or p.saving_s >= patterns.NEGLIGIBLE * wall_s]


def _proof_of(lib: MpiLibrary, art: build_mod.Artifacts | None, run: profile_run.ProfileRun) -> Path | None:
    """The proof of the build that profiled the run (or, for an earlier run, of this library's
    build if it is the run's library): what decides which functions are tunable."""
    art = art or build_mod.current(lib)
    if art is None or algorithm_key(lib) != where.library_key(run.ranks[0].library):
        return None
    return proof_path(art)


def advise(plan: Plan, *, on_advice: Callable[[Advice, dict[str, str]], None] | None = None,
           on_round: Callable[[adaptive.RoundEvent], None] | None = None) -> Outcome:
    art = build_mod.ensure_built(plan.lib) if plan.command else None
    run_dir = plan.from_run or plan.out_dir / RUN_DIR
    if plan.from_run is None:
        run_app(plan.lib, art, plan.command, run_dir=run_dir)
    run = profile_run.read(run_dir, plan.layers)
    ompi_cvars.fill(run, plan.lib.version, plan.lib.mpicc, plan.command)
    proof = _proof_of(plan.lib, art, run)
    advice = analyze(run, plan.db, launcher=mapping.launcher_of(plan.command), proof=proof)
    measured: list[check.CheckResult] = []
    if plan.measure and advice.missing:
        try:
            measured = measure_missing(advice.missing, plan.db, plan.mpi_spec or str(plan.lib.mpicc), on_round)
        except ColltuneError as exc:
            raise MeasureError(exc, len(advice.missing), run_dir) from exc
        advice = analyze(run, plan.db, launcher=mapping.launcher_of(plan.command), proof=proof)
    files = output.write_files(advice, plan.out_dir, plan.lib)
    if on_advice is not None:
        on_advice(advice, files)
    report = output.as_json(advice, files)
    outcome = Outcome(advice, files, report, run_dir, measured=measured)
    if plan.verify:
        assert art is not None, "--verify runs the command"
        tuning_profile = Path(files["profile"]) if "profile" in files else None
        outcome.verification = verify_mod.verify(plan.lib, art, plan.command, tuning_profile, output.env_settings(files),
                                                 advice.choices, advised_patterns(advice),
                                                 plan.out_dir / "verify-runs", plan.runs, layers=plan.layers)
        report["verification"] = output.verification_json(outcome.verification)
    (plan.out_dir / "advise.json").write_text(json.dumps(report, indent=1) + "\n")
    try:
        with open_when_free(plan.db) as store:
            outcome.advice_id = store.add_advice(report, command=shlex.join(plan.command),
                                                 out_dir=plan.out_dir.resolve())
    except StoreError as exc:
        # The advice stands in its files; only `colltune report` will not show it.
        outcome.not_recorded = exc.format_message()
    return outcome
