"""Explored calls vs the calls the table (or the spent budget) decided, per member and point, next
to `colltune bench`'s medians of the same points: the evidence for training on explored calls only
(docs/learn.md "Models"; benchmarks/learn/README.md section 3).

    PYTHONPATH=src .venv/bin/python benchmarks/learn/phase_bias.py LOOP.duckdb ORACLE.duckdb MPI [--top 4]
"""

from __future__ import annotations

import argparse

import pandas as pd

from colltune.store import Store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("loop_db")
    ap.add_argument("oracle_db")
    ap.add_argument("mpi")
    ap.add_argument("--top", type=int, default=4, help="points with the most calls")
    args = ap.parse_args()
    with Store(args.loop_db, read_only=True) as s:
        calls = s.trace_calls()
    with Store(args.oracle_db, read_only=True) as s:
        bench = s.library_medians(args.mpi).groupby(["collective", "msg_bytes", "nprocs", "variant"])["median_s"].median()
    calls = calls[calls["mode"].isin(["explore", "exploit", "fixed"])]
    calls = calls.assign(phase=calls["mode"].where(calls["mode"] == "explore", "decided"))
    top = calls.groupby(["collective", "msg_bytes", "comm_size"]).size().nlargest(args.top).index
    rows = []
    for coll, nbytes, size in top:
        at = calls[(calls["collective"] == coll) & (calls["msg_bytes"] == nbytes) & (calls["comm_size"] == size)]
        for member, g in at.groupby("member"):
            med = g.groupby("phase")["runtime_s"].agg(["median", "size"])
            row = {"point": f"{coll} {nbytes} B x{size}", "member": member,
                   "bench us": 1e6 * float(bench.get((coll, nbytes, size, member), float("nan")))}
            for phase in ("explore", "decided"):
                row[f"{phase} us"] = 1e6 * float(med.loc[phase, "median"]) if phase in med.index else float("nan")
                row[f"{phase} n"] = int(med.loc[phase, "size"]) if phase in med.index else 0
            rows.append(row)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(pd.DataFrame(rows).round(2).to_string(index=False))


if __name__ == "__main__":
    main()
