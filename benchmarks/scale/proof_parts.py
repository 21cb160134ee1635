"""Where the SMPI proof's P^2 comes from (README, "The proof's P^2"): the proof's launch (what
`proof.prove` runs on SMPI: the selftest driver with `--sweep`, every mock-up on every case) on P
simulated ranks, with the host CPU seconds of the simulator process taken at each of the
driver's progress lines, so each (communicator, collective) step gets its own CPU seconds.

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 19 .venv/bin/python benchmarks/scale/proof_parts.py \\
        --ranks 4,8 --out benchmarks/scale

The driver prints a progress line after each collective's matrix (and sweep) on each
communicator (world, its half, its duplicate); the CPU between two lines is that step's. SMPI
runs every rank in the one `smpimain` process, so its /proc utime + stime is the whole launch's
CPU. Rows to proof_parts.csv (rows of rank counts not run again are kept), and a summary per
collective: its CPU at each P and the exponent between the two largest P.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from colltune.measure import selftest as st
from colltune.mpi import build, launch
from colltune.mpi import libraries as mpi

FIELDS = ("ranks", "step", "comm", "collective", "cpu_s", "started_utc")
TICK = os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _cpu(pids: list[int]) -> float:
    """utime + stime of the processes, in seconds (a process gone counts 0)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return total / TICK


def parts(lib: mpi.MpiLibrary, ranks: int) -> list[dict[str, object]]:
    art = build.ensure_built(lib)
    argv = st.driver_argv(art) + ["--sweep"]
    started = time.strftime("%H:%M:%S", time.gmtime())
    cmd = launch.mpiexec_argv(lib, ranks, argv, {})
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"colltune-proofparts-{os.getpid()}-{ranks}"
    tmp.mkdir(parents=True, exist_ok=True)  # smpirun's own (README, "Each run its own temporary directory")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            stdin=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp)})
    rows: list[dict[str, object]] = []
    last, step, peak = 0.0, 0, 0.0
    assert proc.stdout is not None
    for line in proc.stdout:
        if not line.startswith('{"type":"progress"'):
            continue
        # the launch's processes: smpirun's shell and the simulator (all ranks in one)
        now = _cpu(_descendants(proc.pid))
        peak = max(peak, now)
        record = json.loads(line)
        rows.append({"ranks": ranks, "step": step, "comm": record["comm"], "collective": record["collective"],
                     "cpu_s": round(now - last, 2), "started_utc": started})
        last, step = now, step + 1
    proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    if proc.returncode != 0:
        sys.exit(f"the proof launch on {ranks} ranks failed ({proc.returncode}): {' '.join(cmd)}")
    return rows


def summary(rows: list[dict[str, str]]) -> None:
    """CPU per collective at each P (all communicators), and the exponent between the two largest P."""
    import math

    table: dict[str, dict[int, float]] = {}
    for r in rows:
        cell = table.setdefault(str(r["collective"]), {})
        cell[int(r["ranks"])] = cell.get(int(r["ranks"]), 0.0) + float(r["cpu_s"])
    sizes = sorted({int(r["ranks"]) for r in rows})
    print("collective | " + " | ".join(f"{p} ranks CPU s" for p in sizes) + " | exponent")
    for coll, cells in sorted(table.items(), key=lambda kv: -kv[1].get(sizes[-1], 0.0)):
        a, b = sizes[-2:] if len(sizes) > 1 else (sizes[0], sizes[0])
        expo = (math.log(cells[b] / cells[a]) / math.log(b / a)
                if len(sizes) > 1 and cells.get(a, 0) > 0 and cells.get(b, 0) > 0 else float("nan"))
        print(f"{coll} | " + " | ".join(f"{cells.get(p, 0.0):.1f}" for p in sizes) + f" | {expo:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="4,8")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument("--summary-only", action="store_true", help="run nothing: the summary of OUT/proof_parts.csv")
    args = ap.parse_args()
    path = args.out / "proof_parts.csv"
    kept: list[dict[str, str]] = []
    if path.exists():
        with path.open(newline="") as f:
            kept = list(csv.DictReader(f))
    if args.summary_only:
        summary(kept)
        return
    lib = mpi.resolve("smpi")
    for p in (int(x) for x in args.ranks.split(",")):
        new = parts(lib, p)
        print(f"{p} ranks: {sum(float(r['cpu_s']) for r in new):.1f} CPU s in {len(new)} steps", flush=True)
        kept = [r for r in kept if int(r["ranks"]) != p] + new  # type: ignore[misc]
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(sorted(kept, key=lambda r: (int(r["ranks"]), int(r["step"]))))
    summary(kept)


if __name__ == "__main__":
    main()
