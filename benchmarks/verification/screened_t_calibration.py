"""Error rates and power of the screened t (colltune.verify.stats, Test.SCREENED_T) next to the
10%-trimmed t and the plain paired t, on simulated per-launch log-ratios (issue 36, session 6).

    python benchmarks/verification/screened_t_calibration.py --trials 400000

Null: the noises of trimmed_t_calibration.py (normal, Student t3, 10% of launches 5x wider), median
0: the rate of p <= level at the levels Holm uses in a check (nominal = level). "screened from
10": the screen applied from 10 launches on (the check applies it from SCREEN_MIN_LAUNCHES, 16;
below, the trimmed t), to show why. Bimodal: launches in two placement modes (a share at log
1.55, the rest at 0, normal scatter 0.05 within a mode; "+wild": one launch in 20 replaced by a
wild one at log 16, a descheduled rank), tested against the 5% tolerance as the check does: the
rate is the power when the modes' mean lies beyond the boundary, and the false-positive rate when
it is shifted onto it ("null"; the wild launches are not part of what is judged). Planted 10%:
a 10% faster mock-up (log-ratio sd 0.1 between launches, as the pattern comparisons here) tested
against the tolerance, without wild launches, with one in 20 wild at one end, and at both ends.
Writes screened_t_calibration.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
from scipy import special

from colltune.verify import stats

HERE = Path(__file__).resolve().parent
LEVELS = (0.05, 0.001, 0.0002)
BOUNDARY = -math.log(1.0 - 0.05)  # the check's default tolerance, in log-ratio


def _trimmed_t_calibration():  # its noises and its vectorised Yuen p
    spec = importlib.util.spec_from_file_location("trimmed_t_calibration", HERE / "trimmed_t_calibration.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CAL = _trimmed_t_calibration()


def screened_p(d: np.ndarray, from_launches: int = stats.SCREEN_MIN_LAUNCHES) -> np.ndarray:
    """stats' screened t for every row of d (vectorised), the screen applied from `from_launches`."""
    n = d.shape[1]
    if n < from_launches:
        return CAL.yuen_p(d, int(math.floor(stats.TRIM * n)))
    distance = np.abs(d - np.median(d, axis=1, keepdims=True))
    far = np.maximum(stats.WILD_MADS * 1.4826 * np.median(distance, axis=1), math.log(stats.WILD_FACTOR))
    count = np.minimum((distance > far[:, None]).sum(axis=1), n // 4)
    farthest_first = np.argsort(np.argsort(-distance, axis=1, kind="stable"), axis=1)
    keep = farthest_first >= count[:, None]
    h = keep.sum(axis=1)
    mean = np.where(keep, d, 0.0).sum(axis=1) / h
    var = np.where(keep, (d - mean[:, None]) ** 2, 0.0).sum(axis=1) / (h - 1)
    return special.stdtr(h - 1, -mean / np.sqrt(var / h))


def bimodal(rng: np.random.Generator, trials: int, n: int, slow_share: float, wild: bool) -> np.ndarray:
    slow = rng.random((trials, n)) < slow_share
    d = np.where(slow, math.log(1.55), 0.0) + rng.normal(0.0, 0.05, (trials, n))
    if wild:
        d = np.where(rng.random((trials, n)) < 0.05, math.log(16.0), d)
    return d


def planted(rng: np.random.Generator, trials: int, n: int, wild: str) -> np.ndarray:
    d = -math.log(0.9) - BOUNDARY + rng.normal(0.0, 0.1, (trials, n))
    if wild in ("one end", "both ends"):
        d = np.where(rng.random((trials, n)) < 0.05, math.log(16.0), d)
    if wild == "both ends":
        d = np.where(rng.random((trials, n)) < 0.05, -math.log(16.0), d)
    return d


def rates(p: np.ndarray) -> dict[str, float]:
    return {str(a): float(np.mean(p <= a)) for a in LEVELS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=400_000)
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    tests = ("plain t", "trimmed t", "screened t", "screened from 10")
    print(f"{args.trials} trials per line; rate of p <= level " + ", ".join(map(str, LEVELS)))
    print(f"{'n':>3} {'case':>30}  " + "  ".join(f"{t:>26}" for t in tests))

    def record(n: int, case: str, d: np.ndarray) -> None:
        ps = {"plain t": CAL.yuen_p(d, 0), "trimmed t": CAL.yuen_p(d, int(math.floor(stats.TRIM * n))),
              "screened t": screened_p(d), "screened from 10": screened_p(d, 10)}
        ours = [stats.one_sided_test(np.exp(row), np.ones(n), stats.Test.SCREENED_T).p_value for row in d[:200]]
        assert np.allclose(ours, ps["screened t"][:200], rtol=1e-9), "not stats' screened t"
        row = {"n": n, "case": case, **{t: rates(p) for t, p in ps.items()}}
        rows.append(row)
        print(f"{n:>3} {case:>30}  " + "  ".join(" ".join(f"{v:>8.5f}" for v in row[t].values()) for t in tests),
              flush=True)

    for n in (8, 10, 12, 16, 24, 32):
        for kind in ("normal", "t3", "contaminated"):
            record(n, f"null {kind}", CAL.noise(rng, kind, (args.trials, n)))
    for n in (16, 32):
        for share in (0.25, 0.5):
            for wild in (False, True):
                d = bimodal(rng, args.trials, n, share, wild)
                tag = f"{share:.2f} slow{' +wild' if wild else ''}"
                record(n, f"bimodal {tag}", d - BOUNDARY)
                record(n, f"bimodal null {tag}", d - share * math.log(1.55))
        for wild in ("none", "one end", "both ends"):
            record(n, f"planted 10%, wild: {wild}", planted(rng, args.trials, n, wild))
    (HERE / "screened_t_calibration.json").write_text(json.dumps(
        {"trials": args.trials, "seed": args.seed, "wild_mads": stats.WILD_MADS, "wild_factor": stats.WILD_FACTOR,
         "screen_min_launches": stats.SCREEN_MIN_LAUNCHES, "trim": stats.TRIM, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
