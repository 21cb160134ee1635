#!/usr/bin/env python3
"""Where a profiled OpenFOAM run's extra wall time goes: start-up, MPI_Init, the steps, MPI_Finalize, exit.

Every run, plain or not, preloads the same small shim first (phase_shim.c, built here with
mpicc.openmpi): it stamps the clock and the process's CPU time and minor page faults at its
constructor, around MPI_Init(_thread) and MPI_Finalize, and at its destructor, per rank; the rank
script stamps the clock just before `exec icoFoam`. Three modes: plain (the shim only), pass
(libcolltune preloaded after it, profiling off: the pass-through's and the library load's cost)
and profiled (COLLTUNE_PROFILE_RUN set, chains on); nosync (--modes): profiled without the sampling
synchronisations (COLLTUNE_PROFILE_RUN_SAMPLE=0); plain-file (--modes): plain with icoFoam's output
written to a file by the rank script instead of through mpirun (the ranks' involuntary context
switches, ivcs, show what forwarding ~2,000 lines a run costs the ranks' cores). Two run lengths
(e.g. 100 and 400 steps) separate a fixed cost from a per-step one. Runs in a fresh random order
per round (seeded), one at a time, ranks bound to the 2 cores, as sequential_time.py runs them.

Phases per rank (seconds): load = exec -> shim constructor (ld.so maps and relocates every
library, libcolltune's among them); pre = constructor -> MPI_Init (OpenFOAM's own start-up);
init = MPI_Init; body = MPI_Init's return -> MPI_Finalize (the time steps); fin = MPI_Finalize;
exit = MPI_Finalize's return -> the shim's destructor; tail = the launcher's end - the latest
destructor (process teardown, mpirun's exit).

    bash benchmarks/advise/openfoam.sh OUT100 prepare 100; bash benchmarks/advise/openfoam.sh OUT400 prepare 400
    .venv/bin/python benchmarks/advise/openfoam_phases.py OUT100 OUT400 --rounds 6 --tsv phases.tsv
    .venv/bin/python benchmarks/advise/openfoam_phases.py --read phases.tsv
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sequential_time import libcolltune, openfoam_rank  # noqa: E402

MODES = ("plain", "plain-file", "pass", "profiled", "nosync")
MARKS = ("ctor", "init0", "init1", "fin0", "fin1", "dtor")
PHASES = ("load", "pre", "init", "body", "fin", "exit")
FIELDS = ("round", "steps", "mode", "rank", "wall_s", *PHASES, "tail", "cpu_user", "cpu_sys", "minflt",
          "body_user", "body_sys", "body_minflt", "fixed_user", "fixed_sys", "syncs", "sync_ms", "own_ms",
          "widened", "narrowed", "ivcs", "body_ivcs", "result")
# sequential_time.py's rank script (the library as RANK_PRELOAD, exported for the exec alone),
# with the clock stamped before the exec
EXEC_STAMP = 'echo "$EPOCHREALTIME" > "$PHASE_OUT.exec.$OMPI_COMM_WORLD_RANK"'
RANK = openfoam_rank(EXEC_STAMP)
# plain-file: the output into the case (log.rank0, log.rank1), not through mpirun's forwarding,
# which wakes a kworker (the pty's flush_to_ldisc) and mpirun on the ranks' cores at every line
RANK_FILE = openfoam_rank(EXEC_STAMP, "exec icoFoam -parallel > log.rank$OMPI_COMM_WORLD_RANK 2>&1")


def build_shim(out: Path) -> Path:
    so = out / "phase_shim.so"
    subprocess.run(["mpicc.openmpi", "-O2", "-shared", "-fPIC", "-o", str(so), str(HERE / "phase_shim.c"), "-ldl"],
                   check=True)
    return so


def read_marks(path: Path) -> dict[str, tuple[float, ...]]:
    marks = {}
    for line in path.read_text().split("\n"):
        if line:
            name, *vals = line.split()
            marks[name] = tuple(float(v) for v in vals)
    return marks


def prof_figures(path: Path) -> dict:
    """The rank file's own account of its cost: synchronisations (count, ms), own cost (ms),
    the sampling period's changes (all 0 for a run that was not profiled)."""
    if not path.exists():
        return {"syncs": 0, "sync_ms": 0.0, "own_ms": 0.0, "widened": 0, "narrowed": 0}
    text = path.read_text()
    syncs = re.search(r"^sample_syncs (\d+) (\d+)", text, re.M)
    own = re.search(r"^own_cost (\d+) (\d+) (\d+)", text, re.M)
    return {"syncs": int(syncs[1]), "sync_ms": int(syncs[2]) / 1e6, "own_ms": int(own[1]) / 1e6,
            "widened": int(own[2]), "narrowed": int(own[3])}


def run_one(case: Path, steps: int, mode: str, shim: Path, lib: str, rnd: int) -> list[dict]:
    for pattern in ("processor*/[1-9]*", "processor*/0.*"):
        for p in case.glob(pattern):
            shutil.rmtree(p)
    prof, stamp = case / "prof", case / "phase"
    shutil.rmtree(prof, ignore_errors=True)
    preload = str(shim) if mode.startswith("plain") else f"{shim}:{lib}"
    env = ["-x", f"RANK_PRELOAD={preload}", "-x", f"PHASE_OUT={stamp}", "-x", "OMP_NUM_THREADS=1"]
    if mode in ("profiled", "nosync"):
        env += ["-x", f"COLLTUNE_PROFILE_RUN={prof}"]
    if mode == "nosync":   # no sampling synchronisation: the call path alone
        env += ["-x", "COLLTUNE_PROFILE_RUN_SAMPLE=0"]
    argv = ["mpirun.openmpi", "--allow-run-as-root", "-np", "2", "--bind-to", "core", *env,
            "./rank-file.sh" if mode == "plain-file" else "./rank.sh"]
    t0 = time.time()
    proc = subprocess.run(argv, cwd=case, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    t1 = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"{mode}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    output = (case / "log.rank0").read_text() if mode == "plain-file" else proc.stdout
    cont = re.findall(r"time step continuity errors.*", output)
    if mode in ("profiled", "nosync") and not (prof / "rank-0").exists():
        raise RuntimeError("the profiled run wrote no rank-0")
    rows = []
    own = {r: prof_figures(prof / f"rank-{r}") for r in (0, 1)}
    marks = {r: read_marks(Path(f"{stamp}.{r}")) for r in (0, 1)}
    last = max(m["dtor"][0] for m in marks.values())
    for r in (0, 1):
        m = marks[r]
        t = {k: m[k][0] for k in MARKS}
        t_exec = float(Path(f"{stamp}.exec.{r}").read_text())
        user, sys_, flt = m["dtor"][1], m["dtor"][2], m["dtor"][3]
        bu, bs, bf = (m["fin0"][i] - m["init1"][i] for i in (1, 2, 3))
        rows.append({
            "round": rnd, "steps": steps, "mode": mode, "rank": r, "wall_s": round(t1 - t0, 6),
            "load": t["ctor"] - t_exec, "pre": t["init0"] - t["ctor"], "init": t["init1"] - t["init0"],
            "body": t["fin0"] - t["init1"], "fin": t["fin1"] - t["fin0"], "exit": t["dtor"] - t["fin1"],
            "tail": t1 - last, "cpu_user": user, "cpu_sys": sys_, "minflt": int(flt),
            "body_user": bu, "body_sys": bs, "body_minflt": int(bf),
            "fixed_user": user - bu, "fixed_sys": sys_ - bs, **own[r],
            "ivcs": int(m["dtor"][5]), "body_ivcs": int(m["fin0"][5] - m["init1"][5]),
            "result": " ".join(cont[-1].split()) if cont else "-"})
    return rows


def summarize(rows: list[dict]) -> list[str]:
    lines = []
    steps = sorted({int(r["steps"]) for r in rows})
    cols = ("wall_s", *PHASES, "tail", "cpu_user", "cpu_sys", "minflt", "fixed_user", "fixed_sys",
            "body_user", "body_sys", "body_ivcs", "syncs", "sync_ms", "own_ms")
    cols = tuple(c for c in cols if c in rows[0])   # (the first TSV, 21:46 UTC, has no own account)
    for s in steps:
        for rank in (0, 1):
            lines.append(f"{s} steps, rank {rank}: medians (ms; minflt count), n per mode")
            lines.append(f"  {'mode':9s}" + "".join(f"{c:>11s}" for c in cols))
            base = None
            for mode in MODES:
                sel = [r for r in rows if int(r["steps"]) == s and int(r["rank"]) == rank and r["mode"] == mode]
                if not sel:
                    continue
                med = {c: float(np.median([float(r[c]) for r in sel])) for c in cols}
                base = base or med
                scale = {c: 1 if c in ("minflt", "body_ivcs", "syncs", "sync_ms", "own_ms") else 1000 for c in cols}
                lines.append(f"  {mode:9s}" + "".join(f"{med[c] * scale[c]:11.1f}" for c in cols) + f"  n={len(sel)}")
                if mode != "plain":
                    lines.append(f"  {'- plain':9s}" + "".join(f"{(med[c] - base[c]) * scale[c]:11.1f}" for c in cols))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", type=Path, help="openfoam.sh OUT dirs, each prepared for its step count")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--modes", default="plain,pass,profiled")
    ap.add_argument("--tsv", type=Path, help="the runs' rows (appended)")
    ap.add_argument("--read", type=Path, help="only the summary of an earlier TSV")
    ap.add_argument("--lib", help="the libcolltune.so to preload (default: this tree's)")
    args = ap.parse_args(argv)
    if args.read:
        with open(args.read, newline="") as f:
            print("\n".join(summarize(list(csv.DictReader(f, delimiter="\t")))))
        return 0
    lib = args.lib or libcolltune()
    modes = args.modes.split(",")
    work = args.cases[0].resolve()
    shim = build_shim(work)
    cases = []
    for out in args.cases:
        case = out.resolve() / "cavity"
        end = float(re.search(r"^endTime\s+(\S+);", (case / "system" / "controlDict").read_text(), re.M).group(1))
        for name, text in (("rank.sh", RANK), ("rank-file.sh", RANK_FILE)):
            (case / name).write_text(text)
            (case / name).chmod(0o755)
        cases.append((case, round(end / 0.0005)))
    rng = random.Random(args.seed)
    rows: list[dict] = []
    tsv = args.tsv or work / "phases.tsv"
    new = not tsv.exists()
    with open(tsv, "a", newline="") as f:
        w = csv.DictWriter(f, FIELDS, delimiter="\t")
        if new:
            w.writeheader()
        for case, steps in cases:   # not recorded: page cache
            run_one(case, steps, "profiled", shim, lib, -1)
        for rnd in range(args.rounds):
            order = [(c, s, m) for c, s in cases for m in modes]
            rng.shuffle(order)
            for case, steps, mode in order:
                got = run_one(case, steps, mode, shim, lib, rnd)
                rows += got
                w.writerows(got)
                f.flush()
            print(f"round {rnd} done", flush=True)
    print("\n".join(summarize(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
