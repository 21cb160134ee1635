"""Guideline verdicts from a measurement run in the results database.

load_run() reads one run (raw repetitions, launches, environment) from DuckDB, judge() turns it
into verdicts with the statistics of colltune.verify.stats, save_verdicts()/load_verdicts() keep them
in the database's `verdicts` table. docs/statistics.md explains every rule used here.

Comparisons (every one is "ref should not be slower than alt"):

  kind      ref                         alt                              guideline
  pattern   default(n)                  mock-up(n)                       GL1..GL22, RS1, RS2
  library   default(n)                  lib:<coll>:<alg>(n)              "library"
  monotony  default(m_i)                default(m_j), m_j next size      "monotony"
  split     default(m_j)                k * default(m_i), k=ceil(mj/mi)  "split"
  aa        default(n)                  default#aa(n)                    "A/A" (calibration)
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from colltune import catalog as catalog_mod
from colltune import schema
from colltune.catalog import AA, DEFAULT, LIB_PREFIX, TUNED, variant_kind
from colltune.errors import ColltuneError
from colltune.store import Store, StoreError
from colltune.units import human_bytes
from colltune.verify import decide as decide_mod
from colltune.verify import stats
from colltune.verify.decide import DECIDED, GUIDELINE_KINDS

BARRIER = "barrier"

# Guideline kinds are judged together (one correction family, counted as violations); the A/A
# calibration and tuned-vs-default comparisons are separate families and never count.
KINDS = (*GUIDELINE_KINDS, "aa", "tuned")

VERDICT_COLUMNS = schema.VERDICT_COLUMNS

SUMMARY_COLUMNS = (
    "nprocs", "collective", "variant", "kind", "msg_bytes", "n_launches", "n_samples",
    "median_s", "mean_s", "raw_median_s",
)


class CheckError(ColltuneError):
    """A database that cannot be judged at all (missing, not DuckDB, no run, no data)."""


class CheckSettings(BaseModel):
    """How verdicts are reached. Defaults are the documented ones (docs/statistics.md)."""

    model_config = ConfigDict(frozen=True)

    test: stats.Test = stats.Test.PAIRED_T
    correction: stats.Correction = stats.Correction.HOLM
    alpha: float = Field(0.05, gt=0.0, lt=1.0)
    tolerance: float = Field(0.05, ge=0.0, lt=1.0)
    min_launches: int = Field(3, ge=2, description="launches per side below which no test is made")
    max_split: int = Field(64, ge=2, description="largest split factor k tested (adjacent sizes always)")
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    n_resamples: int = Field(2000, ge=100)
    seed: int = 0
    looks: int | None = Field(None, ge=1, description="planned looks (None: 1 + the run's adaptive rounds)")


# ---------------------------------------------------------------------------------------------
# Reading a run


@dataclass
class RunData:
    """One measurement run as stored by bench: raw valid repetitions plus context."""

    db_path: Path
    run_id: str
    info: dict[str, Any]
    environment: dict[str, str]
    launches: pd.DataFrame
    variants: pd.DataFrame
    measurements: pd.DataFrame  # nprocs, collective, variant, msg_bytes, launch_idx, runtime_s
    problems: list[str] = field(default_factory=list)
    rounds: dict[int, int] = field(default_factory=dict)  # launch_idx -> adaptive round (absent: 0)

    @property
    def looks(self) -> int:
        """Looks planned before the first launch: the first R launches, then each adaptive round."""
        return 1 + int((self.info.get("settings") or {}).get("rounds", 0) or 0)

    @property
    def launches_per_nprocs(self) -> int | None:
        value = (self.info.get("settings") or {}).get("launches")
        return int(value) if value else None

    @property
    def complete(self) -> bool:
        return self.info.get("status") == "complete" and not self.problems


_NEEDED_MEASUREMENT_COLUMNS = {"run_id", "launch_idx", "nprocs", "collective", "variant", "msg_bytes", "runtime_s"}


def _open(db_path: Path, *, read_only: bool) -> Store:
    if read_only and not db_path.exists():
        raise CheckError(f"no results database at {db_path}: measure first with `colltune check --db {db_path}` "
                         f"(or `colltune bench --db {db_path}`)")
    try:
        return Store(db_path, read_only=read_only)
    except StoreError as exc:
        raise CheckError(str(exc)) from exc


def load_run(db_path: str | Path, run_id: str | None = None) -> RunData:
    """Read one run (the latest with measurements if run_id is None)."""
    db_path = Path(db_path)
    with _open(db_path, read_only=True) as store:
        try:
            return _load_run(store, db_path, run_id)
        except duckdb.Error as exc:
            raise CheckError(f"{db_path} is not a readable colltune results database: {exc}") from exc


def _load_run(store: Store, db_path: Path, run_id: str | None) -> RunData:
    if not store.has_table("measurements"):
        raise CheckError(f"{db_path} has no `measurements` table: it was not written by `colltune bench`")
    missing = _NEEDED_MEASUREMENT_COLUMNS - set(store.columns("measurements"))
    if missing:
        raise CheckError(f"{db_path}: table `measurements` lacks column(s) {', '.join(sorted(missing))}; "
                         "the database is from an incompatible colltune version")
    if run_id is None:
        run_id = store.latest_run_id(measured=True)
        if run_id is None:
            raise CheckError("the database holds no measurements: the bench was interrupted before its first "
                             "result; measure again")
    problems: list[str] = []
    info: dict[str, Any] = {"run_id": run_id}
    if not store.has_table("runs"):
        problems.append("no `runs` table: run settings and status unknown")
    else:
        try:
            info = store.run_info(run_id)
        except StoreError as exc:
            raise CheckError(str(exc)) from None
    status = info.get("status")
    if store.has_table("runs") and status != "complete":
        problems.append(f"run {run_id} is {status or 'of unknown status'} (not complete): verdicts use the "
                        f"launches that finished and are marked partial; resume the bench to complete it")

    launches = store.launches(run_id)
    for _, r in launches[launches["status"] != "ok"].iterrows():
        msg = r.get("message") or ""
        problems.append(f"launch {r['launch_idx']} ({r.get('nprocs', '?')} processes) is {r['status']}"
                        + (f": {msg}" if msg else ""))
    environment: dict[str, str] = {}
    rounds: dict[int, int] = {}
    for idx, key, value in store.environment(run_id)[["launch_idx", "key", "value"]].itertuples(index=False):
        environment.setdefault(str(key), str(value))
        if key == "round":
            rounds[int(idx)] = int(value)
    variants = store.variants(run_id)
    measurements = store.measurements(run_id, valid_only=True, include_warmup=False)[
        ["nprocs", "collective", "variant", "msg_bytes", "launch_idx", "runtime_s"]].reset_index(drop=True)
    if measurements.empty:
        raise CheckError(f"run {run_id} in {db_path} has no valid measurements (interrupted before the first "
                         "result, or every repetition was invalid); measure again")
    return RunData(db_path, run_id, info, environment, launches, variants, measurements, problems, rounds)


# ---------------------------------------------------------------------------------------------
# Judging


@dataclass(frozen=True)
class _Side:
    launch_ids: np.ndarray  # ascending
    launch_medians: np.ndarray
    raw: np.ndarray


@dataclass
class CheckResult:
    """Everything a check produced: verdicts, per-variant summary, calibration, messages."""

    run: RunData
    settings: CheckSettings
    verdicts: pd.DataFrame
    summary: pd.DataFrame
    messages: list[str]

    @property
    def partial(self) -> bool:
        if self.verdicts.empty:
            return True
        return (not self.run.complete) or bool(self.verdicts["partial"].any())

    def judged(self) -> pd.DataFrame:
        """Verdicts of the guideline comparisons (A/A calibration excluded)."""
        return self.verdicts[self.verdicts["kind"].isin(GUIDELINE_KINDS)]

    def violations(self) -> pd.DataFrame:
        v = self.judged()
        return v[v["violation"]]

    def coverage(self) -> decide_mod.Coverage:
        return decide_mod.coverage(self.verdicts, self.run.launches_per_nprocs, self.settings.min_launches)

    def calibration(self) -> dict[str, Any]:
        return calibration_summary(self.verdicts, self.settings.alpha)




def variant_label(collective: str, variant: str, cat: catalog_mod.Catalog | None = None) -> str:
    """Human name: MPI function for the default, the guideline's right-hand side for a mock-up."""
    cat = cat or catalog_mod.load()
    mpi_name = next((c.mpi for c in cat.collectives if c.name == collective), collective)
    if variant == DEFAULT:
        return mpi_name
    if variant == AA:
        return f"{mpi_name} (A/A copy)"
    if variant == TUNED:
        return f"{mpi_name} (tuned profile)"
    if variant.startswith(LIB_PREFIX):
        alg = variant.split(":", 2)[-1]
        return f"{mpi_name} algorithm {alg}"
    try:
        return cat.variant(variant).rhs
    except KeyError:
        return variant


def _guideline(collective: str, variant: str, variants: pd.DataFrame, cat: catalog_mod.Catalog) -> str:
    if "guideline" in variants.columns:
        hit = variants[(variants["collective"] == collective) & (variants["variant"] == variant)]
        if len(hit) and isinstance(hit.iloc[0]["guideline"], str) and hit.iloc[0]["guideline"]:
            return str(hit.iloc[0]["guideline"])
    if variant.startswith(LIB_PREFIX):
        return "library"
    try:
        return cat.variant(variant).guideline
    except KeyError:
        return "?"


def _sides(measurements: pd.DataFrame) -> dict[tuple[int, str, str, int], _Side]:
    out: dict[tuple[int, str, str, int], _Side] = {}
    keys = ["nprocs", "collective", "variant", "msg_bytes"]
    for key, grp in measurements.groupby(keys, sort=True):
        ids, med = stats.per_launch_medians(grp["launch_idx"].to_numpy(), grp["runtime_s"].to_numpy())
        out[(int(key[0]), str(key[1]), str(key[2]), int(key[3]))] = _Side(
            ids, med, grp["runtime_s"].to_numpy(dtype=float))
    return out


def summarize(measurements: pd.DataFrame) -> pd.DataFrame:
    """Per (nprocs, collective, variant, size): launches, samples, median of per-launch medians."""
    rows = []
    for (p, coll, var, n), side in _sides(measurements).items():
        rows.append({
            "nprocs": p, "collective": coll, "variant": var, "kind": variant_kind(var), "msg_bytes": n,
            "n_launches": int(side.launch_medians.size), "n_samples": int(side.raw.size),
            "median_s": float(np.median(side.launch_medians)), "mean_s": float(np.mean(side.raw)),
            "raw_median_s": float(np.median(side.raw)),
        })
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


@dataclass
class _Comparison:
    nprocs: int
    collective: str
    variant: str
    kind: str
    guideline: str
    msg_bytes: int
    ref_bytes: int | None
    k: int | None
    lhs: str
    rhs: str
    ref: _Side
    alt: _Side
    note: str = ""


def _comparisons(run: RunData, sides: dict[tuple[int, str, str, int], _Side], settings: CheckSettings,
                 messages: list[str]) -> list[_Comparison]:
    cat = catalog_mod.load()
    out: list[_Comparison] = []
    by_coll: dict[tuple[int, str], dict[str, dict[int, _Side]]] = {}
    for (p, coll, var, n), side in sides.items():
        by_coll.setdefault((p, coll), {}).setdefault(var, {})[n] = side

    for (p, coll), per_variant in sorted(by_coll.items()):
        if coll == BARRIER:
            continue
        mpi_name = variant_label(coll, DEFAULT, cat)
        default = per_variant.get(DEFAULT, {})
        if not default:
            messages.append(f"{mpi_name} at {p} processes: the default was not measured, so none of its "
                            f"{len(per_variant)} variant(s) can be judged")
            continue
        for var, per_size in sorted(per_variant.items()):
            if var == DEFAULT:
                continue
            kind = {"aa": "aa", "tuned": "tuned", "library": "library", "mockup": "pattern"}[variant_kind(var)]
            guideline = {"aa": "A/A", "tuned": "tuned"}.get(kind) or _guideline(coll, var, run.variants, cat)
            for n, alt in sorted(per_size.items()):
                ref = default.get(n)
                if ref is None:
                    messages.append(f"{mpi_name} at {n} B, {p} processes: {var} measured without the default; "
                                    "not judged")
                    continue
                out.append(_Comparison(p, coll, var, kind, guideline, n, None, None,
                                       f"{mpi_name}({human_bytes(n)})", variant_label(coll, var, cat), ref, alt))
        sizes = sorted(default)
        for small, large in stats.monotony_pairs(sizes):
            out.append(_Comparison(p, coll, DEFAULT, "monotony", "monotony", small, large, None,
                                   f"{mpi_name}({human_bytes(small)})", f"{mpi_name}({human_bytes(large)})",
                                   default[small], default[large]))
        adjacent = set(stats.monotony_pairs([s for s in sizes if s > 0]))
        for small, large, k in stats.split_pairs(sizes, max_k=max(settings.max_split, max(sizes) + 1)):
            if k > settings.max_split and (small, large) not in adjacent:
                continue
            scaled = _Side(default[small].launch_ids, k * default[small].launch_medians, k * default[small].raw)
            out.append(_Comparison(p, coll, DEFAULT, "split", "split", large, small, k,
                                   f"{mpi_name}({human_bytes(large)})", f"{k} x {mpi_name}({human_bytes(small)})",
                                   default[large], scaled))
    return out


def _barrier_medians(sides: dict[tuple[int, str, str, int], _Side]) -> dict[int, float]:
    per_p: dict[int, list[np.ndarray]] = {}
    for (p, coll, _var, _n), side in sides.items():
        if coll == BARRIER:
            per_p.setdefault(p, []).append(side.launch_medians)
    return {p: float(np.median(np.concatenate(v))) for p, v in per_p.items()}


_KEY = ["nprocs", "kind", "collective", "variant", "msg_bytes", "ref_bytes", "k"]


def judge(run: RunData, settings: CheckSettings | None = None) -> CheckResult:
    """All verdicts of a run. Never raises on thin data: such comparisons are untested and partial.

    With adaptive rounds the run is judged look by look (launches of rounds <= k), each at
    alpha / looks, and a comparison keeps the row of the look that first decided it."""
    settings = settings or CheckSettings()
    looks = settings.looks or run.looks
    messages = list(run.problems)
    meas = run.measurements
    round_of = meas["launch_idx"].map(lambda i: run.rounds.get(int(i), 0))
    last = int(round_of.max()) if len(meas) else 0
    if last + 1 > looks:
        messages.append(f"the run has {last + 1} looks but {looks} were planned: judged at alpha / {last + 1}")
        looks = last + 1
    frozen: dict[tuple[object, ...], pd.Series] = {}
    verdicts = pd.DataFrame()
    for k in range(last + 1):
        verdicts = _judge_look(run, meas[round_of <= k], settings, looks, messages if k == last else [])
        verdicts["look"] = k
        for key, row in zip(verdicts[_KEY].itertuples(index=False, name=None), verdicts.itertuples(index=False),
                            strict=True):
            if key not in frozen and row.verdict in DECIDED:
                frozen[key] = pd.Series(row._asdict())
    if frozen:
        keys = list(verdicts[_KEY].itertuples(index=False, name=None))
        rows = [frozen[key] if key in frozen else verdicts.iloc[i] for i, key in enumerate(keys)]
        verdicts = pd.DataFrame(rows, columns=verdicts.columns).reset_index(drop=True)
    verdicts["looks"] = looks
    verdicts = _collapse_split(verdicts)
    verdicts["correction"] = str(settings.correction)
    verdicts["alpha"] = settings.alpha
    verdicts["tolerance"] = settings.tolerance
    verdicts["judged_at"] = pd.Timestamp(_dt.datetime.now(_dt.UTC).replace(tzinfo=None))
    verdicts = verdicts[list(VERDICT_COLUMNS)].reset_index(drop=True)
    _power_message(verdicts, settings, messages)
    return CheckResult(run, settings, verdicts, summarize(run.measurements), messages)


def _judge_look(run: RunData, measurements: pd.DataFrame, settings: CheckSettings, looks: int,
                messages: list[str]) -> pd.DataFrame:
    sides = _sides(measurements)
    comps = _comparisons(run, sides, settings, messages)
    barrier = _barrier_medians(sides)
    if not barrier:
        messages.append("no barrier measured in this run: barrier warnings cannot be given and the cautious "
                        "count equals the brave count")
    rows = []
    for c in comps:
        n_ref, n_alt = c.ref.launch_medians.size, c.alt.launch_medians.size
        ref_med = float(np.median(c.ref.launch_medians))
        alt_med = float(np.median(c.alt.launch_medians))
        e = _effect(c.ref, c.alt, settings)
        testable = e.n >= settings.min_launches
        note = c.note
        if not testable:
            note = (f"too few launches ({e.n} < {settings.min_launches})"
                    + (" measured on both sides" if e.test_used.paired else "") + ": not tested")
        elif e.test_used != settings.test:
            note = (f"sides measured in separate launches: tested unpaired ({e.test_used}), "
                    f"{n_ref} and {n_alt} launches")
        # Paired on fewer launches than a side has: some launches lack the other side.
        expected = max(n_ref, n_alt)
        partial = (not testable) or (e.test_used.paired and e.n < expected)
        if partial and testable:
            note = f"measured in {e.n} of {expected} launches"
        b = barrier.get(c.nprocs, math.nan)
        rows.append({
            "run_id": run.run_id, "nprocs": c.nprocs, "collective": c.collective, "variant": c.variant,
            "kind": c.kind, "guideline": c.guideline, "msg_bytes": c.msg_bytes, "ref_bytes": c.ref_bytes,
            "k": c.k, "lhs": c.lhs, "rhs": c.rhs,
            "default_median_s": ref_med, "variant_median_s": alt_med,
            "slowdown": e.slowdown, "rel_diff": e.rel_diff,
            "ci_low": e.ci.low if testable else math.nan, "ci_high": e.ci.high if testable else math.nan,
            "statistic": e.test.statistic if testable else math.nan,
            "p_value": e.test.p_value if testable else math.nan,
            "p_equivalence": e.equivalence.p_value if testable else math.nan,
            "barrier_warning": stats.barrier_warning(ref_med, ref_med / e.slowdown if e.slowdown > 0 else alt_med, b),
            "barrier_median_s": b,
            "n_launches": int(e.n), "n_launches_default": int(n_ref), "n_launches_variant": int(n_alt),
            "raw_default_median_s": float(np.median(c.ref.raw)), "raw_variant_median_s": float(np.median(c.alt.raw)),
            "raw_p_value": e.raw_p if testable else math.nan, "partial": bool(partial or not run.complete),
            "note": note, "test": str(e.test_used),
        })
    computed = ("p_adjusted", "significant", "violation", "correction", "alpha", "tolerance", "judged_at",
                "verdict", "p_equivalence_adjusted", "look", "looks")
    verdicts = pd.DataFrame(rows, columns=[c for c in VERDICT_COLUMNS if c not in computed])
    return decide_mod.decide(verdicts, settings.alpha, settings.tolerance, settings.correction, looks)


@dataclass(frozen=True)
class _Effect:
    n: int  # launches used (paired: measured on both sides; unpaired: the smaller side)
    slowdown: float
    rel_diff: float
    ci: stats.Interval
    test: stats.TestResult
    equivalence: stats.TestResult
    raw_p: float
    test_used: stats.Test


def _effect(ref: _Side, alt: _Side, settings: CheckSettings) -> _Effect:
    """Test, equivalence test, slowdown and CI of one comparison. Paired by launch when the test is
    paired and the sides share enough launches; sides that cannot share a launch (Intel MPI's
    algorithms, one per launch) are tested unpaired with the launch as the unit."""
    # The pooled view ignores launches on purpose: it is the naive analysis, shown for contrast.
    raw_p = stats.one_sided_test(ref.raw, alt.raw, stats.Test.MWU).p_value
    test = settings.test
    if test.paired:
        common = np.intersect1d(ref.launch_ids, alt.launch_ids)
        x = ref.launch_medians[np.searchsorted(ref.launch_ids, common)]
        y = alt.launch_medians[np.searchsorted(alt.launch_ids, common)]
        # A zero median (below the timer's resolution) has no log-ratio: that launch is dropped.
        positive = (x > 0) & (y > 0)
        x, y, common = x[positive], y[positive], common[positive]
        if common.size >= settings.min_launches or min(ref.launch_ids.size, alt.launch_ids.size) < \
                settings.min_launches:
            if common.size == 0:
                nan = stats.TestResult(math.nan, math.nan)
                return _Effect(0, math.nan, math.nan, stats.Interval(math.nan, math.nan), nan, nan, raw_p, test)
            sd = stats.paired_slowdown(x, y)
            ci = stats.paired_relative_difference_ci(x, y, settings.confidence, settings.n_resamples,
                                                     settings.seed)
            return _Effect(int(common.size), sd, 1.0 - 1.0 / sd, ci, stats.one_sided_test(x, y, test),
                           stats.equivalence_test(x, y, settings.tolerance, test), raw_p, test)
        test = test.unpaired
    x, y = ref.launch_medians, alt.launch_medians
    if test is stats.Test.WELCH_LOG:
        keep_x, keep_y = x > 0, y > 0
        x, y = x[keep_x], y[keep_y]
    rm, am = float(np.median(x)), float(np.median(y))
    ci = stats.relative_difference_ci(x, y, settings.confidence, settings.n_resamples, settings.seed)
    return _Effect(int(min(x.size, y.size)), stats.slowdown(rm, am), stats.relative_difference(rm, am), ci,
                   stats.one_sided_test(x, y, test), stats.equivalence_test(x, y, settings.tolerance, test),
                   raw_p, test)


def _collapse_split(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Seed 002: per large size report only the smallest k that violates (else the smallest k)."""
    split = verdicts[verdicts["kind"] == "split"]
    if split.empty:
        return verdicts
    keep = []
    for _, grp in split.groupby(["nprocs", "collective", "msg_bytes"], sort=False):
        ordered = grp.sort_values("k", kind="stable")
        hits = ordered[ordered["violation"]]
        keep.append((hits if len(hits) else ordered).index[0])
    return pd.concat([verdicts[verdicts["kind"] != "split"], verdicts.loc[keep]]).sort_index()


def _power_message(verdicts: pd.DataFrame, settings: CheckSettings, messages: list[str]) -> None:
    tested = verdicts[verdicts["kind"].isin(GUIDELINE_KINDS) & verdicts["p_value"].notna()]
    if tested.empty:
        messages.append("no comparison had enough launches to be tested: measure at least "
                        f"{settings.min_launches} launches (bench --launches)")
        return
    m = len(tested)
    n = int(tested["n_launches"].median())
    best = stats.min_attainable_p(n, n, settings.test)
    # Holm rejects nothing unless the smallest p is <= alpha/m; BH at best needs p <= alpha.
    needed = settings.alpha / m if settings.correction == stats.Correction.HOLM else settings.alpha
    if best > needed:
        messages.append(f"with {n} launches per side the smallest attainable p-value is {best:.2g}, above the "
                        f"{needed:.2g} that the first of {m} comparisons needs after the {settings.correction} "
                        f"correction: no violation can be significant; measure more launches")


def calibration_summary(verdicts: pd.DataFrame, alpha: float) -> dict[str, Any]:
    """The A/A result: how often the check flags a variant that is identical to the default."""
    aa = verdicts[(verdicts["kind"] == "aa") & verdicts["p_value"].notna()]
    n = int(len(aa))
    violations = int(aa["violation"].sum()) if n else 0
    raw_sig = int((aa["p_value"] <= alpha).sum()) if n else 0
    pooled_sig = int((aa["raw_p_value"] <= alpha).sum()) if n else 0
    p_cal = stats.calibration_p_value(raw_sig, n, alpha)
    return {
        "comparisons": n,
        "violations": violations,
        "uncorrected_significant": raw_sig,
        "uncorrected_rate": raw_sig / n if n else math.nan,
        "pooled_raw_significant": pooled_sig,
        "pooled_raw_rate": pooled_sig / n if n else math.nan,
        "binomial_p": p_cal,
        "alpha": alpha,
        # Fails when false positives are significantly (1%) more frequent than alpha.
        "passed": (n > 0 and violations == 0 and not (p_cal < 0.01)) if n else None,
    }


# ---------------------------------------------------------------------------------------------
# Storing and loading verdicts


def save_verdicts(db_path: str | Path, verdicts: pd.DataFrame) -> None:
    """Replace the verdicts of the run(s) in `verdicts` by these (derived data: recomputable)."""
    db_path = Path(db_path)
    with _open(db_path, read_only=False) as store:
        try:
            store.replace_derived("verdicts", verdicts)
        except duckdb.Error as exc:
            raise CheckError(f"cannot store verdicts in {db_path}: {exc}") from exc


def load_verdicts(db_path: str | Path, run_id: str | None = None) -> pd.DataFrame:
    """Stored verdicts of one run (default: the most recently judged run), columns VERDICT_COLUMNS.

    Empty DataFrame (same columns) when the database holds no verdicts yet.
    """
    db_path = Path(db_path)
    with _open(db_path, read_only=True) as store:
        return store.derived("verdicts", run_id, order="kind, collective, nprocs, msg_bytes, variant")


def check_db(db_path: str | Path, run_id: str | None = None, settings: CheckSettings | None = None,
             store: bool = True) -> CheckResult:
    """Load, judge and (by default) store: what `colltune check --no-measure` does."""
    result = judge(load_run(db_path, run_id), settings)
    if store:
        save_verdicts(db_path, result.verdicts)
    return result
