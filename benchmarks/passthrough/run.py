#!/usr/bin/env python3
"""Pass-through overhead of libcolltune: 8-byte MPI_Allreduce on 2 ranks, with and without the
preload, in interleaved launches; plus the instruction count of the wrapper with callgrind.

    .venv/bin/python benchmarks/passthrough/run.py [--mpi openmpi] [--rounds 20]

Two estimates of the per-call cost of the pass-through path:
  across launches  each round runs one launch without and one with LD_PRELOAD (order alternating
                   between rounds); per launch the median per-call time of MPI_Allreduce blocks;
                   figure = median over rounds of (with - without). Honest but noisy: launches
                   differ by far more than nanoseconds on a shared machine.
  within a launch  every launch alternates blocks of MPI_Allreduce and PMPI_Allreduce calls; with
                   the preload the first is the wrapper and the second the library, so the median
                   over blocks of (MPI - PMPI) is the wrapper's cost, moments apart in the same
                   process; without the preload the same difference is an A/A control (~0).
Intervals are bootstrap 95% intervals of the median (scipy).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

from colltune.mpi import build, launch, runenv
from colltune.mpi import libraries as mpi

HERE = Path(__file__).resolve().parent


def launch_once(lib, exe: Path, env: dict[str, str], calls: int, blocks: int) -> list[tuple[float, float]]:
    """(MPI_Allreduce ns, PMPI_Allreduce ns) per call, for each block of one launch."""
    proc = launch.run(lib, 2, [str(exe), str(calls), str(blocks)], rank_env=env, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"launch failed:\n{proc.stderr[-2000:]}")
    return [(float(a), float(b)) for a, b in
            re.findall(r"mpi_ns ([\d.]+) pmpi_ns ([\d.]+)", proc.stdout)]


def ci(values: list[float]) -> tuple[float, float, float]:
    """Median and its bootstrap 95% interval."""
    res = stats.bootstrap((np.array(values),), np.median, confidence_level=0.95,
                          random_state=np.random.default_rng(1)).confidence_interval
    return statistics.median(values), res.low, res.high


QUERY = re.compile(r"^P?MPI_(Comm_size|Comm_rank|Comm_test_inter|Op_commutative|Type_\w+)$")


def callgrind(lib, art, exe: Path, calls: int, extra: dict[str, str],
              collect: tuple[str, ...] = ()) -> dict[str, float]:
    """Instructions per MPI_Allreduce call executed in libcolltune.so (the wrapper, its PLT hop,
    the decision path when a mode is on) and in the MPI queries the decision path makes, on rank 0
    under valgrind (rank 1 runs natively). Exclusive costs: the library's own Allreduce work (a
    timing-dependent polling loop) is not part of it. `collect`: count only inside these
    functions (callgrind's --toggle-collect), which leaves MPI_Init's one-off work out."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        env = runenv.rank_environment(lib, art, extra=extra)
        rank0 = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                 *(f"--toggle-collect={name}" for name in collect), str(exe), str(calls), "1"]
        argv = [str(lib.mpiexec), *launch.placement_flags(lib, 2),
                "-n", "1", *launch.rank_env_flags(lib, env), *rank0, ":",
                "-n", "1", *launch.rank_env_flags(lib, env), str(exe), str(calls), "1"]
        subprocess.run(argv, env=launch.launcher_env(lib), capture_output=True, text=True,
                       timeout=900, check=True, stdin=subprocess.DEVNULL)
        ann = subprocess.run(["callgrind_annotate", "--threshold=100", str(out)], capture_output=True,
                             text=True, check=True).stdout
    costs: dict[str, float] = {}  # one block: `calls` calls of MPI_Allreduce (the wrapper)
    for line in ann.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S+)(?:\s+\[(.*)\])?\s*$", line)
        if not m:
            continue
        ir, func, obj = int(m.group(1).replace(",", "")), m.group(2), m.group(3) or ""
        where = func.split(":")[-1]
        per_call = ir / calls
        if per_call < 0.5:  # MPI_Init's one-off work
            continue
        if "libcolltune" in obj:
            costs[where] = costs.get(where, 0) + per_call
        elif QUERY.match(where):
            costs[f"(MPI query) {where}"] = costs.get(f"(MPI query) {where}", 0) + per_call
    return costs


CALLGRIND_CASES = {
    "pass-through (nothing set)": {},
    "counting only (COLLTUNE_VERBOSE=1)": {"COLLTUNE_VERBOSE": "1"},
    "force allreduce=library": {"COLLTUNE_FORCE": "allreduce=library"},
    "profile, no rule for this size": {"COLLTUNE_PROFILE": "@profile"},
}
PROFILE = ("colltune-profile 1\ncollective allreduce\n  procs 2 2\n"
           "    bytes 16 64 allreduce_as_reduce_bcast\n    bytes 1024 4096 allreduce_as_reduce_bcast\n"
           "collective bcast\n  procs 2 2\n    bytes 8 8 bcast_as_allgatherv\nend\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--calls", type=int, default=2000, help="calls per block")
    ap.add_argument("--blocks", type=int, default=100, help="blocks per launch")
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    with tempfile.TemporaryDirectory() as tmp:
        exe = build.compile_program(lib, [HERE / "allreduce_loop.c"], Path(tmp) / "allreduce_loop")
        on_env = runenv.rank_environment(lib, art)
        across, within_on, within_off = [], [], []
        for r in range(args.rounds):
            order = [("off", {}), ("on", on_env)] if r % 2 == 0 else [("on", on_env), ("off", {})]
            med = {}
            for name, env in order:
                blocks = launch_once(lib, exe, env, args.calls, args.blocks)
                med[name] = statistics.median(m for m, _ in blocks)
                (within_on if name == "on" else within_off).extend(m - p for m, p in blocks)
            across.append(med["on"] - med["off"])
            print(f"round {r:2d}: MPI_Allreduce off {med['off']:8.1f} ns  on {med['on']:8.1f} ns  "
                  f"diff {across[-1]:+8.1f} ns", flush=True)
        print(f"\n{lib.name} ({lib.short_version}), 2 ranks, {args.rounds} rounds x 2 launches x "
              f"{args.blocks} blocks x {args.calls} calls")
        for label, values in (("across launches (with - without preload)", across),
                              ("within launches, preload: MPI - PMPI  (wrapper)", within_on),
                              ("within launches, no preload: MPI - PMPI (A/A)", within_off)):
            m, lo, hi = ci(values)
            print(f"{label:50s} median {m:+8.2f} ns/call  95% CI {lo:+.2f} .. {hi:+.2f}  (n={len(values)})")
        if shutil.which("valgrind") is None:
            print("valgrind not found: no instruction counts (apt-get install valgrind)")
            return
        profile = Path(tmp) / "bench.prf"
        profile.write_text(PROFILE)
        print("\ncallgrind: instructions per 8-byte MPI_Allreduce call (rank 0, exclusive costs)")
        for label, extra in CALLGRIND_CASES.items():
            extra = {k: (str(profile) if v == "@profile" else v) for k, v in extra.items()}
            costs = callgrind(lib, art, exe, 20_000, extra)
            total = sum(costs.values())
            print(f"  {label}: {total:.1f} instructions")
            for func, ir in sorted(costs.items(), key=lambda kv: -kv[1]):
                print(f"    {ir:8.2f}  {func}")


if __name__ == "__main__":
    main()
