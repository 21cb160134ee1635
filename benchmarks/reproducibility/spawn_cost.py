"""What starting a launch costs the front end, by how the launcher learns to die with colltune
(issue 36, session 8).

    python benchmarks/reproducibility/spawn_cost.py --starts 60

A quick check starts each launch from a process that holds pandas, DuckDB, numpy and the verdict
code. With a Python function to run between fork and exec (launch._die_with_parent: prctl
PR_SET_PDEATHSIG), subprocess must fork that whole process; with the parent-death signal set by
setpriv instead (launch.die_with_parent_argv) it may vfork. Times subprocess.Popen's return
(the child has exec'd) for `true`, alternating: the preexec function, the setpriv prefix
(`setpriv ... -- true`, one exec more) and neither, in milliseconds, and until `true` has exited
(setpriv's own exec included). Print `cat /proc/loadavg`
with the figures.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import time

import duckdb  # noqa: F401  # the front end's memory at a launch
import numpy  # noqa: F401
import pandas  # noqa: F401

from colltune.mpi import launch
from colltune.verify import check  # noqa: F401


def started_ms(argv: list[str], preexec: object) -> tuple[float, float]:
    """Milliseconds until Popen returned and until the program had exited."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True, start_new_session=True, preexec_fn=preexec)  # type: ignore[arg-type]
    took = time.perf_counter() - t0
    proc.communicate()
    return took * 1e3, (time.perf_counter() - t0) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=60, help="starts of each kind")
    args = ap.parse_args()
    guard = launch.die_with_parent_argv()
    kinds = {"preexec_fn (fork)": ([], launch._die_with_parent()), "setpriv (vfork)": (guard, None),
             "neither (vfork)": ([], None)}
    if not guard:
        raise SystemExit("setpriv not found: nothing to compare")
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    for _ in range(args.starts):
        for kind, (prefix, preexec) in kinds.items():
            times[kind].append(started_ms(prefix + ["true"], preexec))
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"front end max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
          f"load {' '.join(load)}, {args.starts} starts each")
    for kind, pairs in times.items():
        for name, ms in (("Popen returned", sorted(p[0] for p in pairs)), ("exited", sorted(p[1] for p in pairs))):
            print(f"{kind:18s} {name:14s} median {statistics.median(ms):6.2f} ms   p90 {ms[int(0.9 * len(ms))]:6.2f} ms")


if __name__ == "__main__":
    main()
