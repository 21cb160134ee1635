#!/usr/bin/env python3
"""Benchmark of `colltune advise` on two real MPI applications from Debian (hpcc, lammps).

Installs them with apt-get (and Open MPI's development files, which colltune needs to build its
C core against Debian's Open MPI 4.1), then per application:
  1. overhead of the profiling mode: ROUNDS rounds, each one plain run (no preload) and one run
     with COLLTUNE_PROFILE_RUN, order alternating; launcher wall time; median of the per-round
     relative differences (and of the two sides);
  2. `colltune advise --measure --verify --runs VERIFY_RUNS`: the application's collective points
     benchmarked (quick, interleaved) into a fresh database, the findings, and predicted vs
     measured gain (wall time and in-situ time at the advised points, medians and noise).
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
                   "--measure", "--verify", "--runs", str(verify_runs), "--", *argv, cwd=cwd)
    print(res.stdout[-4000:], res.stderr[-2000:], flush=True)
    if res.returncode != 0:
        raise SystemExit(f"colltune advise failed for {name}")
    report = json.loads((out / "advise.json").read_text())
    return {"findings": [{"strategy": f["strategy"], "title": f["title"], "changes": f["changes"],
                          "saving_s": f["saving_s"]} for f in report["findings"]],
            "shares": report["shares"], "missing_points": report["missing_points"],
            "points": [{k: p[k] for k in ("collective", "nprocs", "bin", "calls", "mean_bytes",
                                          "total_s", "own_s", "wait_s")} for p in report["points"]],
            "verification": report.get("verification")}


def model_check(name: str, argv: list[str], cwd: Path, runs: int) -> dict:
    """The prediction tested where the advice has nothing to apply: every application point with
    a measured mock-up is served by the one the database predicts to change the run the most
    (slower, on these applications), then predicted vs measured change, in-situ own cost at those
    points and wall time, as --verify does (alternating runs, medians, noise), plus per point.
    The prediction is uncapped here (calls x (default - member)): a loss is not bounded by the
    point's own cost."""
    sys.path.insert(0, str(REPO / "src"))
    from colltune import catalog
    from colltune.advise import collectives, profile_run, verify
    from colltune.advise.points import collective_points
    from colltune.mpi import build, libraries
    from colltune.tune import profile as prof

    run = profile_run.read(cwd / f"advise-{name}" / "profile-run")
    table = collectives.medians(cwd / "colltune.duckdb", "openmpi")
    choices = []
    for p in collective_points(run):
        at = table[(table["collective"] == p.collective) & (table["nprocs"] == p.nprocs)]
        size = collectives.db_size_for(p, sorted({int(s) for s in at["msg_bytes"]}))
        here = at[at["msg_bytes"] == size].set_index("variant")["median_s"]
        mock = here[[v for v in here.index if catalog.variant_kind(str(v)) == "mockup"]]
        if size is None or catalog.DEFAULT not in here.index or mock.empty:
            continue
        worst = str((mock - here[catalog.DEFAULT]).abs().idxmax())
        choices.append(collectives.Choice(p, size, float(here[catalog.DEFAULT]), worst, float(mock[worst])))
    predicted = {(c.point.collective, c.point.nprocs, c.point.bin):
                 c.point.calls * (c.default_s - c.best_s) for c in choices}
    path = prof.write_profile(collectives.profile_for(choices, {"generator": "benchmarks/advise model check"}),
                              cwd / f"check-{name}.prof")
    lib = libraries.resolve(MPICC)
    here_dir = os.getcwd()
    os.chdir(cwd)
    # Every call sampled on both sides: each call's own cost is timed after a barrier, so the
    # in-situ figure excludes all waiting for late ranks (not only on 1 call in 16), which is
    # what the database's per-call medians predict. It adds a barrier per call to both sides.
    os.environ["COLLTUNE_PROFILE_RUN_SAMPLE"] = "1"
    try:
        v = verify.verify(lib, build.ensure_built(lib), argv, path, {}, choices, [], cwd / f"check-{name}", runs,
                          predicted_s=sum(predicted.values()))
    finally:
        os.chdir(here_dir)
        del os.environ["COLLTUNE_PROFILE_RUN_SAMPLE"]
    per_point = []
    for key, pred in sorted(predicted.items(), key=lambda kv: kv[1]):
        own = {side: statistics.median(
            next((p.own_s for p in collective_points(profile_run.read(cwd / f"check-{name}" / f"{side}-{i}"))
                  if (p.collective, p.nprocs, p.bin) == key), 0.0) for i in range(runs))
            for side in ("default", "advised")}
        per_point.append({"point": list(key), "variant": next(c.best for c in choices if
                                                             (c.point.collective, c.point.nprocs, c.point.bin) == key),
                          "calls": next(c.point.calls for c in choices if
                                        (c.point.collective, c.point.nprocs, c.point.bin) == key),
                          "predicted_change_s": pred, "measured_change_s": own["default"] - own["advised"]})
    return {**v.as_json(), "per_point": per_point}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--verify-runs", type=int, default=5)
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--apps", default="lammps,hpcc")
    parser.add_argument("--check-runs", type=int, default=7,
                        help="runs per side of the model check (0: skip it)")
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
            # The database measured in this run, at the application's points: medians (what the
            # prediction uses) beside means (what every call costs, descheduled ones included).
            results["apps"][name]["db_stats"] = json.loads(subprocess.run(
                [sys.executable, str(HERE / "dbstats.py"), str(work / "colltune.duckdb")],
                capture_output=True, text=True, check=True).stdout)
            if args.check_runs:
                results["apps"][name]["model_check"] = model_check(name, argv, work, args.check_runs)
                print(results["apps"][name]["model_check"]["agreement"], flush=True)
    results["load_after"] = os.getloadavg()
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    for name, r in results["apps"].items():
        o = r["overhead"]
        print(f"{name}: plain {o['median_plain_s']:.3f} s, profiling {o['median_profiling_s']:.3f} s, "
              f"median overhead {100 * o['median_overhead']:+.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
