#!/usr/bin/env python3
"""Median, mean, 90th percentile and maximum per (collective, nprocs, size, variant) of a results
database: how far the per-call medians `colltune advise` predicts from are from what every call
costs on average (descheduled repetitions included).

    .venv/bin/colltune advise --mpi /usr/bin/mpicc.openmpi --db loaded.duckdb --measure \\
        --from-profile <an advise-hpcc/profile-run directory of run.py>
    .venv/bin/python benchmarks/advise/dbstats.py loaded.duckdb > benchmarks/advise/loaded-db-stats.json
"""

from __future__ import annotations

import json
import sys

import duckdb


def main(db: str) -> int:
    con = duckdb.connect(db, read_only=True)
    rows = con.sql("""
        select collective, nprocs, msg_bytes, variant, count(*) as n,
               median(runtime_s) as median_s, avg(runtime_s) as mean_s,
               quantile_cont(runtime_s, 0.9) as p90_s, max(runtime_s) as max_s
        from measurements where valid and not warmup and collective <> 'barrier'
        group by all order by all""").df()
    json.dump(rows.to_dict(orient="records"), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
