"""Synthetic results databases with known truth, for the check/report tests.

The tables follow docs/architecture.md's schema. Runtimes are drawn like real ones: a
multiplicative launch effect shared by every variant of a launch (a launch is one mpiexec with
all variants interleaved), times lognormal per-repetition noise.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

SCHEMA = {
    "runs": "run_id VARCHAR, created TIMESTAMP, kind VARCHAR, command VARCHAR, mpi_name VARCHAR, "
            "mpi_version VARCHAR, abi_family VARCHAR, settings JSON, status VARCHAR",
    "launches": "run_id VARCHAR, launch_idx INTEGER, nprocs INTEGER, started TIMESTAMP, finished TIMESTAMP, "
                "status VARCHAR, message VARCHAR",
    "environment": "run_id VARCHAR, launch_idx INTEGER, key VARCHAR, value VARCHAR",
    "variants": "run_id VARCHAR, collective VARCHAR, variant VARCHAR, kind VARCHAR, guideline VARCHAR",
    "jobs": "run_id VARCHAR, launch_idx INTEGER, nprocs INTEGER, collective VARCHAR, variant VARCHAR, "
            "msg_bytes BIGINT, datatype VARCHAR, op VARCHAR, root INTEGER, nrep INTEGER, stop_reason VARCHAR, "
            "rse DOUBLE",
    "measurements": "run_id VARCHAR, launch_idx INTEGER, nprocs INTEGER, collective VARCHAR, variant VARCHAR, "
                    "msg_bytes BIGINT, rep INTEGER, warmup BOOLEAN, valid BOOLEAN, runtime_s DOUBLE, "
                    "makespan_s DOUBLE, sync VARCHAR",
}


@dataclass
class Truth:
    """Median runtime (s) of each (collective, variant) as a function of message bytes."""

    # (collective, variant) -> factor applied to the collective's base time at every size, or a
    # dict size -> factor for size-specific effects.
    factors: dict[tuple[str, str], float | dict[int, float]] = field(default_factory=dict)
    base: dict[str, float] = field(default_factory=dict)  # collective -> seconds at 0 bytes
    per_byte: float = 2e-10  # seconds per byte (a 5 GB/s link)

    def median(self, collective: str, variant: str, n: int) -> float:
        t = self.base.get(collective, 10e-6) + self.per_byte * n
        f = self.factors.get((collective, variant), 1.0)
        if isinstance(f, dict):
            f = f.get(n, 1.0)
        return t * f


def simulate(
    truth: Truth,
    plan: dict[str, list[str]],
    sizes: list[int],
    launches: int = 10,
    reps: int = 50,
    nprocs: int = 4,
    launch_sigma: float = 0.05,
    rep_sigma: float = 0.1,
    seed: int = 0,
    barrier_s: float | None = 2e-6,
    variant_launch_sigma: float = 0.0,
) -> pd.DataFrame:
    """Raw measurement rows for every collective -> variants of `plan`, every size, every launch.

    `variant_launch_sigma` adds a lognormal effect per (launch, variant, size) that is *not*
    shared: the per-launch ratio between variants then scatters as on a real oversubscribed node.
    """
    rng = np.random.default_rng(seed)
    # Columns collected as arrays and framed once: a DataFrame per (launch, variant, size) made
    # the error-rate benchmarks spend half their time in pandas.
    cols: dict[str, list[object]] = {"launch_idx": [], "collective": [], "variant": [], "msg_bytes": [],
                                     "runtime_s": []}
    for launch in range(launches):
        effect = float(np.exp(rng.normal(0.0, launch_sigma)))
        items = [(c, v, n) for c, vs in plan.items() for v in vs for n in sizes]
        if barrier_s is not None:
            items.append(("barrier", "default", 0))
        for coll, var, n in items:
            med = barrier_s if coll == "barrier" else truth.median(coll, var, n)
            own = float(np.exp(rng.normal(0.0, variant_launch_sigma))) if variant_launch_sigma else 1.0
            cols["runtime_s"].append(med * effect * own * np.exp(rng.normal(0.0, rep_sigma, reps)))
            for key, value in (("launch_idx", launch), ("collective", coll), ("variant", var), ("msg_bytes", n)):
                cols[key].append(value)
    count = len(cols["runtime_s"])
    return pd.DataFrame({
        **{key: np.repeat(np.asarray(cols[key], dtype=object if key in ("collective", "variant") else np.int64), reps)
           for key in ("launch_idx", "collective", "variant", "msg_bytes")},
        "nprocs": nprocs, "rep": np.tile(np.arange(reps), count), "warmup": False, "valid": True,
        "runtime_s": np.concatenate(cols["runtime_s"]) if count else np.empty(0), "makespan_s": np.nan,
        "sync": "barrier",
    })[["launch_idx", "nprocs", "collective", "variant", "msg_bytes", "rep", "warmup", "valid", "runtime_s",
        "makespan_s", "sync"]].astype({"collective": "str", "variant": "str"})


def write_db(path: Path, measurements: pd.DataFrame, run_id: str = "run-1", status: str = "complete",
             launch_status: dict[int, str] | None = None, tables: tuple[str, ...] = tuple(SCHEMA),
             created: dt.datetime | None = None) -> Path:
    """Write one run into a DuckDB file (tables created if missing)."""
    con = duckdb.connect(str(path))
    try:
        for name in tables:
            con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({SCHEMA[name]})")
        m = measurements.copy()
        m.insert(0, "run_id", run_id)
        now = created or dt.datetime(2026, 11, 22, 4, 0, 0)
        if "runs" in tables:
            con.execute("INSERT INTO runs VALUES (?, ?, 'check', 'colltune check', 'openmpi', '5.0.11', 'openmpi', ?, ?)",
                        [run_id, now, json.dumps({"preset": "synthetic"}), status])
        if "launches" in tables:
            for (li, p), _ in m.groupby(["launch_idx", "nprocs"]):
                st = (launch_status or {}).get(int(li), "ok")
                con.execute("INSERT INTO launches VALUES (?, ?, ?, ?, ?, ?, ?)",
                            [run_id, int(li), int(p), now, now, st, "" if st == "ok" else "killed by signal 9"])
        if "environment" in tables:
            for k, v in (("hostname", "testhost"), ("cpu", "synthetic CPU"), ("mpi_version", "Open MPI 5.0.11")):
                con.execute("INSERT INTO environment VALUES (?, 0, ?, ?)", [run_id, k, v])
        if "variants" in tables:
            for (coll, var), _ in m.groupby(["collective", "variant"]):
                kind = ("default" if var == "default" else "aa" if var == "default#aa"
                        else "library" if var.startswith("lib:") else "mockup")
                con.execute("INSERT INTO variants VALUES (?, ?, ?, ?, NULL)", [run_id, coll, var, kind])
        if "measurements" in tables:
            con.register("m", m)
            cols = [c.split()[0] for c in SCHEMA["measurements"].split(", ")]
            con.execute(f"INSERT INTO measurements SELECT {', '.join(cols)} FROM m")
            con.unregister("m")
    finally:
        con.close()
    return path
