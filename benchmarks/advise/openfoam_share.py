#!/usr/bin/env python3
"""OpenFOAM's instruction share against the case's size (issue 34, fifteenth round): a table of
`openfoam.sh OUT callgrind STEPS` runs (CELLS=N for an NxN mesh; the issue's case is 40x40, 800
cells a rank), each run's share as overhead.py --cost defines it (libcolltune's and the
unwinder's instructions over the application's own, rank 0, chains on), the calls rank 0 made,
and per case size the share of the steps alone: the difference of two runs with different step
counts (the start-up, reading the case and the first calls' unwinds, cancels).

    for c in 40 100 200; do for s in 10 50; do
      CELLS=$c nice -n 19 bash benchmarks/advise/openfoam.sh OUT/of$c-$s callgrind $s; done; done
    .venv/bin/python benchmarks/advise/openfoam_share.py OUT/of*-* [--json share.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "learning_runtime"))
import overhead  # noqa: E402

from colltune.advise import profile_run  # noqa: E402


def case(out: Path) -> dict:
    """One run: the mesh and step count from its case, the instructions from its callgrind file,
    rank 0's calls from its profiling run."""
    cavity = out / "cavity"
    cells = int(re.search(r"\((\d+) \d+ 1\)", (cavity / "system" / "blockMeshDict").read_text())[1])
    end = float(re.search(r"^endTime\s+(\S+);", (cavity / "system" / "controlDict").read_text(), re.M)[1])
    total, mine, unwinder, application = overhead.call_path(overhead.objects_exclusive(out / "cg.out"))
    rank0 = profile_run.read_rank(cavity / "prof" / "rank-0")
    coll = sum(p.calls for p in rank0.points if p.kind == "coll")
    p2p = sum(p.calls for p in rank0.points if p.kind == "p2p")
    log = (cavity / "log.cg").read_text(errors="replace")
    result = [x.strip() for x in log.splitlines() if "continuity errors" in x]
    return {"out": str(out), "cells": cells, "cells_per_rank": cells * cells // 2, "steps": round(end / 0.0005),
            "instructions": total, "application": application, "libcolltune": mine, "unwinder": unwinder,
            "share": (mine + unwinder) / application, "coll_calls": coll, "p2p_calls": p2p,
            "chains": len(rank0.chains), "syncs": rank0.sample_syncs,
            "libcolltune_per_call": mine / max(coll + p2p, 1), "result": result[-1] if result else ""}


def steps_only(rows: list[dict]) -> list[dict]:
    """Per case size, each longer run against the shortest: the steps' own share."""
    out = []
    for cells in sorted({r["cells"] for r in rows}):
        same = sorted((r for r in rows if r["cells"] == cells), key=lambda r: r["steps"])
        a = same[0]
        for b in same[1:]:
            if b["steps"] == a["steps"]:
                continue
            calls = (b["coll_calls"] + b["p2p_calls"]) - (a["coll_calls"] + a["p2p_calls"])
            own = (b["libcolltune"] + b["unwinder"]) - (a["libcolltune"] + a["unwinder"])
            app = b["application"] - a["application"]
            out.append({"cells": cells, "steps": f"{a['steps']}-{b['steps']}", "share": own / app,
                        "application_per_step": app / (b["steps"] - a["steps"]),
                        "calls_per_step": calls / (b["steps"] - a["steps"]),
                        "libcolltune_per_call": own / max(calls, 1)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outs", nargs="+", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = sorted((case(o) for o in args.outs), key=lambda r: (r["cells"], r["steps"]))
    print(f"{'mesh':>8} {'cells/rank':>10} {'steps':>5} {'application':>15} {'libcolltune':>12} {'unwinder':>9} "
          f"{'share':>7} {'coll':>7} {'p2p':>7} {'a call':>6} {'syncs':>5}")
    for r in rows:
        print(f"{r['cells']:>4}x{r['cells']:<3} {r['cells_per_rank']:>10,} {r['steps']:>5} {r['application']:>15,} "
              f"{r['libcolltune']:>12,} {r['unwinder']:>9,} {100 * r['share']:>6.2f}% {r['coll_calls']:>7,} "
              f"{r['p2p_calls']:>7,} {r['libcolltune_per_call']:>6.0f} {r['syncs']:>5}")
    marg = steps_only(rows)
    for m in marg:
        print(f"{m['cells']}x{m['cells']} steps {m['steps']} alone: {100 * m['share']:.2f}% "
              f"({m['application_per_step']:,.0f} application instructions and {m['calls_per_step']:,.0f} calls "
              f"a step, {m['libcolltune_per_call']:.0f} instructions a call)")
    if args.json:
        args.json.write_text(json.dumps({"runs": rows, "steps_only": marg}, indent=1) + "\n")


if __name__ == "__main__":
    main()
