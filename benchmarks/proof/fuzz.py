"""The differential fuzzer against the proof (issue 37).

Seeded random (collective, op, datatype, count, values, root, in place) cases, every member
against the library default bit for bit (`colltune-selftest --fuzz SEED --cases N`: the
mock-ups in one launch, each library algorithm in one of its own), then each difference checked
against the proof: a difference in a class the proof passed is a hole in the proof's matrix.
Writes results/fuzz-<library>.json and prints the figures; rerun:

    .venv/bin/python benchmarks/proof/fuzz.py --mpi openmpi --seeds 1,2,3 --cases 400
    .venv/bin/python benchmarks/proof/fuzz.py --mpi mpich --seeds 1,2,3 --cases 400
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from colltune.measure import proof
from colltune.mpi import libraries as mpi

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpi", default="openmpi")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--cases", type=int, default=400, help="cases per launch")
    parser.add_argument("-n", "--nprocs", type=int, default=None,
                        help="ranks (default: the proof's, 3 for Open MPI, 2 for MPICH)")
    args = parser.parse_args()
    lib = mpi.resolve(args.mpi)
    path = proof.ensure_proven(lib)
    passed = proof.read_passed(path)
    refused = proof.failed_members(path)
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        report = proof.fuzz(lib, seed, args.cases, args.nprocs)
        found = report.differences()
        holes = report.holes(passed)
        rows.append({"seed": seed, "nprocs": report.nprocs, "launches": report.launches,
                     "cases_tried": report.tried, "seconds": round(report.seconds, 1),
                     "members_differing": len(found),
                     "differences": sum(len(v) for v in found.values()),
                     "holes": holes, "load": os.getloadavg()[0]})
        print(f"seed {seed}: {report.tried} cases on {report.nprocs} ranks in "
              f"{report.seconds:.0f} s: {rows[-1]['differences']} (member, class) differences "
              f"in {len(found)} members, {sum(len(v) for v in holes.values())} in classes the "
              "proof passed", flush=True)
        for member, classes in holes.items():
            for cls, evidence in classes.items():
                print(f"  HOLE {member} {cls}: {evidence}")
    summary = {"library": lib.short_version, "proof": str(path),
               "classes_refused": sum(len(v) for v in refused.values()),
               "members_refused_somewhere": len(refused), "rows": rows}
    out = HERE / "results" / f"fuzz-{lib.name}.json"
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"classes refused by the proof: {summary['classes_refused']} in "
          f"{summary['members_refused_somewhere']} members; written {out}")


if __name__ == "__main__":
    main()
