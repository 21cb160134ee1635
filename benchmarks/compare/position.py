"""Slow launches by the position of a job in its launch: does what disturbs a launch's start or end
always hit the same point?

    python benchmarks/compare/position.py run1.duckdb [run2.duckdb ...]

Per database and run (library): for position k (the k-th job a launch measured, by its first
start time), in how many launches that job's per-launch median of the default was over twice
its median over all launches. Jobs used to run in the job file's order (allgather 8 B first,
scatter 32 KiB last); they now run in an order drawn from each launch's seed.
"""

from __future__ import annotations

import sys

import duckdb

QUERY = """
SELECT launch_idx, collective, msg_bytes, min(start_s) AS started, median(runtime_s) AS med
FROM measurements
WHERE run_id = ? AND variant = 'default' AND NOT warmup AND collective <> 'barrier'
GROUP BY ALL
"""


def main(dbs: list[str]) -> int:
    for db in dbs:
        with duckdb.connect(db, read_only=True) as con:
            for run_id, lib in con.execute("SELECT run_id, mpi_name FROM runs ORDER BY created").fetchall():
                d = con.execute(QUERY, [run_id]).df()
                d["pos"] = d.groupby("launch_idx")["started"].rank(method="first").astype(int)
                typical = d.groupby(["collective", "msg_bytes"])["med"].transform("median")
                d["slow"] = d["med"] > 2 * typical
                by = d.groupby("pos")["slow"].sum()
                first = d[d["pos"] == 1].groupby(["collective", "msg_bytes"]).size()
                print(f"{db} {lib}: launches {d['launch_idx'].nunique()}, slow launches by position: "
                      + " ".join(f"{p}:{int(n)}" for p, n in by.items())
                      + f"; distinct first jobs: {len(first)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
