"""Summary of an irregular-preset check: verdicts per guideline kind and the guidelines between
collectives (docs/guidelines.md), from the check's results database.

    python benchmarks/irregular/summary.py RESULTS.duckdb > results.json
"""

from __future__ import annotations

import json
import sys

import duckdb

FORMS = ("GL4", "GL8", "GL12", "GL22", "F1", "F2", "F3")


def main(db: str) -> dict[str, object]:
    con = duckdb.connect(db, read_only=True)
    run_id = con.execute("select run_id from runs order by created desc limit 1").fetchone()[0]
    v = con.execute("select * from verdicts where run_id = ?", [run_id]).df()
    v = v[v["kind"] != "aa"]
    per_kind = {k: {str(x): int(n) for x, n in g["verdict"].value_counts().items()}
                for k, g in v.groupby("kind")}
    forms = v[(v["kind"] == "pattern") & v["guideline"].isin(FORMS)
              & ~v["variant"].str.contains("_as_")]
    rows = [{"guideline": r.guideline, "nprocs": int(r.nprocs), "lhs": r.lhs, "rhs": r.rhs,
             "slowdown": round(float(r.slowdown), 3), "verdict": r.verdict}
            for r in forms.sort_values(["guideline", "msg_bytes"]).itertuples()]
    members = v[(v["collective"].isin(["allgatherv", "alltoallv", "alltoallw", "barrier", "exscan",
                                       "gatherv", "scatterv"])) & (v["kind"].isin(["pattern", "library"]))]
    member_rows = [{"collective": r.collective, "variant": r.variant, "msg_bytes": int(r.msg_bytes),
                    "slowdown": round(float(r.slowdown), 3), "verdict": r.verdict}
                   for r in members.sort_values(["collective", "variant", "msg_bytes"]).itertuples()]
    return {"run_id": run_id, "verdicts_per_kind": per_kind, "between_collectives": rows,
            "members_of_the_new_rows": member_rows}


if __name__ == "__main__":
    json.dump(main(sys.argv[1]), sys.stdout, indent=1)
    print()
