#!/usr/bin/env python3
"""libcolltune's share of the application's CPU time in a profiling run (perf): OpenFOAM, or
another application of sequential_time.py (`--app`, set up as there).

The profiling run's own account times only what its call path can time; the windows
(sequential_time.py) resolve ~0.3% after hours. In between: each run recorded whole by
`perf record -e cpu-clock -F 20000` (a sample every 50 us of a process's CPU time, the ranks
inherited), then the application's processes' samples (`--comm`: icoFoam, else the name of the
program mpirun starts, as the kernel keeps it: 15 characters) counted, and among them
libcolltune's, split into its light entry points (the functions named MPI_*: a light call's few
instructions, and the cache misses of entering them) and the rest (the full path: chains, points,
clocks, sampling synchronisations); and each profiled run's own account and synchronisations
from its rank files. Shares are of the application's processes' samples, so the
VM's speed from run to run cancels out. Configurations are interleaved (run 1 of each, then run 2
of each...), one run at a time, 2 ranks bound to the 2 cores as in sequential_time.py. What the
wall time pays is more than this share: on two tightly coupled ranks each rank's time delays the
other at the next collective (benchmarks/advise/README.md, "twentieth round").

    bash benchmarks/advise/openfoam.sh OUT prepare 200
    .venv/bin/python benchmarks/advise/cpu_share.py OUT --runs 5 \\
        --config now=LIB --config budget2500=LIB:profiled:COLLTUNE_PROFILE_RUN_BUDGET=2500

A configuration is NAME=LIBCOLLTUNE[:MODE[:COLLTUNE_NAME=VALUE...]], MODE `profiled` (default)
or `pass`. Writes OUT/cpu-NAME-I.data (perf's) and OUT/cpu-share.txt (the table printed).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import page_faults  # noqa: E402
import sequential_time as seq  # noqa: E402

CPU_CLOCK = ("-e", "cpu-clock", "-F", "20000")


@dataclass(frozen=True)
class Config:
    name: str
    lib: str
    mode: str
    settings: dict[str, str]


def parse_config(text: str) -> Config:
    name, eq, rest = text.partition("=")
    lib, _, label = rest.partition(":")
    try:
        mode, settings = seq.parse_mode(label or "profiled")
    except ValueError as e:
        raise SystemExit(f"--config {text!r}: {e}") from None
    if not eq or not name or mode == "plain" or not lib:
        raise SystemExit(f"--config {text!r}: NAME=LIBCOLLTUNE[:pass|profiled[:COLLTUNE_NAME=VALUE...]]")
    if not Path(lib).is_file():
        raise SystemExit(f"--config {text!r}: no file {lib}")
    return Config(name, lib, mode, settings)


@dataclass(frozen=True)
class Shares:
    app: int      # the application's processes' samples
    light: int    # libcolltune's MPI_* entry points'
    rest: int     # libcolltune's other functions'
    own_ms: float = 0.0   # profiled: the larger rank's own account (sequential_time.own_account)
    syncs: int = 0        # profiled: rank 0's sampling synchronisations

    def percent(self, part: int) -> float:
        return 100.0 * part / self.app if self.app else 0.0


def split(app_samples: int, functions: dict[str, int], own_ms: float = 0.0, syncs: int = 0) -> Shares:
    """libcolltune's samples by function -> its light entry points' and the rest's."""
    light = sum(v for k, v in functions.items() if k.startswith("MPI_"))
    return Shares(app_samples, light, sum(functions.values()) - light, own_ms, syncs)


def table(configs: list[Config], rows: dict[str, list[Shares]], comm: str, runs: int) -> str:
    lines = [f"libcolltune's share of the {comm} processes' CPU samples (perf cpu-clock, 20 kHz), "
             f"{runs} runs of each, interleaved; median (each run)",
             "| configuration | samples of the application | libcolltune, all | its light entry points | the rest "
             "| own account, ms | synchronisations |",
             "| --- | ---: | --- | --- | --- | --- | --- |"]
    for c in configs:
        got = rows[c.name]

        def col(part) -> str:
            each = [s.percent(part(s)) for s in got]
            return f"{statistics.median(each):.2f}% ({', '.join(f'{x:.2f}' for x in each)})"

        label = c.mode + "".join(f" {k}={v}" for k, v in c.settings.items())
        own = syncs = "-"
        if c.mode == "profiled":
            own = f"{statistics.median(s.own_ms for s in got):.2f} ({', '.join(f'{s.own_ms:.2f}' for s in got)})"
            syncs = f"{statistics.median(s.syncs for s in got):.0f} ({', '.join(str(s.syncs) for s in got)})"
        lines.append(f"| {c.name} ({label}) | {statistics.median(s.app for s in got):.0f} | "
                     f"{col(lambda s: s.light + s.rest)} | {col(lambda s: s.light)} | {col(lambda s: s.rest)} "
                     f"| {own} | {syncs} |")
    return "\n".join(lines) + "\n"


def comm_of(app: seq.App) -> str:
    """The kernel's name of the application's processes: OpenFOAM's rank script execs icoFoam."""
    return "icoFoam" if app.name == "openfoam" else Path(app.program[0]).name[:15]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the work directory (openfoam.sh OUT prepare STEPS)")
    ap.add_argument("--config", action="append", required=True,
                    help="NAME=LIBCOLLTUNE[:pass|profiled[:COLLTUNE_NAME=VALUE...]]")
    ap.add_argument("--app", choices=sorted(seq.APPS), default="openfoam")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, help="OpenFOAM (as prepared) and LAMMPS: time steps")
    ap.add_argument("--comm", help="the application's processes (perf's comm; default: see above)")
    args = ap.parse_args(argv)
    if shutil.which("perf") is None:
        raise SystemExit("needs perf (apt-get install linux-perf)")
    if args.runs < 1:
        raise SystemExit(f"--runs {args.runs}: at least 1")
    configs = [parse_config(c) for c in args.config]
    if len({c.name for c in configs}) != len(configs):
        raise SystemExit("--config: two configurations have one name")
    app = seq.APPS[args.app](args.out.resolve(), seq.Case(steps=args.steps))
    args.comm = args.comm or comm_of(app)
    rows: dict[str, list[Shares]] = {c.name: [] for c in configs}
    for i in range(1, args.runs + 1):
        for c in configs:
            data = args.out / f"cpu-{c.name}-{i}.data"
            page_faults.record(app, c.lib, c.mode, data, CPU_CLOCK, c.settings)
            total = page_faults.counts(data, args.comm, "comm").get(args.comm, 0)
            functions = page_faults.counts(data, args.comm, "sym", "libcolltune.so")
            syncs, _, own_ms = seq.own_account(app.work / "prof") if c.mode == "profiled" else (0, 0.0, 0.0)
            rows[c.name].append(split(total, functions, own_ms, syncs))
            s = rows[c.name][-1]
            print(f"run {i} {c.name}: {args.comm} {s.app} samples, libcolltune {s.light + s.rest} "
                  f"({s.percent(s.light + s.rest):.2f}%)", flush=True)
    text = table(configs, rows, args.comm, args.runs)
    (args.out / "cpu-share.txt").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
