#!/usr/bin/env python3
"""What `colltune run` adds to a launch: `colltune run -- mpiexec -n 2 ./hello` against the same
interposer given to mpiexec directly (`mpiexec -x LD_PRELOAD=... -n 2 ./hello`), and the front
end alone (`colltune run --dry-run`, no launch).

    .venv/bin/python benchmarks/frontend_start/run.py [--mpi openmpi] [--runs 20] [--old-src DIR]

Timed with hyperfine (Debian package; installed with apt-get when running as root), which runs
the commands in turn after warm-up runs and reports the median per command; without hyperfine a
plain loop of alternating launches does the same. --old-src times a second colltune source tree
too (e.g. `git archive <commit> src native pyproject.toml | tar -x -C /tmp/old`, then --old-src /tmp/old/src).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from colltune.mpi import build, launch
from colltune.mpi import libraries as mpi

HERE = Path(__file__).resolve().parent


def ensure_hyperfine() -> str | None:
    if path := shutil.which("hyperfine"):
        return path
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "hyperfine"], check=False,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return shutil.which("hyperfine")


def with_pythonpath(src: str, argv: list[str]) -> str:
    return shlex.join(["env", f"PYTHONPATH={src}", *argv])


def timed_loop(commands: dict[str, str], runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    """Alternating runs, one of each command per round, after one warm-up round."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs + 1):
        for name, cmd in commands.items():
            start = time.perf_counter()
            subprocess.run(cmd, shell=True, env=env, check=True, stdout=subprocess.DEVNULL)
            if round_:
                times[name].append(time.perf_counter() - start)
    return times


def hyperfine(tool: str, commands: dict[str, str], runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "h.json"
        argv = [tool, "--warmup", "2", "--runs", str(runs), "--export-json", str(out), "--style", "basic"]
        for name, cmd in commands.items():
            argv += ["--command-name", name, cmd]
        subprocess.run(argv, env=env, check=True, stdout=sys.stderr)
        results = json.loads(out.read_text())["results"]
    return {r["command"]: r["times"] for r in results}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--old-src", help="a second colltune source tree (its src/) to time as `old`")
    args = ap.parse_args()

    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    tmp = Path(tempfile.mkdtemp(prefix="colltune-frontend-"))
    exe = build.compile_program(lib, [HERE / "hello.c"], tmp / "hello")
    colltune = [str(Path(sys.executable).parent / "colltune")]
    src = str(Path(build.__file__).resolve().parents[2])
    # The user's line, and the line colltune run turns it into (flags right after the launcher).
    user = [str(lib.mpiexec), "-n", "2", *launch.placement_flags(lib, 2), str(exe)]
    direct = [user[0], *launch.rank_env_flags(lib, {"LD_PRELOAD": str(art.libcolltune.resolve())}), *user[1:]]
    # The embedded Open MPI is found from its mpiexec; other libraries by their mpicc (an old tree
    # given with --old-src does not see this checkout's .mpi/).
    pick = [] if lib.origin == "embedded" else ["--mpi", str(lib.mpicc)]
    commands = {
        "direct": shlex.join(direct),
        "colltune run": with_pythonpath(src, [*colltune, "run", *pick, "--", *user]),
        "front end only (--dry-run)": with_pythonpath(src, [*colltune, "run", *pick, "--dry-run", "--", *user]),
    }
    if args.old_src:
        commands["old colltune run"] = with_pythonpath(args.old_src, [*colltune, "run", *pick, "--", *user])
    env = launch.launcher_env(lib, nprocs=launch.nprocs_of(user))  # as `colltune run` decides yielding
    # As installed for users: Python caches compiled modules (an environment that forbids it pays
    # ~20 ms more per start, compiling colltune's modules every time).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name, cmd in commands.items():
        print(f"{name:>28}: {cmd}", file=sys.stderr)
    tool = ensure_hyperfine()
    times = hyperfine(tool, commands, args.runs, env) if tool else timed_loop(commands, args.runs, env)
    print(f"\n{lib.short_version}, 2 ranks, {args.runs} runs each ({'hyperfine' if tool else 'loop'}); "
          f"medians in seconds")
    base = statistics.median(times["direct"])
    for name, values in times.items():
        med = statistics.median(values)
        extra = f"  (+{med - base:.3f} s vs direct)" if name != "direct" and "dry-run" not in name else ""
        print(f"  {name:<28} {med:.3f}  [min {min(values):.3f}, max {max(values):.3f}]{extra}")


if __name__ == "__main__":
    main()
