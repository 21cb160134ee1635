"""What writing a quick check's launches costs: one transaction per launch or per batch (issue 36).

    python benchmarks/reproducibility/writes.py /tmp/repro.duckdb

Copies the results database (a file of ten checks, as the reproducibility batch leaves it), reads
the 32 launches of its first complete run back as the runner hands them over (store.LaunchData)
and writes them as a new run into the copy twice per way: each launch in its own transaction
(store.write_launch, the runner before issue 36's session 2) and in the batches of a check's looks,
8, 8 and 16 (store.write_launches). Prints wall and CPU seconds; records /proc/loadavg.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import duckdb

from colltune.schema import JOB_COLUMNS, MEASUREMENT_COLUMNS
from colltune.store import LaunchData, Store


def launches_of(db: Path) -> list[LaunchData]:
    with duckdb.connect(str(db), read_only=True) as con:
        (run_id,) = con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created LIMIT 1").fetchone()
        frames = {t: con.execute(f"SELECT * FROM {t} WHERE run_id = ?", [run_id]).fetchdf()
                  for t in ("launches", "environment", "jobs", "measurements")}
    env, jobs, meas = frames["environment"], frames["jobs"], frames["measurements"]
    return [LaunchData(launch_idx=int(r.launch_idx), nprocs=int(r.nprocs), repetition=int(r.repetition),
                       seed=int(r.seed), started=r.started, finished=r.finished, status=r.status,
                       message=r.message or "",
                       environment=dict(zip(env[env.launch_idx == r.launch_idx].key,
                                            env[env.launch_idx == r.launch_idx].value, strict=True)),
                       jobs=jobs[jobs.launch_idx == r.launch_idx][JOB_COLUMNS[1:]].reset_index(drop=True),
                       measurements=meas[meas.launch_idx == r.launch_idx][MEASUREMENT_COLUMNS[1:]]
                       .reset_index(drop=True))
            for r in frames["launches"].sort_values("launch_idx").itertuples()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    args = ap.parse_args()
    launches = launches_of(args.db)
    print(f"{len(launches)} launches; loadavg {Path('/proc/loadavg').read_text().strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        for way in ("per launch", "per look (8, 8, 16)") * 2:
            copy = Path(tmp) / "copy.duckdb"
            shutil.copy(args.db, copy)
            with Store(copy) as store:
                run_id = store.create_run(kind="check", command="writes.py", mpi_name="-", mpi_version="-",
                                          abi_family="-", settings={}, variants=[])
                t0, c0 = time.perf_counter(), time.process_time()
                if way == "per launch":
                    for launch in launches:
                        store.write_launch(run_id, launch)
                else:
                    for a, b in ((0, 8), (8, 16), (16, len(launches))):
                        store.write_launches(run_id, launches[a:b])
                print(f"  {way}: {time.perf_counter() - t0:.2f} s wall, {time.process_time() - c0:.2f} s CPU")
    print(f"loadavg {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
