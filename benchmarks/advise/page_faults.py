#!/usr/bin/env python3
"""Page faults of the profiling run on OpenFOAM: the application's processes' and libcolltune's.

A page fault costs 1-3 us in this VM (the kernel's entry, a zeroed page, the page tables), the
wall time pays it and the profiling's own account does not see it. Each run is recorded whole by
`perf record -e page-faults -c 1` (every fault a sample, with the faulting instruction); then the
faults of the application's processes (`--comm`, icoFoam) are counted, apart those whose
instruction is in libcolltune, by function. Runs of every configuration are interleaved (run 1 of
each, then run 2 of each...), one at a time, 2 ranks bound to the 2 cores as in sequential_time.py.

    bash benchmarks/advise/openfoam.sh OUT prepare 200
    .venv/bin/python benchmarks/advise/page_faults.py OUT --runs 3 \\
        --config pass=LIB_NOW:pass --config now=LIB_NOW --config before=LIB_BEFORE

A configuration is NAME=LIBCOLLTUNE[:MODE], MODE `profiled` (default) or `pass` (preloaded,
profiling off); `--config plain=-:plain` runs without libcolltune. The counts are exact for a run
(no sampling) but move from run to run with the MPI library's own allocations (a few hundred).
Writes OUT/faults-NAME-I.data (perf's) and OUT/page-faults.txt (the table printed).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sequential_time as seq  # noqa: E402


def parse_config(text: str) -> tuple[str, str, str]:
    name, eq, rest = text.partition("=")
    lib, _, mode = rest.partition(":")
    mode = mode or "profiled"
    if not eq or not name or mode not in ("plain", "pass", "profiled") or (mode != "plain" and lib in ("", "-")):
        raise SystemExit(f"--config {text!r}: NAME=LIBCOLLTUNE[:pass|profiled] or NAME=-:plain")
    if mode != "plain" and not Path(lib).is_file():
        raise SystemExit(f"--config {text!r}: no file {lib}")
    return name, lib, mode


PAGE_FAULTS = ("-e", "page-faults", "-c", "1")   # every fault a sample


def record(app: seq.App, lib: str, mode: str, data: Path, event: tuple[str, ...] = PAGE_FAULTS,
           settings: dict[str, str] | None = None) -> None:
    """One run under perf record (the result line checked as sequential_time.py does), the
    COLLTUNE_* `settings` given to every rank."""
    for pattern in app.clean:
        for p in app.work.glob(pattern):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    prof = app.work / "prof"
    shutil.rmtree(prof, ignore_errors=True)
    extra = {"plain": [], "pass": ["-x", f"{app.preload}={lib}"],
             "profiled": ["-x", f"{app.preload}={lib}", "-x", f"COLLTUNE_PROFILE_RUN={prof}"]}[mode]
    extra += [x for k, v in (settings or {}).items() for x in ("-x", f"{k}={v}")]
    argv = ["perf", "record", "-q", *event, "-o", str(data), "--",
            "mpirun.openmpi", "--allow-run-as-root", "-np", "2", "--bind-to", "core",
            *[x for k, v in seq.ONE_THREAD.items() for x in ("-x", f"{k}={v}")], *extra, *app.program]
    proc = subprocess.run(argv, cwd=app.work, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    text = (app.work / app.log).read_text() if app.log and (app.work / app.log).exists() else proc.stdout
    if proc.returncode != 0 or not app.result.findall(text):
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}, no result line\n{proc.stderr[-2000:]}")


def counts(data: Path, comm: str, sort: str, dsos: str | None = None) -> dict[str, int]:
    """perf report's sample counts of `comm`'s faults by `sort` (dso or sym)."""
    argv = ["perf", "report", "-i", str(data), "--stdio", "--comms", comm, "--sort", sort, "-F", f"sample,{sort}"]
    if dsos:
        argv += ["--dsos", dsos]
    return parse_report(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)


def parse_report(text: str) -> dict[str, int]:
    """`perf report --stdio -F sample,KEY`'s rows: KEY -> samples (a user function's `[.] `
    and a kernel one's `[k] ` dropped; rows of one KEY summed)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+(?:\[[.k]\]\s+)?(\S.*?)\s*$", line)
        if m and not line.lstrip().startswith("#"):
            out[m[2]] = out.get(m[2], 0) + int(m[1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the work directory (openfoam.sh OUT prepare STEPS)")
    ap.add_argument("--config", action="append", required=True, help="NAME=LIBCOLLTUNE[:pass|profiled]")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=seq.OPENFOAM_STEPS)
    ap.add_argument("--comm", default="icoFoam", help="the application's processes (perf's comm)")
    args = ap.parse_args(argv)
    if shutil.which("perf") is None:
        raise SystemExit("needs perf (apt-get install linux-perf)")
    configs = [parse_config(c) for c in args.config]
    app = seq.openfoam(args.out.resolve(), seq.Case(steps=args.steps))
    rows: dict[str, list[tuple[int, int, dict[str, int]]]] = {name: [] for name, _, _ in configs}
    for i in range(1, args.runs + 1):
        for name, lib, mode in configs:
            data = args.out / f"faults-{name}-{i}.data"
            record(app, lib, mode, data)
            # (the processes' total by comm: perf report's rows by object leave out some objects'
            # faults, the C library's and the loader's among them, under --comms)
            total = counts(data, args.comm, "comm").get(args.comm, 0)
            ours = sum(v for k, v in counts(data, args.comm, "dso").items() if k.startswith("libcolltune"))
            fns = counts(data, args.comm, "sym", "libcolltune.so") if ours else {}
            rows[name].append((total, ours, fns))
            print(f"run {i} {name}: {args.comm} {rows[name][-1][0]} faults, libcolltune {ours}", flush=True)
    lines = [f"page faults of the {args.comm} processes (2 ranks), {args.runs} runs of each, interleaved",
             "| configuration | all (median, each run) | in libcolltune's code (median, each run) | libcolltune's functions (all runs) |",
             "| --- | --- | --- | --- |"]
    for name, lib, mode in configs:
        runs = rows[name]
        total = [r[0] for r in runs]
        ours = [r[1] for r in runs]
        fns: dict[str, int] = {}
        for r in runs:
            for k, v in r[2].items():
                fns[k] = fns.get(k, 0) + v
        top = ", ".join(f"{k} {v}" for k, v in sorted(fns.items(), key=lambda kv: -kv[1])[:5])
        lines.append(f"| {name} ({mode}) | {statistics.median(total):.0f} ({', '.join(map(str, total))}) | "
                     f"{statistics.median(ours):.0f} ({', '.join(map(str, ours))}) | {top or '-'} |")
    text = "\n".join(lines) + "\n"
    (args.out / "page-faults.txt").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
