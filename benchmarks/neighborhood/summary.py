"""Summary of a neighborhood-preset check: the verdicts of the neighborhood collectives'
guidelines (docs/guidelines.md, "Neighborhood collectives": NH1-NH7; NB1 of their nonblocking
form), the variants each job skipped, and a figure of every verdict's slowdown (ref / alt).

    python benchmarks/neighborhood/summary.py RESULTS.duckdb [--figure slowdowns.png] > results.json
"""

from __future__ import annotations

import argparse
import json
import sys

import duckdb
import pandas as pd

from colltune.measure.settings import NEIGHBORHOOD


def verdicts(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    v = con.execute("select * from verdicts where run_id = ?", [run_id]).df()
    keep = v["guideline"].str.startswith("NH") | (v["guideline"].isin(["NB1", "A/A", "library"])
                                                   & v["collective"].isin(NEIGHBORHOOD))
    return v[keep].sort_values(["guideline", "collective", "variant", "msg_bytes"])


def figure(v: pd.DataFrame, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"violation": "tab:red", "no violation": "tab:green", "undecided": "tab:gray"}
    v = v[v["guideline"] != "A/A"].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(11, 0.28 * len(v) + 1.2))
    labels = [f"{r.guideline} {r.collective.removeprefix('neighbor_')} {r.variant} {int(r.msg_bytes)} B"
              for r in v.itertuples()]
    ax.barh(range(len(v)), v["slowdown"], color=[colors.get(x, "tab:blue") for x in v["verdict"]])
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(v)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("slowdown = ref / alt (median of per-launch medians; > 1: the guideline's ref is slower)")
    ax.set_title("neighborhood preset: red violation, green no violation, gray undecided")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(db: str, fig: str | None) -> dict[str, object]:
    con = duckdb.connect(db, read_only=True)
    run_id = con.execute("select run_id from runs order by created desc limit 1").fetchone()[0]
    v = verdicts(con, run_id)
    per_guideline = {g: {str(x): int(n) for x, n in part["verdict"].value_counts().items()}
                     for g, part in v.groupby("guideline")}
    rows = [{"guideline": r.guideline, "collective": r.collective, "variant": r.variant,
             "nprocs": int(r.nprocs), "msg_bytes": int(r.msg_bytes), "lhs": r.lhs, "rhs": r.rhs,
             "slowdown": round(float(r.slowdown), 3), "verdict": r.verdict} for r in v.itertuples()]
    if fig:
        figure(v, fig)
    return {"run_id": run_id, "verdicts_per_guideline": per_guideline, "verdicts": rows}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--figure")
    a = ap.parse_args()
    json.dump(main(a.db, a.figure), sys.stdout, indent=1)
    print()
