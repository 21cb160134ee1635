"""libcolltune's instructions per intercepted call in the learning mode as the ranks grow, by
callgrind (README, "Per-call cost of the learning mode at 1024 ranks").

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 10 .venv/bin/python benchmarks/scale/percall.py \\
        --ranks 16,256,1024 --rounds 2,10 --out benchmarks/scale

run.py's callgrind method, alone and cheaper: app.c (an 8-byte Allreduce and a 1 KiB Bcast per
round, on MPI_COMM_WORLD and on 16-rank groups in turn), linked with libcolltune first, runs
under callgrind on `dragonfly-1024` with the SimGrid settings of README "4096 ranks" (flat
library algorithms and no detached sends: the MPICH family's P^2 set-up ring of every
communicator would otherwise be most of the simulator's work, ~50x slower under callgrind; they
change the library's code, not colltune's), in the learning mode (COLLTUNE_SELECT=-: every
call drawn among the library and the members the build's proof passed, COLLTUNE_SELECT_SEED 1)
and in pass-through, each with the two round counts of --rounds. libcolltune's instructions
(the self cost of every function of the ranks' copies of it) of the longer run minus the
shorter, over the calls the longer one adds (2 per round and rank), is the per-call figure: what
is done once per rank (MPI_Init, the proof, the first calls' set-up on each communicator) is
in both runs and cancels. Every run's rank-0 checksum must equal the plain run's. Rows to
percall.csv (rows of rank counts not run are kept).
"""

from __future__ import annotations

import argparse
import csv
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402  (benchmarks/scale/run.py: its app, launch and callgrind reading)

from colltune.mpi import build  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

SETTINGS = ["smpi/send-is-detached-thresh:0", "smpi/allreduce:rdb", "smpi/bcast:binomial_tree",
            "smpi/reduce:binomial"]
FIELDS = ("ranks", "mode", "rounds_short", "rounds_long", "instructions_short", "instructions_long",
          "per_call", "setup_per_rank", "checksum_equal", "callgrind_cpu_s", "smpi_cfg", "started_utc")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def checksum(line: str) -> str:
    return line.split("checksum ")[1].split()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="16,256,1024")
    ap.add_argument("--rounds", default="2,10", help="the two round counts, short,long")
    ap.add_argument("--modes", default="learning,pass-through")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--keep-callgrind", type=Path, metavar="DIR", help="copy the callgrind outputs to DIR")
    args = ap.parse_args()
    short, long_ = (int(x) for x in args.rounds.split(","))
    run.SMPI_CFG.extend(SETTINGS)
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    if not (art.dir / "proof.txt").exists():
        sys.exit(f"no proof in {art.dir}: run `colltune selftest --mpi smpi -n 4 --quick` first (the learning "
                 "mode draws among the members it passed)")
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="colltune-percall-") as tmp:
        work = Path(tmp)
        plain, linked = run.compile_app(lib, art, work)
        for p in (int(x) for x in args.ranks.split(",")):
            _, _, reference = run.launch(lib, art, plain, p, long_, {})
            for mode in args.modes.split(","):
                learn = mode == "learning"
                env = {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_SEED": "1"} if learn else {}
                _, _, line = run.launch(lib, art, linked, p, long_, env)
                started, cpu = time.strftime("%H:%M:%S", time.gmtime()), _cpu()
                ir = {n: run.instructions(lib, art, linked, p, n, work, learn=learn) for n in (short, long_)}
                row = {"ranks": p, "mode": mode, "rounds_short": short, "rounds_long": long_,
                       "instructions_short": ir[short], "instructions_long": ir[long_],
                       "per_call": round((ir[long_] - ir[short]) / (p * 2 * (long_ - short)), 1),
                       "setup_per_rank": round(ir[short] / p), "checksum_equal": checksum(line) == checksum(reference),
                       "callgrind_cpu_s": round(_cpu() - cpu, 1), "smpi_cfg": " ".join(SETTINGS),
                       "started_utc": started}
                print(row, flush=True)
                rows.append(row)
                if not row["checksum_equal"]:
                    sys.exit(f"{p} ranks, {mode}: checksum {line} differs from the plain run's {reference}")
                if args.keep_callgrind:
                    args.keep_callgrind.mkdir(parents=True, exist_ok=True)
                    for n in (short, long_):
                        src = work / f"callgrind-{p}-{n}-{int(learn)}.out"
                        (args.keep_callgrind / src.name).write_bytes(src.read_bytes())
                path = args.out / "percall.csv"
                kept = []
                if path.exists():
                    with path.open() as f:
                        kept = [r for r in csv.DictReader(f)
                                if (int(r["ranks"]), r["mode"]) not in {(int(x["ranks"]), x["mode"]) for x in rows}]
                with path.open("w", newline="") as f:
                    writer = csv.DictWriter(f, fieldnames=FIELDS)
                    writer.writeheader()
                    writer.writerows(sorted([*kept, *rows], key=lambda r: (int(r["ranks"]), str(r["mode"]))))


if __name__ == "__main__":
    main()
