"""Finding 1: for every (collective, size bin, nprocs) the application spends time in, the best
member of its portfolio (mock-ups and library algorithms) from this machine's results database.

Medians per (collective, nprocs, msg_bytes, variant) come from the `measurements` table (valid,
non-warm-up repetitions) of runs on the application's library family. A point of the database
matches an application point when its size is in the same log2 bin (nearest to the application's
mean size if several). Predicted saving per point = calls x (default - best), never more than the
application's own measured cost there (the waiting for late ranks is not the algorithm's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from colltune import catalog
from colltune.advise.findings import Finding
from colltune.advise.points import AppPoint
from colltune.store.database import Store
from colltune.tune import profile as prof
from colltune.tune.native_export import Segment

MIN_GAIN = 0.10   # same threshold as `colltune tune`: smaller differences are not acted on


@dataclass(frozen=True)
class Choice:
    point: AppPoint
    msg_bytes: int          # the database size used
    default_s: float
    best: str               # variant name (mock-up or lib:<coll>:<alg>)
    best_s: float

    @property
    def saving_s(self) -> float:
        return min(self.point.calls * (self.default_s - self.best_s), self.point.own_s)


def medians(db: Path, family: str, *, loop: bool = False) -> pd.DataFrame:
    """Median runtime per (collective, nprocs, msg_bytes, variant) on `family`'s runs: of the
    repetitions timed from synchronized starts (a call's own cost), or (`loop`) of those timed
    back to back (`--sync none`: what a call costs in a loop of dependent calls)."""
    if not db.exists():
        return pd.DataFrame(columns=["collective", "nprocs", "msg_bytes", "variant", "median_s"])
    with Store(db, read_only=True) as store:
        runs = store.runs()
        m = store.measurements(valid_only=True, include_warmup=False)
    keep = runs[runs["abi_family"].fillna("").str.lower().eq(family)
                | runs["mpi_name"].fillna("").str.lower().str.contains(family)]["run_id"]
    m = m[m["run_id"].isin(set(keep)) & (m["sync"].fillna("").eq("none") == loop)]
    if m.empty:
        return pd.DataFrame(columns=["collective", "nprocs", "msg_bytes", "variant", "median_s"])
    return (m.groupby(["collective", "nprocs", "msg_bytes", "variant"])["runtime_s"].median()
            .rename("median_s").reset_index())


def db_size_for(point: AppPoint, sizes: list[int]) -> int | None:
    """The database size in the point's log2 bin nearest its mean size."""
    same = [s for s in sizes if s > 0 and s.bit_length() - 1 == point.bin]
    return min(same, key=lambda s: abs(s - point.mean_bytes)) if same else None


def missing(points: list[AppPoint], table: pd.DataFrame) -> list[AppPoint]:
    """Application points the database has no default-and-alternative measurements for."""
    out = []
    for p in points:
        at = table[(table["collective"] == p.collective) & (table["nprocs"] == p.nprocs)]
        size = db_size_for(p, sorted(set(int(s) for s in at["msg_bytes"])))
        if p.bin < 0 or size is None or at[at["msg_bytes"] == size]["variant"].nunique() < 2:
            out.append(p)
    return [p for p in out if p.bin >= 0 and p.collective in catalog.load().collective_names()]


def choose(points: list[AppPoint], table: pd.DataFrame) -> list[Choice]:
    out = []
    for p in points:
        at = table[(table["collective"] == p.collective) & (table["nprocs"] == p.nprocs)]
        size = db_size_for(p, sorted(set(int(s) for s in at["msg_bytes"])))
        if size is None:
            continue
        here = at[at["msg_bytes"] == size].set_index("variant")["median_s"]
        if catalog.DEFAULT not in here.index:
            continue
        others = here.drop(index=[v for v in here.index
                                  if catalog.variant_kind(str(v)) in ("default", "aa", "tuned")])
        if others.empty:
            continue
        best = str(others.idxmin())
        default_s, best_s = float(here[catalog.DEFAULT]), float(others[best])
        if best_s <= default_s * (1 - MIN_GAIN):
            out.append(Choice(p, size, default_s, best, best_s))
    return out


def bin_range(point: AppPoint) -> tuple[int, int]:
    return 1 << point.bin, (1 << (point.bin + 1)) - 1


def profile_for(choices: list[Choice], provenance: dict[str, str]) -> prof.Profile:
    """A colltune profile with the mock-up choices, restricted to the application's bins."""
    sections = []
    for coll in catalog.load().collective_names():
        blocks = []
        mine = [c for c in choices if c.point.collective == coll and catalog.variant_kind(c.best) == "mockup"]
        for nprocs in sorted({c.point.nprocs for c in mine}):
            rules = sorted((prof.Rule(lo=bin_range(c.point)[0], hi=bin_range(c.point)[1], variant=c.best)
                            for c in mine if c.point.nprocs == nprocs), key=lambda r: r.lo)
            blocks.append(prof.Block(procs_lo=nprocs, procs_hi=nprocs, rules=tuple(rules)))
        if blocks:
            sections.append(prof.Section(collective=coll, blocks=tuple(blocks)))
    return prof.Profile(provenance=provenance, sections=tuple(sections))


def library_choices(choices: list[Choice]) -> dict[tuple[str, int], list[Segment]]:
    """The library-algorithm choices as native_export's segments (its writers do the rest)."""
    out: dict[tuple[str, int], list[Segment]] = {}
    for c in choices:
        if catalog.variant_kind(c.best) != "library":
            continue
        lo, hi = bin_range(c.point)
        out.setdefault((c.point.collective, c.point.nprocs), []).append(
            Segment(lo, hi, c.best.split(":", 2)[2]))
    return {k: sorted(v, key=lambda s: s.lo) for k, v in out.items()}


def calls_text(p: AppPoint) -> str:
    """The point's calls as the evidence quotes them: an estimate (a light path's sample) with
    `~` and its 95% interval, and so the saving (calls x the difference) with them."""
    if p.calls_interval is None:
        return f"{p.calls} calls"
    lo, hi = p.calls_interval
    return f"~{p.calls} calls (estimated from a sample of the calls, 95% {lo}-{hi}; the predicted saving with them)"


def findings(choices: list[Choice]) -> list[Finding]:
    out = []
    for c in choices:
        p = c.point
        lo, hi = bin_range(p)
        where = ", ".join(f"{s} x{'~' if s in p.sites_estimated else ''}{n}"
                          for s, n in sorted(p.sites.items(), key=lambda kv: -kv[1])[:3])
        kind = catalog.variant_kind(c.best)
        change = ({"colltune": f"colltune run --profile advise.prof -- mpiexec ... (rule {p.collective} "
                                f"{p.nprocs} ranks {lo}..{hi} bytes -> {c.best})"}
                  if kind == "mockup" else
                  {"native": f"{p.collective} {lo}..{hi} bytes at {p.nprocs} ranks -> library "
                             f"algorithm {c.best.split(':', 2)[2]} (see advise.env)"})
        out.append(Finding(
            "collectives",
            f"MPI_{p.collective.title()} at {p.nprocs} ranks, {lo}..{hi} bytes: {c.best} is "
            f"{c.default_s / c.best_s:.2f}x faster than the library's default",
            [f"{calls_text(p)}, {p.total_s * 1e3:.2f} ms (own cost {p.own_s * 1e3:.2f} ms, waiting "
             f"{p.wait_s * 1e3:.2f} ms) on the slowest rank; sites: {where}",
             f"database at {c.msg_bytes} bytes: default {c.default_s * 1e6:.1f} us, {c.best} "
             f"{c.best_s * 1e6:.1f} us (medians)"],
            change, c.saving_s,
            data={"collective": p.collective, "nprocs": p.nprocs, "bin": p.bin, "calls": p.calls,
                  **({"calls_interval": list(p.calls_interval)} if p.calls_interval else {}),
                  "msg_bytes": c.msg_bytes, "default_s": c.default_s, "best": c.best,
                  "best_s": c.best_s}))
    return out
