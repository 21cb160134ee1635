"""What the launch handoff saves (issue 36): the time between two launches' measuring phases.

    python benchmarks/reproducibility/handoff.py --pairs 5            # live, alternating
    python benchmarks/reproducibility/handoff.py --db /tmp/repro.duckdb  # stored checks
    python benchmarks/reproducibility/handoff.py --db /tmp/repro.duckdb --results results_quiet.json

Live: PAIRS x (one run of the quick preset's first 8 launches at 4 ranks with the handoff, one
without it: each launch started only after the one before has exited), alternating, so the
machine's load hits both alike. Stored: the checks of a batch (benchmarks/reproducibility/
reproducibility.py) as they ran. Per run: the wall time of the launches (first start to last
exit), the summed measuring phases (`measuring_from` to `measuring_until` of each launch, the
driver's barriers included) and the gaps between one launch's measuring and the next one's
(starting and ending MPI, the front end reading and storing a launch), within a look only (a
look's judging lies between looks). Medians over runs. Prints the machine's load before and
after.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from colltune.measure import runner
from colltune.measure.settings import BenchSettings


def _phases(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[int, float, float, float, float]]]:
    """run -> [(look, started, finished, measuring_from, measuring_until)] in launch order (epoch s)."""
    rows = con.execute(
        "SELECT l.run_id, coalesce(TRY_CAST(r.value AS INTEGER), 0), epoch(l.started), epoch(l.finished), "
        "       CAST(f.value AS DOUBLE), CAST(u.value AS DOUBLE) "
        "FROM launches l "
        "JOIN environment f ON f.run_id = l.run_id AND f.launch_idx = l.launch_idx AND f.key = 'measuring_from' "
        "JOIN environment u ON u.run_id = l.run_id AND u.launch_idx = l.launch_idx AND u.key = 'measuring_until' "
        "LEFT JOIN environment r ON r.run_id = l.run_id AND r.launch_idx = l.launch_idx AND r.key = 'round' "
        "WHERE l.status = 'ok' ORDER BY l.run_id, l.launch_idx").fetchall()
    out: dict[str, list[tuple[int, float, float, float, float]]] = {}
    for run_id, look, started, finished, m_from, m_until in rows:
        out.setdefault(str(run_id), []).append((int(look), started, finished, m_from, m_until))
    return out


def _summary(launches: list[tuple[int, float, float, float, float]]) -> tuple[float, float, float, int]:
    """(wall of the launches per look summed, measuring summed, gaps summed, gaps counted)."""
    wall = measuring = gaps = 0.0
    count = 0
    for look in sorted({x[0] for x in launches}):
        these = [x for x in launches if x[0] == look]
        wall += these[-1][2] - these[0][1]
        measuring += sum(x[4] - x[3] for x in these)
        for before, after in zip(these, these[1:]):
            gaps += after[3] - before[4]
            count += 1
    return wall, measuring, gaps, count


def _print(label: str, runs: list[tuple[float, float, float, int]]) -> None:
    med = [statistics.median(r[i] for r in runs) for i in range(3)]
    per_gap = statistics.median(r[2] / r[3] for r in runs if r[3])
    print(f"{label:>12} {len(runs):>4} {med[0]:>8.2f} {med[1]:>11.2f} {med[2]:>8.2f} {per_gap:>9.3f}")


# The comparisons that differed between this session's quiet checks: does the handoff move them?
PAIRS = (("allgather", 1024, "allgather_as_alltoall"), ("scatter", 8, "scatter_as_scatterv"),
         ("gather", 8, "gather_as_gatherv"), ("reduce_scatter", 1024, "reducescatter_as_reduce_scatterv"))


def _log_ratios(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int, str], list[float]]:
    """Per launch, log(median of the mock-up / median of the default) of PAIRS."""
    out: dict[tuple[str, int, str], list[float]] = {}
    for coll, size, mockup in PAIRS:
        rows = con.execute(
            "WITH m AS (SELECT run_id, launch_idx, variant, median(runtime_s) AS med FROM measurements "
            "  WHERE collective = ? AND msg_bytes = ? AND variant IN ('default', ?) AND NOT coalesce(warmup, FALSE) "
            "  AND coalesce(valid, TRUE) GROUP BY ALL) "
            "SELECT ln(b.med / a.med) FROM m a JOIN m b USING (run_id, launch_idx) WHERE a.variant = 'default' AND b.variant = ?",
            [coll, size, mockup, mockup]).fetchall()
        out[(coll, size, mockup)] = [float(r[0]) for r in rows]
    return out


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def live(pairs: int, launches: int) -> None:
    settings = BenchSettings.from_preset("quick", nprocs=[4], launches=launches,
                                         stop={"max_reps": 40, "time_budget_s": 0.1})
    results: dict[str, list[tuple[float, float, float, int]]] = {"handoff": [], "sequential": []}
    ratios: dict[str, dict[tuple[str, int, str], list[float]]] = {"handoff": {}, "sequential": {}}
    real_here = runner._here
    print("load before", _load())
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(pairs):
            for mode in ("handoff", "sequential") if i % 2 == 0 else ("sequential", "handoff"):
                runner._here = real_here if mode == "handoff" else (lambda nprocs, layout: False)  # type: ignore[assignment]
                db = Path(tmp) / f"{mode}-{i}.duckdb"
                runner.run(settings, db, progress=False)
                with duckdb.connect(str(db), read_only=True) as con:
                    for launches_of_run in _phases(con).values():
                        results[mode].append(_summary(launches_of_run))
                    for key, values in _log_ratios(con).items():
                        ratios[mode].setdefault(key, []).extend(values)
        runner._here = real_here  # type: ignore[assignment]
    print("load after ", _load())
    _header()
    for mode, runs in results.items():
        _print(mode, runs)
    print("mock-up / default per launch (geometric mean +- standard error of the log; launches):")
    for key in ratios["handoff"]:
        line = []
        for mode in ("handoff", "sequential"):
            values = ratios[mode].get(key, [])
            if len(values) > 1:
                mean, se = statistics.fmean(values), statistics.stdev(values) / len(values) ** 0.5
                line.append(f"{mode} {math.exp(mean):.3f} +- {se:.3f} ({len(values)})")
        print(f"  {key[0]} {key[1]} B {key[2]}: " + ", ".join(line))


def _header() -> None:
    print(f"{'':>12} {'runs':>4} {'wall s':>8} {'measuring s':>11} {'gaps s':>8} {'per gap s':>9}")


def stored(db: Path, results: Path | None) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        phases = _phases(con)
        marks = {run_id: (created, judged) for run_id, created, judged in con.execute(
            "SELECT r.run_id, epoch(r.created), epoch(max(v.judged_at)) FROM runs r "
            "JOIN verdicts v USING (run_id) WHERE r.status = 'complete' GROUP BY r.run_id, r.created").fetchall()}
    runs = [_summary(v) for v in phases.values()]
    if not runs:
        print(f"{db}: no launch records its measuring phase (checks before the handoff)")
        return
    _header()
    _print(db.stem, runs)
    # The whole check, in order: up to the run's row (Python's start, imports, settings, opening
    # the store), up to the first launch's measuring (its MPI start, the prelude), the looks'
    # measuring and the gaps inside them, the gaps between looks (storing, reading, judging a
    # look; the next round's first launch waits at its gate meanwhile), the last judgement, and
    # after it (storing the verdicts, the tables, the end).
    walls = [t["wall_s"] for t in json.loads(results.read_text())["timing"]] if results else []
    parts: dict[str, list[float]] = {}
    for i, (run_id, launches) in enumerate(sorted(phases.items(), key=lambda kv: kv[1][0][1])):
        if run_id not in marks:
            continue
        created, judged = marks[run_id]
        looks = sorted({x[0] for x in launches})
        firsts = [min(x[3] for x in launches if x[0] == k) for k in looks]
        lasts = [max(x[4] for x in launches if x[0] == k) for k in looks]
        within = sum(b[3] - a[4] for k in looks for a, b in zip([x for x in launches if x[0] == k],
                                                               [x for x in launches if x[0] == k][1:]))
        row = {"to the run's row": None, "to the first measuring": firsts[0] - created,
               "measuring": sum(x[4] - x[3] for x in launches), "gaps inside looks": within,
               "between looks": sum(f - l for l, f in zip(lasts, firsts[1:])), "last judgement": judged - lasts[-1]}
        if i < len(walls):
            row["to the run's row"] = walls[i] - (judged - created)  # and after the verdicts
            row["wall"] = walls[i]
        for key, value in row.items():
            if value is not None:
                parts.setdefault(key, []).append(value)
    if parts:
        print("median seconds per check:")
        for key, values in parts.items():
            label = "before the run's row + after the verdicts" if key == "to the run's row" else key
            print(f"  {label:>42} {statistics.median(values):6.2f}  ({min(values):.2f}-{max(values):.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=0, help="live: runs with and without the handoff, alternating")
    ap.add_argument("--launches", type=int, default=8, help="live: launches per run")
    ap.add_argument("--db", type=Path, action="append", default=[], help="stored checks (repeatable)")
    ap.add_argument("--results", type=Path, help="with one --db: its results_<tag>.json (the checks' wall times)")
    args = ap.parse_args()
    started = time.monotonic()
    if args.pairs:
        live(args.pairs, args.launches)
    for db in args.db:
        stored(db, args.results)
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
