"""Summary of a nonblocking-preset check: the verdicts of the guidelines between the forms of a
collective (docs/guidelines.md, "Forms": NB1-NB3) and the variants each job skipped, from the
check's results database.

    python benchmarks/nonblocking/summary.py RESULTS.duckdb > results.json
"""

from __future__ import annotations

import json
import sys

import duckdb

from colltune.verify.comparisons import FORM_PAIRS

GUIDELINES = tuple(f.guideline for f in FORM_PAIRS)


def main(db: str) -> dict[str, object]:
    con = duckdb.connect(db, read_only=True)
    run_id = con.execute("select run_id from runs order by created desc limit 1").fetchone()[0]
    v = con.execute("select * from verdicts where run_id = ?", [run_id]).df()
    v = v[(v["kind"] == "pattern") & v["guideline"].isin(GUIDELINES)]
    per_guideline = {g: {str(x): int(n) for x, n in part["verdict"].value_counts().items()}
                     for g, part in v.groupby("guideline")}
    rows = [{"guideline": r.guideline, "nprocs": int(r.nprocs), "msg_bytes": int(r.msg_bytes),
             "lhs": r.lhs, "rhs": r.rhs, "slowdown": round(float(r.slowdown), 3), "verdict": r.verdict}
            for r in v.sort_values(["guideline", "collective", "msg_bytes"]).itertuples()]
    return {"run_id": run_id, "verdicts_per_guideline": per_guideline, "verdicts": rows}


if __name__ == "__main__":
    json.dump(main(sys.argv[1]), sys.stdout, indent=1)
    print()
