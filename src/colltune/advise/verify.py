"""`colltune advise --verify`: run the application again with and without the recommended
settings, alternating, and set the measured gain beside the predicted one.

Both sides run with libcolltune preloaded (profiling off), so the only difference is the advice:
the profile (mock-ups) and the library settings of advise.env. Launcher wall time per run,
median over runs per side: the machine is shared, single runs mislead.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from colltune.advise.launch import run_app
from colltune.mpi import build as build_mod
from colltune.mpi.libraries import MpiLibrary


@dataclass(frozen=True)
class Verification:
    default_s: list[float]
    tuned_s: list[float]
    predicted_s: float
    changed: bool = True      # False: no advice, both sides ran the same (an A/A comparison)

    @property
    def measured_s(self) -> float:
        return statistics.median(self.default_s) - statistics.median(self.tuned_s)

    def agreement(self) -> str:
        """Within 30% of the measured gain, or why the comparison says little."""
        spread = max(_iqr(self.default_s), _iqr(self.tuned_s))
        if not self.changed:
            return (f"no advice to apply: both sides ran the same, the difference "
                    f"({self.measured_s * 1e3:.1f} ms) is run-to-run noise (spread {spread * 1e3:.1f} ms)")
        if abs(self.measured_s) <= spread:
            return (f"the measured difference ({self.measured_s * 1e3:.1f} ms) is within the run-to-run "
                    f"spread ({spread * 1e3:.1f} ms, interquartile range): not resolved on this machine")
        if not self.predicted_s:
            return (f"no gain was predicted (eager and mapping advice are not backed by the database); "
                    f"measured {self.measured_s * 1e3:.1f} ms"
                    + (": the advice made the run slower, do not apply it" if self.measured_s < 0 else ""))
        if abs(self.measured_s - self.predicted_s) <= 0.3 * abs(self.measured_s):
            return "prediction within 30% of the measured gain"
        return (f"prediction off by {abs(self.measured_s - self.predicted_s) * 1e3:.1f} ms: the database "
                "measures collectives in isolation (no cache or network contention with the application)")


def _iqr(xs: list[float]) -> float:
    if len(xs) < 4:
        return (max(xs) - min(xs)) / 2
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]


def verify(lib: MpiLibrary, art: build_mod.Artifacts, command: Sequence[str], profile: Path | None,
           env: dict[str, str], predicted_s: float, runs: int = 5) -> Verification:
    default, tuned = [], []
    for i in range(runs):
        order = (False, True) if i % 2 == 0 else (True, False)
        for use in order:
            t = run_app(lib, art, command, profile=profile if use else None,
                        extra=env if use else None, quiet=True).seconds
            (tuned if use else default).append(t)
    return Verification(default, tuned, predicted_s, bool(profile or env))
