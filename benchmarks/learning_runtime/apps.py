#!/usr/bin/env python3
"""What each mode of libcolltune costs on call-heavy real applications (issue 26): wall time of
alternating runs per mode, before (a build of an earlier commit) and after (this tree), and
instructions per intercepted call from callgrind on the real application.

    bash benchmarks/learning_runtime/apps.sh OUT [apps.py options]     # installs the apps, runs this
    .venv/bin/python benchmarks/learning_runtime/apps.py OUT --apps examl --runs 7
    .venv/bin/python benchmarks/learning_runtime/apps.py OUT --apps examl --callgrind exploit,refused

Applications (Debian packages, 2 ranks):
  examl   ExaML 3.0 (examl-avx2, Debian Open MPI 4.1.4 build), the 49-taxon partitioned example
          of its package (parse-examl), GAMMA model: 679,861 MPI_Reduce + 679,861 MPI_Bcast of
          16-32 bytes per rank in ~5 s; its result: the likelihood of the best tree.
  nwchem  NWChem 7.0.2 (Debian MPICH 4.0.2 build) on pip MPICH 5.0.2 (same ABI), ethanol
          B3LYP/6-31G* (benchmarks/learn/apps/etoh.nw); its result: the total DFT energy.

Modes (LD_PRELOAD of libcolltune unless plain): plain; pass (preload only); exploit (the table
`colltune learn run --batches 5` wrote for the application, made once per OUT); traced (the same
table with COLLTUNE_TRACE_DIR, as a `learn run` batch runs); refused (COLLTUNE_SELECT names a table
the runtime refuses at MPI_Init); profile (a profile with no rule for 2 ranks); counting
(COLLTUNE_VERBOSE=1). Every mode but plain runs with both builds, `before` (--before, default the
commit where issue 26 started) and `after`. Runs alternate: each round runs every configuration
once, in a fresh order (random, seeded), so load drifts hit all alike; the load average is
recorded before every run. Per configuration: median wall time with a distribution-free interval
of the median (order statistics, >= 95% coverage where n allows), and the median and interval of
its ratio to the plain run of the same round (paired). Every run's result is checked against the
plain runs' (ExaML: identical likelihood; NWChem: within 1e-8 Hartree).

Callgrind: rank 0 under valgrind (the other rank native); the cost per intercepted call is the
inclusive cost of the MPI_<collective> wrappers minus the inclusive cost of the PMPI_<collective>
they call (the library's own work, whose polling depends on timing), over the calls. That is
load-independent: the wrappers' decision path, the PMPI queries it makes and the clock reads
(valgrind sees glibc's clock_gettime, not the vDSO). MPI_Init's extra work is reported apart:
its wall time is mostly dlopen I/O (Open MPI 4.1's MPI_T_init_thread: 0.22 s for 20 M instructions).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from scipy import stats

from colltune.mpi import build, launch, libraries

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NPROCS = 2
BEFORE = "2892eff"  # main when issue 26 was taken up
MODES = ("plain", "pass", "exploit", "traced", "refused", "profile", "counting")
NWCHEM_TOLERANCE = 1e-8
# a row of callgrind_annotate: cost, "file:function" (a C++ function's name has spaces and colons), [object]
ANN = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+\*?\s*([^\s:]*:.+?)(?:\s+\[([^\]]*)\])?\s*$")
# objects of the MPI library and its runtime: their instructions include polling, which depends on
# timing; everything else a rank executes is the application's own work (and libc, libm)
MPI_OBJECTS = re.compile(r"libmpi|libopen-|openmpi|mca_|libpmix|libevent|libhwloc|libucx|libuc[pst]|libfabric|libcolltune")
# what a run keeps of its stderr: the lines of the preloaded libraries (libcolltune, and
# benchmarks/advise/fuse_shim.c for benchmarks/advise/fuse.py)
NOTES = ("colltune:", "fuse_shim:")


@dataclass
class App:
    name: str
    lib: libraries.MpiLibrary
    work: Path
    program: list[str]                  # after the launcher's flags
    rank_env: dict[str, str]            # every run needs these (NWChem: LD_LIBRARY_PATH)
    result: re.Pattern[str]
    result_file: str | None = None      # ExaML: ExaML_info.<run name>; else stdout
    tolerance: float = 0.0
    per_run_name: bool = False          # ExaML refuses to overwrite its output files
    calls: dict[str, int] = field(default_factory=dict)


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=True, **kw)


def examl(out: Path) -> App:
    lib = libraries.resolve("/usr/bin/mpicc.openmpi")
    work = out / "examl"
    if not (work / "49p.binary").exists():
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree("/usr/share/doc/examl/testData", work / "testData")
        for gz in (work / "testData").glob("*.gz"):
            gz.with_suffix("").write_bytes(gzip.decompress(gz.read_bytes()))
            gz.unlink()
        _run(["parse-examl", "-s", "testData/49", "-q", "testData/49.model", "-m", "DNA", "-n", "49p"], cwd=work)
    cpu = Path("/proc/cpuinfo").read_text()
    exe = next(f"/usr/lib/examl/bin/examl-{s}" for s in ("avx2", "avx", "sse3")
               if re.search(rf"\b{s}\b", cpu) and Path(f"/usr/lib/examl/bin/examl-{s}").exists())
    return App("examl", lib, work, [exe, "-t", "testData/49.tree", "-m", "GAMMA", "-s", "49p.binary", "-n"], {},
               re.compile(r"Likelihood of best tree: (\S+)"), "ExaML_info.{name}", 0.0, True,
               {"reduce": 679_861, "bcast": 679_861, "allreduce": 1})


def nwchem(out: Path) -> App:
    lib = libraries.resolve("mpich")
    work = out / "nwchem"
    (work / "lib").mkdir(parents=True, exist_ok=True)
    (work / "etoh.nw").write_text((ROOT / "benchmarks" / "learn" / "apps" / "etoh.nw").read_text())
    # Debian's NWChem needs libmpich.so.12; pip MPICH 5.0.2 names the same ABI libmpi.so.12.
    libdir = lib.mpicc.parent.parent / "lib"
    link = work / "lib" / "libmpich.so.12"
    link.unlink(missing_ok=True)
    link.symlink_to(libdir / "libmpi.so.12")
    path = f"{work / 'lib'}:{libdir}:{libdir / 'mpich'}"
    return App("nwchem", lib, work, ["/usr/bin/nwchem.mpich", "etoh.nw"], {"LD_LIBRARY_PATH": path},
               re.compile(r"Total DFT energy =\s+(\S+)"), None, NWCHEM_TOLERANCE)


# ---- builds -------------------------------------------------------------------------------------

def before_build(out: Path, commit: str, lib: libraries.MpiLibrary) -> Path:
    """libcolltune.so of `commit` for `lib`: its sources unpacked and built by its own colltune."""
    src = out / f"before-{commit}"
    if not (src / "src").exists():
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    cache = src / ".cache-ct"
    env = {**os.environ, "PYTHONPATH": str(src / "src"), "COLLTUNE_CACHE": str(cache)}
    code = "import sys; from colltune.cli import main; sys.argv = ['colltune', *sys.argv[1:]]; main()"
    built = _run([sys.executable, "-c", code, "mpi", "build", "--mpi", str(lib.mpicc)], cwd=src, env=env).stdout
    return Path(re.search(r"interposer\s+(\S+)", built).group(1))


def after_build(lib: libraries.MpiLibrary) -> Path:
    return build.ensure_built(lib).libcolltune


# ---- runs ---------------------------------------------------------------------------------------

def launch_argv(app: App, env: dict[str, str], name: str, wrap: list[str] | None = None) -> list[str]:
    prog = [*app.program, *([name] if app.per_run_name else [])]
    flags = launch.placement_flags(app.lib, NPROCS)
    full = {**app.rank_env, **env}
    if wrap is None:
        return [str(app.lib.mpiexec), *flags, "-n", str(NPROCS), *launch.rank_env_flags(app.lib, full), *prog]
    # rank 0 under `wrap`, the others native (an MPMD launch line)
    return [str(app.lib.mpiexec), *flags, "-n", "1", *launch.rank_env_flags(app.lib, full), *wrap, *prog, ":",
            "-n", str(NPROCS - 1), *launch.rank_env_flags(app.lib, full), *prog]


def result_of(app: App, name: str, stdout: str) -> float:
    text = (app.work / app.result_file.format(name=name)).read_text() if app.result_file else stdout
    m = app.result.search(text)
    if m is None:
        raise RuntimeError(f"{app.name} run {name}: no result in its output\n{stdout[-2000:]}")
    return float(m.group(1))


_seq = iter(range(1 << 30))


def run_once(app: App, env: dict[str, str], wrap: list[str] | None = None, timeout: float = 600) -> dict:
    """One run: wall time (launcher), the 1-minute load average before it, the result, the
    preloaded libraries' notes."""
    name = f"r{os.getpid()}-{next(_seq)}-{int(time.time() * 1000)}"
    load = Path("/proc/loadavg").read_text().split()[:3]
    argv = launch_argv(app, env, name, wrap)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=app.work, env=launch.launcher_env(app.lib, nprocs=NPROCS), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{app.name}: exit {proc.returncode}: {' '.join(argv)}\n{proc.stderr[-3000:]}")
    result = result_of(app, name, proc.stdout)
    if app.result_file == "{name}":   # a log named after the run alone (LAMMPS): one per run, read once
        (app.work / name).unlink(missing_ok=True)
    return {"wall_s": wall, "load": [float(x) for x in load], "result": result,
            "stderr": [line for line in proc.stderr.splitlines() if line.startswith(NOTES)][:8]}


def alternate(app: App, configs: list[tuple[str, str | None]], runs: int, seed: int,
              run: Callable[[str, str | None], dict]) -> list[dict]:
    """`runs` rounds, each running every configuration (mode, build) once through `run`, in a fresh
    order per round (random, seeded), so load drifts hit all alike; every run's result checked
    against the first plain run's."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for r in range(runs):
        order = configs[:]
        rng.shuffle(order)
        for mode, b in order:
            res = run(mode, b)
            rows.append({"round": r, "mode": mode, "build": b or "-", **res})
            print(f"  {app.name} round {r} {mode:9s} {b or '-':6s} {res['wall_s']:7.3f} s  load {res['load'][0]:.2f}  "
                  f"result {res['result']!r}", flush=True)
    plain = [x["result"] for x in rows if x["mode"] == "plain"]
    for x in rows:
        x["result_ok"] = abs(x["result"] - plain[0]) <= app.tolerance
    return rows


def tables(app: App, out: Path, after: Path) -> dict[str, Path]:
    """The learned table (colltune learn run --batches 5, once per OUT), a refused one, a profile
    without a rule for 2 ranks."""
    d = out / f"{app.name}-tables"
    d.mkdir(parents=True, exist_ok=True)
    learned = d / "learned.sel"
    if not learned.exists():
        script = d / "launch.sh"  # a fresh run name per launch for ExaML
        prog = " ".join(app.program) + (' "r$$-$(date +%s%N)"' if app.per_run_name else "")
        script.write_text(f"#!/bin/sh\ncd {app.work} && exec {prog}\n")
        script.chmod(0o755)
        argv = [str(app.lib.mpiexec), *launch.placement_flags(app.lib, NPROCS), "-n", str(NPROCS),
                *launch.rank_env_flags(app.lib, app.rank_env), str(script)]
        colltune = str(Path(sys.executable).with_name("colltune"))
        _run([colltune, "learn", "run", "--batches", "5", "--mpi", str(app.lib.mpicc), "--db", str(d / "learn.duckdb"),
              "--table-out", str(learned), "--", *argv], cwd=d, env=launch.launcher_env(app.lib, nprocs=NPROCS),
             timeout=3600)
    refused = d / "refused.sel"
    refused.write_text("colltune-select 1\nthis line is no table\nend\n")
    profile = d / "no-rule-for-2.prf"
    profile.write_text("colltune-profile 1\ncollective reduce\n  procs 4 4\n    bytes 8 64 reduce_as_allreduce\n"
                       "collective bcast\n  procs 4 4\n    bytes 8 64 bcast_as_allgatherv\nend\n")
    return {"learned": learned, "refused": refused, "profile": profile}


def mode_env(mode: str, so: Path | None, t: dict[str, Path], trace_root: Path) -> dict[str, str]:
    if mode == "plain":
        return {}
    env = {"LD_PRELOAD": str(so)}
    if mode in ("exploit", "traced"):
        env["COLLTUNE_SELECT"] = str(t["learned"])
    if mode == "traced":
        d = trace_root / f"t{os.getpid()}-{next(_seq)}"
        d.mkdir(parents=True)
        env["COLLTUNE_TRACE_DIR"] = str(d)
    if mode == "refused":
        env["COLLTUNE_SELECT"] = str(t["refused"])
    if mode == "profile":
        env["COLLTUNE_PROFILE"] = str(t["profile"])
    if mode == "counting":
        env["COLLTUNE_VERBOSE"] = "1"
    return env


def median_interval(xs: list[float], coverage: float = 0.95) -> tuple[float, float, float]:
    """Median and the distribution-free interval [x(k), x(n+1-k)] of the median with the largest
    k whose coverage 1 - 2 P(Binom(n, 1/2) < k) is >= `coverage` (k = 1, the range, if none)."""
    s, n = sorted(xs), len(xs)
    k = 1
    while k + 1 <= n // 2 and 1 - 2 * stats.binom.cdf(k, n, 0.5) >= coverage:
        k += 1
    return statistics.median(s), s[k - 1], s[n - k]


def timing(app: App, out: Path, builds: dict[str, Path], modes: list[str], runs: int, seed: int) -> dict:
    t = tables(app, out, builds["after"])
    configs = [("plain", None)] + [(m, b) for m in modes if m != "plain" for b in builds]
    trace_root = out / f"{app.name}-traces"
    shutil.rmtree(trace_root, ignore_errors=True)
    trace_root.mkdir()

    def run(mode: str, b: str | None) -> dict:
        env = mode_env(mode, builds[b] if b else None, t, trace_root)
        try:
            return run_once(app, env)
        finally:
            if "COLLTUNE_TRACE_DIR" in env:
                shutil.rmtree(env["COLLTUNE_TRACE_DIR"])

    rows = alternate(app, configs, runs, seed, run)
    return {"app": app.name, "mpi": app.lib.version, "runs": rows, "summary": summarize(rows)}


def summary(sel: list[dict], plain: dict[int, float]) -> dict:
    """One configuration's runs: median wall time with its interval, the median of the ratio to the
    plain run of the same round (paired) with its interval, the median load, all results right."""
    med, lo, hi = median_interval([x["wall_s"] for x in sel])
    rmed, rlo, rhi = median_interval([x["wall_s"] / plain[x["round"]] for x in sel])
    return {"mode": sel[0]["mode"], "build": sel[0]["build"], "n": len(sel), "median_s": med, "lo_s": lo,
            "hi_s": hi, "min_s": min(x["wall_s"] for x in sel), "ratio": rmed, "ratio_lo": rlo, "ratio_hi": rhi,
            "load_median": statistics.median(x["load"][0] for x in sel),
            "results_ok": all(x["result_ok"] for x in sel)}


def plain_walls(rows: list[dict]) -> dict[int, float]:
    """Round -> wall time of its plain run."""
    return {x["round"]: x["wall_s"] for x in rows if x["mode"] == "plain"}


def summarize(rows: list[dict]) -> list[dict]:
    plain = plain_walls(rows)
    groups = ([x for x in rows if x["mode"] == mode and x["build"] == b]
              for mode in MODES for b in ("-", "before", "after"))
    return [summary(sel, plain) for sel in groups if sel]


def print_summary(res: dict) -> None:
    print(f"\n{res['app']} ({res['mpi'].split(',')[0]}), {NPROCS} ranks")
    print("| mode | build | runs | median s | interval s | min s | vs plain (paired) | interval | load (1 min) | results |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in res["summary"]:
        print(f"| {s['mode']} | {s['build']} | {s['n']} | {s['median_s']:.3f} | {s['lo_s']:.3f}-{s['hi_s']:.3f} | "
              f"{s['min_s']:.3f} | "
              f"{s['ratio']:.4f} | {s['ratio_lo']:.4f}-{s['ratio_hi']:.4f} | {s['load_median']:.2f} | "
              f"{'same' if s['results_ok'] else 'DIFFER'} |")


# ---- callgrind ----------------------------------------------------------------------------------

def under_callgrind(app: App, env: dict[str, str], cg: Path, timeout: float) -> dict:
    """run_once with rank 0 under callgrind, its costs written to `cg`."""
    return run_once(app, env, wrap=["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}"], timeout=timeout)


def intercepted(app: App, cg: Path) -> tuple[dict[str, int], dict[str, int], float]:
    """Inclusive and exclusive costs of a callgrind file (annotate), and the instructions per
    intercepted call: the inclusive cost of the MPI_<collective> wrappers minus that of the
    PMPI_<collective> calls they make (the library's own work, whose polling depends on timing),
    over the application's calls."""
    inc, exc = annotate(cg, True), annotate(cg, False)
    wrappers = sum(inc.get(f"libcolltune:MPI_{c.capitalize()}", 0) for c in app.calls)
    library = sum(inc.get(f"other:PMPI_{c.capitalize()}", 0) for c in app.calls)
    return inc, exc, (wrappers - library) / sum(app.calls.values())


def heaviest(costs: dict[str, int], per: int, keep: Callable[[str, float], bool], n: int) -> list[tuple[str, float]]:
    """The `n` costliest entries that `keep` (name, cost per call) accepts, per call, costliest first."""
    top = sorted(((v / per, k) for k, v in costs.items() if keep(k, v / per)), reverse=True)[:n]
    return [(k, round(v, 1)) for v, k in top]


def annotate(path: Path, inclusive: bool) -> dict[str, int]:
    """Costs by "libcolltune:<function>" / "other:<function>"; exclusive costs also add
    "(application)": the rank's instructions outside the MPI library, its runtime and libcolltune.
    callgrind_annotate shows a function's lines inlined from another file (a header: ct_core.h,
    ct_profrun_impl.h, even gcc's ia32intrin.h for the TSC read) as a row "header:function" without
    the object, so such a row takes the object of the function's own row; exclusive, the sum per
    object is then overhead.py's objects_exclusive (the cost lines read per object) exactly."""
    text = _run(["callgrind_annotate", "--threshold=100", "--auto=no", f"--inclusive={'yes' if inclusive else 'no'}",
                 str(path)]).stdout
    rows = [(int(m.group(1).replace(",", "")), m.group(2).split(":", 1)[1], m.group(3) or "")
            for line in text.splitlines() if (m := ANN.match(line))]
    object_of = {fn: obj for _, fn, obj in rows if obj}
    costs: dict[str, int] = {"(application)": 0}
    for ir, fn, obj in rows:
        if not obj:
            if inclusive:
                continue   # an inlined part's inclusive cost is already its function's
            obj = object_of.get(fn, "")
        where = "libcolltune" if "libcolltune" in obj else "other"
        costs[f"{where}:{fn}"] = costs.get(f"{where}:{fn}", 0) + ir
        if not inclusive and not MPI_OBJECTS.search(obj):
            costs["(application)"] += ir
    return costs


def callgrind(app: App, out: Path, builds: dict[str, Path], modes: list[str], which: list[str]) -> list[dict]:
    t = tables(app, out, builds["after"])
    rows = []
    trace_root = out / f"{app.name}-cg-traces"
    trace_root.mkdir(exist_ok=True)
    calls = sum(app.calls.values())
    for b in which:
        for mode in modes:
            cg = out / f"{app.name}-{mode}-{b}.callgrind"
            res = under_callgrind(app, mode_env(mode, builds[b], t, trace_root), cg, timeout=3600)
            inc, exc, per_call = intercepted(app, cg)
            init = inc.get("libcolltune:MPI_Init", 0) - inc.get("other:PMPI_Init", 0)
            queries = heaviest(inc, calls, lambda k, v: v >= 0.5 and re.match(
                r"other:P?MPI_(Comm_\w+|Type_size|Op_commutative|Wtime)$|other:clock_gettime", k) is not None, len(inc))
            row = {"mode": mode, "build": b, "calls": calls, "per_call": per_call,
                   "init_extra": init, "result": res["result"], "application": exc["(application)"],
                   "share": (per_call * calls + init) / exc["(application)"],
                   "functions": heaviest(exc, calls, lambda k, v: k.startswith("libcolltune:"), 8), "queries": queries}
            rows.append(row)
            print(f"  callgrind {mode} {b}: {row['per_call']:.1f} instructions per intercepted call; "
                  f"MPI_Init +{init:,}; {100 * row['share']:.3f}% of the application's own "
                  f"{row['application']:,}; {row['functions']}; queries {row['queries']}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--apps", default="examl,nwchem")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", default=BEFORE, help="commit of the `before` build")
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--callgrind", default="", help="modes to run under callgrind instead of timing")
    ap.add_argument("--callgrind-builds", default="before,after")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.apps.split(","):
        app = {"examl": examl, "nwchem": nwchem}[name](args.out.resolve())
        builds = {"before": before_build(args.out.resolve(), args.before, app.lib), "after": after_build(app.lib)}
        if args.callgrind:
            rows = callgrind(app, args.out, builds, args.callgrind.split(","), args.callgrind_builds.split(","))
            (args.out / f"callgrind-{name}.json").write_text(json.dumps(rows, indent=1))
            continue
        res = timing(app, args.out, builds, args.modes.split(","), args.runs, args.seed)
        res["before"] = args.before
        (args.out / f"timing-{name}.json").write_text(json.dumps(res, indent=1))
        print_summary(res)


if __name__ == "__main__":
    main()
