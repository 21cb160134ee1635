"""An unmodified MPI program under `colltune run --learn -` on simulated ranks gives the plain
SMPI run's results (benchmarks/scale/README.md, "Every call exploring").

benchmarks/scale/app.c, built by plain smpicc, runs on the dragonfly-1024 preset twice per rank
count and seed: plain (`smpirun ... ./app`) and under `colltune run --mpi smpi --learn - --verbose
-- smpirun ... ./app` with COLLTUNE_SELECT_SEED=<seed> (every call draws uniformly among the
library and the members the proof passed). Both lines name the MPICH family, which the proof was
made with (docs/smpi.md), and no measured computation, so that the simulated times compare too.
The checksum rank 0 prints covers every result of every rank; the script stops at the first
difference. Rank 0's calls per member (the runtime's --verbose table) show what served.

    .venv/bin/python benchmarks/scale/learn.py --ranks 16,256,1024 --seeds 1,2,3 --out benchmarks/scale
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from colltune.mpi import build, smpi
from colltune.mpi import libraries as mpi

HERE = Path(__file__).resolve().parent
PLATFORM = "dragonfly-1024"
COLUMNS = ("ranks", "seed", "checksum_equal", "simulated_plain_s", "simulated_learn_s",
           "wall_plain_s", "wall_learn_s", "rank0_calls_library", "rank0_calls_members", "members",
           "checksum_plain", "checksum_learn", "cpu_plain_s", "cpu_learn_s")


def user_line(lib: mpi.MpiLibrary, app: Path, p: int, calls: int) -> list[str]:
    plat = smpi.platform(PLATFORM, p)
    return [str(lib.mpiexec), "-np", str(p), "-platform", str(plat.xml), "-hostfile", str(plat.hostfile(p)),
            f"--cfg=smpi/coll-selector:{smpi.DEFAULT_SELECTOR}", "--cfg=smpi/simulate-computation:no",
            "--log=root.thres:warning", str(app), str(calls)]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """The launch, its wall seconds and its host CPU seconds (wall counts the load and any pause; CPU
    does not)."""
    started, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        sys.exit(f"launch failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr[-3000:]}")
    return proc, time.perf_counter() - started, _children_cpu() - cpu


def checksum(line: str) -> str:
    return line.split(" checksum ")[1].split()[0]


def app_line(proc: subprocess.CompletedProcess[str]) -> str:
    return next(l for l in proc.stdout.splitlines() if l.startswith("scale-app"))


def served(stderr: str) -> Counter[str]:
    """Rank 0's calls per member (`colltune:   <collective> <mode> <member> <outcome> <n>`)."""
    counts: Counter[str] = Counter()
    for line in stderr.splitlines():
        m = re.match(r"colltune:\s+(\w+)\s+(\w+)\s+(\S+)\s+(\S+)\s+(\d+)$", line)
        if m and m[4] in ("applied", "library"):
            counts[m[3]] += int(m[5])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="16,256,1024")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--calls", type=int, default=50, help="rounds of allreduce + bcast per rank")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    lib = mpi.resolve("smpi")
    build.ensure_built(lib)
    colltune = str(Path(sys.executable).with_name("colltune"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="colltune-learn-") as tmp:
        app = build.compile_program(lib, [HERE / "app.c"], Path(tmp) / "app")
        for p in (int(x) for x in args.ranks.split(",")):
            line = user_line(lib, app, p, args.calls)
            plain, wall_plain, cpu_plain = timed(line, dict(os.environ))
            for seed in (int(s) for s in args.seeds.split(",")):
                learn, wall_learn, cpu_learn = timed([colltune, "run", "--mpi", "smpi", "--learn", "-", "--verbose", "--", *line],
                                          {**os.environ, "COLLTUNE_SELECT_SEED": str(seed)})
                a, b = app_line(plain), app_line(learn)
                equal = a.split(" simulated_s")[0] == b.split(" simulated_s")[0]
                counts = served(learn.stderr)
                members = {k: v for k, v in counts.items() if k != "library"}
                rows.append({"ranks": p, "seed": seed, "checksum_equal": equal,
                             "simulated_plain_s": float(a.split()[-1]), "simulated_learn_s": float(b.split()[-1]),
                             "wall_plain_s": round(wall_plain, 1), "wall_learn_s": round(wall_learn, 1),
                             "rank0_calls_library": counts.get("library", 0),
                             "rank0_calls_members": sum(members.values()),
                             "members": ";".join(f"{k}={v}" for k, v in sorted(members.items())),
                             "checksum_plain": checksum(a), "checksum_learn": checksum(b),
                             "cpu_plain_s": round(cpu_plain, 1), "cpu_learn_s": round(cpu_learn, 1)})
                print(rows[-1], flush=True)
                if not equal:
                    sys.exit(f"results differ at {p} ranks, seed {seed}:\n {a}\n {b}\n{learn.stderr[-3000:]}")
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "learn_results.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    print(f"load: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
