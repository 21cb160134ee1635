#!/usr/bin/env python3
"""What `colltune advise`'s profiling mode costs on a call-heavy application (issue 23): ExaML
(Debian's examl, Open MPI 4.1 build, 2 ranks, 679,861 MPI_Reduce + 679,861 MPI_Bcast of 16-32
bytes per rank), before (a build of an earlier commit) and after (this tree).

    bash benchmarks/learning_runtime/apps.sh OUT --apps examl --runs 0   # installs examl once
    .venv/bin/python benchmarks/advise/overhead.py OUT --runs 7                # wall time, alternating
    .venv/bin/python benchmarks/advise/overhead.py OUT --callgrind             # instructions per call

Timing: per round one plain run (no preload) and one profiled run per build (LD_PRELOAD of that
build's libcolltune, COLLTUNE_PROFILE_RUN set), in a fresh random order per round; median wall
time with a distribution-free interval, the median of the per-round ratio to plain, the load
average before each run; every run's likelihood is checked against the plain runs'.
Callgrind: rank 0 under valgrind, the other native; per intercepted call the inclusive cost of
the MPI_Reduce/MPI_Bcast wrappers minus that of the PMPI calls they make for the application
(the library's own work, whose polling depends on timing), plus where libcolltune spends it.
Reuses benchmarks/learning_runtime/apps.py (the ExaML set-up, launch lines, statistics).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "learning_runtime"))
import apps  # noqa: E402

BEFORE = "08ed143"   # main when issue 23 was taken up


def profiled_env(so: Path, root: Path, tag: str) -> dict[str, str]:
    d = root / f"p-{tag}-{next(apps._seq)}"
    shutil.rmtree(d, ignore_errors=True)
    return {"LD_PRELOAD": str(so), "COLLTUNE_PROFILE_RUN": str(d)}


def timing(app: apps.App, out: Path, builds: dict[str, Path], runs: int, seed: int) -> dict:
    configs = [("plain", None)] + [("profiled", b) for b in builds]
    rng = random.Random(seed)
    rows: list[dict] = []
    root = out / "advise-profiles"
    root.mkdir(exist_ok=True)
    for r in range(runs):
        order = configs[:]
        rng.shuffle(order)
        for mode, b in order:
            env = {} if b is None else profiled_env(builds[b], root, b)
            res = apps.run_once(app, env)
            rows.append({"round": r, "mode": mode, "build": b or "-", **res})
            print(f"  round {r} {mode:9s} {b or '-':6s} {res['wall_s']:7.3f} s  load {res['load'][0]:.2f}  "
                  f"result {res['result']!r}", flush=True)
            if b is not None:
                shutil.rmtree(env["COLLTUNE_PROFILE_RUN"], ignore_errors=True)
    plain = [x["result"] for x in rows if x["mode"] == "plain"]
    for x in rows:
        x["result_ok"] = x["result"] == plain[0]
    return {"app": app.name, "mpi": app.lib.version, "runs": rows, "summary": summarize(rows)}


def summarize(rows: list[dict]) -> list[dict]:
    plain = {x["round"]: x["wall_s"] for x in rows if x["mode"] == "plain"}
    out = []
    for b in ("-", "before", "after"):
        sel = [x for x in rows if x["build"] == b]
        if not sel:
            continue
        med, lo, hi = apps.median_interval([x["wall_s"] for x in sel])
        rmed, rlo, rhi = apps.median_interval([x["wall_s"] / plain[x["round"]] for x in sel])
        out.append({"mode": sel[0]["mode"], "build": b, "n": len(sel), "median_s": med, "lo_s": lo, "hi_s": hi,
                    "ratio": rmed, "ratio_lo": rlo, "ratio_hi": rhi,
                    "load_median": sorted(x["load"][0] for x in sel)[len(sel) // 2],
                    "results_ok": all(x["result_ok"] for x in sel)})
    return out


def callgrind(app: apps.App, out: Path, builds: dict[str, Path]) -> list[dict]:
    rows = []
    calls = sum(app.calls.values())
    root = out / "advise-profiles"
    root.mkdir(exist_ok=True)
    for b, so in builds.items():
        cg = out / f"advise-{app.name}-profiled-{b}.callgrind"
        res = apps.run_once(app, profiled_env(so, root, b),
                            wrap=["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}"], timeout=7200)
        inc, exc = apps.annotate(cg, True), apps.annotate(cg, False)
        wrappers = sum(inc.get(f"libcolltune:MPI_{c.capitalize()}", 0) for c in app.calls)
        library = sum(inc.get(f"other:PMPI_{c.capitalize()}", 0) for c in app.calls)
        top = sorted(((v / calls, k) for k, v in exc.items() if k.startswith("libcolltune:")), reverse=True)[:12]
        others = sorted(((v / calls, k) for k, v in inc.items()
                         if k.startswith("other:") and not k.startswith(("other:PMPI_Reduce", "other:PMPI_Bcast"))
                         and v / calls >= 2), reverse=True)[:25]
        row = {"build": b, "calls": calls, "per_call": (wrappers - library) / calls,
               "application": exc["(application)"], "share": (wrappers - library) / exc["(application)"],
               "result": res["result"], "libcolltune_exclusive": [(k, round(v, 1)) for v, k in top],
               "inclusive_others": [(k, round(v, 1)) for v, k in others]}
        rows.append(row)
        print(json.dumps(row, indent=1), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--builds", default="before,after")
    ap.add_argument("--callgrind", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    app = apps.examl(args.out.resolve())
    want = args.builds.split(",")
    builds = {}
    if "before" in want:
        builds["before"] = apps.before_build(args.out.resolve(), args.before, app.lib)
    if "after" in want:
        builds["after"] = apps.after_build(app.lib)
    if args.callgrind:
        res = callgrind(app, args.out, builds)
        (args.out / "overhead-callgrind-examl.json").write_text(json.dumps(res, indent=1) + "\n")
        return
    res = timing(app, args.out, builds, args.runs, args.seed)
    (args.out / "overhead-timing-examl.json").write_text(json.dumps(res, indent=1) + "\n")
    print("| build | runs | median s | interval s | vs plain (paired) | interval | load |")
    for s in res["summary"]:
        print(f"| {s['build']} | {s['n']} | {s['median_s']:.3f} | {s['lo_s']:.3f}-{s['hi_s']:.3f} | "
              f"{s['ratio']:.4f} | {s['ratio_lo']:.4f}-{s['ratio_hi']:.4f} | {s['load_median']:.2f} |")


if __name__ == "__main__":
    main()
