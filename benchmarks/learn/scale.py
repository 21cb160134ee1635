"""Training time and table size for a database of 1 M traced calls (issue 12).

    PYTHONPATH=src .venv/bin/python benchmarks/learn/scale.py [--calls 1000000] [--runs 10]

Builds the database the way the loop does (simulated runs -> real trace files -> ingest), with
every call explored (uniform over each portfolio) so that every member of 6 collectives has
data at 24 message sizes and 4 communicator layouts, then times one `colltune learn table`
step: reading the training points, training the models (200 trees each), building the table,
and reports the table's size (text bytes, listed cells and weights). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from colltune import catalog
from colltune.learn import traces
from colltune.learn.models import ModelSettings, train, training_points
from colltune.learn.selection import SelectionSettings, build_table
from colltune.learn.simulate import GroundTruth, MemberTruth, MixEntry, Simulator
from colltune.learn.table import format_table
from colltune.store import Store

COLLS = ("allreduce", "bcast", "allgather", "reduce", "alltoall", "scatter")
SIZES = tuple(2**k for k in range(0, 24))


def truth(calls: int) -> GroundTruth:
    cat = catalog.load()
    members = {}
    for i, c in enumerate(COLLS):
        names = ["default"] + [v.name for v in cat.variants_of(c)]
        members[c] = [MemberTruth(n, 3.0 + j, 0.2 + 0.05 * ((i + j) % 3), 1.0 + 0.1 * j) for j, n in enumerate(names)]
    mix = [MixEntry(c, SIZES, 1.0, size) for c in COLLS for size in (64, 32, 16, 8)]
    return GroundTruth(name="scale", nprocs=64, nodes=4, calls=calls, seed=3, noise=0.05, skew=0.01, imbalance=0.05,
                       traced_ranks=2, budget=calls, cell_budget=calls, mix=mix, members=members)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1_000_000, help="traced calls in the database")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    sim = Simulator(truth(args.calls // args.runs))
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "scale.duckdb") as store:
        t0 = time.perf_counter()
        sim_s = 0.0
        for b in range(1, args.runs + 1):
            s0 = time.perf_counter()
            run = sim.run(None, b, Path(tmp) / f"b{b}")
            sim_s += time.perf_counter() - s0
            traces.ingest(run.trace_dir, store, command="scale", batch=b, mpi_name="simulated:scale")
        out["traced_calls"] = int(store.con.execute("SELECT count(*) FROM trace_calls").fetchone()[0])  # type: ignore[index]
        out["simulate_s"] = round(sim_s, 2)
        out["simulate_and_ingest_s"] = round(time.perf_counter() - t0, 2)
        t1 = time.perf_counter()
        points, portfolios = training_points(store, "simulated:scale")
        t2 = time.perf_counter()
        models = train(points, portfolios, ModelSettings())
        t3 = time.perf_counter()
        table, reports = build_table(models, points, SelectionSettings())
        t4 = time.perf_counter()
    text = format_table(table).encode()
    out.update({
        "training_points": len(points), "models": sum(len(m.trained_members()) for m in models.values()),
        "read_points_s": round(t2 - t1, 2), "train_s": round(t3 - t2, 2), "build_table_s": round(t4 - t3, 2),
        "table_bytes": len(text), "cells": sum(len(c.cells) for c in table.collectives.values()),
        "weights": sum(len(c.cells) * len(c.members) for c in table.collectives.values()),
        "exploit_cells": sum(1 for r in reports if r.mode == "exploit"),
    })
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
