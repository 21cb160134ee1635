"""Do the 4096-rank row's SimGrid settings change colltune's own work? (README, "4096 ranks")

libcolltune's instructions (callgrind, run.py's reading) in app.c's interposed runs, pass-through
and learning, with and without each setting given, same build, same rank count:

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 10 .venv/bin/python benchmarks/scale/settings_check.py \\
        --ranks 16,64 smpi/send-is-detached-thresh:0
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the benchmark's own module, next to this file)

from colltune.mpi import build  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("settings", nargs="+", metavar="NAME:VALUE")
    parser.add_argument("--ranks", default="16,64")
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args()
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    with tempfile.TemporaryDirectory(prefix="colltune-settings-") as tmp:
        work = Path(tmp)
        linked = run.compile_app(lib, art, work)[1]
        for ranks in (int(x) for x in args.ranks.split(",")):
            for learn in (False, True):
                counts = []
                for settings in ([], args.settings):
                    run.SMPI_CFG[:] = settings
                    counts.append(run.instructions(lib, art, linked, ranks, args.calls, work, learn))
                change = (counts[1] - counts[0]) / counts[0]
                print(f"{ranks} ranks, {'learning' if learn else 'pass-through'}: {counts[0]} without, "
                      f"{counts[1]} with ({change:+.3%})", flush=True)


if __name__ == "__main__":
    main()
