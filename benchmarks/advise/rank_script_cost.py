"""What a rank script's shell pays for libcolltune's preload, with the application left out.

OpenFOAM's ranks run a bash script that sources OpenFOAM's bashrc (~20 forked subshells) and
then execs icoFoam. Until the twentieth round sequential_time.py's script received the library as
LD_PRELOAD and unset it before sourcing: too late, the shell itself had loaded libcolltune and,
through its DT_NEEDED, Open MPI's libmpi and its eight libraries, and every subshell it forks
carries them (a larger fork, their destructors at each exit). Each script below ends with
`exec /bin/true` instead of icoFoam, so only the shell's part is timed:

  plain      no preload anywhere
  unset      LD_PRELOAD given to the shell, unset before the bashrc (the old rank script)
  handed     RANK_PRELOAD given to the shell, exported as LD_PRELOAD for the exec alone (the new)

Rounds of one run of each in an order drawn per round; per script the median wall time and, against
plain, the mean paired difference with its 95% t interval. One process at a time, no MPI launch.

    python benchmarks/advise/rank_script_cost.py LIB [--rounds 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy import stats

BASHRC = "/usr/share/openfoam/etc/bashrc"
SCRIPTS = {
    "plain": f"#!/bin/bash\nsource {BASHRC} 2>/dev/null\nexec /bin/true\n",
    "unset": ("#!/bin/bash\npreload=${LD_PRELOAD-}; unset LD_PRELOAD\n"
              f"source {BASHRC} 2>/dev/null\n"
              '[ -n "$preload" ] && export LD_PRELOAD=$preload\nexec /bin/true\n'),
    "handed": (f"#!/bin/bash\nsource {BASHRC} 2>/dev/null\n"
               '[ -n "${RANK_PRELOAD-}" ] && export LD_PRELOAD=$RANK_PRELOAD\nunset RANK_PRELOAD\n'
               "exec /bin/true\n"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lib", type=Path, help="libcolltune.so built for Debian's Open MPI")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not Path(BASHRC).is_file():
        sys.exit(f"{BASHRC}: not found; install OpenFOAM first (bash benchmarks/advise/openfoam.sh OUT prepare 200)")
    if not args.lib.is_file():
        sys.exit(f"{args.lib}: no such library; build one (README: build a lib for Debian's Open MPI)")
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "RANK_PRELOAD")}
    envs = {"plain": base, "unset": {**base, "LD_PRELOAD": str(args.lib)},
            "handed": {**base, "RANK_PRELOAD": str(args.lib)}}
    times: dict[str, list[float]] = {name: [] for name in SCRIPTS}
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, text in SCRIPTS.items():
            paths[name] = Path(tmp) / f"{name}.sh"
            paths[name].write_text(text)
            paths[name].chmod(0o755)
        for _ in range(args.rounds):
            for name in rng.sample(list(SCRIPTS), len(SCRIPTS)):
                t0 = time.perf_counter()
                subprocess.run([str(paths[name])], env=envs[name], check=True)
                times[name].append(time.perf_counter() - t0)
    print(f"{args.rounds} rounds, library {args.lib}")
    print(f"{'script':8} {'median ms':>10} {'minus plain, mean ms (95%)':>30}")
    for name, walls in times.items():
        line = f"{name:8} {statistics.median(walls) * 1e3:10.2f}"
        if name != "plain":
            d = [(a - b) * 1e3 for a, b in zip(walls, times["plain"])]
            m, se = statistics.mean(d), statistics.stdev(d) / len(d) ** 0.5
            h = stats.t.ppf(0.975, len(d) - 1) * se
            line += f" {m:12.2f} ({m - h:.2f} to {m + h:.2f})"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
