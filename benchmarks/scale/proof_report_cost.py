"""Two more of colltune's own costs as the ranks grow (README, "The proof and the report as the
ranks grow"): the proof on SMPI made at a given number of simulated ranks, and `colltune report`
of a check's database.

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 10 .venv/bin/python benchmarks/scale/proof_report_cost.py \\
        --proof-ranks 3,8,16 --report-db 4=/tmp/c4.duckdb --report-db 1024=/tmp/c1024.duckdb \\
        --out benchmarks/scale

--proof-ranks: `proof.prove` (what `colltune selftest --mpi smpi -n N` runs after its matrix: the
mock-ups' launch and one launch per library member), timed, in host CPU seconds of its launches
and wall seconds; the proof is not written (the build's proof.txt stays). --report-db
RANKS=FILE: `colltune report` of the latest check in FILE (a fresh command: Python start-up
included), with the database's measurement rows and the page's bytes. Rows to
proof_report_cost.csv (rows of other sizes in it are kept).
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

from colltune.measure import proof
from colltune.mpi import libraries as mpi

COLLTUNE = str(Path(sys.executable).with_name("colltune"))
FIELDS = ("item", "ranks", "wall_s", "cpu_s", "rows", "bytes", "members", "load")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> str:
    return open("/proc/loadavg").read().split()[0]


def proof_row(lib: mpi.MpiLibrary, ranks: int) -> dict[str, object]:
    cpu, started = _children_cpu(), time.perf_counter()
    made = proof.prove(lib, (ranks,))
    return {"item": "proof", "ranks": ranks, "wall_s": round(time.perf_counter() - started, 1),
            "cpu_s": round(_children_cpu() - cpu, 1), "rows": "", "bytes": "",
            "members": len(made.members), "load": _load()}


def report_row(ranks: int, db: Path) -> dict[str, object]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        rows = int(con.sql("select count(*) from measurements").fetchall()[0][0])
    with tempfile.TemporaryDirectory(prefix="colltune-reportcost-") as out:
        cpu, started = _children_cpu(), time.perf_counter()
        proc = subprocess.run([COLLTUNE, "report", "--db", str(db), "--out", out], capture_output=True,
                              text=True, check=False)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            sys.exit(f"colltune report --db {db} failed:\n{proc.stdout[-1000:]}{proc.stderr[-2000:]}")
        size = (Path(out) / "report.html").stat().st_size
    return {"item": "report", "ranks": ranks, "wall_s": round(wall, 2),
            "cpu_s": round(_children_cpu() - cpu, 2), "rows": rows, "bytes": size, "members": "",
            "load": _load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proof-ranks", default="", help="comma-separated rank counts to prove at")
    parser.add_argument("--report-db", action="append", default=[], metavar="RANKS=FILE")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    rows = []
    if args.proof_ranks:
        lib = mpi.resolve("smpi")
        for ranks in (int(x) for x in args.proof_ranks.split(",")):
            rows.append(proof_row(lib, ranks))
            print(rows[-1], flush=True)
    for item in args.report_db:
        ranks, _, db = item.partition("=")
        rows.append(report_row(int(ranks), Path(db)))
        print(rows[-1], flush=True)
    path = args.out / "proof_report_cost.csv"
    done = {(str(r["item"]), str(r["ranks"])) for r in rows}
    kept = []
    if path.exists():
        with open(path, newline="") as fh:
            kept = [r for r in csv.DictReader(fh) if (r["item"], r["ranks"]) not in done]
    args.out.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(sorted([*kept, *rows], key=lambda r: (str(r["item"]), int(r["ranks"]))))


if __name__ == "__main__":
    main()
