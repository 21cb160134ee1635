"""libcolltune's instructions per intercepted call in the learning mode as the ranks grow, by
callgrind (README, "Per-call cost of the learning mode at 1024 ranks").

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 10 .venv/bin/python benchmarks/scale/percall.py \\
        --ranks 16,256,1024 --rounds 2,10 --out benchmarks/scale

run.py's callgrind method, alone and cheaper: app.c (an 8-byte Allreduce and a 1 KiB Bcast per
round, on MPI_COMM_WORLD and on 16-rank groups in turn), linked with libcolltune first, runs
under callgrind on `dragonfly-1024` with the SimGrid settings of README "4096 ranks" (flat
library algorithms and no detached sends: the MPICH family's P^2 set-up ring of every
communicator would otherwise be most of the simulator's work, ~50x slower under callgrind; they
change the library's code, not colltune's), in the learning mode (COLLTUNE_SELECT=-: every
call drawn among the library and the members the build's proof passed, COLLTUNE_SELECT_SEED 1)
and in pass-through, each with the two round counts of --rounds. libcolltune's instructions
(the self cost of every function of the ranks' copies of it) of the longer run minus the
shorter, over the calls the longer one adds (2 per round and rank), is the per-call figure: what
is done once per rank (MPI_Init, the proof, the first calls' set-up on each communicator) is
in both runs and cancels. Every run's rank-0 checksum must equal the plain run's. Rows to
percall.csv (rows of rank counts not run are kept).

`--window` (session 11): one run per rank count and mode instead of the pair. app.c runs --rounds'
longer count of rounds under callgrind with instrumentation off (`--instr-atstart=no`) except
for rounds SHORT..LONG-1, which it brackets with PMPI barriers and rank 0's
CALLGRIND_START/STOP_INSTRUMENTATION (app.c, "Usage"): the window holds exactly the calls the
pair's difference counts (the rounds the longer run adds), so libcolltune's instructions in it
over those calls is the same per-call figure, while everything outside the window (SMPI's
start-up of P ranks, MPI_Init, the first rounds, MPI_Finalize) runs at valgrind's
uninstrumented speed. This is what makes 4096 ranks affordable. The run's own rank-0 checksum
must equal the plain run's. Rows to percall.csv with method "window" (setup_per_rank empty);
`--keep-callgrind` keeps the output as callgrind-P-window-LEARN.out.

`--in-process-sed` and `--compact` (session 12, README "4096 ranks under callgrind"): with
--window, SimGrid's per-rank `sed` done inside the simulator (sed_inprocess.c, preloaded) instead
of by a fork of valgrind's whole process per rank, and libcolltune (linked again from the
build's objects) and the program in two ELF segments each, stripped, without guard pages under
the simulated stacks, so that valgrind's fixed table of 30,000 address-space segments holds 4096
ranks. Neither changes colltune's code (256 ranks: the same instructions to the last). Since
session 13 --compact also drops the program's section headers (drop_section_headers): valgrind
reads no symbols of its copies, so the list of objects it walks for every new block holds one
copy per rank (libcolltune's), not two (16 ranks: 65,509 instructions in the window either way).

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 19 .venv/bin/python benchmarks/scale/percall.py --window \
        --compact --in-process-sed --ranks 4096 --modes learning --rounds 2,4 --out benchmarks/scale

Every row names the code it measured (`native_code`: the last commit that changed libcolltune's
sources, "+changes" for a tree that differs from it; rows before session 13 were filled from the
README sections that report them). A row is identified by its rank count, mode, method and
rounds: a window of rounds 2-3 and one of rounds 2-9 are two rows (their draws serve different
mixes of members: README, "Main's code at 16 to 4096 ranks, two windows").

`--setup` (session 14): one callgrind run per rank count of the SHORT-round program, instrumented
from the start (the pair's short run alone, with --compact --in-process-sed if given): the set-up
per rank (method "setup": MPI_Init, the first calls of each communicator, MPI_Finalize), and with
`--functions DIR --setup` the first-call layout (mode "learning (setup, 2 rounds)").

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 19 .venv/bin/python benchmarks/scale/percall.py --setup --compact \
        --in-process-sed --ranks 16,256,1024 --modes learning --rounds 2,10 --out benchmarks/scale --keep-callgrind /tmp/cgs

`--functions DIR` reads the kept callgrind outputs function by function (percall_functions.csv;
with `--window`, the window runs' outputs, mode "learning (window 2-9)" for `--rounds 2,10`):
each function's share of the per-call figure, and the first-call layout computation of a
communicator (LAYOUT_FUNCTIONS: its own instructions per call, from the 2-round run).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402  (benchmarks/scale/run.py: its app, launch and callgrind reading)

from colltune.mpi import build, smpi  # noqa: E402
from colltune.paths import native_dir  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

SETTINGS = ["smpi/send-is-detached-thresh:0", "smpi/allreduce:rdb", "smpi/bcast:binomial_tree",
            "smpi/reduce:binomial"]
FIELDS = ("ranks", "mode", "method", "rounds_short", "rounds_long", "instructions_short", "instructions_long",
          "per_call", "setup_per_rank", "checksum_equal", "callgrind_cpu_s", "smpi_cfg", "started_utc",
          "native_code")
FUNCTION_FIELDS = ("ranks", "mode", "function", "self_short", "self_long", "per_call", "calls_short",
                   "self_per_call_short")
# the first-call layout computation of a communicator (core/layout.c): its own instructions per
# call, read from the 2-round run (every call of it is a communicator's first)
LAYOUT_FUNCTIONS = ("ct_comm_layout", "ct_world_twin_open")


def function_rows(directory: Path, ranks: int, mode: str, short: int, long_: int) -> list[dict[str, object]]:
    """Per function: its self instructions in both runs, the difference over the added calls
    (2 per round and rank), and its calls and instructions per call in the short run."""
    learn = int(mode == "learning")
    own_s, calls_s = run.colltune_functions(directory / f"callgrind-{ranks}-{short}-{learn}.out")
    own_l, _ = run.colltune_functions(directory / f"callgrind-{ranks}-{long_}-{learn}.out")
    added = ranks * 2 * (long_ - short)
    rows = []
    for name in sorted(set(own_s) | set(own_l)):
        a, b = own_s.get(name, 0), own_l.get(name, 0)
        n = calls_s.get(name, 0)
        rows.append({"ranks": ranks, "mode": mode, "function": name, "self_short": a, "self_long": b,
                     "per_call": round((b - a) / added, 1), "calls_short": n,
                     "self_per_call_short": round(a / n, 1) if n else ""})
    return rows


def window_mode(mode: str, short: int, long_: int) -> str:
    """percall_functions.csv's mode of a window run: the mode and the window's rounds (a window's
    draws, and so its mix of members, depend on its rounds: README, "Why 4096 ranks count fewer
    instructions per call")."""
    return f"{mode} (window {short}-{long_ - 1})"


def window_function_rows(directory: Path, ranks: int, mode: str, short: int, long_: int) -> list[dict[str, object]]:
    """Per function: its self instructions in the window run (callgrind-P-window-LEARN.out)
    over the window's calls (2 per round and rank)."""
    own, calls = run.colltune_functions(directory / f"callgrind-{ranks}-window-{int(mode == 'learning')}.out")
    added = ranks * 2 * (long_ - short)
    return [{"ranks": ranks, "mode": window_mode(mode, short, long_), "function": name, "self_short": "",
             "self_long": own[name], "per_call": round(own[name] / added, 1), "calls_short": calls.get(name, 0),
             "self_per_call_short": ""}
            for name in sorted(own)]


def setup_function_rows(directory: Path, ranks: int, mode: str, short: int, long_: int) -> list[dict[str, object]]:
    """Per function: its self instructions in the --setup run (callgrind-P-setup-LEARN.out, the
    whole SHORT-round program) and its calls there; no per-call figure (per_call empty)."""
    own, calls = run.colltune_functions(directory / f"callgrind-{ranks}-setup-{int(mode == 'learning')}.out")
    return [{"ranks": ranks, "mode": f"{mode} (setup, {short} rounds)", "function": name, "self_short": own[name],
             "self_long": "", "per_call": "", "calls_short": calls.get(name, 0),
             "self_per_call_short": round(own[name] / calls[name], 1) if calls.get(name) else ""}
            for name in sorted(own)]


def write_functions(rows: list[dict[str, object]], out: Path) -> None:
    """percall_functions.csv: the functions whose share per added call is at least 0.5
    instruction (either way) and the layout's; rows of other (ranks, mode) kept."""
    path = out / "percall_functions.csv"
    done = {(int(r["ranks"]), str(r["mode"])) for r in rows}
    kept = []
    if path.exists():
        with path.open() as f:
            kept = [r for r in csv.DictReader(f) if (int(r["ranks"]), r["mode"]) not in done]
    # a set-up run's rows (no per-call figure): the functions of at least 50 instructions per rank
    chosen = [r for r in rows if r["function"] in LAYOUT_FUNCTIONS
              or (r["per_call"] == "" and int(r["self_short"]) >= 50 * int(r["ranks"]))  # type: ignore[call-overload]
              or (r["per_call"] != "" and abs(float(r["per_call"])) >= 0.5)]  # type: ignore[arg-type]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FUNCTION_FIELDS)
        writer.writeheader()
        writer.writerows(sorted([*kept, *chosen], key=lambda r: (int(r["ranks"]), str(r["mode"]),  # type: ignore[call-overload]
                                                                 -abs(float(r["per_call"] or 0)),  # type: ignore[arg-type]
                                                                 -int(r["self_short"] or 0))))  # type: ignore[call-overload]


def sed_shim(work: Path) -> Path:
    """sed_inprocess.c built as a library to preload into smpimain (--in-process-sed)."""
    out = work / "sed_inprocess.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(out), str(HERE / "sed_inprocess.c"), "-ldl"],
                   check=True)
    return out


def window_instructions(lib: mpi.MpiLibrary, art: build.Artifacts, exe: Path, nprocs: int, short: int,
                        long_: int, work: Path, learn: bool, preload: Path | None = None,
                        extra_cfg: tuple[str, ...] = (), setup: bool = False) -> tuple[int, str, Path]:
    """libcolltune's instructions in rounds short..long-1 of a long-round run of app.c under
    callgrind, instrumented only there (app.c's window), rank 0's line, and the output file;
    preload: sed_shim's library, preloaded into the simulator (not into the measured code).
    setup (--setup): instead the whole `short`-round program, instrumented from the start (the
    pair's short run: MPI_Init, the first calls of each communicator, MPI_Finalize)."""
    out = work / f"callgrind-{nprocs}-{'setup' if setup else 'window'}-{int(learn)}.out"
    learning = {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_SEED": "1"} if learn else {}
    if preload is not None:
        learning["LD_PRELOAD"] = str(preload)
    program = [str(exe), str(short)] if setup else [str(exe), str(long_), str(short), str(long_)]
    instr = "" if setup else " --instr-atstart=no"
    argv = smpi.smpirun_argv(lib.mpiexec, nprocs, program, {smpi.PLATFORM_VAR: run.PLATFORM},
                             [f"--cfg=smpi/privatize-libs:{art.libcolltune}",
                              *(f"--cfg={setting}" for setting in run.SMPI_CFG),
                              *(f"--cfg={setting}" for setting in extra_cfg), "-wrapper",
                              f"valgrind --tool=callgrind{instr} --callgrind-out-file={out}"])
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, "COLLTUNE_VERBOSE": "0", **learning,
                               **run.private_tmpdir(work, f"window-{nprocs}-{int(learn)}"),
                               "COLLTUNE_PROOF": str(art.dir / "proof.txt")}, check=False)
    if proc.returncode != 0:
        sys.exit(f"callgrind window run failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")
    line = next(l for l in proc.stdout.splitlines() if l.startswith("scale-app"))
    total = run.colltune_instructions(out)
    if total == 0:
        sys.exit(f"no instruction of libcolltune in the window of {out}: app.c was compiled without "
                 "valgrind's <valgrind/callgrind.h> (install valgrind: `make setup-valgrind`)")
    what = f"{short} rounds, whole program" if setup else f"window, rounds {short}..{long_ - 1}"
    print(f"callgrind {nprocs} ranks, {what}, {'learning' if learn else 'pass-through'}: {total} instructions "
          "in libcolltune", file=sys.stderr, flush=True)
    return total, line, out


def stripped(art: build.Artifacts, directory: Path) -> build.Artifacts:
    """The build with libcolltune.so stripped of its debug information (`strip --strip-debug`:
    the same code, and the symbol table callgrind names functions by), and its proof beside it:
    valgrind reads the debug information of every rank's copy SMPI loads."""
    directory.mkdir(parents=True)
    lib = directory / art.libcolltune.name
    subprocess.run(["strip", "--strip-debug", "-o", str(lib), str(art.libcolltune)], check=True)
    (directory / "proof.txt").write_bytes((art.dir / "proof.txt").read_bytes())
    return dataclasses.replace(art, dir=directory, libcolltune=lib)


# --compact: two ELF segments per object instead of five (text and read-only data in one, no
# RELRO split), so that valgrind's fixed table of 30,000 address-space segments holds 4096 ranks'
# copies of the program and of libcolltune (README, "4096 ranks under callgrind")
COMPACT_LDFLAGS = ["-Wl,-z,noseparate-code", "-Wl,-z,norelro"]
COMPACT_CFG = ("contexts/guard-size:0",)  # the stacks' guard pages: one segment per rank


def compact(lib: mpi.MpiLibrary, art: build.Artifacts, directory: Path) -> build.Artifacts:
    """libcolltune.so linked again from the build's own objects, in the build's order, with
    COMPACT_LDFLAGS, then stripped of its debug information: the same machine code in fewer
    mappings; its proof beside it."""
    directory.mkdir(parents=True)
    out = directory / art.libcolltune.name
    private_product, _ = build._PRIVATE_MALLOC.get(art.family, ("", ""))  # type: ignore[attr-defined]
    own = art.libcolltune.name == private_product
    root = native_dir()
    objs = [str(art.dir / "obj" / (("private__" if own else "") + str(src.relative_to(root)).replace(os.sep, "__")
                                   + ".o"))
            for g in build._PRODUCTS[art.libcolltune.name] for src in build._sources(g)]  # type: ignore[attr-defined]
    linked = directory / "linked.so"
    subprocess.run([str(lib.mpicc), "-shared", "-o", str(linked), *objs, "-ldl", "-lpthread", "-lm",
                    *COMPACT_LDFLAGS], check=True, env=build._compile_env(lib))  # type: ignore[attr-defined]
    subprocess.run(["strip", "--strip-debug", "-o", str(out), str(linked)], check=True)
    (directory / "proof.txt").write_bytes((art.dir / "proof.txt").read_bytes())
    return dataclasses.replace(art, dir=directory, libcolltune=out)


def drop_section_headers(program: Path) -> None:
    """The program's ELF header made to list no section headers (e_shoff, e_shnum, e_shstrndx
    zeroed; the loader and dlopen read only the program headers): valgrind then reads no symbols
    of its per-rank copies (readelf.c: "Missing or invalid ELF Section Header Table"), so the
    objects it walks to find which one holds each block callgrind translates (VG_(find_DebugInfo),
    a linear list; 65% of the 4096-rank window's CPU in session 12) are 4096 copies of
    libcolltune, not 8192 objects. The program's own code is not counted (callgrind files it
    under "???"); libcolltune and its debug information are untouched."""
    data = bytearray(program.read_bytes())
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit(f"{program} is not a 64-bit ELF file: cannot drop its section headers (--compact)")
    data[0x28:0x30] = bytes(8)  # e_shoff
    data[0x3C:0x40] = bytes(4)  # e_shnum, e_shstrndx
    program.write_bytes(data)


def _key(row: dict[str, object]) -> tuple[int, str, str, int, int]:
    """A percall.csv row's identity: rank count, mode, method (rows before session 11 have no
    method column: the pair's difference) and the rounds (a window of rounds 2-3 and one of 2-9
    are two rows: their draws differ)."""
    return (int(row["ranks"]), str(row["mode"]), str(row.get("method") or "difference"),  # type: ignore[call-overload]
            int(row["rounds_short"]), int(row["rounds_long"]))  # type: ignore[call-overload]


# libcolltune's sources (build._PRODUCTS): the code a row's instructions are of
LIBCOLLTUNE_SOURCES = ("native/core", "native/variants", "native/runtime", "native/generated", "native/include")


def native_code() -> str:
    """The last commit that changed libcolltune's sources, "+changes" when the tree's differ from
    it: which code a row measured (rows of older code stay in percall.csv until rerun)."""
    root = native_dir().parent

    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=root, capture_output=True, text=True, check=False).stdout.strip()

    commit = git("log", "-1", "--format=%h", "--", *LIBCOLLTUNE_SOURCES) or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "--", *LIBCOLLTUNE_SOURCES) else "")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def checksum(line: str) -> str:
    return line.split("checksum ")[1].split()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="16,256,1024")
    ap.add_argument("--rounds", default="2,10", help="the two round counts, short,long")
    ap.add_argument("--modes", default="learning,pass-through")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--keep-callgrind", type=Path, metavar="DIR", help="copy the callgrind outputs to DIR")
    ap.add_argument("--window", action="store_true",
                    help="one callgrind run per rank count and mode, instrumented only in rounds SHORT..LONG-1")
    ap.add_argument("--setup", action="store_true",
                    help="one callgrind run per rank count and mode of the SHORT-round program, instrumented "
                         "throughout: the set-up per rank (method \"setup\"; --keep-callgrind keeps "
                         "callgrind-P-setup-LEARN.out for --functions --setup: the first-call layout)")
    ap.add_argument("--strip-debug", action="store_true",
                    help="run a copy of libcolltune.so without its debug information (same code)")
    ap.add_argument("--in-process-sed", action="store_true",
                    help="with --window or --setup: SMPI's per-rank sed applied in the simulator's process "
                         "(sed_inprocess.c, preloaded), not by a fork of valgrind's (README, \"4096 ranks "
                         "under callgrind\")")
    ap.add_argument("--compact", action="store_true",
                    help="with --window or --setup: libcolltune linked again from the build's objects and the program "
                         "linked with two segments each, stripped, and no guard page under the simulated "
                         "ranks' stacks: valgrind's 30,000 address-space segments hold 4096 ranks then")
    ap.add_argument("--parallel", action="store_true", help="the two callgrind runs of a pair at once")
    ap.add_argument("--from-callgrind", type=Path, metavar="DIR",
                    help="read the pair's callgrind outputs from DIR (callgrind-P-ROUNDS-LEARN.out) instead "
                         "of running them; the checksums are still compared (callgrind_cpu_s: the runs' own)")
    ap.add_argument("--callgrind-cpu", type=float, help="with --from-callgrind: the pair's CPU seconds, as measured")
    ap.add_argument("--functions", type=Path, metavar="DIR",
                    help="run nothing: percall_functions.csv from the callgrind outputs kept in DIR "
                         "(--keep-callgrind) for --ranks and --modes")
    args = ap.parse_args()
    short, long_ = (int(x) for x in args.rounds.split(","))
    if args.functions:
        reader = setup_function_rows if args.setup else window_function_rows if args.window else function_rows
        rows = [r for p in args.ranks.split(",") for mode in args.modes.split(",")
                for r in reader(args.functions, int(p), mode, short, long_)]
        write_functions(rows, args.out)
        for r in rows:
            if abs(float(r["per_call"] or 0)) >= 5 or r["function"] in LAYOUT_FUNCTIONS:  # type: ignore[arg-type]
                print(r)
        return
    run.SMPI_CFG.extend(SETTINGS)
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    if not (art.dir / "proof.txt").exists():
        sys.exit(f"no proof in {art.dir}: run `colltune selftest --mpi smpi -n 4 --quick` first (the learning "
                 "mode draws among the members it passed)")
    rows: list[dict[str, object]] = []
    code = native_code()
    with tempfile.TemporaryDirectory(prefix="colltune-percall-") as tmp:
        work = Path(tmp)
        if args.compact:
            art = compact(lib, art, work / "compact")
        elif args.strip_debug:
            art = stripped(art, work / "stripped")
        plain, linked = run.compile_app(lib, art, work)
        if args.compact:  # the program's copies in two segments too (its code is not counted)
            build.compile_program(lib, [HERE / "app.c"], linked,
                                  [f"-L{art.dir}", "-Wl,--no-as-needed", "-lcolltune", "-Wl,--as-needed",
                                   f"-Wl,-rpath,{art.dir}", *COMPACT_LDFLAGS])
            drop_section_headers(linked)
        extra_cfg = COMPACT_CFG if args.compact else ()
        preload = sed_shim(work) if args.in_process_sed else None
        for p in (int(x) for x in args.ranks.split(",")):
            # the plain run's checksum, of the program the measured runs run
            _, _, reference = run.launch(lib, art, plain, p, short if args.setup else long_, {})
            for mode in args.modes.split(","):
                learn = mode == "learning"
                env = {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_SEED": "1"} if learn else {}
                if not (args.window or args.setup):  # these runs check their own line
                    _, _, line = run.launch(lib, art, linked, p, long_, env)
                started, cpu = time.strftime("%H:%M:%S", time.gmtime()), _cpu()
                if args.setup or args.window:  # one callgrind run, instrumented in part or throughout
                    total, line, out = window_instructions(lib, art, linked, p, short, long_, work, learn, preload,
                                                          extra_cfg, setup=args.setup)
                    row = {"ranks": p, "mode": mode, "method": "setup" if args.setup else "window",
                           "rounds_short": short, "rounds_long": short if args.setup else long_,
                           "instructions_short": total if args.setup else "",
                           "instructions_long": "" if args.setup else total,
                           "per_call": "" if args.setup else round(total / (p * 2 * (long_ - short)), 1),
                           "setup_per_rank": round(total / p) if args.setup else "",
                           "checksum_equal": checksum(line) == checksum(reference),
                           "callgrind_cpu_s": round(_cpu() - cpu, 1),
                           "smpi_cfg": " ".join([*SETTINGS, *extra_cfg]), "started_utc": started,
                           "native_code": code}
                    if args.keep_callgrind:
                        args.keep_callgrind.mkdir(parents=True, exist_ok=True)
                        (args.keep_callgrind / out.name).write_bytes(out.read_bytes())
                elif args.from_callgrind:  # the pair ran apart (e.g. each in a process of its own)
                    ir = {n: run.colltune_instructions(args.from_callgrind / f"callgrind-{p}-{n}-{int(learn)}.out")
                          for n in (short, long_)}
                elif args.parallel:  # two processes: twice the share of a loaded host's cores
                    from concurrent.futures import ThreadPoolExecutor

                    with ThreadPoolExecutor(max_workers=2) as pool:
                        jobs = {n: pool.submit(run.instructions, lib, art, linked, p, n, work, learn=learn)
                                for n in (short, long_)}
                        ir = {n: job.result() for n, job in jobs.items()}
                else:
                    ir = {n: run.instructions(lib, art, linked, p, n, work, learn=learn) for n in (short, long_)}
                if not (args.window or args.setup):
                    row = {"ranks": p, "mode": mode, "method": "difference", "rounds_short": short,
                           "rounds_long": long_, "instructions_short": ir[short], "instructions_long": ir[long_],
                           "per_call": round((ir[long_] - ir[short]) / (p * 2 * (long_ - short)), 1),
                           "setup_per_rank": round(ir[short] / p),
                           "checksum_equal": checksum(line) == checksum(reference),
                           "callgrind_cpu_s": args.callgrind_cpu if args.from_callgrind else round(_cpu() - cpu, 1),
                           "smpi_cfg": " ".join(SETTINGS), "started_utc": started, "native_code": code}
                print(row, flush=True)
                rows.append(row)
                if not row["checksum_equal"]:
                    sys.exit(f"{p} ranks, {mode}: checksum {line} differs from the plain run's {reference}")
                if args.keep_callgrind and not (args.from_callgrind or args.window or args.setup):
                    args.keep_callgrind.mkdir(parents=True, exist_ok=True)
                    for n in (short, long_):
                        src = work / f"callgrind-{p}-{n}-{int(learn)}.out"
                        (args.keep_callgrind / src.name).write_bytes(src.read_bytes())
                path = args.out / "percall.csv"
                args.out.mkdir(parents=True, exist_ok=True)
                kept = []
                if path.exists():
                    with path.open() as f:
                        done = {_key(x) for x in rows}
                        kept = [r for r in csv.DictReader(f) if _key(r) not in done]
                for r in kept:  # rows before session 11 have no method (the pair's), before 13 no code
                    r["method"] = r.get("method") or "difference"
                    r.setdefault("native_code", "")
                with path.open("w", newline="") as f:
                    writer = csv.DictWriter(f, fieldnames=FIELDS)
                    writer.writeheader()
                    writer.writerows(sorted([*kept, *rows], key=_key))


if __name__ == "__main__":
    main()
