"""The driver's stopping rules on synthetic timings, against a numpy mirror of PGMPI's rules.

`colltune-bench stoprule` feeds samples to the same C code the measurement loop uses (no MPI),
checking every `check_every` samples like the driver does after every chunk of rounds.
"""

from __future__ import annotations

import json
import math
import subprocess
import zlib
from dataclasses import dataclass

import numpy as np
import pytest

from colltune.mpi import build


@dataclass
class Rule:
    methods: tuple[str, ...] = ("rse",)
    rse: float = 0.025
    cov_mean: float = 0.01
    cov_mean_window: int = 20
    cov_median: float = 0.01
    cov_median_window: int = 20
    min_reps: int = 20
    max_reps: int = 1000
    check_every: int = 10
    ref_time: float = 0.0
    nrep1_rse: float = 0.05
    b1: int = 8
    b2: int = 8
    k: int = 10

    def argv(self) -> list[str]:
        return ["--stop", ",".join(self.methods) or "fixed", "--rse", repr(self.rse),
                "--cov-mean", repr(self.cov_mean), "--cov-mean-window", str(self.cov_mean_window),
                "--cov-median", repr(self.cov_median), "--cov-median-window", str(self.cov_median_window),
                "--min-reps", str(self.min_reps), "--max-reps", str(self.max_reps),
                "--check-every", str(self.check_every), "--ref-time", repr(self.ref_time),
                "--nrep1-rse", repr(self.nrep1_rse), "--b1", str(self.b1), "--b2", str(self.b2),
                "--k", str(self.k)]


def _window_cov(values: np.ndarray, w: int) -> float:
    if len(values) < w:
        return math.nan
    v = values[-w:]
    return float(np.std(v, ddof=1) / np.mean(v))


def mirror(x: np.ndarray, rule: Rule) -> dict[str, object]:
    """Where the rules stop on x, written from the papers' definitions with numpy."""
    nrep_target = 0
    for n in range(1, len(x) + 1):
        if n % rule.check_every and n < rule.max_reps:
            continue
        s = x[:n]
        rse = float(np.std(s, ddof=1) / math.sqrt(n) / np.mean(s)) if n > 1 else math.nan
        means = np.cumsum(s) / np.arange(1, n + 1)
        medians = np.array([np.median(s[:i]) for i in range(1, n + 1)])
        cov_mean = _window_cov(means, rule.cov_mean_window)
        cov_median = _window_cov(medians, rule.cov_median_window)
        ok = n >= rule.min_reps or "nrep1" in rule.methods
        if "rse" in rule.methods:
            ok &= rse <= rule.rse
        if "cov_mean" in rule.methods:
            ok &= cov_mean <= rule.cov_mean
        if "cov_median" in rule.methods:
            ok &= cov_median <= rule.cov_median
        if "nrep1" in rule.methods:
            if nrep_target == 0 and n >= rule.b1:
                pilot = x[:n]
                prse = float(np.std(pilot, ddof=1) / math.sqrt(n) / np.mean(pilot))
                if n >= rule.b1 + rule.b2 or prse <= rule.nrep1_rse:
                    nrep_target = max(min(math.ceil(rule.ref_time / pilot.min()), rule.max_reps), rule.k)
            ok &= nrep_target > 0 and n >= nrep_target
        if ok and rule.methods:
            return {"n": n, "state": "converged", "rse": rse, "cov_mean": cov_mean,
                    "cov_median": cov_median, "nrep_target": nrep_target}
        if n >= rule.max_reps:
            return {"n": n, "state": "max_reps", "rse": rse, "cov_mean": cov_mean,
                    "cov_median": cov_median, "nrep_target": nrep_target}
    raise AssertionError("sample too short for the test")


def run_driver(artifacts: build.Artifacts, x: np.ndarray, rule: Rule) -> dict[str, object]:
    proc = subprocess.run([str(artifacts.bench), "stoprule", *rule.argv()],
                          input="\n".join(repr(float(v)) for v in x), capture_output=True,
                          text=True, check=True, timeout=30)
    got = json.loads(proc.stdout)
    return {k: (math.nan if v is None else v) for k, v in got.items()}


def _timings(seed: int, n: int, sigma: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 1e-5 * rng.lognormal(0.0, sigma, n) + 2e-6


def _same(got: dict[str, object], want: dict[str, object]) -> None:
    assert got["n"] == want["n"]
    assert got["state"] == want["state"]
    assert got["nrep_target"] == want["nrep_target"]
    for key in ("rse", "cov_mean", "cov_median"):
        a, b = float(got[key]), float(want[key])  # type: ignore[arg-type]
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9), key


CASES = {
    "rse": Rule(methods=("rse",)),
    "rse_tight_hits_max": Rule(methods=("rse",), rse=1e-4, max_reps=200),
    "cov_mean": Rule(methods=("cov_mean",), cov_mean=0.005),
    "cov_median_window_10": Rule(methods=("cov_median",), cov_median=0.002, cov_median_window=10),
    "all_three": Rule(methods=("rse", "cov_mean", "cov_median"), rse=0.02, cov_mean=0.004,
                      cov_median=0.004),
    "fixed": Rule(methods=(), max_reps=130),
    "nrep1": Rule(methods=("nrep1",), ref_time=3e-4),
    "nrep1_reference_shorter_than_k": Rule(methods=("nrep1",), ref_time=1e-9, k=15),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("sigma", [0.1, 0.6])
def test_driver_stops_where_the_rules_say(openmpi_build: build.Artifacts, name: str, sigma: float) -> None:
    rule = CASES[name]
    x = _timings(zlib.crc32(f"{name}/{sigma}".encode()), 1200, sigma)
    _same(run_driver(openmpi_build, x, rule), mirror(x, rule))


def test_known_values(openmpi_build: build.Artifacts) -> None:
    # 1,2,3,...,10: mean 5.5, sample sd sqrt(55/6) -> RSE = sd / sqrt(10) / 5.5
    x = np.arange(1.0, 11.0)
    got = run_driver(openmpi_build, x, Rule(methods=("rse",), min_reps=1, max_reps=10))
    assert got["n"] == 10
    assert got["state"] == "max_reps"
    assert float(got["rse"]) == pytest.approx(math.sqrt(55 / 6) / math.sqrt(10) / 5.5, rel=1e-12)


def test_nrep1_rule_converts_reference_time_to_repetitions(openmpi_build: build.Artifacts) -> None:
    # constant latency 0.25 (exact in binary): pilot RSE 0 -> nrep = ceil(12.5 / 0.25) = 50
    x = np.full(200, 0.25)
    got = run_driver(openmpi_build, x, Rule(methods=("nrep1",), ref_time=12.5, check_every=1))
    assert got["nrep_target"] == 50
    assert got["n"] == 50
    assert got["state"] == "converged"
