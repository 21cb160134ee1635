#!/usr/bin/env python3
"""Coverage as a number (issue 33): per application, the collective time colltune's profiling mode
sees and the share of it colltune can tune on this library, before and after the whole MPI-4.1
surface was wrapped.

    bash benchmarks/advise/install.sh && apt-get install nwchem-openmpi    # the applications
    .venv/bin/python benchmarks/coverage/run.py OUT [--apps examl,qe,hpcc,lammps,nwchem] [--before 2d5f9be]

Applications: ExaML, Quantum ESPRESSO pw.x, HPCC and LAMMPS as benchmarks/advise/overhead.py runs
them (Debian packages on Debian's Open MPI 4.1.4), NWChem as benchmarks/learning_runtime/apps.py
uses it (ethanol DFT) but with Debian's nwchem.openmpi; 2 ranks, OMP_NUM_THREADS=1.

Per application: one plain run (its result is the reference), one profiled run with the `before`
build (main when the issue was taken up: ten blocking collectives and MPI_Barrier wrapped) and one
with this tree's, each result checked against the plain one. From each profile, advise's own
table (colltune.advise.where.coverage_of): the collective time seen (the rank with the most of
it, summed over its collective functions), its share of the wall time, and the share of it colltune can tune here
(where.is_tunable: the blocking forms of the collectives the decision point serves). The after
run also splits its collective time into the functions the before build wrapped and the others,
exact within one run (the two runs' times differ by the machine's noise). Writes OUT/coverage.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "learning_runtime"))
sys.path.insert(0, str(HERE.parent / "advise"))
import apps  # noqa: E402
import overhead  # noqa: E402

from colltune.advise import profile_run, where  # noqa: E402

BEFORE = "2d5f9be"   # main when issue 33 was taken up (2026-11-28)
# the functions the before build intercepted: its collectives.toml rows and MPI_Barrier
BEFORE_SEEN = {"MPI_Allgather", "MPI_Allreduce", "MPI_Alltoall", "MPI_Bcast", "MPI_Gather",
               "MPI_Reduce", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Scan",
               "MPI_Scatter", "MPI_Barrier"}


def nwchem(out: Path):
    """Ethanol B3LYP/6-31G* (benchmarks/learn/apps/etoh.nw) with Debian's nwchem.openmpi (the
    Open MPI build of package nwchem; its ARMCI runs over MPI)."""
    work = out / "nwchem"
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE.parent / "learn" / "apps" / "etoh.nw", work / "etoh.nw")
    app = apps.App("nwchem", overhead.debian_ompi(), work, ["/usr/bin/nwchem.openmpi", "etoh.nw"],
                   dict(overhead.ONE_THREAD), re.compile(r"Total DFT energy =\s+(\S+)"), None,
                   apps.NWCHEM_TOLERANCE)
    return app, lambda: None


APPS = {"examl": overhead.examl, "qe": overhead.qe, "hpcc": overhead.hpcc, "lammps": overhead.lammps,
        "nwchem": nwchem}


def profiled(app: apps.App, prepare, so: Path, where_to: Path) -> tuple[dict, list[where.TimeRow], float]:
    shutil.rmtree(where_to, ignore_errors=True)
    where_to.mkdir(parents=True)
    prepare()
    run = apps.run_once(app, {"LD_PRELOAD": str(so), "COLLTUNE_PROFILE_RUN": str(where_to)}, timeout=1800)
    prof = profile_run.read(where_to)
    return run, where.rows(prof), prof.wall_ns / 1e9


def figures(rows: list[where.TimeRow], wall: float) -> dict:
    cov = where.coverage_of(rows)
    coll = [r for r in rows if r.kind == "coll"]
    # time_s: the function's slowest rank; rank_time_s: on the rank whose collective time is seen
    return {"collective_s": cov.seen_s, "collective_rank": cov.rank,
            "collective_share_of_wall": cov.seen_s / wall if wall else 0.0,
            "tunable_share": cov.tunable_share, "wall_s": wall,
            "functions": {r.name: {"calls": r.calls, "time_s": r.time_s,
                                   "rank_time_s": r.rank_s.get(cov.rank, 0.0), "tunable": r.tunable}
                          for r in sorted(coll, key=lambda r: -r.time_s)}}


def measure(name: str, out: Path, before_commit: str) -> dict:
    app, prepare = APPS[name](out)
    builds = {"before": apps.before_build(out, before_commit, app.lib), "after": apps.after_build(app.lib)}
    prepare()
    plain = apps.run_once(app, {}, timeout=1800)
    res: dict = {"app": name, "mpi": f"{app.lib.name} {app.lib.version}", "plain": plain}
    for tag, so in builds.items():
        run, rows, wall = profiled(app, prepare, so, out / "profiles" / f"{name}-{tag}")
        if abs(run["result"] - plain["result"]) > app.tolerance * max(1.0, abs(plain["result"])):
            raise SystemExit(f"{name} {tag}: result {run['result']} differs from plain {plain['result']}")
        res[tag] = {"run": run, **figures(rows, wall)}
    after = res["after"]
    old = sum(f["rank_time_s"] for n, f in after["functions"].items() if n in BEFORE_SEEN)
    after["seen_before_share"] = old / after["collective_s"] if after["collective_s"] else 0.0
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--lammps-steps", type=int, default=overhead.LAMMPS_STEPS,
                    help="LAMMPS time steps (fewer on a loaded machine: the shares, not the times, matter)")
    args = ap.parse_args()
    overhead.LAMMPS_STEPS = args.lammps_steps
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.apps.split(","):
        r = measure(name, args.out, args.before)
        a, b = r["after"], r["before"]
        print(f"{name:8} before: {b['collective_s']:.3f} s ({100 * b['collective_share_of_wall']:.1f}% of wall), "
              f"tunable {100 * b['tunable_share']:.1f}%   after: {a['collective_s']:.3f} s "
              f"({100 * a['collective_share_of_wall']:.1f}%), tunable {100 * a['tunable_share']:.1f}%, "
              f"seen before {100 * a['seen_before_share']:.1f}%", flush=True)
        results.append(r)
        (args.out / "coverage.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
