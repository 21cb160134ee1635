"""Where a quick check's wall time goes, from the timestamps its results database keeps (issue 36).

    python benchmarks/reproducibility/walltime.py /tmp/repro.duckdb benchmarks/reproducibility/results_quiet_before.json

Per complete run: its launches by look (the first R, each adaptive round: how many, their summed
duration from start to end as the runner saw them, the mean per launch), the gaps between the
looks (judging the look, choosing the round's jobs, the writes), the last judgement (last launch's
end to `judged_at`), and the rest of the wall time the results file records for the run (Python's
start and imports, settings, storing the verdicts, the tables): wall - (judged_at - created).
Pure reading: measures nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import duckdb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("results", type=Path, help="results_<tag>.json of reproducibility.py (its wall times)")
    args = ap.parse_args()
    walls = [t["wall_s"] for t in json.loads(args.results.read_text())["timing"]]
    with duckdb.connect(str(args.db), read_only=True) as con:
        runs = con.execute("SELECT r.run_id, epoch(max(v.judged_at)) - epoch(r.created) FROM runs r JOIN verdicts v "
                           "USING (run_id) WHERE r.status = 'complete' GROUP BY r.run_id, r.created "
                           "ORDER BY r.created").fetchall()
        launches = con.execute(
            "SELECT l.run_id, CAST(coalesce(e.value, '0') AS INTEGER) AS look, count(*) AS n, "
            "sum(epoch(l.finished) - epoch(l.started)) AS busy, epoch(min(l.started)) - epoch(r.created) AS first, "
            "epoch(max(l.finished)) - epoch(r.created) AS last FROM launches l JOIN runs r USING (run_id) "
            "LEFT JOIN environment e ON e.run_id = l.run_id AND e.launch_idx = l.launch_idx AND e.key = 'round' "
            "GROUP BY l.run_id, look, r.created ORDER BY l.run_id, look").fetchdf()
    rows = []
    for (run_id, judged), wall in zip(runs[-len(walls):], walls, strict=True):
        looks = launches[launches["run_id"] == run_id].sort_values("look")
        row = {"run": run_id[-6:], "wall": wall, "created->judged": judged, "rest": wall - judged,
               "before first launch": float(looks["first"].iloc[0])}
        for _, lk in looks.iterrows():
            row[f"look {lk.look}: launches"] = int(lk.n)
            row[f"look {lk.look}: s"] = float(lk.busy)
        gaps = (looks["first"].to_numpy()[1:] - looks["last"].to_numpy()[:-1]).tolist()
        for i, g in enumerate(gaps):
            row[f"judging look {i}"] = g
        row["last judgement"] = judged - float(looks["last"].iloc[-1])
        rows.append(row)
    for name in rows[0]:
        if name == "run":
            continue
        values = [r.get(name) for r in rows if r.get(name) is not None]
        print(f"  {name:26s} median {statistics.median(values):7.3f}  range {min(values):.3f}-{max(values):.3f}")


if __name__ == "__main__":
    main()
