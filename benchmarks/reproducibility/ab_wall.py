"""A quick check's wall time, two trees alternating (issue 36): before and after a change.

    git archive <base-commit> src native | tar -x -C /tmp/base    # the tree before, beside this one
    python benchmarks/reproducibility/ab_wall.py --pairs 4 --base-src /tmp/base/src \
        --db-prefix /tmp/ab --tag ab_s11
    python benchmarks/reproducibility/handoff.py --db /tmp/ab_base.duckdb \
        --results benchmarks/reproducibility/results_ab_s11_base.json     # per phase; and _new

PAIRS x (`colltune check --preset quick -n 4` from the tree at --base-src, the same from this
tree), alternating which goes first, so that the machine's load hits both alike; each into its own
database (DB_PREFIX_base.duckdb, DB_PREFIX_new.duckdb), seeds first_seed + i for both of pair i.
Both run on this tree's Python environment and native build (the C sources must be the same:
`colltune mpi build` once before, outside the timed runs), or, where the trees' C sources differ,
the base on its own build in `--base-cache DIR` (its COLLTUNE_CACHE; built before, outside the
timed runs: `COLLTUNE_CACHE=DIR python -c "<ENTRY>" BASE_SRC mpi build --mpi openmpi`). Writes results_TAG_base.json and
results_TAG_new.json in reproducibility.py's format (their `timing`), which handoff.py --results
reads to split each check's wall into its phases, and prints the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The check from a tree's sources, with this environment's packages: its `src` first on the path.
ENTRY = "import sys; sys.path.insert(0, sys.argv.pop(1)); from colltune.cli import main; sys.exit(main())"


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def one(src: Path, db: Path, seed: int, cache: Path | None = None) -> dict[str, object]:
    env = {**os.environ, "COLLTUNE_CACHE": str(cache)} if cache is not None else None
    before = loadavg()
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", ENTRY, str(src), "check", "--preset", "quick", "-n", "4", "--db",
                           str(db), "--quiet", "--seed", str(seed)], capture_output=True, text=True, check=False,
                          env=env)
    wall = time.monotonic() - t0
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"check from {src} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return {"run": seed, "started_utc": time.strftime("%H:%M:%S", time.gmtime(time.time() - wall)),
            "wall_s": round(wall, 2), "exit": proc.returncode, "loadavg_before": before, "loadavg_after": loadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--base-src", type=Path, required=True, help="the `src` directory of the tree before")
    ap.add_argument("--db-prefix", type=Path, required=True)
    ap.add_argument("--tag", required=True, help="results_<tag>_base.json and results_<tag>_new.json")
    ap.add_argument("--first-seed", type=int, default=11000)
    ap.add_argument("--base-cache", type=Path, help="COLLTUNE_CACHE of the tree before, when its C sources differ "
                    "(one build folder per library: two trees' sources in one cache rebuild each other's)")
    args = ap.parse_args()
    trees = {"base": args.base_src.resolve(), "new": HERE.parent.parent / "src"}
    timing: dict[str, list[dict[str, object]]] = {"base": [], "new": []}
    for i in range(args.pairs):
        for name in ("base", "new") if i % 2 == 0 else ("new", "base"):
            row = one(trees[name], Path(f"{args.db_prefix}_{name}.duckdb"), args.first_seed + i,
                      args.base_cache if name == "base" else None)
            timing[name].append(row)
            print(f"pair {i} {name}: {row['wall_s']} s, loadavg {row['loadavg_before']}", flush=True)
    for name, rows in timing.items():
        (HERE / f"results_{args.tag}_{name}.json").write_text(json.dumps(
            {"command": f"colltune check --preset quick -n 4 --seed <{args.first_seed} + i> from {trees[name]}",
             "timing": rows}, indent=1) + "\n")
        walls = [float(r["wall_s"]) for r in rows]  # type: ignore[arg-type]
        print(f"{name}: median {statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f})")


if __name__ == "__main__":
    main()
