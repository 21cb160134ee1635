"""The same traces, four ways to build the final table: every traced call and no guard (the first
defaults), explored calls only, explored calls and the replication guard, and that with the bench
oracle's medians in the database (training data and the bench veto: the defaults with a head
start); each table's exploit-only version scored against the `colltune bench` oracle over the
calls of the loop's last batch (benchmarks/learn/README.md section 3). The first three use the
traces only (bench points a loop database holds are left out), the fourth adds the oracle's
where the loop database holds none.

    PYTHONPATH=src .venv/bin/python benchmarks/learn/ablation.py OUT APP MPI     # after real_apps.py OUT
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colltune.learn.loop import medians_score
import pandas as pd

from colltune.learn.models import BENCH_RUN, ModelSettings, bench_points, train, training_points
from colltune.learn.selection import SelectionSettings, build_table
from colltune.store import Store

INF = float("inf")
# name: (explored calls only, replication guard, bench veto tolerance, bench medians in the training data)
WAYS = {"every call, no guard": (False, 0, INF, False), "explored only": (True, 0, INF, False),
        "explored + replication guard": (True, 3, INF, False),
        "+ bench medians and veto (defaults, head start)": (True, 3, 0.05, True)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("app")
    ap.add_argument("mpi")
    args = ap.parse_args()
    with Store(args.out / f"{args.app}-oracle.duckdb", read_only=True) as s:
        medians = s.library_medians(args.mpi)
    print(f"| loop | {' | '.join(WAYS)} | default |")
    print("| --- |" + " --- |" * (len(WAYS) + 1))
    for db in sorted(args.out.glob(f"{args.app}-loop*.duckdb")):
        with Store(db, read_only=True) as s:
            last = s.learn_batches()["trace_run_id"].iloc[-1]
            calls = s.trace_calls(last)
            cells = []
            for explored, replicate, veto, bench in WAYS.values():
                pts, portfolios = training_points(s, args.mpi, explored)
                traced = pts[~pts["run"].astype(str).str.startswith(BENCH_RUN)]
                if not bench:
                    pts = traced
                elif len(traced) == len(pts):  # a loop run without a head start: add the oracle's medians
                    pts = pd.concat([traced, bench_points(medians)], ignore_index=True)
                table, _ = build_table(train(pts, portfolios, ModelSettings(explored_only=explored)), pts,
                                       SelectionSettings(replicate=replicate, veto_tolerance=veto))
                score = medians_score(table, calls, medians)
                cells.append(f"{100 * score.regret:.1f}%" if score.regret is not None else "-")
        default = f"{100 * (score.default_s / score.oracle_s - 1):.1f}%" if score.oracle_s else "-"
        print(f"| {db.stem} | {' | '.join(cells)} | {default} |")


if __name__ == "__main__":
    main()
