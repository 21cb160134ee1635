"""SMPI's start-up of P ranks under valgrind, with candidate settings (README, "4096 ranks under
callgrind").

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 19 .venv/bin/python benchmarks/scale/startup.py \\
        --ranks 256,1024 --candidates native,window,stripped --out benchmarks/scale

Each launch is app.c with one round, linked with libcolltune (pass-through: no proof needed), on
`dragonfly-1024` with percall.py's SimGrid settings, under `valgrind --tool=callgrind
--instr-atstart=no` (percall.py --window's wrapper, with no window: nothing is instrumented),
so its cost is SMPI's start-up of P ranks (per rank: a copy of the program and of libcolltune,
a `sed` through system(), a dlopen; SimGrid 3.32 src/smpi/internals/smpi_global.cpp:423-482)
plus one round and MPI_Finalize. A candidate changes only how that runs (valgrind's options,
SimGrid's context settings, a copy of libcolltune stripped of its debug information), never the
program, its arguments or the library's code; rank 0's checksum must equal the native run's.
Rows (host CPU seconds of the launch and its children, wall seconds, peak resident memory of
the largest process, the load) to startup.csv; rows of other (ranks, candidate) are kept.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import percall  # noqa: E402
import run  # noqa: E402

from colltune.mpi import build, smpi  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

VALGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
# name -> (which libcolltune and program: the build's ("debug"), stripped of its debug information
# ("stripped", percall.py --strip-debug) or linked again in two segments per object and stripped
# ("compact", percall.py --compact), valgrind's extra options (None: no valgrind at all),
# SimGrid's extra settings, SMPI's per-rank sed in the simulator's process)
CANDIDATES: dict[str, tuple[str, list[str] | None, list[str], bool]] = {
    "native": ("debug", None, [], False),
    "window": ("debug", [], [], False),  # percall.py --window as session 11 ran it
    "stripped": ("stripped", [], [], False),  # percall.py --window --strip-debug
    "stripped-sectors48": ("stripped", ["--num-transtab-sectors=48"], [], False),
    "stripped-stack256k": ("stripped", [], ["contexts/stack-size:256", "contexts/guard-size:0"], False),
    "stripped-sed": ("stripped", [], [], True),  # percall.py --window --strip-debug --in-process-sed
    "compact-sed": ("compact", [], list(percall.COMPACT_CFG), True),  # percall.py --window --compact --in-process-sed
}
FIELDS = ("ranks", "candidate", "cpu_s", "wall_s", "maxrss_mb", "load", "checksum_equal", "valgrind",
          "smpi_cfg", "in_process_sed", "libcolltune", "started_utc")


def one(lib: mpi.MpiLibrary, art: build.Artifacts, exe: Path, nprocs: int, name: str, work: Path,
        reference: str | None) -> dict[str, object]:
    kind, vg, cfg, sed = CANDIDATES[name]
    flags = [f"--cfg=smpi/privatize-libs:{art.libcolltune}", *(f"--cfg={s}" for s in run.SMPI_CFG),
             *(f"--cfg={s}" for s in cfg)]
    if vg is not None:
        flags += ["-wrapper", " ".join([*VALGRIND, *vg, f"--callgrind-out-file={work}/cg-{nprocs}-{name}.out"])]
    argv = smpi.smpirun_argv(lib.mpiexec, nprocs, [str(exe), "1"], {smpi.PLATFORM_VAR: run.PLATFORM}, flags)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, t0 = time.strftime("%H:%M:%S", time.gmtime()), time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
                          env={**os.environ, "COLLTUNE_VERBOSE": "0",
                               **({"LD_PRELOAD": str(percall.sed_shim(work))} if sed else {}),
                               **run.private_tmpdir(work, f"{name}-{nprocs}")})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"launch failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr[-2000:]}")
    line = next(l for l in proc.stdout.splitlines() if l.startswith("scale-app"))
    row = {"ranks": nprocs, "candidate": name,
           "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1),
           "wall_s": round(wall, 1), "maxrss_mb": round(after.ru_maxrss / 1024),
           "load": open("/proc/loadavg").read().split()[0],
           "checksum_equal": reference is None or percall.checksum(line) == reference,
           "valgrind": "" if vg is None else " ".join([*VALGRIND, *vg]), "smpi_cfg": " ".join(cfg),
           "in_process_sed": sed, "libcolltune": kind, "started_utc": started, "_checksum": percall.checksum(line)}
    print(row, file=sys.stderr, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="256,1024")
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    run.SMPI_CFG.extend(percall.SETTINGS)
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="colltune-startup-") as tmp:
        work = Path(tmp)
        arts = {"debug": art, "stripped": percall.stripped(art, work / "stripped"),
                "compact": percall.compact(lib, art, work / "compact")}
        _, linked = run.compile_app(lib, art, work)
        compact_app = work / "app-colltune-compact"
        build.compile_program(lib, [HERE / "app.c"], compact_app,
                              [f"-L{art.dir}", "-Wl,--no-as-needed", "-lcolltune", "-Wl,--as-needed",
                               f"-Wl,-rpath,{art.dir}", *percall.COMPACT_LDFLAGS])
        for p in (int(x) for x in args.ranks.split(",")):
            reference = None
            for name in args.candidates.split(","):
                kind = CANDIDATES[name][0]
                row = one(lib, arts[kind], compact_app if kind == "compact" else linked, p, name, work, reference)
                if reference is None:  # the first candidate's checksum (native first) is the reference
                    reference = str(row["_checksum"])
                del row["_checksum"]
                rows.append(row)
                if not row["checksum_equal"]:
                    sys.exit(f"{p} ranks, {name}: checksum differs from the native run's")
                path = args.out / "startup.csv"
                done = {(int(r["ranks"]), str(r["candidate"])) for r in rows}  # type: ignore[call-overload]
                kept = []
                if path.exists():
                    with path.open() as f:
                        kept = [r for r in csv.DictReader(f) if (int(r["ranks"]), r["candidate"]) not in done]
                with path.open("w", newline="") as f:
                    writer = csv.DictWriter(f, fieldnames=FIELDS)
                    writer.writeheader()
                    writer.writerows(sorted([*kept, *rows], key=lambda r: (int(r["ranks"]), str(r["candidate"]))))  # type: ignore[call-overload]


if __name__ == "__main__":
    main()
