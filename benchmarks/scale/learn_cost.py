"""The learning loop's own cost after a run, as the ranks grow (README, "The learn model's cost").

For each rank count: app.c in the learning mode with every call exploring (seed 1) and traced, on
`dragonfly-1024`, then the two steps `colltune learn run` does after each batch, timed apart:
`colltune traces ingest` of the run's trace files and `colltune learn table` (training the models
on the database and writing the next selection table). Rows to learn_cost.csv (the rows of
rank counts not measured again are kept):

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 10 .venv/bin/python benchmarks/scale/learn_cost.py \\
        --ranks 16,64,256,1024 --calls 50 --out benchmarks/scale

(`colltune selftest --mpi smpi` first: the learning runs are served by the proven members.)

`--smpi-cfg NAME:VALUE` (repeatable) adds a SimGrid setting to the traced run, as run.py's does:
the 4096-rank row needs README "4096 ranks"'s four settings (without them SMPI's own set-up of the
world is hours of CPU there); they are recorded in the row's smpi_cfg column. They change which
library algorithms the simulator runs, not the trace's rows (those follow the calls), so ingest
and `learn table` see the same kind of input at every size.
"""

from __future__ import annotations

import argparse
import csv
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the benchmark's own module, next to this file)

from colltune.mpi import build  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

COLLTUNE = str(Path(sys.executable).with_name("colltune"))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one colltune command, which must succeed. The CPU seconds (the
    command's own, user + system) are what a loaded machine does not stretch: the wall seconds
    grow with the load (session 11 at load 17: 3-4x session 8's at load 0.8)."""
    started, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stdout[-1000:]}{proc.stderr[-2000:]}")
    return time.perf_counter() - started, _children_cpu() - cpu


def measure(lib: mpi.MpiLibrary, art: build.Artifacts, linked: Path, ranks: int, calls: int,
            work: Path) -> dict[str, object]:
    trace, db, table = work / f"trace-{ranks}", work / f"learn-{ranks}.duckdb", work / f"t-{ranks}.sel"
    trace.mkdir()
    cpu, _, _ = run.launch(lib, art, linked, ranks, calls,
                           {"COLLTUNE_VERBOSE": "0", "COLLTUNE_PROOF": str(art.dir / "proof.txt"),
                            "COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_SEED": "1",
                            "COLLTUNE_TRACE_DIR": str(trace)})
    ingest_s, ingest_cpu = timed([COLLTUNE, "traces", "ingest", str(trace), "--db", str(db)])
    # a table from one run: every member's timings count (the defaults want several runs)
    table_s, table_cpu = timed([COLLTUNE, "learn", "table", "--db", str(db), "--out", str(table),
                     "--min-timings", "5", "--min-cell-evidence", "2", "--replicate", "0"])
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        rows = int(con.sql("select count(*) from trace_calls").fetchall()[0][0])
    return {"ranks": ranks, "rounds": calls, "traced_cpu_s": round(cpu, 3),
            "trace_calls_rows": rows, "db_bytes": db.stat().st_size,
            "ingest_s": round(ingest_s, 3), "learn_table_s": round(table_s, 3),
            "ingest_cpu_s": round(ingest_cpu, 3), "learn_table_cpu_s": round(table_cpu, 3),
            "table_bytes": table.stat().st_size,
            "load": open("/proc/loadavg").read().split()[0], "smpi_cfg": " ".join(run.SMPI_CFG)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="16,64,256")
    parser.add_argument("--calls", type=int, default=50, help="rounds of allreduce + bcast per rank")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--smpi-cfg", action="append", default=[], metavar="NAME:VALUE",
                        help="a SimGrid setting for the traced runs (README, \"4096 ranks\")")
    args = parser.parse_args()
    run.SMPI_CFG.extend(args.smpi_cfg)
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    rows = []
    with tempfile.TemporaryDirectory(prefix="colltune-learncost-") as tmp:
        work = Path(tmp)
        linked = run.compile_app(lib, art, work)[1]
        for ranks in (int(x) for x in args.ranks.split(",")):
            rows.append(measure(lib, art, linked, ranks, args.calls, work))
            print(rows[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "learn_cost.csv"
    measured = {str(r["ranks"]) for r in rows}
    kept = []
    if path.exists():  # rows of other rank counts stay (the 1024 row was run on its own)
        with open(path, newline="") as fh:
            kept = [r for r in csv.DictReader(fh) if r["ranks"] not in measured]
    with open(path, "w", newline="") as fh:
        # rows of before session 11 have no smpi_cfg: none was set
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), restval="")
        writer.writeheader()
        writer.writerows(sorted([*kept, *rows], key=lambda r: int(r["ranks"])))


if __name__ == "__main__":
    main()
