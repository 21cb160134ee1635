#!/usr/bin/env python3
"""Benchmark of `colltune advise` on two real MPI applications from Debian (hpcc, lammps).

Installs them with apt-get (and Open MPI's development files, which colltune needs to build its
C core against Debian's Open MPI 4.1), then per application:
  1. overhead of the profiling mode: ROUNDS rounds, each one plain run (no preload) and one run
     with COLLTUNE_PROFILE_RUN, order alternating; launcher wall time; median of the per-round
     relative differences (and of the two sides);
  2. `colltune advise --verify --runs VERIFY_RUNS`: the findings and predicted vs measured gain.
Writes results.json next to this file. The machine is shared: medians of several runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MPICC = "/usr/bin/mpicc.openmpi"
MPIEXEC = "/usr/bin/mpiexec.openmpi"
HPCC_SIZES = {"Ns": "1000", "NBs": "80", "Ps": "1", "Qs": "2"}


def install() -> None:
    need = [p for p, exe in (("hpcc", "/usr/bin/hpcc"), ("lammps", "/usr/bin/lmp"),
                             ("libopenmpi-dev", "/usr/include/x86_64-linux-gnu/openmpi/mpi.h"))
            if not Path(exe).exists()]
    if need:
        subprocess.run(["apt-get", "install", "-y", *need], check=True)


def hpcc_input(workdir: Path) -> None:
    """Debian's example hpccinf.txt with a small problem on a 1x2 grid."""
    lines = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt").read_text().splitlines()
    out = []
    for line in lines:
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip() in HPCC_SIZES:
            line = f"{HPCC_SIZES[parts[1].strip()]:<12} {parts[1]}"
        out.append(line)
    (workdir / "hpccinf.txt").write_text("\n".join(out) + "\n")


def apps(workdir: Path, nprocs: int) -> dict[str, list[str]]:
    shutil.copy(HERE / "in.lj", workdir / "in.lj")
    hpcc_input(workdir)
    return {"lammps": [MPIEXEC, "-n", str(nprocs), "lmp", "-in", "in.lj", "-log", "none", "-screen", "none"],
            "hpcc": [MPIEXEC, "-n", str(nprocs), "hpcc"]}


def colltune(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([str(REPO / ".venv" / "bin" / "colltune"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)


# Containers run as root; Open MPI refuses that unless told (colltune's launcher does the same).
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env={**os.environ, **ROOT_OK, **env}, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def overhead(name: str, argv: list[str], cwd: Path, rounds: int) -> dict:
    dry = colltune("run", "--mpi", MPICC, "--dry-run", "--", *argv, cwd=cwd)
    if dry.returncode != 0:
        raise SystemExit(dry.stderr)
    # The rewritten line carries LD_PRELOAD to the ranks; profiling adds one -x setting.
    preload_argv = dry.stdout.split()
    prof_dir = cwd / f"prof-{name}"
    prof_argv = preload_argv[:1] + ["-x", f"COLLTUNE_PROFILE_RUN={prof_dir}"] + preload_argv[1:]
    plain, prof = [], []
    for i in range(rounds):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            if side:
                shutil.rmtree(prof_dir, ignore_errors=True)
                prof_dir.mkdir()
                prof.append(timed(prof_argv, cwd, {}))
            else:
                plain.append(timed(argv, cwd, {}))
        print(f"{name} round {i}: plain {plain[-1]:.3f} s, profiling {prof[-1]:.3f} s", flush=True)
    rel = [(b - a) / a for a, b in zip(plain, prof)]
    sys.path.insert(0, str(REPO / "src"))
    from colltune.advise import profile_run
    last = profile_run.read(prof_dir)
    calls = {kind: max(sum(p.calls for p in r.points if p.kind == kind) for r in last.ranks)
             for kind in ("coll", "p2p")}
    samples = max(sum(p.samples for p in r.points) for r in last.ranks)
    return {"plain_s": plain, "profiling_s": prof, "median_plain_s": statistics.median(plain),
            "median_profiling_s": statistics.median(prof), "median_overhead": statistics.median(rel),
            "rank_files": sorted(p.name for p in prof_dir.glob("rank-*")),
            "calls_per_rank": calls, "sampled_calls": samples, "profiled_wall_s": last.wall_ns / 1e9}


def advise(name: str, argv: list[str], cwd: Path, verify_runs: int) -> dict:
    out = cwd / f"advise-{name}"
    res = colltune("advise", "--mpi", MPICC, "--db", str(cwd / "colltune.duckdb"), "--out", str(out),
                   "--verify", "--runs", str(verify_runs), "--", *argv, cwd=cwd)
    print(res.stdout[-4000:], res.stderr[-2000:], flush=True)
    if res.returncode != 0:
        raise SystemExit(f"colltune advise failed for {name}")
    report = json.loads((out / "advise.json").read_text())
    return {"findings": [{"strategy": f["strategy"], "title": f["title"], "changes": f["changes"],
                          "saving_s": f["saving_s"]} for f in report["findings"]],
            "shares": report["shares"], "verification": report.get("verification")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--verify-runs", type=int, default=3)
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--apps", default="lammps,hpcc")
    args = parser.parse_args()
    install()
    results = {"machine": os.uname().nodename, "cores": os.cpu_count(), "load_before": os.getloadavg(),
               "rounds": args.rounds, "verify_runs": args.verify_runs, "nprocs": args.nprocs, "apps": {}}
    with tempfile.TemporaryDirectory(prefix="advise-bench-") as tmp:
        work = Path(tmp)
        for name in args.apps.split(","):
            argv = apps(work, args.nprocs)[name]
            results["apps"][name] = {"command": " ".join(argv),
                                     "overhead": overhead(name, argv, work, args.rounds),
                                     "advise": advise(name, argv, work, args.verify_runs)}
    results["load_after"] = os.getloadavg()
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    for name, r in results["apps"].items():
        o = r["overhead"]
        print(f"{name}: plain {o['median_plain_s']:.3f} s, profiling {o['median_profiling_s']:.3f} s, "
              f"median overhead {100 * o['median_overhead']:+.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
