"""`colltune advise --verify`: run the application again with and without the recommended
settings, alternating, and set the measured gain beside the predicted one.

Both sides run with libcolltune preloaded and its profiling mode on (overhead below 0.1% of the
run on LAMMPS and HPCC, benchmarks/advise), so the only difference is the advice, and every run
yields two figures:
  - the launcher's wall time: what the user cares about, but on a shared machine its run-to-run
    noise is often larger than any collective saving;
  - the in-situ own cost at the advised points: the slowest rank's own cost (sampled calls,
    waiting for late ranks excluded) in exactly the (collective, process count, size bin) points
    the advice changes, as the profiling mode measures it inside the application (with no
    collective advice: the busiest rank's time in MPI calls). This is what the prediction is
    about (calls x (default - best), capped at the own cost), with far less noise; and the
    same figure for each changed point alone, beside that point's prediction;
  - per call pattern advised (advise/patterns.py), the in-situ own cost of its calls: the
    pattern is a change to the source, which --verify cannot make, so both sides run it; the
    figure bounds what fusing can save (a predicted saving above it is off), and it is the
    figure to compare once the source is changed.
Only the advice applied at run time (the collective choices) is predicted for the sides' gain:
a pattern's saving is not, since neither side fuses the calls.
Per side the median; the noise of a difference of medians is the half-width of its ~95% interval
from the medians' notches (McGill, Tukey & Larsen 1978: median +- 1.57 IQR / sqrt(n), combined
in quadrature). A prediction outside the measured interval (and more than 30% away) is "off",
even when it is small; otherwise a predicted saving smaller than the noise is "not resolvable":
agreement claimed there would be luck.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from colltune.advise import callsites, profile_run
from colltune.advise.collectives import Choice, bin_range
from colltune.advise.launch import run_app
from colltune.advise.patterns import Pattern
from colltune.advise.points import collective_points, own_and_wait
from colltune.advise.where import fmt_s
from colltune.mpi import build as build_mod
from colltune.mpi.libraries import MpiLibrary

NOTCH = 1.57        # McGill, Tukey & Larsen (1978): ~95% interval of a median for comparisons
AGREE = 0.30        # the bar: prediction within 30% of the measured gain

Key = tuple[str, int, int]      # (collective, nprocs, size bin)


def notch(xs: Sequence[float]) -> float:
    """Half-width of the ~95% interval of the median of xs (0 with fewer than 2 values)."""
    if len(xs) < 2:
        return 0.0
    q1, q3 = np.percentile(xs, [25, 75])
    return NOTCH * float(q3 - q1) / math.sqrt(len(xs))


@dataclass(frozen=True)
class Comparison:
    label: str
    default_s: list[float]
    tuned_s: list[float]

    @property
    def gain_s(self) -> float:
        return statistics.median(self.default_s) - statistics.median(self.tuned_s)

    @property
    def noise_s(self) -> float:
        return math.hypot(notch(self.default_s), notch(self.tuned_s))

    def status(self, predicted_s: float) -> str:
        """off: the measured interval excludes the prediction (and it is more than 30% away);
        unresolvable: the prediction is inside the noise; agree: within 30% and resolvable;
        loose: resolvable, more than 30% away but inside the noise (more runs would tell)."""
        miss = abs(self.gain_s - predicted_s)
        if miss > self.noise_s and miss > AGREE * abs(self.gain_s):
            return "off"
        if abs(predicted_s) < self.noise_s:
            return "unresolvable"
        return "agree" if miss <= AGREE * abs(self.gain_s) else "loose"

    def verdict(self, predicted_s: float | None, changed: bool = True) -> str:
        measured = f"measured {_ms(self.gain_s)} +- {_ms(self.noise_s)}"
        if not changed:
            return f"{self.label}: no advice, both sides ran the same (A/A): {measured} is the noise"
        if not predicted_s:
            slower = " (the advice made it slower: do not apply it)" if self.gain_s < -self.noise_s else ""
            return f"{self.label}: no gain predicted; {measured}{slower}"
        status = self.status(predicted_s)
        what = "saving" if predicted_s > 0 else "change"
        if status == "unresolvable":
            return (f"{self.label}: not resolvable: the predicted {what} {_ms(predicted_s)} is below the "
                    f"run-to-run noise +- {_ms(self.noise_s)} (~95% interval of the difference of "
                    f"medians, {len(self.default_s)} runs per side); {measured}")
        if status == "agree":
            return f"{self.label}: prediction {_ms(predicted_s)} within 30% of the gain, {measured}"
        ratio = f" (predicted/measured = {predicted_s / self.gain_s:.2g})" if self.gain_s else ""
        if status == "loose":
            return (f"{self.label}: prediction {_ms(predicted_s)} more than 30% from the gain but inside "
                    f"the noise, {measured}{ratio}: more runs would tell")
        return f"{self.label}: prediction {_ms(predicted_s)} off, {measured}{ratio}"

    def word(self, predicted_s: float | None, changed: bool = True) -> str:
        """The verdict in a word or two, for the terminal's table (verdict() says it in full):
        agree, loose, off, noise (the prediction is below the noise), A/A (no advice), slower
        (no gain predicted and the advice measured slower), - (no gain predicted)."""
        if not changed:
            return "A/A"
        if not predicted_s:
            return "slower" if self.gain_s < -self.noise_s else "-"
        status = self.status(predicted_s)
        return "noise" if status == "unresolvable" else status

    def agrees(self, predicted_s: float) -> bool:
        return self.status(predicted_s) == "agree"

    def as_json(self) -> dict[str, object]:
        return {"default_s": self.default_s, "tuned_s": self.tuned_s, "gain_s": self.gain_s,
                "noise_s": self.noise_s}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def fmt_time(seconds: float) -> str:
    """A duration in the unit that shows it (a pattern's calls cost microseconds), signed."""
    return ("-" if seconds < 0 else "") + fmt_s(abs(seconds))


@dataclass(frozen=True)
class PointFigure:
    """The in-situ own cost at one changed (collective, process count, size bin), both sides."""

    key: Key
    comparison: Comparison     # labelled MPI_Bcast, 2 ranks, 4096..8191 B -> bcast_as_scatter_allgather
    predicted_s: float

    def verdict(self) -> str:
        return self.comparison.verdict(self.predicted_s)

    def as_json(self) -> dict[str, object]:
        collective, nprocs, bin_ = self.key
        return {"collective": collective, "nprocs": nprocs, "bin": bin_, "label": self.comparison.label,
                "predicted_gain_s": self.predicted_s, **self.comparison.as_json(), "verdict": self.verdict()}


@dataclass(frozen=True)
class PatternFigure:
    """The in-situ own cost of one call pattern's calls, both sides (neither fuses them)."""

    pattern: Pattern
    comparison: Comparison     # default_s / tuned_s: the calls' own cost per run

    @property
    def label(self) -> str:
        p = self.pattern
        return f"{p.name}: {p.first_call} at {p.first}, then {p.second_call} at {p.second}"

    def verdict(self) -> str:
        c = self.comparison
        cost = statistics.median(c.default_s)
        text = (f"{self.label}: a change to the source, not applied by --verify (both sides run the calls): "
                f"they cost {fmt_time(cost)} in situ +- {fmt_time(notch(c.default_s))} without the run-time "
                f"advice, {fmt_time(statistics.median(c.tuned_s))} with it")
        saving = self.pattern.saving_s
        if saving is None:
            return f"{text}; no saving predicted (the database lacks the fused call)"
        if saving > cost + notch(c.default_s):
            return (f"{text}; the predicted saving {fmt_time(saving)} is off: more than the calls cost in situ, "
                    "and fusing them cannot save more than that")
        return (f"{text}; the predicted saving {fmt_time(saving)} is at most that cost; fuse the calls and "
                "compare this figure at the new call site")

    def word(self) -> str:
        """The verdict in a word (verdict() says it in full): off where the predicted saving is
        more than the calls cost in situ, `<= cost` where it is not, - without a prediction."""
        saving, c = self.pattern.saving_s, self.comparison
        if saving is None:
            return "-"
        return "off" if saving > statistics.median(c.default_s) + notch(c.default_s) else "<= cost"

    def as_json(self) -> dict[str, object]:
        p = self.pattern
        return {"pattern": p.name, "first": p.first, "second": p.second, "nprocs": p.nprocs, "bin": p.bin,
                "pairs": p.pairs, "pairs_interval": list(p.pairs_interval) if p.pairs_interval else None,
                "predicted_saving_s": p.saving_s, **self.comparison.as_json(),
                "verdict": self.verdict()}


@dataclass(frozen=True)
class Verification:
    wall: Comparison
    insitu: Comparison
    predicted_s: float
    changed: bool = True      # False: no advice, both sides ran the same (an A/A comparison)
    points: tuple[PointFigure, ...] = ()
    patterns: tuple[PatternFigure, ...] = ()

    def agreement(self) -> str:
        lines = [self.insitu.verdict(self.predicted_s, self.changed),
                 self.wall.verdict(self.predicted_s, self.changed)]
        p = self.predicted_s
        if self.changed and p and self.insitu.agrees(p) and not self.wall.agrees(p):
            lines.append("the advised collectives changed as predicted; the wall time "
                         + ("did not resolve it" if abs(p) < self.wall.noise_s else
                            "moved differently (other work overlaps or absorbs the collectives' time)"))
        elif self.changed and p and self.insitu.status(p) == "off":
            lines.append("in the application the advised collectives do not cost what the database "
                         "measured: its per-call medians come from tight loops and leave slow "
                         "repetitions out, the application pays for every call, between computations "
                         "(on a loaded machine, descheduling of ranks): the database's figures do not "
                         "transfer to this run (benchmarks/advise/README.md)")
        return "\n".join(lines)

    def details(self) -> list[str]:
        """A line per changed point (when there are several) and per pattern advised."""
        points = [f.verdict() for f in self.points] if len(self.points) > 1 else []
        return points + [f.verdict() for f in self.patterns]

    def as_json(self) -> dict[str, object]:
        return {"wall": self.wall.as_json(), "insitu": {"label": self.insitu.label, **self.insitu.as_json()},
                "predicted_gain_s": self.predicted_s, "changed": self.changed,
                "measured_gain_s": self.wall.gain_s, "agreement": self.agreement(),
                "points": [f.as_json() for f in self.points], "patterns": [f.as_json() for f in self.patterns]}


def point_label(choice: Choice) -> str:
    p = choice.point
    lo, hi = bin_range(p)
    return f"MPI_{p.collective.title()}, {p.nprocs} ranks, {lo}..{hi} B -> {choice.best}"


def insitu_seconds(run: profile_run.ProfileRun, keys: set[Key]) -> float:
    """The slowest rank's own cost at the advised points; without any, the busiest rank's MPI time."""
    if keys:
        return sum(point_seconds(run, keys).values())
    return max(sum(p.total_ns for p in r.points) for r in run.ranks) / 1e9


def point_seconds(run: profile_run.ProfileRun, keys: set[Key]) -> dict[Key, float]:
    """The slowest rank's own cost at each of `keys` (0 where the run made no such call)."""
    own = {(p.collective, p.nprocs, p.bin): p.own_s for p in collective_points(run)}
    return {k: own.get(k, 0.0) for k in keys}


def pattern_seconds(run: profile_run.ProfileRun, patterns: Sequence[Pattern]) -> list[float]:
    """Per pattern, the in-situ own cost of its calls on the rank where they cost most: at each of
    its two sites (at its process count), the calls' own cost times the share of them that are
    in the pattern (pairs / calls there, at most 1)."""
    if not patterns:
        return []
    best = [0.0] * len(patterns)
    for rank in run.ranks:
        labels = callsites.of(run, rank)
        at: dict[tuple[str, int], list[float]] = {}     # (site label, nprocs) -> [calls, own s]
        for point in rank.points:
            if point.kind == "coll":
                acc = at.setdefault((labels[point.site].label, point.nprocs), [0, 0.0])
                acc[0] += point.calls
                acc[1] += own_and_wait(point)[0]
        for i, pat in enumerate(patterns):
            mine = 0.0
            for site in dict.fromkeys((pat.first, pat.second)):
                calls, own = at.get((site, pat.nprocs), (0, 0.0))
                if calls:
                    mine += own * min(1.0, pat.pairs / calls)
            best[i] = max(best[i], mine)
    return best


def verify(lib: MpiLibrary, art: build_mod.Artifacts, command: Sequence[str], tuning_profile: Path | None,
           env: dict[str, str], choices: Sequence[Choice], patterns: Sequence[Pattern], workdir: Path,
           runs: int = 5, predicted_s: float | None = None, layers: tuple[str, ...] = ()) -> Verification:
    """Run `command` `runs` times per side, alternating, without and with the run-time advice
    (`tuning_profile`, `env`), and compare: the wall time, the in-situ own cost at the changed points
    (`choices`, whose savings are the prediction unless `predicted_s` is given), and that of the
    `patterns`' calls. `layers`: the communication layers the user named (the patterns' sites
    are cut at them)."""
    keys = {(ch.point.collective, ch.point.nprocs, ch.point.bin) for ch in choices}
    figures: dict[bool, dict[str, list[Any]]] = {side: {"wall": [], "insitu": [], "points": [], "patterns": []}
                                            for side in (False, True)}
    for i in range(runs):
        for use in ((False, True) if i % 2 == 0 else (True, False)):
            pdir = workdir / f"{'advised' if use else 'default'}-{i}"
            which = f"--verify: run {i + 1} of {runs} {'with' if use else 'without'} the advice"
            t = run_app(lib, art, command, run_dir=pdir, tuning_profile=tuning_profile if use else None,
                        extra=env if use else None, quiet=True, rerun=which).seconds
            run = profile_run.read(pdir, layers)
            mine = figures[use]
            mine["wall"].append(t)
            mine["insitu"].append(insitu_seconds(run, keys))
            mine["points"].append(point_seconds(run, keys))
            mine["patterns"].append(pattern_seconds(run, patterns))
    label = "in-situ own cost at the advised points" if keys else "in-situ time in MPI calls"
    off, on = figures[False], figures[True]
    points = tuple(PointFigure(key, Comparison(point_label(ch), [f[key] for f in off["points"]],
                                               [f[key] for f in on["points"]]), ch.saving_s)
                   for ch in choices for key in [(ch.point.collective, ch.point.nprocs, ch.point.bin)])
    pats = tuple(PatternFigure(p, Comparison(p.name, [f[i] for f in off["patterns"]], [f[i] for f in on["patterns"]]))
                 for i, p in enumerate(patterns))
    return Verification(Comparison("wall time", off["wall"], on["wall"]),
                        Comparison(label, off["insitu"], on["insitu"]),
                        sum(ch.saving_s for ch in choices) if predicted_s is None else predicted_s,
                        bool(tuning_profile or env), points, pats)
