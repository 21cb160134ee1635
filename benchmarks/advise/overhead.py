#!/usr/bin/env python3
"""What `colltune advise`'s profiling mode costs on real applications (issue 23): wall time of
alternating plain and profiled runs, with builds of libcolltune before (an earlier commit) and
after (this tree); instructions per intercepted call on ExaML from callgrind.

    bash benchmarks/advise/install.sh                                       # the applications (apt-get)
    .venv/bin/python benchmarks/advise/overhead.py OUT --runs 9             # all four, alternating
    .venv/bin/python benchmarks/advise/overhead.py OUT --apps examl --callgrind
    .venv/bin/python benchmarks/advise/overhead.py OUT --percall            # ns per pair, in one run
    .venv/bin/python benchmarks/advise/overhead.py OUT --apps hpcc,startup --builds after --pass-through
                                   # plain / preloaded, profiling off / profiled: the preload's part
    nice -n 10 .venv/bin/python benchmarks/advise/overhead.py OUT --cost --apps examl,lammps
                                   # the profiling run's share of rank 0's instructions, chains on
    nice -n 19 .venv/bin/python benchmarks/advise/overhead.py OUT --advise --apps examl,qe,hpcc,lammps
                                   # colltune advise on each: OUT/advise-APP.txt, lines, widths

Applications (Debian packages built against Debian's Open MPI 4.1.4, 2 ranks, OMP_NUM_THREADS=1):
  examl   ExaML 3.0 (examl-avx2), the 49-taxon example of its package, GAMMA model: 679,861
          MPI_Reduce + 679,861 MPI_Bcast of 16-32 bytes per rank in ~6 s, a synchronous round
          trip per pair: the worst case for per-call cost. Result: the likelihood (identical).
  qe      Quantum ESPRESSO 6.7 pw.x, SCF of an 8-atom silicon cell (si8.in: 30 Ry, 3x3x3 k-points,
          the pseudopotential of quantum-espresso-data): the MPI_Alltoall of its parallel FFT.
          Result: the total energy (within 1e-8 Ry).
  hpcc    HPCC 1.5.0, Debian's example input with N=2000 on a 1x2 grid. Result: Success=1.
  lammps  LAMMPS 20220106, Lennard-Jones melt (in.lj, 4000 atoms, 4000 steps). Result: the
          potential energy of the last step (identical).
  pairs   pairs.c: 100,000 MPI_Reduce + MPI_Bcast pairs of 16 bytes, ExaML's call path in
          miniature, for callgrind in seconds (--callgrind --apps pairs).
  startup pairs.c with one pair: the launch, MPI_Init and MPI_Finalize alone.

Timing: per round one plain run (no preload) and one profiled run per build (LD_PRELOAD of that
build's libcolltune, COLLTUNE_PROFILE_RUN set), in a fresh random order per round (seeded); median
wall time (launcher) with a distribution-free ~95% interval of the median, the median of the
per-round ratio to plain (paired) with its interval, the 1-minute load average before each run;
every run's result checked against the plain runs'. Callgrind (ExaML): rank 0 under valgrind,
the other native; per intercepted call the inclusive cost of the MPI_Reduce/MPI_Bcast wrappers
minus that of the PMPI calls they make for the application (the library's own work, whose
polling depends on timing), plus where libcolltune spends it.
--cost (issue 34: every intercepted call takes its chain, point-to-point calls are counted and
sampled): rank 0 under callgrind with this tree's libcolltune, profiled, on smaller inputs than
the timing (a valgrind run takes minutes: ExaML evaluates the given tree, `-f e -e 10`; LAMMPS 1000
steps; HPCC N=1000), after one profiled run of it without valgrind (each rank's point-to-point
calls there: a polling loop's count depends on timing); the profiling run's own instructions are
libcolltune's exclusive ones, the
unwinder's (libgcc_s, called only by profchain.c's unwinds in these codes): the call path; their
share of all of rank 0's instructions and of the application's own (outside MPI, libcolltune and
libgcc_s, the denominator of the issue-23 figures). The library calls of the sampling
synchronisations (the callees of ct_profcomm_sync outside libcolltune) are reported apart: they
include the wait for late ranks that moved there from the collective, so they depend on timing
(under load the native rank is descheduled and rank 0 polls; the application's own collectives
then poll as much). Writes overhead-cost-APP.json.
Reuses benchmarks/learning_runtime/apps.py (the ExaML set-up, launch lines, builds, statistics).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "learning_runtime"))
import apps  # noqa: E402

from colltune.advise import profile_run  # noqa: E402
from colltune.mpi import launch, libraries  # noqa: E402

BEFORE = "f8bb28f"   # main when this round of issue 23 started (08ed143: when the issue was taken up)
HPCC_SIZES = {"Ns": "2000", "NBs": "80", "Ps": "1", "Qs": "2"}
LAMMPS_STEPS = 4000
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def debian_ompi() -> libraries.MpiLibrary:
    return libraries.resolve("/usr/bin/mpicc.openmpi")


def examl(out: Path) -> tuple[apps.App, Callable[[], None]]:
    app = apps.examl(out)
    app.rank_env = {**app.rank_env, **ONE_THREAD}
    return app, lambda: None


def qe(out: Path) -> tuple[apps.App, Callable[[], None]]:
    work = out / "qe"
    work.mkdir(parents=True, exist_ok=True)
    pseudo = Path("/usr/share/doc/quantum-espresso/examples/EPW/sic/pp/Si.pz-vbc.UPF.gz")   # quantum-espresso-data
    if not pseudo.exists():
        raise SystemExit(f"no {pseudo}: run benchmarks/advise/install.sh")
    target = work / "pseudo" / "Si.pz-vbc.UPF"
    target.parent.mkdir(exist_ok=True)
    if pseudo.suffix == ".gz":
        import gzip
        target.write_bytes(gzip.decompress(pseudo.read_bytes()))
    else:
        shutil.copy(pseudo, target)
    shutil.copy(HERE / "si8.in", work / "si8.in")

    def prepare() -> None:
        shutil.rmtree(work / "qe-out", ignore_errors=True)

    return apps.App("qe", debian_ompi(), work, ["/usr/bin/pw.x", "-in", "si8.in"], dict(ONE_THREAD),
                    re.compile(r"!\s+total energy\s+=\s+(\S+)"), None, 1e-8), prepare


def hpcc(out: Path) -> tuple[apps.App, Callable[[], None]]:
    work = out / "hpcc"
    work.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in Path("/usr/share/doc/hpcc/examples/_hpccinf.txt").read_text().splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip() in HPCC_SIZES:
            line = f"{HPCC_SIZES[parts[1].strip()]:<12} {parts[1]}"
        lines.append(line)
    (work / "hpccinf.txt").write_text("\n".join(lines) + "\n")

    def prepare() -> None:   # HPCC appends to its output file
        (work / "hpccoutf.txt").unlink(missing_ok=True)

    return apps.App("hpcc", debian_ompi(), work, ["/usr/bin/hpcc"], dict(ONE_THREAD),
                    re.compile(r"^Success=(\d+)", re.M), "hpccoutf.txt", 0.0), prepare


def lammps(out: Path) -> tuple[apps.App, Callable[[], None]]:
    work = out / "lammps"
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "in.lj", work / "in.lj")
    return apps.App("lammps", debian_ompi(), work,
                    ["/usr/bin/lmp", "-in", "in.lj", "-var", "steps", str(LAMMPS_STEPS), "-screen", "none", "-log"],
                    dict(ONE_THREAD), re.compile(rf"^\s*{LAMMPS_STEPS}\s+\S+\s+(\S+)", re.M), "{name}", 0.0,
                    True), lambda: None


def pairs(out: Path) -> tuple[apps.App, Callable[[], None]]:
    """ExaML's communication in miniature (pairs.c, 100,000 Reduce + Bcast pairs of 16 bytes):
    the same call path under callgrind in seconds instead of ExaML's minutes."""
    work = out / "pairs"
    work.mkdir(parents=True, exist_ok=True)
    exe = work / "pairs"
    subprocess.run(["/usr/bin/mpicc.openmpi", "-O2", "-g", str(HERE / "pairs.c"), "-o", str(exe)], check=True)
    return apps.App("pairs", debian_ompi(), work, [str(exe), "100000"], dict(ONE_THREAD),
                    re.compile(r"sum (\S+)"), None, 0.0, False, {"reduce": 100_000, "bcast": 100_000}), lambda: None


def startup(out: Path) -> tuple[apps.App, Callable[[], None]]:
    """pairs.c with one pair: what the launch, MPI_Init and MPI_Finalize cost, preloaded or not
    (the fixed part of a timing's difference)."""
    app, prepare = pairs(out)
    app.name, app.program[-1], app.calls = "startup", "1", {"reduce": 1, "bcast": 1}
    return app, prepare


APPS = {"examl": examl, "qe": qe, "hpcc": hpcc, "lammps": lammps, "pairs": pairs, "startup": startup}
COST_LAMMPS_STEPS = 1000


def cost_input(name: str, app: apps.App) -> None:
    """--cost: inputs small enough for callgrind (rank 0 runs ~50x slower there)."""
    if name == "examl":
        # (before -n NAME) the likelihood of the given tree, its model optimised to 10 log units
        app.program[-1:-1] = ["-f", "e", "-e", "10"]
        app.result = re.compile(r"Likelihood tree 0: (\S+)")
        app.result_file = None   # stdout
    elif name == "lammps":
        app.program[app.program.index(str(LAMMPS_STEPS))] = str(COST_LAMMPS_STEPS)
        app.result = re.compile(rf"^\s*{COST_LAMMPS_STEPS}\s+\S+\s+(\S+)", re.M)
    elif name == "hpcc":
        inf = app.work / "hpccinf.txt"
        inf.write_text(re.sub(rf"^{HPCC_SIZES['Ns']}(\s+Ns)", r"1000\1", inf.read_text(), flags=re.M))


def run_once(app: apps.App, prepare: Callable[[], None], env: dict[str, str], timeout: float = 900) -> dict:
    """apps.run_once after `prepare` (what the application's last run left that changes the next)."""
    prepare()
    return apps.run_once(app, env, timeout=timeout)


def profiled_env(so: Path, root: Path, tag: str) -> dict[str, str]:
    d = root / f"p-{tag}-{next(apps._seq)}"
    shutil.rmtree(d, ignore_errors=True)
    return {"LD_PRELOAD": str(so), "COLLTUNE_PROFILE_RUN": str(d)}


def timing(app: apps.App, prepare: Callable[[], None], out: Path, builds: dict[str, Path], runs: int,
           seed: int, pass_through: bool = False) -> dict:
    """pass_through: each build also preloaded without profiling (mode `pass`), so that a profiled
    run's difference to plain splits into the preload's own part and the profiling's."""
    configs = ([("plain", None)] + [("profiled", b) for b in builds]
               + ([("pass", b) for b in builds] if pass_through else []))
    root = out / "advise-profiles"
    root.mkdir(exist_ok=True)

    def run(mode: str, b: str | None) -> dict:
        env = ({} if b is None else {"LD_PRELOAD": str(builds[b])} if mode == "pass"
               else profiled_env(builds[b], root, b))
        try:
            return run_once(app, prepare, env)
        finally:
            if "COLLTUNE_PROFILE_RUN" in env:
                shutil.rmtree(env["COLLTUNE_PROFILE_RUN"], ignore_errors=True)

    rows = apps.alternate(app, configs, runs, seed, run)
    return {"app": app.name, "mpi": app.lib.version, "runs": rows, "summary": summarize(rows)}


def summarize(rows: list[dict]) -> list[dict]:
    plain = apps.plain_walls(rows)
    configs = dict.fromkeys((x["mode"], x["build"]) for x in rows)
    return [apps.summary([x for x in rows if (x["mode"], x["build"]) == c], plain) for c in configs]


def callgrind(app: apps.App, prepare: Callable[[], None], out: Path, builds: dict[str, Path]) -> list[dict]:
    rows = []
    calls = sum(app.calls.values())
    root = out / "advise-profiles"
    root.mkdir(exist_ok=True)
    for b, so in builds.items():
        cg = out / f"advise-{app.name}-profiled-{b}.callgrind"
        prepare()
        res = apps.under_callgrind(app, profiled_env(so, root, b), cg, timeout=7200)
        inc, exc, per_call = apps.intercepted(app, cg)
        others = apps.heaviest(inc, calls, lambda k, v: v >= 2 and k.startswith("other:")
                               and not k.startswith(("other:PMPI_Reduce", "other:PMPI_Bcast")), 25)
        row = {"build": b, "calls": calls, "per_call": per_call,
               "application": exc["(application)"], "share": per_call * calls / exc["(application)"],
               "result": res["result"],
               "libcolltune_exclusive": apps.heaviest(exc, calls, lambda k, v: k.startswith("libcolltune:"), 14),
               "inclusive_others": others}
        rows.append(row)
        print(json.dumps(row, indent=1), flush=True)
    return rows


def objects_exclusive(cg: Path) -> dict[str, int]:
    """Exclusive instructions per object (shared library or executable) of a callgrind file, from
    its cost lines: exact (the objects sum to the file's `totals:`). Grepping callgrind_annotate's
    rows for an object undercounts it: a function's lines inlined from a header (fi=/fe= in the
    file) make a row "header:function" without the object (5.8 M of libcolltune's 81.9 M on HPCC,
    0.9 M of 3.5 M on OpenFOAM); apps.annotate gives such rows their function's object."""
    totals: dict[str, int] = {}
    files: dict[str, str] = {}
    obj, call_cost = None, False
    for line in cg.read_text(errors="replace").splitlines():
        if m := re.match(r"ob=\((\d+)\)(?: (.*))?", line):
            if m[2]:
                files[m[1]] = m[2].strip()
            obj = files[m[1]]
        elif m := re.match(r"cob=\((\d+)\)(?: (.*))?", line):
            if m[2]:
                files[m[1]] = m[2].strip()
        elif line.startswith("calls="):
            call_cost = True   # the next cost line is the call's inclusive cost, not this object's
        elif line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if call_cost:
                call_cost = False
            elif len(parts) >= 2 and obj is not None:
                totals[obj] = totals.get(obj, 0) + int(parts[1])
    return totals


def call_path(objects: dict[str, int]) -> tuple[int, int, int, int]:
    """All instructions, libcolltune's, the unwinder's (libgcc_s) and the application's own
    (outside MPI, libcolltune and libgcc_s) of objects_exclusive's counts."""
    mine = sum(v for k, v in objects.items() if "libcolltune" in k)
    unwinder = sum(v for k, v in objects.items() if "libgcc_s" in k)
    application = sum(v for k, v in objects.items() if not apps.MPI_OBJECTS.search(k) and "libgcc_s" not in k)
    return sum(objects.values()), mine, unwinder, application


def read(cg: Path) -> None:
    """--read: a callgrind file's instructions per object and the call path's share."""
    objects = objects_exclusive(cg)
    total, mine, unwinder, application = call_path(objects)
    for name, n in sorted(objects.items(), key=lambda kv: -kv[1])[:12]:
        print(f"{n:>14,} {100 * n / total:6.2f}%  {name}")
    print(f"{total:>14,} total")
    print(f"call path {mine + unwinder:,} (libcolltune {mine:,}, unwinder {unwinder:,}): "
          f"{100 * (mine + unwinder) / total:.2f}% of all, {100 * (mine + unwinder) / application:.2f}% "
          f"of the application's own {application:,}")


def sync_library_cost(cg: Path) -> int:
    """Instructions of the library calls the sampling synchronisations make (the callees of
    ct_profcomm_sync outside libcolltune), from callgrind_annotate's calling tree."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=calling", "--threshold=100", str(cg)],
                          capture_output=True, text=True, check=True).stdout
    total, inside = 0, False
    for line in text.splitlines():
        if re.search(r"\*\s+\S*:ct_profcomm_sync ", line):
            inside = True
        elif inside and ">" in line:
            if "libcolltune" not in line:
                total += int(line.split()[0].replace(",", ""))
        elif inside:
            break
    return total


def native_counts(app: apps.App, prepare: Callable[[], None], env: dict[str, str],
                  unwind_check: bool = False) -> dict:
    """The same profiled run without valgrind: each rank's point-to-point calls (a polling loop's
    count depends on how long a rank waits, which the rank under callgrind changes) and wall;
    `unwind_check`: every walked chain unwound by libgcc too (COLLTUNE_PROFILE_RUN_UNWIND_CHECK),
    each rank's `chain_walks` (walked, checked, differed) recorded; only in this run (the check's
    unwinds would be counted under callgrind)."""
    prepare()
    check = {"COLLTUNE_PROFILE_RUN_UNWIND_CHECK": "1"} if unwind_check else {}
    res = apps.run_once(app, {**env, **check}, timeout=1800)
    run = profile_run.read(Path(env["COLLTUNE_PROFILE_RUN"]))
    shutil.rmtree(env["COLLTUNE_PROFILE_RUN"], ignore_errors=True)
    return {"native_wall_s": res["wall_s"], "native_load": res["load"],
            "native_p2p_calls": [sum(p.calls for p in r.points if p.kind == "p2p") for r in run.ranks],
            "native_own_cost_ns": [r.own_cost_ns for r in run.ranks],
            "native_rank_wall_ns": [r.wall_ns for r in run.ranks],
            "native_chain_walks": [list(r.chain_walks) for r in run.ranks],
            "native_unwind_check": unwind_check}


def cost(name: str, app: apps.App, prepare: Callable[[], None], out: Path, so: Path,
         unwind_check: bool = False) -> dict:
    cg = out / f"cost-{name}.callgrind"
    env = profiled_env(so, out / "advise-profiles", "cost")
    native = native_counts(app, prepare, env, unwind_check)
    prepare()
    res = apps.under_callgrind(app, env, cg, timeout=3600)
    objects = objects_exclusive(cg)
    total, mine, unwinder, application = call_path(objects)
    sync = sync_library_cost(cg)
    rank0 = profile_run.read_rank(Path(env["COLLTUNE_PROFILE_RUN"]) / "rank-0")
    own = mine + unwinder
    row = {"app": name, "program": app.program, "mpi": app.lib.version, "result": res["result"],
           "load_before": res["load"], "load_after": [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]],
           "instructions": total, "application": application, "libcolltune": mine, "unwinder": unwinder,
           "sync_library": sync, "sync_library_per_sync": sync / max(rank0.sample_syncs, 1),
           "own": own, "share_of_all": own / total, "share_of_application": own / application,
           "coll_calls": sum(p.calls for p in rank0.points if p.kind == "coll"),
           "p2p_calls": sum(p.calls for p in rank0.points if p.kind == "p2p"),
           "chains": len(rank0.chains), "unwinds": rank0.chain_unwinds, "syncs": rank0.sample_syncs,
           "period_widened": rank0.period_widened, "own_cost_ns": rank0.own_cost_ns, "wall_ns": rank0.wall_ns,
           "libcolltune_per_call": mine / max(sum(p.calls for p in rank0.points), 1), **native,
           "objects": dict(sorted(objects.items(), key=lambda kv: -kv[1])[:12])}
    shutil.rmtree(env["COLLTUNE_PROFILE_RUN"], ignore_errors=True)
    print(f"  {name}: call path {own:,} of {total:,} instructions on rank 0 ({100 * own / total:.2f}%; "
          f"{100 * own / application:.2f}% of the application's own {application:,}): libcolltune {mine:,}, "
          f"unwinds {unwinder:,} ({rank0.chain_unwinds} for {len(rank0.chains)} chains); {rank0.sample_syncs} "
          f"synchronisations: {sync:,} in the library ({row['sync_library_per_sync']:,.0f} each, waiting "
          f"included); {row['coll_calls']:,} collective and {row['p2p_calls']:,} point-to-point calls "
          f"({mine / max(row['coll_calls'] + row['p2p_calls'], 1):.0f} instructions a call); without valgrind "
          f"the ranks made {', '.join(f'{n:,}' for n in native['native_p2p_calls'])} point-to-point calls"
          + (f"; chain_walks (walked, checked, differed) per rank {native['native_chain_walks']}"
             if unwind_check else ""), flush=True)
    return row


FINDING = re.compile(r"^ ?\d+ {2,}")   # a row of "What to change" (#, saving, finding)


def advise_screen(name: str, app: apps.App, prepare: Callable[[], None], out: Path) -> dict:
    """--advise (issue 34): `colltune advise` on the application (its timing input, or --cost's
    with --small; 2 ranks, an empty database), its terminal output from the `colltune advise:` line on in
    OUT/advise-APP.txt, the JSON beside it; the screen's figures: lines (<= 40), lines wider
    than 80 columns other than the next steps' command lines (`  $ `, pasted whole), and the
    findings' lines (each should name an application line, or say why it cannot)."""
    d, js = out / f"advise-{name}", out / f"advise-{name}.json"
    shutil.rmtree(d, ignore_errors=True)
    prepare()
    colltune = Path(sys.executable).parent / "colltune"
    argv = [str(colltune), "advise", "--db", str(out / "none.duckdb"), "--out", str(d), "--json", str(js), "--",
            *apps.launch_argv(app, {}, f"advise-{name}-{next(apps._seq)}")]
    proc = subprocess.run(argv, cwd=app.work, env=launch.launcher_env(app.lib, nprocs=apps.NPROCS),
                          capture_output=True, text=True, timeout=3600, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: colltune advise exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    text = proc.stdout[proc.stdout.index("colltune advise:"):] if "colltune advise:" in proc.stdout else proc.stdout
    (out / f"advise-{name}.txt").write_text(text)
    lines = text.splitlines()
    wide = [x for x in lines if len(x) > 80 and not x.startswith("  $ ")]
    table = next((i for i, x in enumerate(lines) if x.startswith("What to change")), len(lines))
    found = [x for x in lines[table + 1:] if FINDING.match(x)]
    row = {"app": name, "lines": len(lines), "wider_than_80": wide, "findings": found,
           "findings_json": len(json.loads(js.read_text()).get("findings", []))}
    print(f"  {name}: {len(lines)} lines, {len(wide)} wider than 80 columns (command lines apart), "
          f"{len(found)} findings:" + "".join(f"\n    {x.strip()}" for x in found), flush=True)
    return row


def percall(app: apps.App, out: Path, builds: dict[str, Path], n: int, blocks: int) -> list[dict]:
    """Per Reduce + Bcast pair, what libcolltune's profiled wrappers add to the round trip, measured
    inside one run (pairs.c's blocks mode: blocks through MPI_* and through PMPI_* alternate, so
    both see the same load): the median over blocks of (MPI - PMPI) / n per build, with its
    interval, and what that makes on ExaML (679,861 pairs) against its plain run."""
    rows = []
    root = out / "advise-profiles"
    root.mkdir(exist_ok=True)
    exe = app.program[0]
    for b, so in builds.items():
        env = profiled_env(so, root, b)
        argv = [str(app.lib.mpiexec), *launch.placement_flags(app.lib, apps.NPROCS), "-n", str(apps.NPROCS),
                *launch.rank_env_flags(app.lib, {**app.rank_env, **env}), exe, str(n), str(blocks)]
        load = float(Path("/proc/loadavg").read_text().split()[0])
        proc = subprocess.run(argv, cwd=app.work, env=launch.launcher_env(app.lib, nprocs=apps.NPROCS),
                              capture_output=True, text=True, timeout=1800, check=True)
        times: dict[str, list[float]] = {"mpi": [], "pmpi": []}
        for line in proc.stdout.splitlines():
            if line.startswith("block "):
                _, kind, t = line.split()
                times[kind].append(float(t))
        diffs = [(a - c) / n * 1e9 for a, c in zip(times["mpi"], times["pmpi"])]
        med, lo, hi = apps.median_interval(diffs)
        pmpi = statistics.median(times["pmpi"]) / n * 1e9
        row = {"build": b, "pairs_per_block": n, "blocks": len(diffs), "load": load,
               "pmpi_pair_ns": pmpi, "added_per_pair_ns": med, "lo_ns": lo, "hi_ns": hi}
        rows.append(row)
        shutil.rmtree(env["COLLTUNE_PROFILE_RUN"], ignore_errors=True)
        print(f"  {b}: a pair takes {pmpi:.0f} ns through PMPI; profiled wrappers add {med:+.1f} ns "
              f"(interval {lo:+.1f}..{hi:+.1f}) per pair, {len(diffs)} blocks of {n}, load {load:.2f}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--apps", default="examl,qe,hpcc,lammps")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--before", default=BEFORE, help="commit of the `before` build")
    ap.add_argument("--builds", default="before,after")
    ap.add_argument("--callgrind", action="store_true", help="instructions per call (ExaML) instead of timing")
    ap.add_argument("--tag", default="", help="suffix of the result files")
    ap.add_argument("--percall", action="store_true",
                    help="per Reduce + Bcast pair, what the profiled wrappers add (pairs.c blocks)")
    ap.add_argument("--cost", action="store_true",
                    help="the profiling run's share of rank 0's instructions (callgrind, this tree, small inputs)")
    ap.add_argument("--unwind-check", action="store_true",
                    help="--cost: the run without valgrind checks every walked chain against libgcc's unwind")
    ap.add_argument("--advise", action="store_true",
                    help="colltune advise on each application: its terminal output and the screen's figures")
    ap.add_argument("--small", action="store_true", help="--advise: --cost's smaller inputs")
    ap.add_argument("--read", action="store_true",
                    help="OUT is a callgrind file: print its instructions per object and the call path's share")
    ap.add_argument("--pass-through", action="store_true",
                    help="timing: each build also preloaded with profiling off (the preload's own cost)")
    ap.add_argument("--blocks", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=5000, help="pairs per block (--percall)")
    args = ap.parse_args()
    if args.read:
        read(args.out)
        return
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    lib = debian_ompi()
    if args.advise:
        rows = []
        for name in args.apps.split(","):
            app, prepare = APPS[name](out)
            if args.small:
                cost_input(name, app)
            rows.append(advise_screen(name, app, prepare, out))
        (out / f"advise-screens{args.tag}.json").write_text(json.dumps(rows, indent=1) + "\n")
        return
    if args.cost:
        (out / "advise-profiles").mkdir(exist_ok=True)
        so = apps.after_build(lib)
        for name in args.apps.split(","):
            app, prepare = APPS[name](out)
            cost_input(name, app)
            row = cost(name, app, prepare, out, so, args.unwind_check)
            (out / f"overhead-cost-{name}{args.tag}.json").write_text(json.dumps(row, indent=1) + "\n")
        return
    want = args.builds.split(",")
    builds = {}
    if "before" in want:
        builds["before"] = apps.before_build(out, args.before, lib)
    if "after" in want:
        builds["after"] = apps.after_build(lib)
    if args.percall:
        app, _ = pairs(out)
        rows = percall(app, out, builds, args.pairs, args.blocks)
        (out / f"overhead-percall-pairs{args.tag}.json").write_text(json.dumps(rows, indent=1) + "\n")
        return
    for name in args.apps.split(","):
        app, prepare = APPS[name](out)
        if args.callgrind:
            res = callgrind(app, prepare, out, builds)
            (out / f"overhead-callgrind-{name}{args.tag}.json").write_text(json.dumps(res, indent=1) + "\n")
            continue
        res = timing(app, prepare, out, builds, args.runs, args.seed, args.pass_through)
        res["before"] = args.before
        (out / f"overhead-timing-{name}{args.tag}.json").write_text(json.dumps(res, indent=1) + "\n")
        apps.print_summary(res)


if __name__ == "__main__":
    main()
