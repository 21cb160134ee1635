#!/usr/bin/env python3
"""The profiling call path's instructions per call with few and with many call chains (issue 34:
a process with more chains than the memo tables had entries shared entries; QE has 1,214).

tests/programs/advise_many_chains.c reaches one MPI_Allreduce, MPI_Irecv, MPI_Isend and
MPI_Waitall site through CHAINS chains each (4 x CHAINS chains), every chain in turn, ROUNDS
times. Rank 0 runs under callgrind, profiled (COLLTUNE_PROFILE_RUN, chains on), with each
libcolltune.so given; libcolltune's exclusive instructions (overhead.objects_exclusive: exact)
at two round counts, R and 2R: their difference over CHAINS x R groups is the marginal cost of
one group (one collective and three point-to-point calls: the call path's per-call cost, the
chains' unwinds, MPI_Init and MPI_Finalize cancelled out). Writes OUT/manychains.json.

    nice -n 19 .venv/bin/python benchmarks/advise/manychains.py OUT before=/path/libcolltune.so after=/path/libcolltune.so
    (--configs 32:200,300:20: CHAINS:R pairs; 32 x 4 = 128 chains fit any table, 300 x 4 = 1,200 do not)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from overhead import objects_exclusive  # noqa: E402


def run(out: Path, exe: Path, lib: Path, chains: int, rounds: int, tag: str) -> dict:
    d = out / f"{tag}-{chains}-{rounds}"
    prof, cg = d / "prof", d / "cg.out"
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["rm", "-rf", str(prof)], check=True)
    argv = ["mpirun.openmpi", "--allow-run-as-root", "-np", "1", "-x", f"LD_PRELOAD={lib}",
            "-x", f"COLLTUNE_PROFILE_RUN={prof}", "valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}",
            str(exe), str(chains), str(rounds), ":", "-np", "1", "-x", f"LD_PRELOAD={lib}",
            "-x", f"COLLTUNE_PROFILE_RUN={prof}", str(exe), str(chains), str(rounds)]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=d)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    objects = objects_exclusive(cg)
    mine = sum(n for name, n in objects.items() if "libcolltune" in name)
    rank0 = (prof / "rank-0").read_text().splitlines()
    facts = {line.split()[0]: line.split()[1:] for line in rank0 if line.split()[0] in ("chains_made", "memo_made")}
    return {"libcolltune": mine, "result": proc.stdout.strip(), "chains": sum(1 for x in rank0 if x.startswith("chain ")),
            **{k: [int(x) for x in v] for k, v in facts.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("libs", nargs="+", help="LABEL=path/to/libcolltune.so")
    ap.add_argument("--configs", default="32:200,300:20", help="CHAINS:R,... (runs R and 2R rounds)")
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "advise_many_chains"
    subprocess.run(["mpicc.openmpi", "-std=c11", "-O2", "-Wall", "-g", "-Wextra",
                    str(ROOT / "tests" / "programs" / "advise_many_chains.c"), "-o", str(exe)], check=True)
    results = []
    for spec in args.libs:
        tag, lib = spec.split("=", 1)
        for cfg in args.configs.split(","):
            chains, rounds = (int(x) for x in cfg.split(":"))
            a = run(out, exe, Path(lib), chains, rounds, tag)
            b = run(out, exe, Path(lib), chains, 2 * rounds, tag)
            per_group = (b["libcolltune"] - a["libcolltune"]) / (chains * rounds)
            row = {"build": tag, "lib": lib, "chains_per_site": chains, "chains": a["chains"], "rounds": [rounds, 2 * rounds],
                   "libcolltune": [a["libcolltune"], b["libcolltune"]], "per_group": round(per_group, 1),
                   "memo_made": [a.get("memo_made"), b.get("memo_made")], "result": [a["result"], b["result"]]}
            results.append(row)
            print(f"{tag:8s} {a['chains']:5d} chains: {per_group:8.1f} instructions per group (1 collective + 3 "
                  f"point-to-point calls), libcolltune {a['libcolltune']:,} / {b['libcolltune']:,}; memo_made "
                  f"{row['memo_made']}", flush=True)
    (out / "manychains.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
