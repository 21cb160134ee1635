"""Repeatability of colltune bench: the same jobs measured in two independent runs.

For each (collective, size, variant) and run: the per-launch medians (PGMPI's unit), their
median over launches, and the spread of per-launch medians within a run. Reported: how far the
two runs' medians-of-medians differ, relative to their mean, next to the within-run spread.

    .venv/bin/python benchmarks/measurement/repeatability.py [--nprocs 4] [--launches 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from colltune.measure import runner
from colltune.measure.settings import BenchSettings
from colltune.store import Store

JOBS = {"collectives": ["allreduce", "bcast"], "sizes": [8, 1024, 65536],
        "variants": ["default", "default#aa", "allreduce_as_reduce_bcast", "bcast_as_scatter_allgather"]}


def measure(db: Path, nprocs: int, launches: int, seed: int, sync: str) -> pd.DataFrame:
    settings = BenchSettings(**JOBS, nprocs=[nprocs], launches=launches, seed=seed, sync=sync,
                                   barrier=False, stop={"max_reps": 300, "time_budget_s": 0.3})
    run_id = runner.run(settings, db, progress=False)
    with Store(db, read_only=True) as store:
        m = store.measurements(run_id, valid_only=True, include_warmup=False)
    return m.groupby(["collective", "msg_bytes", "variant", "launch_idx"]).runtime_s.median().reset_index()


def summarize(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    def per_run(d: pd.DataFrame) -> pd.DataFrame:
        g = d.groupby(["collective", "msg_bytes", "variant"]).runtime_s
        return pd.DataFrame({"median": g.median(), "spread": (g.quantile(0.75) - g.quantile(0.25)) / g.median()})

    ra, rb = per_run(a), per_run(b)
    out = pd.DataFrame({
        "run A median (us)": ra["median"] * 1e6, "run B median (us)": rb["median"] * 1e6,
        "A vs B": (ra["median"] - rb["median"]) / ((ra["median"] + rb["median"]) / 2),
        "IQR/median A": ra["spread"], "IQR/median B": rb["spread"],
    })
    return out.reset_index()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=4)
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--sync", default="dissemination")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0, load0 = time.monotonic(), os.getloadavg()[0]
        a = measure(Path(tmp) / "a.duckdb", args.nprocs, args.launches, 1, args.sync)
        b = measure(Path(tmp) / "b.duckdb", args.nprocs, args.launches, 2, args.sync)
        elapsed = time.monotonic() - t0
    table = summarize(a, b)
    pd.set_option("display.width", 200)
    print(table.to_markdown(index=False, floatfmt=".3f") if _has_tabulate() else table.to_string(index=False))
    diff = table["A vs B"].abs()
    # the A/A pair inside one run: the same call under two names, interleaved in every launch
    aa = []
    for run in (a, b):
        med = run.groupby(["collective", "msg_bytes", "variant"]).runtime_s.median().unstack("variant")
        aa.extend(((med["default"] - med["default#aa"]) / med["default"]).abs().tolist())
    print(f"\ndefault vs default#aa within a run (same call, interleaved): |rel. diff| median "
          f"{pd.Series(aa).median():.3f}, max {max(aa):.3f}")
    print(f"{len(table)} (collective, size, variant); |A vs B| median {diff.median():.3f}, "
          f"max {diff.max():.3f}; within-run IQR/median median "
          f"{pd.concat([table['IQR/median A'], table['IQR/median B']]).median():.3f}; "
          f"{elapsed:.0f} s for both runs; load average before/after {load0:.1f}/{os.getloadavg()[0]:.1f}")


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
