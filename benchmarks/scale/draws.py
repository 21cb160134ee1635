"""Which member served the calls of percall.py's window, by rank count (README, "Why 4096 ranks
count fewer instructions per call").

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 19 .venv/bin/python benchmarks/scale/draws.py \\
        --windows 16:2,10 256:2,10 1024:2,10 4096:2,4 16:2,4 256:2,4 1024:2,4

percall.py's per-call figure is a mix: each call runs the member its draw picked (the library,
or a colltune member and its own work), and the draws are rank-consistent, so every rank of one
communicator runs the member drawn for that communicator's call. This runs app.c natively (no
valgrind: seconds, even at 4096 ranks) in the learning mode as percall.py's window run does
(COLLTUNE_SELECT=-, seed 1, percall.py's SimGrid settings), traced (the draws do not depend on
tracing: learn.c draws from the seed, the communicator's id and its call counter alone), ingests
the trace and prints, for the window's rounds (SHORT..LONG-1), the share of the window's calls
(a communicator's call counts once per rank of it) each (communicator kind, collective, member)
served, and how many distinct draws decided them. Runs nothing under callgrind; writes
draws.csv (rows of other windows kept), and per traced run its trace's bytes and trace_calls rows
to draws_runs.csv (a 4-round run is run.py's traced run: the cost table's trace rows).
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import percall  # noqa: E402  (its SimGrid settings)
import run  # noqa: E402  (app.c's build and launch)

from colltune.mpi import build  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

FIELDS = ("ranks", "rounds_short", "rounds_long", "comm", "collective", "member", "calls", "share", "draws")
RUN_FIELDS = ("ranks", "rounds", "trace_bytes", "trace_rows", "checksum", "smpi_cfg", "native_code")


def window_calls(rows: list[tuple[int, int, int, str, str]], short: int, long_: int
                 ) -> list[tuple[str, str, str, int, int]]:
    """(comm kind, collective, member, rank-calls, comm_id) of each communicator call in rounds
    short..long-1. rows: (comm_id, call_index, comm_size, collective, member) of trace_calls.
    app.c's round i calls Allreduce then Bcast on the world (i even) or on the rank's 16-rank
    group (i odd); a communicator's calls in call_index order are its rounds' pairs, then (the
    world) the final Reduce."""
    by_comm: dict[int, list[tuple[int, int, str, str]]] = defaultdict(list)
    for comm_id, index, size, coll, member in rows:
        by_comm[comm_id].append((index, size, coll, member))
    world = max(by_comm, key=lambda c: (max(s for _, s, _, _ in by_comm[c]), len(by_comm[c])))
    out = []
    for comm_id, calls in by_comm.items():
        calls.sort()
        first_round = 0 if comm_id == world else 1
        for k, (_, size, coll, member) in enumerate(calls):
            if coll not in ("allreduce", "bcast"):
                continue
            r = first_round + 2 * (k // 2)
            if short <= r < long_:
                out.append(("world" if comm_id == world else "group", coll, member, size, comm_id))
    return out


def traced_rows(lib: mpi.MpiLibrary, art: build.Artifacts, linked: Path, p: int, rounds: int, work: Path
                ) -> tuple[list[tuple[int, int, int, str, str]], dict[str, object]]:
    """trace_calls' (comm_id, call_index, comm_size, collective, member) of one traced learning
    run, and the run's draws_runs.csv row."""
    trace = work / f"trace-{p}-{rounds}"
    trace.mkdir(parents=True)
    _, _, line = run.launch(lib, art, linked, p, rounds, {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_SEED": "1",
                                                          "COLLTUNE_TRACE_DIR": str(trace), "COLLTUNE_VERBOSE": "0",
                                                          "COLLTUNE_PROOF": str(art.dir / "proof.txt")})
    db = work / f"traces-{p}-{rounds}.duckdb"
    subprocess.run([str(Path(sys.executable).with_name("colltune")), "traces", "ingest", str(trace), "--db",
                    str(db)], check=True, capture_output=True, text=True)
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        rows = [(int(a), int(b), int(c), str(d), str(e)) for a, b, c, d, e in con.sql(
            "select comm_id, call_index, comm_size, collective, coalesce(member, 'library') "
            "from trace_calls").fetchall()]
    info = {"ranks": p, "rounds": rounds, "trace_bytes": run.dir_bytes(trace), "trace_rows": len(rows),
            "checksum": percall.checksum(line), "smpi_cfg": " ".join(run.SMPI_CFG),
            "native_code": percall.native_code()}
    print(info, flush=True)
    return rows, info


def write_kept(path: Path, fields: tuple[str, ...], rows: list[dict[str, object]], key: tuple[str, ...]) -> None:
    """rows to path, with the rows of other keys the file already has."""
    done = {tuple(str(r[k]) for k in key) for r in rows}
    kept = []
    if path.exists():
        with path.open() as f:
            kept = [r for r in csv.DictReader(f) if tuple(r[k] for k in key) not in done]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(sorted([*kept, *rows], key=lambda r: tuple(
            int(str(r[k])) if str(r[k]).isdigit() else str(r[k]) for k in fields[:6])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--windows", nargs="+", required=True, metavar="P:SHORT,LONG")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    run.SMPI_CFG.extend(percall.SETTINGS)
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    if not (art.dir / "proof.txt").exists():
        sys.exit(f"no proof in {art.dir}: run `colltune selftest --mpi smpi -n 4 --quick` first")
    out_rows: list[dict[str, object]] = []
    run_rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="colltune-draws-") as tmp:
        work = Path(tmp)
        _, linked = run.compile_app(lib, art, work)
        traces: dict[tuple[int, int], list[tuple[int, int, int, str, str]]] = {}
        for spec in args.windows:
            p_text, rounds = spec.split(":")
            p, (short, long_) = int(p_text), (int(x) for x in rounds.split(","))
            if (p, long_) not in traces:
                traces[p, long_], info = traced_rows(lib, art, linked, p, long_, work)
                run_rows.append(info)
            calls = window_calls(traces[p, long_], short, long_)
            total = sum(c[3] for c in calls)
            if total != p * 2 * (long_ - short):
                sys.exit(f"{p} ranks, rounds {short}..{long_ - 1}: {total} calls in the trace, "
                         f"{p * 2 * (long_ - short)} expected")
            groups: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
            for kind, coll, member, size, _ in calls:
                groups[kind, coll, member][0] += size
                groups[kind, coll, member][1] += 1
            for (kind, coll, member), (n, draws) in sorted(groups.items()):
                row = {"ranks": p, "rounds_short": short, "rounds_long": long_, "comm": kind, "collective": coll,
                       "member": member, "calls": n, "share": round(n / total, 4), "draws": draws}
                print(row, flush=True)
                out_rows.append(row)
    write_kept(args.out / "draws.csv", FIELDS, out_rows, ("ranks", "rounds_short", "rounds_long"))
    write_kept(args.out / "draws_runs.csv", RUN_FIELDS, run_rows, ("ranks", "rounds"))

if __name__ == "__main__":
    main()
