"""How many communicators SMPI sets up for app.c, plain and under colltune (README, "colltune's
private duplicates").

SimGrid 3.32's MPICH family runs `Comm::init_smp` (a ring Allgather of P^2 messages) at the first
Allreduce, Bcast or Reduce on every communicator that spans nodes, so each communicator colltune
makes for itself costs the simulator as much as MPI_COMM_WORLD's own set-up. This counts, with
uprobes on libsimgrid (perf), the entries of `Comm::init_smp` and of `Request::sendrecv` (the
ring's messages, and the application's) in app.c's plain, pass-through and learning runs, with
the host CPU of each, for the build of COLLTUNE_CACHE:

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 10 .venv/bin/python benchmarks/scale/communicators.py --ranks 256

(root, or perf_event_paranoid <= 1 and write access to /sys/kernel/tracing: `perf probe` adds
two uprobes to libsimgrid and removes them at the end).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the benchmark's own module, next to this file)

from colltune.mpi import build, smpi  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

LIBSIMGRID = Path("/usr/lib/x86_64-linux-gnu/libsimgrid.so.3.32")
PROBES = {"ctdup": "simgrid::smpi::Comm::dup(", "ctismp": "simgrid::smpi::Comm::init_smp()",
          "ctsr": "simgrid::smpi::Request::sendrecv("}

# perf stat now and then reads 0 for every probe of an interposed run (all at once, the run itself
# unchanged): such a launch is repeated
ATTEMPTS = 4


def symbol_offsets() -> dict[str, int]:
    """The probes' offsets in this build of libsimgrid (another build has others)."""
    listing = subprocess.run(["nm", "-DC", str(LIBSIMGRID)], capture_output=True, text=True,
                             check=True).stdout
    found = {}
    for name, symbol in PROBES.items():
        line = next(l for l in listing.splitlines() if f" T {symbol}" in l)
        found[name] = int(line.split()[0], 16)
    return found


def counted_launch(lib: mpi.MpiLibrary, art: build.Artifacts, exe: Path, ranks: int, calls: int,
                   env: dict[str, str], out: Path) -> tuple[dict[str, int], float, str]:
    """(probe name -> hits, host CPU seconds, rank 0's line) of one smpirun under perf stat."""
    flags = [f"--cfg=smpi/privatize-libs:{art.libcolltune}"] if "colltune" in exe.name else []
    argv = smpi.smpirun_argv(lib.mpiexec, ranks, [str(exe), str(calls)],
                             {smpi.PLATFORM_VAR: run.PLATFORM}, flags)
    events = [a for name in PROBES for a in ("-e", f"probe_libsimgrid:{name}")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(["perf", "stat", "-x,", "-o", str(out), *events, "--", *argv],
                          capture_output=True, text=True, env={**os.environ, **env},
                          stdin=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"launch failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr[-2000:]}")
    hits = {}
    for line in out.read_text().splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("probe_libsimgrid:"):
            hits[fields[2].split(":")[1]] = int(fields[0])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = next(l for l in proc.stdout.splitlines() if l.startswith("scale-app"))
    return hits, cpu, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="256")
    parser.add_argument("--calls", type=int, default=4, help="rounds of app.c (run.py's table: 4)")
    parser.add_argument("--modes", default="plain,pass-through,learning")
    args = parser.parse_args()
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    offsets = symbol_offsets()
    for name, offset in offsets.items():
        subprocess.run(["perf", "probe", "-q", "-x", str(LIBSIMGRID), "-a", f"{name}={offset:#x}"], check=True)
    try:
        with tempfile.TemporaryDirectory(prefix="colltune-comms-") as tmp:
            work = Path(tmp)
            plain, linked = run.compile_app(lib, art, work)
            quiet = {"COLLTUNE_VERBOSE": "0", "COLLTUNE_PROOF": str(art.dir / "proof.txt")}
            learning = {**quiet, "COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_SEED": "1"}
            for ranks in (int(x) for x in args.ranks.split(",")):
                for mode, exe, env in (("plain", plain, quiet), ("pass-through", linked, quiet),
                                       ("learning", linked, learning)):
                    if mode not in args.modes.split(","):
                        continue
                    for _ in range(ATTEMPTS):
                        hits, cpu, line = counted_launch(lib, art, exe, ranks, args.calls, env, work / "stat")
                        if any(hits.values()):
                            break
                    print(f"{ranks} ranks {mode}: Comm::dup {hits['ctdup']}, Comm::init_smp {hits['ctismp']}, Request::sendrecv "
                          f"{hits['ctsr']}, {cpu:.1f} s CPU, load {open('/proc/loadavg').read().split()[0]}; "
                          f"{line}", flush=True)
    finally:
        for name in offsets:
            subprocess.run(["perf", "probe", "-q", "-d", f"probe_libsimgrid:{name}"], check=False)


if __name__ == "__main__":
    main()
