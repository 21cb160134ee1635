"""The measurement's own cost: time per repetition spent outside the measured call.

For each sync method, one launch of the driver measures a small allreduce with a fixed number of
repetitions. From the global start/end times of the records: (last end - first start) / reps is
the wall time per repetition; minus the mean measured runtime it is what synchronization, the
per-chunk reduction to rank 0 and the record writing cost per repetition. Also: the spread of
the measured runtime per sync method (its median and 90th percentile).

    .venv/bin/python benchmarks/measurement/overhead.py [--nprocs 2 4] [--mpi openmpi]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import pandas as pd

from colltune.measure.protocol import read_driver_output
from colltune.mpi import build, launch
from colltune.mpi import libraries as mpi

REPS = 2000


def one(lib: mpi.MpiLibrary, art: build.Artifacts, nprocs: int, sync: str, tmp: Path) -> dict[str, object]:
    jobs = tmp / "jobs.txt"
    jobs.write_text("allreduce 8 unsigned_char sum - default\n")
    out = tmp / f"out-{sync}-{nprocs}.txt"
    proc = launch.run(lib, nprocs, [str(art.bench), "run", str(jobs), "--out", str(out), "--sync", sync,
                                    "--stop", "fixed", "--max-reps", str(REPS), "--warmup", "10",
                                    "--time-budget", "0"], timeout=600)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    rec = read_driver_output(out.read_text()).records
    rec = rec[rec.warmup == 0]
    wall = (rec.end_s.max() - rec.start_s.min()) / len(rec)
    valid = rec[rec.valid == 1]
    return {"nprocs": nprocs, "sync": sync, "reps": len(rec), "valid": len(valid),
            "runtime median (us)": valid.runtime_s.median() * 1e6,
            "runtime p90 (us)": valid.runtime_s.quantile(0.9) * 1e6,
            "wall per rep (us)": wall * 1e6,
            "overhead per rep (us)": (wall - rec.runtime_s.mean()) * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--mpi", default=None)
    args = parser.parse_args()
    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    rows = []
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nprocs:
            for sync in ("barrier", "dissemination", "window"):
                rows.append(one(lib, art, n, sync, Path(tmp)))
    pd.set_option("display.width", 200)
    print(f"{lib.short_version}, allreduce 8 B, {REPS} repetitions per launch; "
          f"load average before/after: {load0:.1f}/{os.getloadavg()[0]:.1f}")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.2f}"))


if __name__ == "__main__":
    main()
