"""colltune's own cost as the ranks grow, on SimGrid SMPI (benchmarks/scale/README.md).

For each rank count P, benchmarks/scale/app.c runs on the dragonfly-1024 preset (4096 cores),
`--calls` rounds of allreduce + bcast per rank (the same program at every P, so that each column
is comparable across the rows its growth law is fitted on):
  plain        linked against SMPI alone
  interposed   linked with libcolltune first (docs/smpi.md), one copy per rank
               (smpi/privatize-libs): every call passes the decision point
  traced       interposed in the learning mode (COLLTUNE_SELECT=-, every call exploring the
               proven members) with COLLTUNE_TRACE_DIR set on every rank
Up to CALLGRIND_MAX_RANKS, the interposed runs are repeated under callgrind (instruction counts
repeat under load, host CPU time does not) with --callgrind-calls rounds and with 2:
libcolltune's instructions per call are the difference over the extra calls (many of them, so
that work done once per communicator and member, such as a member's first counts table, is
spread thin), its setup per rank the 2-round run's. The trace directory's bytes, the rows `colltune traces ingest` stores and the ingest time
follow. The checksum printed by rank 0 must be equal across the three runs: the interposer
changes no result.

    .venv/bin/python benchmarks/scale/run.py --ranks 16,64,256,1024 --calls 4 --out benchmarks/scale

(4096 ranks with --smpi-cfg and --merge: README, "4096 ranks").
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from colltune.mpi import build, smpi
from colltune.mpi import libraries as mpi

HERE = Path(__file__).resolve().parent
PLATFORM = "dragonfly-1024"
CALLGRIND_MAX_RANKS = 256  # callgrind slows SMPI ~50x: the instruction counts stop here by default


def compile_app(lib: mpi.MpiLibrary, art: build.Artifacts, out: Path) -> tuple[Path, Path]:
    plain, linked = out / "app-plain", out / "app-colltune"
    build.compile_program(lib, [HERE / "app.c"], plain)
    build.compile_program(lib, [HERE / "app.c"], linked,
                          [f"-L{art.dir}", "-Wl,--no-as-needed", "-lcolltune", "-Wl,--as-needed",
                           f"-Wl,-rpath,{art.dir}"])
    return plain, linked


# --smpi-cfg: SimGrid settings added to every launch of the run (plain, interposed, traced,
# callgrind), recorded in results.csv's smpi_cfg column
SMPI_CFG: list[str] = []


def private_tmpdir(work: Path, name: str) -> dict[str, str]:
    """A temporary directory of smpirun's own per run, through TMPDIR (smpirun takes
    `dirname $(mktemp -u)`; its `-tmpdir DIR` option is broken in SimGrid 3.32's script, which
    shifts one word instead of two and takes DIR for the program: /usr/bin/smpirun:171-173).
    SMPI names each rank's copy of a privatized library by the rank alone (<7 digits>tune.so, no
    process id) in that directory, so two runs at once in /tmp load, overwrite and delete each
    other's copies (two 1024-rank callgrind runs started together: one died after 12 ranks)."""
    path = work / f"smpi-tmp-{name}"
    path.mkdir(parents=True, exist_ok=True)
    return {"TMPDIR": str(path)}


def launch(lib: mpi.MpiLibrary, art: build.Artifacts, exe: Path, nprocs: int, calls: int,
           env: dict[str, str]) -> tuple[float, float, str]:
    """(host CPU seconds, wall seconds, rank 0's line) of one smpirun."""
    flags = [f"--cfg=smpi/privatize-libs:{art.libcolltune}"] if "colltune" in exe.name else []
    flags += [f"--cfg={setting}" for setting in SMPI_CFG]
    argv = smpi.smpirun_argv(lib.mpiexec, nprocs, [str(exe), str(calls)],
                             {smpi.PLATFORM_VAR: PLATFORM}, flags)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
                          env={**os.environ, **env, **private_tmpdir(exe.parent, f"{exe.name}-{nprocs}-{calls}")})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"launch failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr[-2000:]}")
    line = next(l for l in proc.stdout.splitlines() if l.startswith("scale-app"))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # each launch as it ends: a row stopped later (a long learning run) keeps what it measured
    print(f"{exe.name} {env.get('COLLTUNE_SELECT', 'pass-through') if 'colltune' in exe.name else 'plain'}: "
          f"{cpu:.1f} s CPU, {wall:.1f} s wall, load {open('/proc/loadavg').read().split()[0]}: {line}",
          file=sys.stderr, flush=True)
    return cpu, wall, line


def colltune_functions(callgrind_out: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Self instructions of each function of libcolltune's per-rank copies (which SMPI names
    <7 digits>tune.so), summed over the copies, and the calls into each function (from any
    caller), read from a callgrind output file."""
    names: dict[str, str] = {}
    fns: dict[str, str] = {}
    obj = fn = callee = ""
    own: dict[str, int] = {}
    calls: dict[str, int] = {}
    skip_next = False
    for line in callgrind_out.read_text(errors="replace").splitlines():
        if skip_next:  # the inclusive cost of a call, counted in the callee
            skip_next = False
            continue
        if line.startswith(("ob=", "cob=")):  # a name is given once, on either, then its (id)
            ref, _, name = line.partition("=")[2].partition(" ")
            if name:
                names[ref] = name
            if line.startswith("ob="):
                obj = ref
        elif line.startswith(("fn=", "cfn=")):
            ref, _, name = line.partition("=")[2].partition(" ")
            if name:
                fns[ref] = name
            if line.startswith("fn="):
                fn = ref
            else:
                callee = ref
        elif line.startswith("calls="):
            skip_next = True
            target = fns.get(callee, callee)
            calls[target] = calls.get(target, 0) + int(line.split("=")[1].split()[0])
        elif line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if len(parts) >= 2 and names.get(obj, "").endswith("tune.so"):
                name = fns.get(fn, fn)
                own[name] = own.get(name, 0) + int(parts[-1])
    return own, calls


def colltune_instructions(callgrind_out: Path) -> int:
    """Instructions executed in libcolltune (self cost of every function of its per-rank copies)."""
    return sum(colltune_functions(callgrind_out)[0].values())


def instructions(lib: mpi.MpiLibrary, art: build.Artifacts, exe: Path, nprocs: int, calls: int,
                 work: Path, learn: bool = False) -> int:
    """libcolltune's instructions in one interposed run under callgrind (repeatable under load)."""
    out = work / f"callgrind-{nprocs}-{calls}-{int(learn)}.out"
    learning = {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_SEED": "1"} if learn else {}
    argv = smpi.smpirun_argv(lib.mpiexec, nprocs, [str(exe), str(calls)], {smpi.PLATFORM_VAR: PLATFORM},
                             [f"--cfg=smpi/privatize-libs:{art.libcolltune}",
                              *(f"--cfg={setting}" for setting in SMPI_CFG), "-wrapper",
                              f"valgrind --tool=callgrind --callgrind-out-file={out}"])
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, "COLLTUNE_VERBOSE": "0", **learning,
                               **private_tmpdir(work, f"callgrind-{nprocs}-{calls}-{int(learn)}"),
                               "COLLTUNE_PROOF": str(art.dir / "proof.txt")}, check=False)
    if proc.returncode != 0:
        sys.exit(f"callgrind run failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")
    total = colltune_instructions(out)
    print(f"callgrind {nprocs} ranks, {calls} rounds, {'learning' if learn else 'pass-through'}: "
          f"{total} instructions in libcolltune", file=sys.stderr, flush=True)
    return total


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(lib: mpi.MpiLibrary, art: build.Artifacts, apps: tuple[Path, Path], p: int, calls: int,
            work: Path, traced: bool = True, callgrind_calls: int = 50,
            callgrind_max_ranks: int = CALLGRIND_MAX_RANKS) -> dict[str, object]:
    plain, linked = apps
    quiet = {"COLLTUNE_VERBOSE": "0", "COLLTUNE_PROOF": str(art.dir / "proof.txt")}
    cpu_plain, wall_plain, line_plain = launch(lib, art, plain, p, calls, quiet)
    cpu_ct, wall_ct, line_ct = launch(lib, art, linked, p, calls, quiet)
    if not traced:
        return untraced_row(p, calls, cpu_plain, cpu_ct, wall_plain, wall_ct, line_plain, line_ct)
    trace = work / f"trace-{p}"
    shutil.rmtree(trace, ignore_errors=True)
    trace.mkdir(parents=True)
    cpu_tr, _, line_tr = launch(lib, art, linked, p, calls, {**quiet, "COLLTUNE_SELECT": "-",
                                                            "COLLTUNE_SELECT_SEED": "1",
                                                            "COLLTUNE_TRACE_DIR": str(trace),
                                                            "COLLTUNE_PROOF": str(art.dir / "proof.txt")})
    # the results must be equal; the simulated end may move by a microsecond at 1024 ranks (the
    # interposer's own MPI_Init collectives shift when the ranks start their first calls)
    checksum = {re.search(r"checksum (\S+)", line)[1] for line in (line_plain, line_ct, line_tr)}
    if len(checksum) != 1:
        sys.exit(f"results differ at {p} ranks:\n {line_plain}\n {line_ct}\n {line_tr}")
    db = work / f"traces-{p}.duckdb"
    db.unlink(missing_ok=True)
    started = time.perf_counter()
    ingest = subprocess.run([str(Path(sys.executable).with_name("colltune")), "traces", "ingest",
                             str(trace), "--db", str(db)], capture_output=True, text=True, check=False)
    ingest_s = time.perf_counter() - started
    rows = 0
    if ingest.returncode == 0:
        import duckdb

        with duckdb.connect(str(db), read_only=True) as con:
            rows = int(con.sql("select count(*) from trace_calls").fetchall()[0][0])
    per_rank_calls = 2 * calls + 3  # allreduce + bcast per round, split, the final reduce, free
    ir: dict[tuple[int, bool], int] = {}
    if p <= callgrind_max_ranks:
        # pass-through's pair first: a run stopped in the (longer) learning pair keeps it
        ir = {(n, learn): instructions(lib, art, linked, p, n, work, learn)
              for learn in (False, True) for n in (callgrind_calls, 2)}

    def per_call(learn: bool) -> float | None:
        extra = p * 2 * (callgrind_calls - 2)
        return round((ir[callgrind_calls, learn] - ir[2, learn]) / extra, 1) if ir else None
    return {
        "ranks": p, "calls_per_rank": per_rank_calls,
        "simulator_cpu_s": round(cpu_plain, 3), "interposed_cpu_s": round(cpu_ct, 3),
        # host CPU of the whole run over the plain one, per rank: SMPI's per-rank copy of the
        # library (a file copy, a `sed` process, a dlopen) dominates it
        "interposed_extra_cpu_ms_per_rank": round(1e3 * (cpu_ct - cpu_plain) / p, 3),
        # callgrind: libcolltune's instructions per collective call after the first rounds
        # (pass-through: no mode set; learning: every call drawn among the proven members and
        # recorded), and per rank for a whole run of 2 rounds (MPI_Init's setup, the first calls'
        # communicator state and layout, MPI_Finalize)
        "per_call_instructions": per_call(False),
        "per_call_instructions_learn": per_call(True),
        "setup_instructions_per_rank": round(ir[2, False] / p) if ir else None,
        "setup_instructions_per_rank_learn": round(ir[2, True] / p) if ir else None,
        "traced_cpu_s": round(cpu_tr, 3),
        "trace_bytes": dir_bytes(trace), "trace_rows": rows, "ingest_s": round(ingest_s, 3),
        "ingest_ok": ingest.returncode == 0, "wall_plain_s": round(wall_plain, 3),
        "wall_interposed_s": round(wall_ct, 3),
        # simulated seconds: equal with the interposer (no network traffic of its own); tracing
        # adds its collectives (communicator ids, clock offsets) to the application's time
        "simulated_plain_s": float(re.search(r"simulated_s (\S+)", line_plain)[1]),
        "simulated_traced_s": float(re.search(r"simulated_s (\S+)", line_tr)[1]),
        "smpi_cfg": " ".join(SMPI_CFG),
        "checksum_line": line_plain,
    }


def untraced_row(p: int, calls: int, cpu_plain: float, cpu_ct: float, wall_plain: float, wall_ct: float,
                 line_plain: str, line_ct: str) -> dict[str, object]:
    """--untraced-from: plain and pass-through only (the learning run's members cost the
    simulator P^2 messages per call there: bcast_as_allgatherv, README)."""
    if re.search(r"checksum (\S+)", line_plain)[1] != re.search(r"checksum (\S+)", line_ct)[1]:  # type: ignore[index]
        sys.exit(f"results differ at {p} ranks:\n {line_plain}\n {line_ct}")
    keys = ("per_call_instructions", "per_call_instructions_learn", "setup_instructions_per_rank",
            "setup_instructions_per_rank_learn", "traced_cpu_s", "trace_bytes", "trace_rows", "ingest_s",
            "ingest_ok", "simulated_traced_s")
    return {"ranks": p, "calls_per_rank": 2 * calls + 3, "simulator_cpu_s": round(cpu_plain, 3),
            "interposed_cpu_s": round(cpu_ct, 3),
            "interposed_extra_cpu_ms_per_rank": round(1e3 * (cpu_ct - cpu_plain) / p, 3),
            **dict.fromkeys(keys), "wall_plain_s": round(wall_plain, 3), "wall_interposed_s": round(wall_ct, 3),
            "simulated_plain_s": float(re.search(r"simulated_s (\S+)", line_plain)[1]),  # type: ignore[index]
            "smpi_cfg": " ".join(SMPI_CFG), "checksum_line": line_plain}


def growth_law(ranks: list[int], values: list[float]) -> str:
    """flat, log P, P or P^2: the model a + b f(P) (b > 0) with the smallest squared error (f = 0,
    log P, P, P^2); flat when every value is within 10% of their mean. P^2 is there for SMPI's
    own cost (README, "Why SMPI's cost grows faster than P"), not expected of colltune's."""
    x = np.asarray(ranks, float)
    y = np.asarray(values, float)
    if len(y) < 2 or np.ptp(y) <= 0.1 * abs(float(np.mean(y))):
        return "flat"  # within 10% over the whole range: no law to fit
    best, law = np.inf, "flat"
    for name, f in (("flat", np.zeros_like(x)), ("log P", np.log2(x)), ("P", x), ("P^2", x * x)):
        design = np.column_stack([np.ones_like(x), f]) if name != "flat" else np.ones((len(x), 1))
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        err = float(np.sum((design @ coef - y) ** 2))
        if name != "flat" and coef[1] <= 0:
            continue  # a cost that falls as P grows is no growth law
        # a slope must earn its parameter: 10% better than the simpler law
        if err < 0.9 * best:
            best, law = err, name
    return law


# columns that measure the simulator, not colltune: a row run with other SimGrid settings
# (--smpi-cfg) is not on their curve
SIMULATOR_COLUMNS = frozenset({"simulator_cpu_s", "interposed_extra_cpu_ms_per_rank"})


def fitted(rows: list[dict[str, object]], key: str) -> list[dict[str, object]]:
    """The rows a column's growth law is fitted on."""
    return [r for r in rows if r[key] is not None
            and not (key in SIMULATOR_COLUMNS and r.get("smpi_cfg"))]


def plot(rows: list[dict[str, object]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = [("per_call_instructions_learn", "per-call instructions, learning"),
             ("setup_instructions_per_rank_learn", "setup + first calls per rank (instr.)"),
             ("trace_bytes", "trace bytes"), ("trace_rows", "trace rows in the database"),
             ("ingest_s", "traces ingest (s)"), ("simulator_cpu_s", "SMPI run, no colltune (s)")]
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.5))
    for ax, (key, title) in zip(axes.flat, items):
        have = fitted(rows, key)
        ranks, values = [int(r["ranks"]) for r in have], [float(r[key]) for r in have]  # type: ignore[arg-type]
        ax.plot(ranks, values, "o-")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{title}: {growth_law(ranks, values)}", fontsize=9)
        ax.set_xlabel("simulated ranks")
    fig.tight_layout()
    fig.savefig(out / "scale.png", dpi=110)


def earlier_rows(path: Path, measured: set[int]) -> list[dict[str, object]]:
    """The rows of an earlier results.csv for rank counts not measured now (empty cells: None)."""
    with open(path, newline="") as fh:
        return [{k: (v if v != "" else None) for k, v in row.items()} for row in csv.DictReader(fh)
                if int(row["ranks"]) not in measured]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="16,64,256,1024,4096")
    parser.add_argument("--calls", type=int, default=4, help="rounds of allreduce + bcast per rank")
    parser.add_argument("--callgrind-calls", type=int, default=50, metavar="N",
                        help="rounds of the callgrind runs (per-call instructions: N rounds minus 2)")
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--callgrind-max-ranks", type=int, default=CALLGRIND_MAX_RANKS, metavar="P",
                        help="the callgrind runs up to P ranks")
    parser.add_argument("--untraced-from", type=int, default=1 << 30, metavar="P",
                        help="from P ranks on, the plain and pass-through runs only")
    parser.add_argument("--merge", action="store_true",
                        help="keep OUT/results.csv's rows of the other rank counts (a table assembled "
                             "from several invocations)")
    parser.add_argument("--keep-callgrind", type=Path, metavar="DIR",
                        help="copy the callgrind outputs to DIR (per-function reading: callgrind_annotate)")
    parser.add_argument("--smpi-cfg", action="append", default=[], metavar="NAME:VALUE",
                        help="a SimGrid setting for every launch (--cfg=NAME:VALUE), recorded in the "
                             "row, e.g. smpi/send-is-detached-thresh:0 (README, \"4096 ranks\")")
    parser.add_argument("--plot-only", action="store_true",
                        help="run nothing: the growth laws and scale.png from OUT/results.csv")
    args = parser.parse_args()
    SMPI_CFG.extend(args.smpi_cfg)
    if args.plot_only:
        report(earlier_rows(args.out / "results.csv", set()), args.out)
        return
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    with tempfile.TemporaryDirectory(prefix="colltune-scale-") as tmp:
        work = Path(tmp)
        apps = compile_app(lib, art, work)
        rows = []
        for p in (int(x) for x in args.ranks.split(",")):
            rows.append(measure(lib, art, apps, p, args.calls, work, traced=p < args.untraced_from,
                                callgrind_calls=args.callgrind_calls,
                                callgrind_max_ranks=args.callgrind_max_ranks))
            print({k: v for k, v in rows[-1].items() if k != "checksum_line"}, flush=True)
            if args.keep_callgrind:
                args.keep_callgrind.mkdir(parents=True, exist_ok=True)
                for out in work.glob(f"callgrind-{p}-*.out"):
                    shutil.copy(out, args.keep_callgrind)
    for row in rows:
        del row["checksum_line"]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.merge and (args.out / "results.csv").exists():
        rows = sorted(rows + earlier_rows(args.out / "results.csv", {int(r["ranks"]) for r in rows}),
                      key=lambda r: int(r["ranks"]))  # type: ignore[call-overload]
    with open(args.out / "results.csv", "w", newline="") as fh:
        # rows of an earlier invocation may lack a newer column (smpi_cfg): every key, in order
        writer = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for row in rows for k in row)))
        writer.writeheader()
        writer.writerows(rows)
    report(rows, args.out)


def report(rows: list[dict[str, object]], out: Path) -> None:
    """Each column's growth law (printed) and scale.png."""
    for key in ("per_call_instructions", "per_call_instructions_learn", "setup_instructions_per_rank",
                "setup_instructions_per_rank_learn", "interposed_extra_cpu_ms_per_rank", "trace_bytes",
                "trace_rows", "ingest_s", "simulator_cpu_s"):
        have = fitted(rows, key)
        if not have:
            print(f"{key}: not measured")
            continue
        print(f"{key}: {growth_law([int(r['ranks']) for r in have], [float(r[key]) for r in have])} "
              f"({', '.join(str(r['ranks']) for r in have)} ranks)")
    plot(rows, out)
    print(f"load: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
