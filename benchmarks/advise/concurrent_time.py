#!/usr/bin/env python3
"""OpenFOAM's time, profiled against plain, measured on runs that share the machine's moments.

Why not run after run (paired_time.py): on this shared 2-core machine the other work's load
drifts over minutes (0.7 to 25 within a session), and a 2-rank icoFoam, whose ranks meet at
~250 synchronising calls a step, runs 1x to 70x slower with it; two plain runs one after the
other differed by +-5% at load ~1 (session 9), and ~9,900 pairs would have been needed to place a
1% bar. Here each round starts three 2-rank runs of the same case at once: `plain`, `control`
(a second plain run) and `profiled` (libcolltune preloaded, COLLTUNE_PROFILE_RUN set, chains on),
in a random launch order. The three see the same load at the same moments, so its drift cancels
in their ratios; what is left is the noise of which process the scheduler ran when, which
averages over the run's thousands of synchronisations. The control measures that noise: the
ratio control / plain differs from 1 by nothing but the method's noise, so its interval is the
method's resolution, and a method that found an overhead there would not be believed.

Per run: the wall time over a window of time steps (rank 0's `Time = ` lines, timestamped as
they arrive: from step `--skip` to `--skip` steps before the end, so that start-up, mesh reading
and the first steps' unwinds are outside it, and so are the last steps, after the first of the
three ended and left the others more of the machine), and each rank's CPU time (user + system of
its icoFoam, /usr/bin/time), summed. Per round, profiled / plain and control / plain of each;
over the rounds, the median ratio with its distribution-free 95% interval (paired_time.py: order
statistics of the log ratios, no assumption on the noise's shape), the verdict against the 1% bar
and the rounds that would resolve it at the spread seen. Every run must end on the same
continuity line (the profiling never changes a result).

What it shows: how much slower a profiled run progresses than plain runs beside it, on this
machine, under the load at the time (written with the figures). What it does not: the wall time
on cores of its own. Under load a run's time is mostly waiting for the peer rank to be scheduled,
which dilutes the profiling's extra work in the wall-time ratio; the CPU-time ratio is closer to
the work added, but it includes the ranks' spinning while they wait (Open MPI polls), which is
plain and profiled alike and dilutes it too. Both ratios are therefore lower bounds of the
dedicated-machine figure, the smaller the higher the load; the instructions (callgrind, rank 0:
openfoam.sh OUT callgrind 200) are the load-free figure.

    bash benchmarks/advise/openfoam.sh OUT prepare 100      # the case (apt-get installs openfoam)
    nice -n 19 .venv/bin/python benchmarks/advise/concurrent_time.py OUT --rounds 20 --steps 100
    nice -n 19 .venv/bin/python benchmarks/advise/concurrent_time.py OUT --rounds 10 --append   # more
    .venv/bin/python benchmarks/advise/concurrent_time.py OUT --read OUT/concurrent.tsv   # again
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
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from paired_time import Estimate, median_interval, rounds_needed, verdict  # noqa: E402
from sequential_time import openfoam_rank  # noqa: E402

MODES = ("plain", "control", "profiled")
FIELDS = ("round", "mode", "order", "wall_s", "window_s", "cpu_s", "load1", "continuity", "steps_ms")
# sequential_time.py's rank script (the library as RANK_PRELOAD, exported for the exec alone),
# icoFoam's CPU times written by /usr/bin/time
RANK = openfoam_rank(run="exec /usr/bin/time -f '%U %S' -o \"$CT_CPU_DIR/rank-$OMPI_COMM_WORLD_RANK\" icoFoam -parallel")
STEP = re.compile(r"^Time = ")
CONTINUITY = re.compile(r"time step continuity errors.*")


@dataclass(frozen=True)
class Run:
    mode: str
    window_s: float        # wall time from step `skip` to step `steps - skip`
    cpu_s: float           # both ranks' user + system
    wall_s: float          # launch to exit
    load: float
    steps: tuple[float, ...] = ()   # the window's step durations, s (older files: none)

    @property
    def step_s(self) -> float:
        """The window's median step: a step the scheduler delayed (a peer descheduled at a
        synchronisation) weighs as one step, not by its delay."""
        return float(np.median(self.steps))


def libcolltune() -> str:
    from colltune.mpi import build, libraries
    return str(build.ensure_built(libraries.resolve("/usr/bin/mpicc.openmpi")).libcolltune)


class Instance:
    """One 2-rank run in its own copy of the case; rank 0's step lines timestamped on arrival."""

    def __init__(self, case: Path, work: Path, mode: str, lib: str) -> None:
        self.mode, self.dir = mode, work / mode
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.copytree(case, self.dir, symlinks=True)
        (self.dir / "cpu").mkdir()
        (self.dir / "rank.sh").write_text(RANK)
        (self.dir / "rank.sh").chmod(0o755)
        extra = ["-x", f"RANK_PRELOAD={lib}", "-x", f"COLLTUNE_PROFILE_RUN={self.dir / 'prof'}"] if mode == "profiled" else []
        self.argv = ["mpirun.openmpi", "--allow-run-as-root", "-np", "2", "-x", f"CT_CPU_DIR={self.dir / 'cpu'}",
                     *extra, "./rank.sh"]
        self.steps: list[float] = []
        self.continuity = ""

    def start(self) -> None:
        self.load = float(Path("/proc/loadavg").read_text().split()[0])
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.argv, cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)
        self.reader = threading.Thread(target=self._read)
        self.reader.start()

    def _read(self) -> None:
        with open(self.dir / "log", "w") as log:
            for line in self.proc.stdout:
                now = time.monotonic()
                log.write(line)
                if STEP.match(line):
                    self.steps.append(now)
                elif m := CONTINUITY.search(line):
                    self.continuity = " ".join(m.group(0).split())
        self.rc = self.proc.wait()
        self.t1 = time.monotonic()

    def finish(self, steps: int, skip: int) -> Run:
        self.reader.join()
        wall, rc = self.t1 - self.t0, self.rc
        if rc != 0 or len(self.steps) != steps:
            raise RuntimeError(f"{self.mode}: exit {rc}, {len(self.steps)} of {steps} steps (see {self.dir / 'log'})")
        cpu = 0.0
        for k in (0, 1):
            user, system = (float(x) for x in (self.dir / "cpu" / f"rank-{k}").read_text().split()[-2:])
            cpu += user + system
        window = self.steps[skip - 1:steps - skip]
        return Run(self.mode, window[-1] - window[0], cpu, wall, self.load,
                   tuple(b - a for a, b in zip(window, window[1:])))


def run_rounds(out: Path, rounds: int, steps: int, skip: int, seed: int, append: bool) -> Path:
    case, lib = out / "cavity", libcolltune()
    if not (case / "processor1").is_dir():
        raise SystemExit(f"{case}: no decomposed case; first: bash benchmarks/advise/openfoam.sh {out} prepare {steps}")
    work = out / "concurrent"
    tsv = out / "concurrent.tsv"
    first = 1
    if append and tsv.exists():   # another batch (the machine's quiet windows are not used)
        with open(tsv, newline="") as f:
            reader = csv.DictReader(f, delimiter="\t")
            if tuple(reader.fieldnames or ()) != FIELDS:
                raise SystemExit(f"{tsv}: its columns are not {FIELDS}: start a new OUT, or --read it")
            first = 1 + max((int(row["round"]) for row in reader), default=0)
    rng = random.Random(seed + first)
    with open(tsv, "a" if first > 1 else "w", newline="") as f:
        w = csv.writer(f, delimiter="\t")
        if first == 1:
            w.writerow(FIELDS)
        for r in range(first, first + rounds):
            order = list(MODES)
            rng.shuffle(order)
            runs = [Instance(case, work, m, lib) for m in order]
            for inst in runs:
                inst.start()
            for k, inst in enumerate(runs):
                x = inst.finish(steps, skip)
                w.writerow((r, x.mode, k, f"{x.wall_s:.3f}", f"{x.window_s:.4f}", f"{x.cpu_s:.2f}", x.load, inst.continuity,
                            ",".join(f"{d * 1000:.2f}" for d in x.steps)))
            f.flush()
            print(f"round {r}: " + ", ".join(f"{inst.mode} {inst.steps[steps - skip - 1] - inst.steps[skip - 1]:.2f} s"
                                            for inst in runs), flush=True)
    return tsv


def read_rounds(rows: list[dict[str, str]]) -> list[dict[str, Run]]:
    """Rounds with all three runs; every run must end on the same result line."""
    results = {r["continuity"] for r in rows}
    if len(results) != 1 or "" in results:
        raise ValueError(f"the runs end on {len(results)} different continuity lines: the profiling changed "
                         "a result, or a run did not finish (see its log)")
    by_round: dict[int, dict[str, Run]] = {}
    for r in rows:
        if r["mode"] not in MODES:
            raise ValueError(f"round {r['round']}: unknown mode {r['mode']!r} (expected one of {MODES})")
        steps = tuple(float(x) / 1000 for x in (r.get("steps_ms") or "").split(",") if x)
        by_round.setdefault(int(r["round"]), {})[r["mode"]] = Run(
            r["mode"], float(r["window_s"]), float(r["cpu_s"]), float(r["wall_s"]), float(r["load1"]), steps)
    return [runs for _, runs in sorted(by_round.items()) if set(MODES) <= runs.keys()]


def rounds_if_free(log_ratios: np.ndarray, bar: float) -> int:
    """Rounds whose median interval would end under 1 + bar if the true ratio were 1 (a lower
    bound of what a claim needs: paired_time.rounds_needed with the median at 0, not where the
    noise put it)."""
    return rounds_needed(log_ratios - np.median(log_ratios), bar) or 0


def report(rounds: list[dict[str, Run]], bar: float) -> list[str]:
    loads = [x.load for runs in rounds for x in runs.values()]
    plain = [runs["plain"] for runs in rounds]
    lines = [f"{len(rounds)} rounds; plain medians: window {np.median([p.window_s for p in plain]):.2f} s, "
             f"CPU {np.median([p.cpu_s for p in plain]):.2f} s (both ranks), whole run "
             f"{np.median([p.wall_s for p in plain]):.2f} s; load at a start {min(loads):.1f}-{max(loads):.1f}"]
    with_steps = [runs for runs in rounds if all(x.steps for x in runs.values())]
    for metric, name in (("window_s", "wall time (window)"), ("cpu_s", "CPU time"),
                         ("step_s", "median step")):
        chosen = with_steps if metric == "step_s" else rounds
        if len(chosen) < 6:
            lines.append(f"{name}: {len(chosen)} rounds with step times, too few for an interval")
            continue
        if metric == "step_s":
            lines.append(f"median step (the {len(chosen)} rounds with step times):")
        for mode in ("control", "profiled"):
            logs = np.array([math.log(getattr(runs[mode], metric) / getattr(runs["plain"], metric))
                             for runs in chosen])
            e = median_interval(logs)
            ratio = Estimate(math.exp(e.median), math.exp(e.low), math.exp(e.high), e.level)
            q1, q3 = np.percentile(logs, [25, 75])
            lines.append(f"{name}, {mode} / plain: median {ratio.median:.4f}, {ratio.level:.1%} interval "
                         f"{ratio.low:.4f}-{ratio.high:.4f} (log ratios' quartiles {q1:+.4f}, {q3:+.4f})")
            if mode == "profiled":
                lines.append(f"  against the {bar:.0%} bar: {verdict(ratio, bar)}; rounds that would show "
                             f"'at most {bar:.0%}' at this spread were the profiling free: ~{rounds_if_free(logs, bar)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the directory openfoam.sh OUT prepare STEPS made")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--steps", type=int, default=100, help="the case's steps (as prepared)")
    ap.add_argument("--skip", type=int, default=10, help="steps left out at each end of the window")
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--bar", type=float, default=0.01, help="the overhead bar (default 0.01: 1%%)")
    ap.add_argument("--read", type=Path, help="only the statistics of an earlier run's TSV")
    ap.add_argument("--append", action="store_true", help="more rounds after those of OUT/concurrent.tsv")
    args = ap.parse_args(argv)
    if not 0 < args.skip < args.steps // 2:
        raise SystemExit(f"--skip {args.skip}: must be between 1 and half of --steps ({args.steps})")
    tsv = args.read or run_rounds(args.out.resolve(), args.rounds, args.steps, args.skip, args.seed, args.append)
    with open(tsv, newline="") as f:
        rounds = read_rounds(list(csv.DictReader(f, delimiter="\t")))
    if len(rounds) < 6:
        raise SystemExit(f"{tsv}: {len(rounds)} complete rounds; at least 6 are needed for a 95% interval")
    text = "\n".join(report(rounds, args.bar))
    print(text)
    if args.read is None:
        (args.out / "concurrent.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
