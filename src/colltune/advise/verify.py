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
    about (calls x (default - best), capped at the own cost), with far less noise.
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

import numpy as np

from colltune.advise import profile_run
from colltune.advise.launch import run_app
from colltune.advise.points import collective_points
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

    def agrees(self, predicted_s: float) -> bool:
        return self.status(predicted_s) == "agree"

    def as_json(self) -> dict[str, object]:
        return {"default_s": self.default_s, "tuned_s": self.tuned_s, "gain_s": self.gain_s,
                "noise_s": self.noise_s}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


@dataclass(frozen=True)
class Verification:
    wall: Comparison
    insitu: Comparison
    predicted_s: float
    changed: bool = True      # False: no advice, both sides ran the same (an A/A comparison)

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

    def as_json(self) -> dict[str, object]:
        return {"wall": self.wall.as_json(), "insitu": {"label": self.insitu.label, **self.insitu.as_json()},
                "predicted_gain_s": self.predicted_s, "changed": self.changed,
                "measured_gain_s": self.wall.gain_s, "agreement": self.agreement()}


def insitu_seconds(run: profile_run.ProfileRun, keys: set[Key]) -> float:
    """The slowest rank's own cost at the advised points; without any, the busiest rank's MPI time."""
    if keys:
        return sum(p.own_s for p in collective_points(run) if (p.collective, p.nprocs, p.bin) in keys)
    return max(sum(p.total_ns for p in r.points) for r in run.ranks) / 1e9


def verify(lib: MpiLibrary, art: build_mod.Artifacts, command: Sequence[str], profile: Path | None,
           env: dict[str, str], predicted_s: float, keys: set[Key], workdir: Path,
           runs: int = 5) -> Verification:
    sides: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
    for i in range(runs):
        for use in ((False, True) if i % 2 == 0 else (True, False)):
            pdir = workdir / f"{'advised' if use else 'default'}-{i}"
            which = f"--verify: run {i + 1} of {runs} {'with' if use else 'without'} the advice"
            t = run_app(lib, art, command, profile_dir=pdir, profile=profile if use else None,
                        extra=env if use else None, quiet=True, rerun=which).seconds
            sides[use][0].append(t)
            sides[use][1].append(insitu_seconds(profile_run.read(pdir), keys))
    label = "in-situ own cost at the advised points" if keys else "in-situ time in MPI calls"
    return Verification(Comparison("wall time", sides[False][0], sides[True][0]),
                        Comparison(label, sides[False][1], sides[True][1]),
                        predicted_s, bool(profile or env))
