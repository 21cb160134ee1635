#!/usr/bin/env python3
"""Wall time of a profiled run against a plain run, one run at a time on a quiet machine.

The design for a quiet window (issue 34: the profiling run's cost <= 1% of a plain run's wall
time). Each run has the machine to itself: 2 ranks, each bound to one of the 2 cores
(`--bind-to core`), nothing else running. Runs come in blocks of four, plain (P) and profiled (Q)
in the order PQQP or QPPQ, chosen at random per block (seeded): a drift that is linear over a
block's four runs cancels in the block's ratio (Q1 + Q2) / (P1 + P2), and the random order keeps
a periodic disturbance from lining up with one mode. The wall time is the launcher's, from
mpirun's start to its exit: start-up, MPI_Init, the run, MPI_Finalize and, profiled, the rank
files written, i.e. what a user waits for. Every run's result must be the first plain run's (the
profiling never changes results). One plain and one profiled run come first, not recorded (the
case's files and the libraries into the page cache). Each profiled run's own account is kept
with it (since session 13: rank 0's sampling synchronisations and their latency sum, the larger
rank's `own_cost`, the figure the budget acts on), so that the wall-time difference can be set
against what the profiling measured of itself.

Why not concurrent runs (concurrent_time.py) or an in-run switch: concurrent runs put 6 ranks on
2 cores, so the wall time is mostly waiting for a descheduled peer (a lower bound of the cost,
+-10% a round at load 23-48, session 11); switching the profiling off and on inside one run
compares the profiled path with the preload's pass-through, not with a plain run, and misses the
one-off costs (MPI_Init's set-up, the new chains' unwinds, the rank files at MPI_Finalize).
On a quiet machine the sequential design measures exactly the bar's quantity, if its spread is
small enough: the figures and the block count it needs are in README.md ("twelfth round").

Statistics over the blocks' log ratios: the mean with its Student-t 95% interval and the median
with its distribution-free interval (paired_time.median_interval: order statistics, no
assumption on the noise's shape). The verdict is "at most 1%" only if BOTH upper ends are at most
1.01 (the claim must not depend on the choice of statistic), "over 1%" only if both lower ends
are over it, else "not resolved", with the blocks that would resolve it at the spread seen.

    bash benchmarks/advise/openfoam.sh OUT prepare 200      # the OpenFOAM case (OUT/cavity)
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app openfoam --blocks 12
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app lammps --steps 400 --blocks 12
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app openfoam --read OUT/seq-openfoam.tsv
    (--minutes M: start no block after M minutes; --append: more blocks into the same TSV;
     --lib PATH: that libcolltune.so, not this tree's)
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from paired_time import median_interval  # noqa: E402

FIELDS = ("block", "order", "pos", "mode", "wall_s", "load1", "result", "syncs", "sync_ms", "own_ms")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
OPENFOAM_RANK = """#!/bin/bash
source /usr/share/openfoam/etc/bashrc 2>/dev/null
exec icoFoam -parallel
"""


@dataclass(frozen=True)
class App:
    name: str
    work: Path
    program: list[str]        # one rank's command line (run in `work`)
    result: re.Pattern[str]   # the result line in the run's output (or `log`)
    log: str | None = None    # a file the run writes its result to, else its stdout
    clean: tuple[str, ...] = ()   # globs removed before each run (outputs that change the next)


def libcolltune() -> str:
    from colltune.mpi import build, libraries
    return str(build.ensure_built(libraries.resolve("/usr/bin/mpicc.openmpi")).libcolltune)


def openfoam(out: Path, steps: int) -> App:
    case = out / "cavity"
    if not (case / "processor1").is_dir():
        raise SystemExit(f"{case}: no decomposed case; first: bash benchmarks/advise/openfoam.sh {out} prepare {steps}")
    end = float(re.search(r"^endTime\s+(\S+);", (case / "system" / "controlDict").read_text(), re.M).group(1))
    if round(end / 0.0005) != steps:
        raise SystemExit(f"{case}: prepared for {round(end / 0.0005)} steps, not {steps}: "
                         f"bash benchmarks/advise/openfoam.sh {out} prepare {steps}")
    rank = case / "rank.sh"
    rank.write_text(OPENFOAM_RANK)
    rank.chmod(0o755)
    return App("openfoam", case, ["./rank.sh"], re.compile(r"time step continuity errors.*"),
               clean=("processor*/[1-9]*", "processor*/0.*"))


def lammps(out: Path, steps: int) -> App:
    work = out / "lammps"
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "in.lj", work / "in.lj")
    return App("lammps", work, ["/usr/bin/lmp", "-in", "in.lj", "-var", "steps", str(steps), "-screen", "none",
                                "-log", "log.run"],
               re.compile(rf"^\s*{steps}\s+\S+\s+(\S+)", re.M), log="log.run", clean=("log.run",))


APPS = {"openfoam": openfoam, "lammps": lammps}


@dataclass(frozen=True)
class Run:
    block: int
    order: str
    pos: int
    mode: str
    wall_s: float
    load: float
    result: str
    own_ms: float | None = None   # the profiled run's own account (TSVs before session 13: none)
    syncs: int | None = None


def own_account(prof: Path) -> tuple[int, float, float]:
    """What a profiled run's rank files say it cost itself: its sampling synchronisations
    (rank 0's count, the latency sum in ms) and the larger rank's own cost in ms (the figure the
    budget acts on); (0, 0, 0) for a plain run."""
    syncs, sync_ms, own_ms = 0, 0.0, 0.0
    for rank_file in sorted(prof.glob("rank-*")):
        text = rank_file.read_text()
        sy = re.search(r"^sample_syncs (\d+) (\d+)", text, re.M)
        own = re.search(r"^own_cost (\d+)", text, re.M)
        if rank_file.name == "rank-0" and sy:
            syncs, sync_ms = int(sy[1]), int(sy[2]) / 1e6
        if own:
            own_ms = max(own_ms, int(own[1]) / 1e6)
    return syncs, sync_ms, own_ms


def run_one(app: App, mode: str, lib: str, prof: Path) -> tuple[float, float, str, tuple[int, float, float]]:
    for pattern in app.clean:
        for p in app.work.glob(pattern):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    shutil.rmtree(prof, ignore_errors=True)
    extra = {"plain": [], "pass": ["-x", f"LD_PRELOAD={lib}"],
             "profiled": ["-x", f"LD_PRELOAD={lib}", "-x", f"COLLTUNE_PROFILE_RUN={prof}"]}[mode]
    argv = ["mpirun.openmpi", "--allow-run-as-root", "-np", "2", "--bind-to", "core",
            *[x for k, v in ONE_THREAD.items() for x in ("-x", f"{k}={v}")], *extra, *app.program]
    load = float(Path("/proc/loadavg").read_text().split()[0])
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=app.work, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{app.name} {mode}: exit {proc.returncode}: {' '.join(argv)}\n{proc.stderr[-3000:]}")
    text = (app.work / app.log).read_text() if app.log else proc.stdout
    found = app.result.findall(text)
    if not found:
        raise RuntimeError(f"{app.name} {mode}: no result line in its output\n{text[-2000:]}")
    if mode == "profiled" and not (prof / "rank-0").exists():
        raise RuntimeError(f"{app.name}: the profiled run wrote no {prof / 'rank-0'}")
    own = own_account(prof) if mode == "profiled" else (0, 0.0, 0.0)
    return wall, load, " ".join(str(found[-1]).split()), own


def run_blocks(app: App, tsv: Path, blocks: int, minutes: float | None, seed: int, append: bool,
               lib: str, other: str = "profiled") -> None:
    prof = app.work / "prof"
    first = 1
    if append and tsv.exists():
        with open(tsv, newline="") as f:
            first = 1 + max((int(r["block"]) for r in csv.DictReader(f, delimiter="\t")), default=0)
    rng = random.Random(seed * 1000 + first)
    deadline = time.monotonic() + minutes * 60 if minutes else math.inf
    for mode in ("plain", other):   # not recorded: the files and libraries into the page cache
        run_one(app, mode, lib, prof)
    with open(tsv, "a" if first > 1 else "w", newline="") as f:
        w = csv.writer(f, delimiter="\t")
        if first == 1:
            w.writerow(FIELDS)
        for b in range(first, first + blocks):
            if time.monotonic() > deadline:
                print(f"--minutes {minutes}: stopped before block {b}", flush=True)
                break
            order = rng.choice(("PQQP", "QPPQ"))
            walls = []
            for pos, letter in enumerate(order):
                mode = "plain" if letter == "P" else other
                wall, load, result, own = run_one(app, mode, lib, prof)
                w.writerow((b, order, pos, mode, f"{wall:.4f}", load, result, own[0], f"{own[1]:.3f}",
                            f"{own[2]:.3f}"))
                walls.append(f"{letter} {wall:.3f}")
            f.flush()
            print(f"block {b} {order}: " + ", ".join(walls), flush=True)


def read_runs(tsv: Path) -> list[Run]:
    with open(tsv, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [Run(int(r["block"]), r["order"], int(r["pos"]), r["mode"], float(r["wall_s"]), float(r["load1"]),
                r["result"], float(r["own_ms"]) if r.get("own_ms") else None,
                int(r["syncs"]) if r.get("syncs") else None) for r in rows]


def block_logs(runs: list[Run]) -> np.ndarray:
    """Each complete block's log((Q1 + Q2) / (P1 + P2)); every run's result must be the same."""
    if len({r.result for r in runs}) != 1:
        raise ValueError(f"the runs end on {len({r.result for r in runs})} different result lines: "
                         "the profiling changed a result (see the TSV's result column)")
    by: dict[int, list[Run]] = {}
    for r in runs:
        by.setdefault(r.block, []).append(r)
    logs = []
    for b in sorted(by):
        rs = by[b]
        if len(rs) != 4:
            continue   # an interrupted block
        q = sum(r.wall_s for r in rs if r.mode != "plain")
        p = sum(r.wall_s for r in rs if r.mode == "plain")
        logs.append(math.log(q / p))
    return np.array(logs)


def report(runs: list[Run], bar: float) -> list[str]:
    logs = block_logs(runs)
    n = len(logs)
    if n < 6:
        raise SystemExit(f"{n} complete blocks: at least 6 are needed for a 95% interval of the median")
    plain = np.array([r.wall_s for r in runs if r.mode == "plain"])
    prof = np.array([r.wall_s for r in runs if r.mode != "plain"])
    other = next(r.mode for r in runs if r.mode != "plain")   # profiled, or pass (--pass)
    loads = [r.load for r in runs]
    mean, sd = float(np.mean(logs)), float(np.std(logs, ddof=1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    med = median_interval(logs)
    t_lo, t_hi = math.exp(mean - half), math.exp(mean + half)
    m_lo, m_hi = math.exp(med.low), math.exp(med.high)
    lines = [
        f"{n} blocks ({len(runs)} runs, 2 ranks bound to the 2 cores); plain run median {np.median(plain):.3f} s "
        f"(spread {np.std(plain, ddof=1) / np.mean(plain):.2%}), {other} median {np.median(prof):.3f} s; "
        f"1-min load before a run {min(loads):.2f}-{max(loads):.2f}",
        f"a block's log ratio: sd {sd:.4f} (a block's ratio +-{sd:.2%})",
        f"{other} / plain, mean: {math.exp(mean):.4f}, 95% interval {t_lo:.4f}-{t_hi:.4f} (Student t)",
        f"{other} / plain, median: {math.exp(med.median):.4f}, {med.level:.1%} interval {m_lo:.4f}-{m_hi:.4f} "
        "(distribution-free)",
    ]
    own = [r.own_ms for r in runs if r.mode == "profiled" and r.own_ms is not None]
    if own:
        syncs = [r.syncs for r in runs if r.mode == "profiled" and r.syncs is not None]
        lines.append(f"the profiled runs' own account (rank files): own cost median {np.median(own):.1f} ms "
                     f"({np.median(own) / 1000 / np.median(prof):.2%} of the profiled median), "
                     f"sampling synchronisations median {np.median(syncs):.0f}")
    if t_hi <= 1 + bar and m_hi <= 1 + bar:
        v = f"at most {bar:.0%}: both upper ends ({t_hi:.4f}, {m_hi:.4f}) are at most {1 + bar:.2f}"
    elif t_lo > 1 + bar and m_lo > 1 + bar:
        v = f"over {bar:.0%}: both lower ends ({t_lo:.4f}, {m_lo:.4f}) are over {1 + bar:.2f}"
    else:
        v = f"not resolved: an interval contains {1 + bar:.2f} or ends over it"
    lines.append(f"against the {bar:.0%} bar: {v}")
    margin = math.log1p(bar) - mean
    if margin > 0:
        need = math.ceil((float(stats.norm.ppf(0.975)) * 1.2533 * sd / margin) ** 2)   # the median's, the wider
        lines.append(f"blocks that would put both upper ends under {1 + bar:.2f} at this mean and spread: ~{max(6, need)}")
    else:
        lines.append("the mean is at or over the bar: no number of blocks shows 'at most'")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the work directory (openfoam.sh OUT prepare STEPS for OpenFOAM)")
    ap.add_argument("--app", choices=sorted(APPS), required=True)
    ap.add_argument("--steps", type=int, default=200, help="time steps (OpenFOAM: as prepared)")
    ap.add_argument("--blocks", type=int, default=12, help="blocks of four runs (PQQP or QPPQ)")
    ap.add_argument("--minutes", type=float, help="start no block after this many minutes")
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--bar", type=float, default=0.01, help="the overhead bar (default 0.01: 1%%)")
    ap.add_argument("--append", action="store_true", help="more blocks into OUT/seq-APP.tsv")
    ap.add_argument("--read", type=Path, help="only the statistics of an earlier run's TSV")
    ap.add_argument("--pass", dest="pass_", action="store_true",
                    help="Q runs preload libcolltune without profiling (the preload's own cost: the "
                         "control for the profiled runs' figure); TSV OUT/seq-APP-pass.tsv")
    ap.add_argument("--lib", help="the libcolltune.so to preload (default: this tree's, built if needed)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    tsv = args.read
    if tsv is None:
        app = APPS[args.app](out, args.steps)
        tsv = out / f"seq-{args.app}{'-pass' if args.pass_ else ''}.tsv"
        run_blocks(app, tsv, args.blocks, args.minutes, args.seed, args.append, args.lib or libcolltune(),
                   "pass" if args.pass_ else "profiled")
    text = "\n".join(report(read_runs(tsv), args.bar))
    print(text)
    if args.read is None:
        (out / f"{tsv.stem}.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
