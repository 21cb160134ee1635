"""Run every strategy on one profiling run: the findings and the files that apply them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from colltune.advise import collectives, eager, mapping, nodes, patterns, share, topology, where
from colltune.advise.findings import Finding, family_of, ordered
from colltune.advise.points import AppPoint, collective_points
from colltune.advise.profile_run import ProfileRun


@dataclass
class Advice:
    run: ProfileRun
    family: str
    points: list[AppPoint]
    findings: list[Finding]
    choices: list[collectives.Choice] = field(default_factory=list)
    missing: list[AppPoint] = field(default_factory=list)
    shares: dict[str, float] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)   # topology.facts
    time_table: list[where.TimeRow] = field(default_factory=list)
    call_patterns: list[patterns.Pattern] = field(default_factory=list)
    tunability: where.Tunability | None = None   # what colltune serves on the run's library

    @property
    def predicted_saving_s(self) -> float:
        return sum(f.saving_s or 0.0 for f in self.findings)

    @property
    def actionable(self) -> list[Finding]:
        return [f for f in self.findings if f.changes]


def analyze(run: ProfileRun, db: Path, table: pd.DataFrame | None = None,
            launcher: str = "mpiexec", loop: pd.DataFrame | None = None, proof: Path | None = None) -> Advice:
    """`table`, `loop`: the database's medians from synchronized starts and back to back (None:
    read from `db`); `launcher`: what started the application ("srun" or "mpiexec"), for the
    placement advice; `proof`: the proof of the library's build (proof.txt), which decides what
    is tunable where it exists."""
    family = family_of(run.ranks[0].library)
    points = collective_points(run)
    table = collectives.medians(db, family) if table is None else table
    loop = collectives.medians(db, family, loop=True) if loop is None else loop
    share_finding = share.finding(run, points)
    choices = collectives.choose(points, table)
    found = [share_finding]
    if share_finding.data["own_share"] >= share.NOT_WORTH:
        found += collectives.findings(choices)
    else:
        choices = []
    env = topology.facts(run)
    if caveat := topology.busy_warning(env):
        for f in found:
            if f.strategy == "collectives":
                f.warning = caveat
    # Patterns are advised whatever the collectives' share: each names its saving, however small.
    pats = patterns.find(run)
    patterns.predict(pats, run, loop)
    found += patterns.findings(pats, run.wall_ns / 1e9)
    found += eager.findings(run, family)
    found += mapping.findings(run, family, launcher) + topology.findings(run, family, launcher)
    found += nodes.findings(run, family)   # several hosts: layout, both eager limits, time by span
    missing = collectives.missing(points, table)
    for extra in patterns.missing_points(pats):
        # ranked by the own cost of the calls the fused one would replace (same size bin)
        extra.own_s = max((q.own_s for q in points if q.nprocs == extra.nprocs and q.bin == extra.bin),
                          default=0.0)
        missing.append(extra)
    # What --measure benchmarks first: the points where the run spends the most own cost.
    missing.sort(key=lambda q: (-q.own_s, q.collective, q.nprocs, q.bin))
    tunability = where.Tunability.of_run(run, proof)
    return Advice(run, family, points, ordered(found), choices, missing, share_finding.data, env,
                  where.rows(run, tunability), pats, tunability)
