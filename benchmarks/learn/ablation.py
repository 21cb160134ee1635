"""The same traces, three ways to build the final table: every traced call and no guard (the former
defaults), explored calls only, explored calls and the replication guard (the defaults); each
table's exploit-only version scored against the `colltune bench` oracle over the calls of the
loop's last batch (benchmarks/learn/README.md section 3).

    PYTHONPATH=src .venv/bin/python benchmarks/learn/ablation.py OUT APP MPI     # after real_apps.py OUT
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colltune.learn.loop import medians_score
from colltune.learn.models import ModelSettings, train, training_points
from colltune.learn.selection import SelectionSettings, build_table
from colltune.store import Store

WAYS = {"every call, no guard": (False, 0), "explored only": (True, 0), "explored + guard (defaults)": (True, 3)}


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
            for explored, replicate in WAYS.values():
                pts, portfolios = training_points(s, args.mpi, explored)
                table, _ = build_table(train(pts, portfolios, ModelSettings(explored_only=explored)), pts,
                                       SelectionSettings(replicate=replicate))
                score = medians_score(table, calls, medians)
                cells.append(f"{100 * score.regret:.1f}%" if score.regret is not None else "-")
        default = f"{100 * (score.default_s / score.oracle_s - 1):.1f}%" if score.oracle_s else "-"
        print(f"| {db.stem} | {' | '.join(cells)} | {default} |")


if __name__ == "__main__":
    main()
