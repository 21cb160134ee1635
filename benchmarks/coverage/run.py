#!/usr/bin/env python3
"""Coverage as a number (issue 33): per application, the collective time colltune's profiling mode
sees and the share of it colltune can tune on this library, before and after the whole MPI-4.1
surface was wrapped, all from one method.

    bash benchmarks/advise/install.sh && apt-get install nwchem-openmpi    # the applications
    nice -n 10 .venv/bin/python benchmarks/coverage/run.py OUT [--apps examl,qe,hpcc,lammps,nwchem]

Applications: ExaML, Quantum ESPRESSO pw.x, HPCC and LAMMPS as benchmarks/advise/overhead.py runs
them (Debian packages on Debian's Open MPI 4.1.4), NWChem as benchmarks/learning_runtime/apps.py
uses it (ethanol DFT) but with Debian's nwchem.openmpi; 2 ranks, OMP_NUM_THREADS=1.

Per application: one plain run (its result is the reference) and one run under this tree's
profiling mode, its result checked against the plain one. From that profile, advise's own table
(colltune.advise.where: coverage_of and Tunability, the same code `colltune advise` prints):
- after: the collective time seen (the rank with the most of it, summed over its collective
  functions: every collective function of MPI-4.1 is wrapped) and the share of it colltune can
  tune on this library (where.Tunability: the function's form has members on the library, its
  binding is served, and where this build's proof exists, a member of it is proven);
- before (the ten blocking collectives of old, 2d5f9be, main when the issue was taken up): of the
  same collective time, the share in the functions that build intercepted (the ten rows and
  MPI_Barrier: "seen") and the share in the ten blocking collectives it could serve ("tunable";
  its barrier was seen, not served). One run, so both columns share its noise.
Writes OUT/coverage.json (every function's calls, bytes, time, tunable and why).
"""

from __future__ import annotations

import argparse
import datetime
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
# the ten blocking collectives the before build served (its collectives.toml rows)
BEFORE_TUNABLE = {"MPI_Allgather", "MPI_Allreduce", "MPI_Alltoall", "MPI_Bcast", "MPI_Gather",
                  "MPI_Reduce", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Scan",
                  "MPI_Scatter"}
# the functions it intercepted: those and MPI_Barrier (seen, not served)
BEFORE_SEEN = BEFORE_TUNABLE | {"MPI_Barrier"}


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


def profiled(app: apps.App, prepare, so: Path, where_to: Path) -> tuple[dict, list[where.TimeRow], float, where.Tunability]:
    shutil.rmtree(where_to, ignore_errors=True)
    where_to.mkdir(parents=True)
    prepare()
    run = apps.run_once(app, {"LD_PRELOAD": str(so), "COLLTUNE_PROFILE_RUN": str(where_to)}, timeout=1800)
    prof = profile_run.read(where_to)
    tunability = where.Tunability.of_run(prof, so.parent / "proof.txt")
    return run, where.rows(prof, tunability), prof.wall_ns / 1e9, tunability


def figures(rows: list[where.TimeRow], wall: float) -> dict:
    cov = where.coverage_of(rows)
    coll = [r for r in rows if r.kind == "coll"]
    on_rank = {r.name: r.rank_s.get(cov.rank, 0.0) for r in coll}
    seen = cov.seen_s

    def share(names: set[str]) -> float:
        return sum(t for n, t in on_rank.items() if n in names) / seen if seen else 0.0

    # time_s: the function's slowest rank; rank_time_s: on the rank whose collective time is seen
    return {"collective_s": seen, "collective_rank": cov.rank,
            "collective_share_of_wall": seen / wall if wall else 0.0,
            "tunable_share": cov.tunable_share, "wall_s": wall,
            "before_seen_share": share(BEFORE_SEEN), "before_tunable_share": share(BEFORE_TUNABLE),
            "not_tunable": {r.name: r.tunable_rule for r in coll if not r.tunable},
            "functions": {r.name: {"calls": r.calls, "time_s": r.time_s, "bytes_mean": r.bytes_mean,
                                   "rank_time_s": on_rank[r.name], "tunable": r.tunable,
                                   "tunable_rule": r.tunable_rule}
                          for r in sorted(coll, key=lambda r: -r.time_s)}}


def refigure(r: dict, out: Path, proof: Path | None) -> dict:
    """An application's figures again from its kept profile (OUT/profiles/NAME), with this tree's
    advise code and `proof` (None: none, the catalog rule): no run."""
    prof = profile_run.read(out / "profiles" / r["app"])
    tunability = where.Tunability.of_run(prof, proof)
    rows = where.rows(prof, tunability)
    r["after"] = {"run": r["after"]["run"], **figures(rows, prof.wall_ns / 1e9), "tunable_rule": tunability.describe()}
    return r


def measure(name: str, out: Path, short_examl: bool = False) -> dict:
    app, prepare = APPS[name](out)
    if name == "examl" and short_examl:
        # the likelihood of the given tree, its model optimised to 10 log units (overhead.py's
        # --cost input): the same Reduce + Bcast pairs, minutes fewer
        overhead.cost_input(name, app)
    so = apps.after_build(app.lib)
    prepare()
    plain = apps.run_once(app, {}, timeout=1800)
    res: dict = {"app": name, "mpi": f"{app.lib.name} {app.lib.version}", "plain": plain,
                 "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    run, rows, wall, tunability = profiled(app, prepare, so, out / "profiles" / name)
    if abs(run["result"] - plain["result"]) > app.tolerance * max(1.0, abs(plain["result"])):
        raise SystemExit(f"{name}: result {run['result']} differs from plain {plain['result']}")
    res["after"] = {"run": run, **figures(rows, wall), "tunable_rule": tunability.describe()}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--lammps-steps", type=int, default=overhead.LAMMPS_STEPS,
                    help="LAMMPS time steps (fewer on a loaded machine: the shares, not the times, matter)")
    ap.add_argument("--short-examl", action="store_true",
                    help="ExaML's short input (-f e -e 10: the given tree's likelihood), as benchmarks/advise --cost")
    ap.add_argument("--refigure", action="store_true",
                    help="no run: the figures of OUT/coverage.json's applications again from their kept profiles")
    ap.add_argument("--proof", type=Path, help="with --refigure: the proof that decides what is tunable")
    args = ap.parse_args()
    if args.refigure:
        path = args.out / "coverage.json"
        results = [refigure(r, args.out, args.proof) for r in json.loads(path.read_text())]
        path.write_text(json.dumps(results, indent=1))
        for r in results:
            a = r["after"]
            print(f"{r['app']:8} tunable {100 * a['tunable_share']:.2f}% ({a['tunable_rule']}); "
                  f"not tunable: {a['not_tunable'] or '-'}")
        return
    overhead.LAMMPS_STEPS = args.lammps_steps
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "coverage.json"
    results = [r for r in json.loads(path.read_text()) if r["app"] not in args.apps.split(",")] if path.exists() else []
    for name in args.apps.split(","):
        r = measure(name, args.out, args.short_examl)
        r["input"] = "short (-f e -e 10)" if name == "examl" and args.short_examl else "full"
        a = r["after"]
        print(f"{name:8} collective {a['collective_s']:.3f} s ({100 * a['collective_share_of_wall']:.1f}% of wall); "
              f"before: seen {100 * a['before_seen_share']:.1f}%, tunable {100 * a['before_tunable_share']:.1f}%; "
              f"after: seen 100%, tunable {100 * a['tunable_share']:.1f}%; not tunable: {a['not_tunable'] or '-'}",
              flush=True)
        results.append(r)
        path.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
