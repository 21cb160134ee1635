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

    bash benchmarks/advise/install.sh                       # ExaML, QE, HPCC, LAMMPS (apt-get)
    bash benchmarks/advise/openfoam.sh OUT prepare 200      # the OpenFOAM case (OUT/cavity)
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app openfoam --blocks 12
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app examl --check   # one P, one Q
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app lammps --steps 400 --blocks 12
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app openfoam --read OUT/seq-openfoam.tsv
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app openfoam --read D.tsv --read F.tsv --looks 3
    CELLS=100 bash benchmarks/advise/openfoam.sh OUT2 prepare 200   # 100x100: 5,000 cells a rank
    .venv/bin/python benchmarks/advise/sequential_time.py OUT2 --app openfoam --cells 100 --blocks 12
    .venv/bin/python benchmarks/advise/sequential_time.py OUT --app openfoam --modes plain,pass,profiled --minutes 30
    (--minutes M: start no block after M minutes, as many as fit unless --blocks N caps them;
     --append: more blocks into the same TSV; --read A --read B: two windows' blocks pooled, with
     --looks K: each interval at 1 - 0.05 / K for data looked at K times, Bonferroni;
     --lib PATH: that libcolltune.so, not this tree's; quiet_windows.sh: several in one window;
     --modes: blocks of one run of each mode in a random order, so that modes measured in one
     window can be set against each other, the preload's share apart from the profiling's)

The applications (APPS; 2 ranks bound to the 2 cores, OMP_NUM_THREADS=1, the inputs of the advise
benchmarks, overhead.py's set-up reused for the three it has):
  openfoam  icoFoam on the lid-driven cavity, 40x40 (--cells N: NxN), 200 steps (--steps, as
            prepared by openfoam.sh); the last continuity line; ~1.0 s a run.
  lammps    Lennard-Jones melt (in.lj, 4000 atoms), 250 steps (--steps); the last step's
            potential energy; ~0.75 s.
  examl     ExaML's 49-taxon example, GAMMA, the given tree's likelihood (`-f e -e 10`, overhead.py
            --cost's input: the full search takes ~6 s); the likelihood.
  qe        pw.x, SCF of an 8-atom silicon cell (si8.in); the total energy.
  hpcc      HPCC, Debian's example input with N=1000 on a 1x2 grid (overhead.py --cost's; N=2000
            takes ~2.4 s); Success=1, then HPL's residual norm (HPL_RnormI).
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
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from paired_time import median_interval  # noqa: E402

FIELDS = ("block", "order", "pos", "mode", "wall_s", "load1", "result", "syncs", "sync_ms", "own_ms")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
# The preload (and so libmpi's tree, libcolltune's DT_NEEDED) goes to icoFoam alone: OpenFOAM's
# bashrc forks ~20 subshells, and a bash started with LD_PRELOAD has libmpi's tree mapped in each
# of them (~0.13 ms more a fork and exit), whatever it unsets afterwards (until the twentieth
# round, this script's `unset LD_PRELOAD` came too late: +6.2 ms a rank, README "twentieth
# round"). So mpirun hands the library over as RANK_PRELOAD, and only the exec of icoFoam has it.
# The one rank script of the OpenFOAM harnesses (openfoam_phases.py and concurrent_time.py add a
# line before the exec or wrap it); openfoam.sh, in bash, writes the same lines.


def openfoam_rank(before: str = "", run: str = "exec icoFoam -parallel") -> str:
    return ("#!/bin/bash\n"
            "source /usr/share/openfoam/etc/bashrc 2>/dev/null\n"
            '[ -n "${RANK_PRELOAD-}" ] && export LD_PRELOAD=$RANK_PRELOAD\n'
            "unset RANK_PRELOAD\n"
            + (f"{before}\n" if before else "") + f"{run}\n")


OPENFOAM_RANK = openfoam_rank()


@dataclass(frozen=True)
class App:
    name: str
    work: Path
    program: list[str]        # one rank's command line (run in `work`)
    result: re.Pattern[str]   # the result line in the run's output (or `log`)
    log: str | None = None    # a file the run writes its result to, else its stdout
    clean: tuple[str, ...] = ()   # globs removed before each run (outputs that change the next)
    variant: str = ""         # in the TSV's name: an input other than the bar's (OpenFOAM's --cells)
    preload: str = "LD_PRELOAD"   # the variable mpirun gives the library in (OPENFOAM_RANK's)


@dataclass(frozen=True)
class Case:
    """The size options of the command line; each application reads the ones it has."""
    steps: int | None = None   # OpenFOAM, LAMMPS (None: the application's default)
    cells: int | None = None   # OpenFOAM: cells a side (None: the bar's 40)


def libcolltune() -> str:
    from colltune.mpi import build, libraries
    return str(build.ensure_built(libraries.resolve("/usr/bin/mpicc.openmpi")).libcolltune)


OPENFOAM_STEPS, OPENFOAM_CELLS, LAMMPS_STEPS = 200, 40, 250


def openfoam(out: Path, case: Case) -> App:
    steps, cells = case.steps or OPENFOAM_STEPS, case.cells or OPENFOAM_CELLS
    work = out / "cavity"
    size = "" if cells == OPENFOAM_CELLS else f"CELLS={cells} "
    prepare = f"{size}bash benchmarks/advise/openfoam.sh {out} prepare {steps}"
    if not (work / "processor1").is_dir():
        raise SystemExit(f"{work}: no decomposed case; first: {prepare}")
    end = float(re.search(r"^endTime\s+(\S+);", (work / "system" / "controlDict").read_text(), re.M).group(1))
    if round(end / 0.0005) != steps:
        raise SystemExit(f"{work}: prepared for {round(end / 0.0005)} steps, not {steps}: {prepare}")
    mesh = re.search(r"^\s*hex\s*\([^)]*\)\s*\((\d+)\s+(\d+)\s+1\)",
                     (work / "system" / "blockMeshDict").read_text(), re.M)
    if mesh is None or (int(mesh[1]), int(mesh[2])) != (cells, cells):
        got = f"{mesh[1]}x{mesh[2]}" if mesh else "an unknown mesh"
        raise SystemExit(f"{work}: prepared with {got} cells, not {cells}x{cells}: {prepare}")
    rank = work / "rank.sh"
    rank.write_text(OPENFOAM_RANK)
    rank.chmod(0o755)
    return App("openfoam", work, ["./rank.sh"], re.compile(r"time step continuity errors.*"),
               clean=("processor*/[1-9]*", "processor*/0.*"),
               variant="" if cells == OPENFOAM_CELLS else f"-{cells}cells", preload="RANK_PRELOAD")


def lammps(out: Path, case: Case) -> App:
    steps = case.steps or LAMMPS_STEPS
    work = out / "lammps"
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "in.lj", work / "in.lj")
    return App("lammps", work, ["/usr/bin/lmp", "-in", "in.lj", "-var", "steps", str(steps), "-screen", "none",
                                "-log", "log.run"],
               re.compile(rf"^\s*{steps}\s+\S+\s+(\S+)", re.M), log="log.run", clean=("log.run",))


def _overhead_app(name: str, out: Path):   # -> overhead.py's apps.App with its --cost input
    """overhead.py's set-up of an application (the same input files as the advise benchmarks),
    with its --cost input (the smaller one: a run of 1-3 s here)."""
    import overhead   # imports colltune: only when an application is run, not for --read
    app, _prepare = overhead.APPS[name](out)
    overhead.cost_input(name, app)
    return app


def examl(out: Path, case: Case) -> App:
    # ExaML refuses to overwrite its output files (ExaML_info.NAME, ...): they go before each run
    app = _overhead_app("examl", out)
    return App("examl", app.work, [*app.program, "seq"], app.result, clean=("ExaML_*",))


def qe(out: Path, case: Case) -> App:
    # pw.x restarts from nothing only if its outdir (the wave functions, the charge density) is gone
    app = _overhead_app("qe", out)
    return App("qe", app.work, app.program, app.result, clean=("qe-out", "CRASH"))


def hpcc(out: Path, case: Case) -> App:
    # HPCC appends to hpccoutf.txt. Success=1 (every test passed) alone is a weak check: with it,
    # HPL's residual norm from the summary, a number of the run's own (the same in every run: the
    # same matrix, decomposition and reduction order)
    app = _overhead_app("hpcc", out)
    return App("hpcc", app.work, app.program, re.compile(r"^Success=1$(?:.|\n)*?^HPL_RnormI=(\S+)$", re.M),
               log="hpccoutf.txt", clean=("hpccoutf.txt",))


APPS = {"openfoam": openfoam, "lammps": lammps, "examl": examl, "qe": qe, "hpcc": hpcc}


def tsv_name(app: App, other: str) -> str:
    """The TSV of an application's blocks: seq-APP[-Ncells][-pass].tsv."""
    return f"seq-{app.name}{app.variant}{'-pass' if other == 'pass' else ''}.tsv"


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


def parse_mode(label: str) -> tuple[str, dict[str, str]]:
    """A mode of --modes: plain, pass or profiled, then settings of the run's own
    (`profiled:COLLTUNE_PROFILE_RUN_SAMPLE=0:COLLTUNE_PROFILE_RUN_LIGHT=1`)."""
    base, *settings = label.split(":")
    if base not in ("plain", "pass", "profiled"):
        raise ValueError(f"mode {label!r}: it starts with plain, pass or profiled")
    env = {}
    for item in settings:
        key, eq, value = item.partition("=")
        if not eq or not key.startswith("COLLTUNE_") or any(c.isspace() for c in item):
            raise ValueError(f"mode {label!r}: {item!r} is not a COLLTUNE_NAME=VALUE setting")
        env[key] = value
    if base == "plain" and env:
        raise ValueError(f"mode {label!r}: a plain run has no colltune settings")
    return base, env


def run_one(app: App, mode: str, lib: str, prof: Path) -> tuple[float, float, str, tuple[int, float, float]]:
    for pattern in app.clean:
        for p in app.work.glob(pattern):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    shutil.rmtree(prof, ignore_errors=True)
    base, settings = parse_mode(mode)
    extra = {"plain": [], "pass": ["-x", f"{app.preload}={lib}"],
             "profiled": ["-x", f"{app.preload}={lib}", "-x", f"COLLTUNE_PROFILE_RUN={prof}"]}[base]
    extra += [x for k, v in settings.items() for x in ("-x", f"{k}={v}")]
    mode = base
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


def _run_drawn_blocks(app: App, tsv: Path, warm: tuple[str, ...] | list[str],
                      draw: Callable[[random.Random], tuple[str, list[str]]], blocks: int,
                      minutes: float | None, seed: int, append: bool, lib: str) -> None:
    """Blocks of runs, each block's order drawn by `draw` (its `order` column, its modes in the
    order run), after one unrecorded run of each mode of `warm` (the files and libraries into the
    page cache); appended to the TSV's blocks with --append."""
    prof = app.work / "prof"
    first = 1
    if append and tsv.exists():
        with open(tsv, newline="") as f:
            first = 1 + max((int(r["block"]) for r in csv.DictReader(f, delimiter="\t")), default=0)
    rng = random.Random(seed * 1000 + first)
    deadline = time.monotonic() + minutes * 60 if minutes else math.inf
    for mode in warm:
        run_one(app, mode, lib, prof)
    with open(tsv, "a" if first > 1 else "w", newline="") as f:
        w = csv.writer(f, delimiter="\t")
        if first == 1:
            w.writerow(FIELDS)
        for b in range(first, first + blocks):
            if time.monotonic() > deadline:
                print(f"--minutes {minutes}: stopped before block {b}", flush=True)
                break
            order, modes = draw(rng)
            walls = []
            for pos, mode in enumerate(modes):
                wall, load, result, own = run_one(app, mode, lib, prof)
                w.writerow((b, order, pos, mode, f"{wall:.4f}", load, result, own[0], f"{own[1]:.3f}",
                            f"{own[2]:.3f}"))
                walls.append(f"{mode} {wall:.3f}")
            f.flush()
            print(f"block {b} {order}: " + ", ".join(walls), flush=True)


def run_blocks(app: App, tsv: Path, blocks: int, minutes: float | None, seed: int, append: bool,
               lib: str, other: str = "profiled") -> None:
    def draw(rng: random.Random) -> tuple[str, list[str]]:
        order = rng.choice(("PQQP", "QPPQ"))
        return order, ["plain" if letter == "P" else other for letter in order]

    _run_drawn_blocks(app, tsv, ("plain", other), draw, blocks, minutes, seed, append, lib)


def run_mode_blocks(app: App, tsv: Path, modes: list[str], blocks: int, minutes: float | None, seed: int,
                    append: bool, lib: str) -> None:
    """Blocks of one run of each mode, in an order drawn per block (seeded): every mode meets
    the same stretch of the machine's drift, so modes can be compared with each other (windows
    taken at different times differ by ~0.5%: README "eighteenth round"). `order`: the modes'
    indexes in the order run."""
    def draw(rng: random.Random) -> tuple[str, list[str]]:
        order = list(range(len(modes)))
        rng.shuffle(order)
        return "".join(map(str, order)), [modes[i] for i in order]

    _run_drawn_blocks(app, tsv, modes, draw, blocks, minutes, seed, append, lib)


def check(app: App, lib: str, other: str = "profiled") -> list[str]:
    """One plain and one `other` run, not recorded (what quiet_windows.sh prepare runs: the
    application, its input and the library work before the window, and what a run takes)."""
    prof = app.work / "prof"
    lines, results, walls = [], [], []
    for mode in ("plain", other):
        wall, load, result, own = run_one(app, mode, lib, prof)
        results.append(result)
        walls.append(wall)
        account = f"; own account {own[2]:.1f} ms, {own[0]} synchronisations" if mode == "profiled" else ""
        lines.append(f"{app.name}{app.variant} {mode}: {wall:.3f} s (load {load:.2f}){account}; result {result}")
    if results[0] != results[1]:
        raise RuntimeError(f"{app.name}: the {other} run's result differs from the plain run's: {results}")
    # what --minutes to give for 100 blocks, if the machine stays as it is now (quiet: right)
    lines.append(f"a block (2 + 2 runs) ~{2 * sum(walls):.1f} s: 100 blocks in ~{2 * sum(walls) * 100 / 60:.0f} min")
    return lines


def read_pooled(tsvs: list[Path]) -> list[Run]:
    """The runs of several windows' TSVs as one window's: each file's blocks numbered apart
    (BLOCK_STRIDE * its index + its own number), so that no two files' blocks merge."""
    runs: list[Run] = []
    for i, tsv in enumerate(tsvs):
        runs += [replace(r, block=i * BLOCK_STRIDE + r.block) for r in read_runs(tsv)]
    return runs


BLOCK_STRIDE = 1_000_000


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


MIN_BLOCKS = 6   # the fewest for a 95% distribution-free interval of the median


def mode_logs(runs: list[Run], mode: str, base: str) -> np.ndarray:
    """A --modes TSV: each block's log(mode's wall / base's wall), over the blocks that have one
    run of each; every run's result must be the same."""
    if len({r.result for r in runs}) != 1:
        raise ValueError(f"the runs end on {len({r.result for r in runs})} different result lines: "
                         "the profiling changed a result (see the TSV's result column)")
    by: dict[int, dict[str, list[float]]] = {}
    for r in runs:
        by.setdefault(r.block, {}).setdefault(r.mode, []).append(r.wall_s)
    return np.array([math.log(m[mode][0] / m[base][0]) for _, m in sorted(by.items())
                     if len(m.get(mode, ())) == 1 and len(m.get(base, ())) == 1])


def ratio_lines(logs: np.ndarray, label: str, bar: float, confidence: float = 0.95) -> list[str]:
    """The mean (Student t) and median (distribution-free) of a ratio's logs with their
    intervals (95%, or `confidence`) and the verdict against the bar: "at most" only if both
    upper ends are at most 1 + bar, "over" only if both lower ends are over it."""
    n = len(logs)
    mean, sd = float(np.mean(logs)), float(np.std(logs, ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    med = median_interval(logs, confidence)
    t_lo, t_hi = math.exp(mean - half), math.exp(mean + half)
    m_lo, m_hi = math.exp(med.low), math.exp(med.high)
    if t_hi <= 1 + bar and m_hi <= 1 + bar:
        v = f"at most {bar:.0%}"
    elif t_lo > 1 + bar and m_lo > 1 + bar:
        v = f"over {bar:.0%}"
    else:
        v = "not resolved"
    return [f"{label}: {n} blocks, mean {math.exp(mean):.4f} ({t_lo:.4f}-{t_hi:.4f}), median "
            f"{math.exp(med.median):.4f} ({m_lo:.4f}-{m_hi:.4f}, {med.level:.1%}); a block's ratio "
            f"+-{sd:.2%}; against the {bar:.0%} bar: {v}"]


def report_modes(runs: list[Run], bar: float, confidence: float = 0.95) -> list[str]:
    """A --modes TSV: each mode against plain, and each profiled mode against pass where both
    were run (what the profiling adds to the preload)."""
    modes = list(dict.fromkeys(r.mode for r in runs))
    loads = [r.load for r in runs]
    lines = [f"{len({r.block for r in runs})} blocks of {len(modes)} modes ({len(runs)} runs, 2 ranks bound to "
             f"the 2 cores); 1-min load before a run {min(loads):.2f}-{max(loads):.2f}"]
    lines += [f"{m}: median run {np.median([r.wall_s for r in runs if r.mode == m]):.3f} s" for m in modes]
    pairs = [(m, "plain") for m in modes if m != "plain" and "plain" in modes]
    pairs += [(m, "pass") for m in modes if m.startswith("profiled") and "pass" in modes]
    for mode, base in pairs:
        logs = mode_logs(runs, mode, base)
        if len(logs) < MIN_BLOCKS:
            lines.append(f"{mode} / {base}: {len(logs)} blocks, no verdict (at least {MIN_BLOCKS} are needed)")
        else:
            lines += ratio_lines(logs, f"{mode} / {base}", bar, confidence)
    own = [r.own_ms for r in runs if r.mode.startswith("profiled") and r.own_ms is not None]
    if own:
        lines.append(f"the profiled runs' own account (rank files): own cost median {np.median(own):.1f} ms")
    return lines


def percent(confidence: float) -> str:
    return f"{confidence:.0%}" if abs(confidence * 100 - round(confidence * 100)) < 1e-9 else f"{confidence:.2%}"


def looks_confidence(looks: int) -> float:
    """Each interval's level when the data were looked at `looks` times (the windows' interim
    reports, a window continued with --append, windows pooled): Bonferroni, 1 - 0.05 / looks,
    so that a verdict reached at any of the looks is still wrong at most 5% of the time."""
    if looks < 1:
        raise ValueError(f"--looks {looks}: at least 1")
    return 1 - 0.05 / looks


def report(runs: list[Run], bar: float, confidence: float = 0.95) -> list[str]:
    """The statistics of a TSV's runs; under MIN_BLOCKS complete blocks (a dry run, a window cut
    short) only the run times and the own account, and no verdict. Intervals at 95%, or
    `confidence` (looks_confidence)."""
    logs = block_logs(runs)
    n = len(logs)
    if n == 0:
        return [f"0 complete blocks ({len(runs)} runs): nothing to report"]
    plain = np.array([r.wall_s for r in runs if r.mode == "plain"])
    prof = np.array([r.wall_s for r in runs if r.mode != "plain"])
    other = next(r.mode for r in runs if r.mode != "plain")   # profiled, or pass (--pass)
    loads = [r.load for r in runs]
    lines = [
        f"{n} blocks ({len(runs)} runs, 2 ranks bound to the 2 cores); plain run median {np.median(plain):.3f} s "
        f"(spread {np.std(plain, ddof=1) / np.mean(plain):.2%}), {other} median {np.median(prof):.3f} s; "
        f"1-min load before a run {min(loads):.2f}-{max(loads):.2f}",
    ]
    own = [r.own_ms for r in runs if r.mode == "profiled" and r.own_ms is not None]
    if own:
        syncs = [r.syncs for r in runs if r.mode == "profiled" and r.syncs is not None]
        account = (f"the profiled runs' own account (rank files): own cost median {np.median(own):.1f} ms "
                   f"({np.median(own) / 1000 / np.median(prof):.2%} of the profiled median), "
                   f"sampling synchronisations median {np.median(syncs):.0f}")
    if n < MIN_BLOCKS:
        return [*lines, *([account] if own else []),
                f"no verdict: {n} complete blocks, at least {MIN_BLOCKS} are needed for a 95% interval of the median"]
    mean, sd = float(np.mean(logs)), float(np.std(logs, ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    med = median_interval(logs, confidence)
    t_lo, t_hi = math.exp(mean - half), math.exp(mean + half)
    m_lo, m_hi = math.exp(med.low), math.exp(med.high)
    lines += [
        # skewness: whether the median's position against the mean says anything (session 22
        # read window D's median above its mean as a skew; the ratios' skewness was 0.02)
        f"a block's log ratio: sd {sd:.4f} (a block's ratio +-{sd:.2%}), skewness {float(stats.skew(logs)):+.2f}",
        f"{other} / plain, mean: {math.exp(mean):.4f}, {percent(confidence)} interval {t_lo:.4f}-{t_hi:.4f} (Student t)",
        f"{other} / plain, median: {math.exp(med.median):.4f}, {med.level:.1%} interval {m_lo:.4f}-{m_hi:.4f} "
        "(distribution-free)",
    ]
    if own:
        lines.append(account)
    if t_hi <= 1 + bar and m_hi <= 1 + bar:
        v = f"at most {bar:.0%}: both upper ends ({t_hi:.4f}, {m_hi:.4f}) are at most {1 + bar:.2f}"
    elif t_lo > 1 + bar and m_lo > 1 + bar:
        v = f"over {bar:.0%}: both lower ends ({t_lo:.4f}, {m_lo:.4f}) are over {1 + bar:.2f}"
    else:
        v = f"not resolved: an interval contains {1 + bar:.2f} or ends over it"
    lines.append(f"against the {bar:.0%} bar: {v}")
    margin = math.log1p(bar) - mean
    if margin > 0:
        need = math.ceil((float(stats.norm.ppf(0.5 + confidence / 2)) * 1.2533 * sd / margin) ** 2)   # the median's
        lines.append(f"blocks that would put both upper ends under {1 + bar:.2f} at this mean and spread: ~{max(6, need)}")
    else:
        lines.append("the mean is at or over the bar: no number of blocks shows 'at most'")
    return lines


DEFAULT_BLOCKS = 12
UNBOUNDED_BLOCKS = 1_000_000


def block_count(blocks: int | None, minutes: float | None) -> int:
    """--minutes alone: as many blocks as the minutes hold (it once stopped at the default's 12,
    a window of 40 s, session 23); --blocks alone or neither: that many; both: whichever ends
    first."""
    if blocks is not None:
        return blocks
    return UNBOUNDED_BLOCKS if minutes is not None else DEFAULT_BLOCKS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the work directory (openfoam.sh OUT prepare STEPS for OpenFOAM)")
    ap.add_argument("--app", choices=sorted(APPS), required=True)
    ap.add_argument("--steps", type=int, help=f"time steps (OpenFOAM: as prepared, default {OPENFOAM_STEPS}; "
                                              f"LAMMPS: default {LAMMPS_STEPS})")
    ap.add_argument("--cells", type=int, help=f"OpenFOAM: cells a side, as prepared (default {OPENFOAM_CELLS}, the "
                                              "bar's; another size: TSV OUT/seq-openfoam-Ncells.tsv)")
    ap.add_argument("--blocks", type=int, help=f"blocks of four runs (PQQP or QPPQ; default {DEFAULT_BLOCKS}, "
                                               "with --minutes as many as its minutes hold)")
    ap.add_argument("--minutes", type=float, help="start no block after this many minutes (counted from before "
                                                   "the two unrecorded first runs)")
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--bar", type=float, default=0.01, help="the overhead bar (default 0.01: 1%%)")
    ap.add_argument("--append", action="store_true", help="more blocks into OUT/seq-APP.tsv")
    ap.add_argument("--read", type=Path, action="append",
                    help="only the statistics of an earlier run's TSV; repeated: the windows' blocks pooled "
                         "(give --looks)")
    ap.add_argument("--looks", type=int, default=1,
                    help="how many times these data have been looked at (interim reports, --append, pooled "
                         "windows): each interval at 1 - 0.05 / LOOKS (Bonferroni; default 1: 95%%)")
    ap.add_argument("--no-report", action="store_true",
                    help="only the blocks, no statistics after them (quiet_windows.sh reads every TSV at the end)")
    ap.add_argument("--check", action="store_true",
                    help="only one plain and one profiled (--pass: preloaded) run, not recorded")
    ap.add_argument("--pass", dest="pass_", action="store_true",
                    help="Q runs preload libcolltune without profiling (the preload's own cost: the "
                         "control for the profiled runs' figure); TSV OUT/seq-APP-pass.tsv")
    ap.add_argument("--modes", help="blocks of one run of each mode, in a random order each (a comma list of "
                                    "plain, pass, profiled, each with its own COLLTUNE_ settings after colons: "
                                    "plain,pass,profiled,profiled:COLLTUNE_PROFILE_RUN_SAMPLE=0); "
                                    "TSV OUT/seq-APP-modes.tsv (--read knows such a TSV by its orders)")
    ap.add_argument("--lib", help="the libcolltune.so to preload (default: this tree's, built if needed)")
    args = ap.parse_args(argv)
    args.blocks = block_count(args.blocks, args.minutes)
    try:
        confidence = looks_confidence(args.looks)
    except ValueError as e:
        ap.error(str(e))
    if args.cells is not None and args.app != "openfoam":
        ap.error("--cells is OpenFOAM's")
    if args.steps is not None and args.app not in ("openfoam", "lammps"):
        ap.error(f"--steps: {args.app} has a fixed input")
    out = args.out.resolve()
    other = "pass" if args.pass_ else "profiled"
    modes = [m for m in (args.modes or "").split(",") if m]
    try:
        for m in modes:
            parse_mode(m)
    except ValueError as e:
        ap.error(f"--modes: {e}")
    if args.modes is not None and (len(set(modes)) < 2 or len(set(modes)) != len(modes)):
        ap.error("--modes: two or more different modes (e.g. plain,pass,profiled)")
    if args.modes is not None and args.pass_:
        ap.error("--modes and --pass: give pass as one of the modes")
    tsvs: list[Path] = args.read or []
    if len(tsvs) > 1 and args.looks == 1:
        print(f"note: {len(tsvs)} windows pooled at --looks 1: each window was looked at on its own "
              "before; give --looks", file=sys.stderr)
    if not tsvs and modes:
        app = APPS[args.app](out, Case(args.steps, args.cells))
        tsvs = [out / f"seq-{app.name}{app.variant}-modes.tsv"]
        run_mode_blocks(app, tsvs[0], modes, args.blocks, args.minutes, args.seed, args.append,
                        args.lib or libcolltune())
        if args.no_report:
            return 0
    if modes or (tsvs and any(r.order.isdigit() for r in read_pooled(tsvs))):   # (--modes: indexes)
        text = "\n".join(report_modes(read_pooled(tsvs), args.bar, confidence))
        print(text)
        if args.read is None:
            (out / f"{tsvs[0].stem}.txt").write_text(text + "\n")
        return 0
    if not tsvs:
        app = APPS[args.app](out, Case(args.steps, args.cells))
        lib = args.lib or libcolltune()
        if args.check:
            print("\n".join(check(app, lib, other)))
            return 0
        tsvs = [out / tsv_name(app, other)]
        run_blocks(app, tsvs[0], args.blocks, args.minutes, args.seed, args.append, lib, other)
        if args.no_report:
            return 0
    runs = read_pooled(tsvs)
    text = "\n".join(report(runs, args.bar, confidence))
    print(text)
    if args.read is None:
        (out / f"{tsvs[0].stem}.txt").write_text(text + "\n")
    return 0 if len(block_logs(runs)) >= MIN_BLOCKS else 1

if __name__ == "__main__":
    sys.exit(main())
