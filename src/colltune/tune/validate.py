"""`colltune validate`: measure the tuned library against the plain one and say, per (process
count, collective, message size), how much faster the profile makes it, with a confidence
interval, and where it is significantly slower.

The benchmark measures the variants `default` and `tuned` in the same launches, interleaved in
random order (the driver's `tuned` makes exactly the interposer's decision: profile lookup,
applicability, else the library). So the per-launch medians of the two sides are paired by
launch, and the statistics are those of the check (colltune.verify.stats):

  speedup      median over launches of default_i / tuned_i  (> 1: tuned is faster)
  CI           percentile bootstrap over launches (stats.paired_relative_difference_ci),
               mapped to the speedup scale
  slower       one-sided paired test "tuned takes longer", Holm-corrected over all points,
               significant at alpha AND more than `tolerance` slower (the practical floor)
  faster       the same test the other way round

Points that no profile rule covers measure the library against itself: they are an A/A control,
and a `slower` flag there is a false alarm the stated error rate allows.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from colltune import schema
from colltune.errors import ColltuneError
from colltune.store.database import Store
from colltune.tune import profile as prof
from colltune.verify import stats
from colltune.verify.decide import JudgeSettings

VALIDATION_TABLE = "validations"
VALIDATION_COLUMNS = schema.VALIDATION_COLUMNS


class ValidateError(ColltuneError):
    """Nothing to validate, or measurements without both sides; the message says what to run."""


class ValidateSettings(JudgeSettings):
    test: stats.Test = stats.Test.PAIRED_T


def _speedup_from_rel(rel: float) -> float:
    """rel = 1 - 1/speedup  <=>  speedup = 1 / (1 - rel)."""
    if math.isnan(rel):
        return math.nan
    return math.inf if rel >= 1.0 else 1.0 / (1.0 - rel)


def _paired(measurements: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per-launch medians of default and tuned over the launches that measured both."""
    sides = {}
    for name in ("default", "tuned"):
        m = measurements[measurements["variant"] == name]
        launches, medians = stats.per_launch_medians(m["launch_idx"].to_numpy(), m["runtime_s"].to_numpy())
        sides[name] = dict(zip(launches.tolist(), medians.tolist(), strict=True))
    common = sorted(set(sides["default"]) & set(sides["tuned"]))
    return (np.array([sides["default"][i] for i in common], dtype=np.float64),
            np.array([sides["tuned"][i] for i in common], dtype=np.float64))


def judge(measurements: pd.DataFrame, profile: prof.Profile, settings: ValidateSettings | None = None,
          run_id: str = "", profile_path: str = "", now: _dt.datetime | None = None,
          layouts: Mapping[int, tuple[int, int]] | None = None) -> pd.DataFrame:
    """Measurements (nprocs, collective, variant, msg_bytes, launch_idx, runtime_s) of `default`
    and `tuned` -> one row per point, columns VALIDATION_COLUMNS. `layouts`: the uniform node
    layout (nodes, ppn) each process count ran on (run_layouts), for per-layout rules. No I/O."""
    settings = settings or ValidateSettings()
    m = measurements[measurements["variant"].isin(["default", "tuned"])]
    rows = []
    for (nprocs, coll, nbytes), group in m.groupby(["nprocs", "collective", "msg_bytes"], sort=True):
        default, tuned = _paired(group)
        n = int(default.size)
        if n == 0:
            continue
        speedup = stats.paired_slowdown(default, tuned)
        ci = stats.paired_relative_difference_ci(default, tuned, settings.confidence, settings.n_resamples,
                                                 settings.seed)
        slower = stats.one_sided_test(tuned, default, settings.test)
        faster = stats.one_sided_test(default, tuned, settings.test)
        rows.append({
            "run_id": run_id, "nprocs": int(nprocs), "collective": str(coll), "msg_bytes": int(nbytes),
            "profile_variant": profile.lookup(str(coll), int(nprocs), int(nbytes), (layouts or {}).get(int(nprocs))),
            "n_launches": n, "default_median_s": float(np.median(default)), "tuned_median_s": float(np.median(tuned)),
            "speedup": speedup, "ci_low": _speedup_from_rel(ci.low), "ci_high": _speedup_from_rel(ci.high),
            "p_slower": slower.p_value, "p_faster": faster.p_value,
        })
    if not rows:
        raise ValidateError("no (collective, size) point has both `default` and `tuned` measured in the same "
                            "launch: measure with --variants default,tuned --profile PROFILE")
    df = pd.DataFrame(rows)
    df["p_slower_adjusted"] = _adjust(df["p_slower"].to_numpy())
    df["p_faster_adjusted"] = _adjust(df["p_faster"].to_numpy())
    floor = 1.0 + settings.tolerance
    df["slower"] = (df["p_slower_adjusted"] <= settings.alpha) & (df["speedup"] * floor < 1.0)
    df["faster"] = (df["p_faster_adjusted"] <= settings.alpha) & (df["speedup"] > floor)
    df["profile_hash"] = f"{profile.content_hash():016x}"
    df["profile_path"] = profile_path
    df["test"] = settings.test.value
    df["alpha"] = settings.alpha
    df["tolerance"] = settings.tolerance
    df["confidence"] = settings.confidence
    df["judged_at"] = pd.Timestamp(now or _dt.datetime.now(_dt.UTC).replace(tzinfo=None))
    return df[list(VALIDATION_COLUMNS)]


def _adjust(p: np.ndarray) -> np.ndarray:
    """Holm over the points with a p-value (NaN: too few launches for a test, stays NaN)."""
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = stats.adjust(p[ok], stats.Correction.HOLM)
    return out


# ---------------------------------------------------------------------------------------------
# Database


def save(db_path: str | Path, table: pd.DataFrame) -> None:
    """Replace the stored validation of the run(s) in `table`."""
    with Store(db_path) as store:
        store.replace_derived(VALIDATION_TABLE, table)


def load(db_path: str | Path, run_id: str | None = None) -> pd.DataFrame:
    """The stored validation of `run_id` (default: the latest one); empty if there is none."""
    if not Path(db_path).exists():
        return pd.DataFrame(columns=list(VALIDATION_COLUMNS))
    with Store(db_path, read_only=True) as store:
        return store.derived(VALIDATION_TABLE, run_id, order="collective, nprocs, msg_bytes")


def run_layouts(db_path: str | Path, run_id: str) -> dict[int, tuple[int, int]]:
    """Process count -> the uniform node layout (nodes, ppn) its launches ran on; process counts
    on a layout that is not nodes x ppn (or not recorded) are left out: only layout-free rules
    apply to them, in the interposer as in `tuned`."""
    from colltune.measure import confirm

    with Store(db_path, read_only=True) as store:
        shapes = confirm.run_shapes(store.environment(run_id), store.launches(run_id))
    return {n: s[0] for n, s in shapes.items() if len(s) == 1 and s[0][0] * s[0][1] == n}


def measurements_of(db_path: str | Path, run_id: str) -> pd.DataFrame:
    from colltune.verify.check import CheckError, load_run

    try:
        return load_run(db_path, run_id).measurements
    except CheckError as exc:
        raise ValidateError(str(exc)) from exc


# ---------------------------------------------------------------------------------------------
# What to measure by default


def default_scope(profile: prof.Profile) -> tuple[list[str], list[int]]:
    """Collectives the profile tunes, and the process counts it was made for (its provenance
    `nprocs`, else the single-size blocks)."""
    # the blocking sections: the tuned variant the benchmark measures is a blocking call's (a
    # nonblocking or persistent section's algorithms are measured by check, lib:...#<form>)
    collectives = [s.collective for s in profile.sections if s.form == "blocking"]
    if not collectives:
        raise ValidateError("the profile has no rules for blocking collectives: nothing validate measures "
                            "would change (its nonblocking and persistent sections are judged by `colltune check`)")
    counts = [int(x) for x in profile.provenance.get("nprocs", "").split() if x.isdigit()]
    if not counts:
        counts = sorted({b.procs_lo for s in profile.sections for b in s.blocks if b.procs_lo == b.procs_hi})
    return collectives, counts or [4]


def default_sizes(profile: prof.Profile, collectives: list[str], base: list[int]) -> list[int]:
    """The sizes to measure when the user names none: the benchmark's (`base`) plus both bounds of
    every rule of these collectives, so that each rule is measured where it starts and ends."""
    bounds = {n for s in profile.sections if s.collective in collectives
              for b in s.blocks for r in b.rules for n in (r.lo, r.hi)}
    return sorted(set(base) | bounds)


def summary(table: pd.DataFrame) -> dict[str, object]:
    """Headline numbers of a validation."""
    replaced = table[table["profile_variant"].notna()]
    return {
        "points": len(table),
        "replaced_points": len(replaced),
        "faster": int(table["faster"].sum()),
        "slower": int(table["slower"].sum()),
        "slower_replaced": int(replaced["slower"].sum()),
        "geomean_speedup_replaced": float(np.exp(np.log(replaced["speedup"]).mean())) if len(replaced) else math.nan,
    }
