"""Two persistent collectives Intel MPI 2021.18.1 cannot run, and the bench leaving them out.

`colltune check --preset nonblocking --mpi intel -n 4` died in its first launch twice: a
started MPI_Scatter_init request fails its second start from 3 ranks on ("Invalid communicator",
the other ranks hang), and a started MPI_Allgather_init request crashes after a few starts. Both
with the library alone (benchmarks/intel_nonblocking/scatter_init.c, allgather_init.c). The plan
leaves those `default#persistent` variants out with the reason (mpi/algorithms.py
VARIANT_NPROCS_LIMITS); with Intel MPI installed the facts are checked again, so a release that
fixes them fails here and the limits can go.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from interposer_support import run_mpi

from colltune.measure import planning
from colltune.measure.settings import BenchSettings
from colltune.mpi import build
from colltune.mpi import libraries as mpi

EVIDENCE = Path(__file__).resolve().parents[1] / "benchmarks" / "intel_nonblocking"
FORMS = ["default", "default#nonblocking", "default#persistent"]


def test_the_plan_leaves_out_what_intel_cannot_run() -> None:
    s = BenchSettings(collectives=["scatter", "allgather", "gather"], sizes=[1024], variants=FORMS,
                      barrier=False)
    at4 = planning.plan_jobs(s, 4, "intel")
    assert [j.line() for j in at4.jobs] == [
        "scatter 1024 byte - 0 default,default#nonblocking",
        "allgather 1024 byte - - default,default#nonblocking",
        "gather 1024 byte - 0 default,default#nonblocking,default#persistent"]
    assert [x.split(":")[0] for x in at4.left_out] == ["scatter default#persistent", "allgather default#persistent"]
    assert "MPI_Scatter_init request started a second time" in at4.left_out[0]
    assert "benchmarks/intel_nonblocking/allgather_init.c" in at4.left_out[1]
    at2 = planning.plan_jobs(s, 2, "intel")
    assert [j.variants for j in at2.jobs] == [tuple(FORMS), tuple(FORMS[:2]), tuple(FORMS)]
    # other libraries run them
    assert all(j.variants == tuple(FORMS) for j in planning.plan_jobs(s, 4, "mpich").jobs)



def test_scatter_init_fails_its_second_start_from_3_ranks(intel: mpi.MpiLibrary, tmp_path: Path) -> None:
    exe = build.compile_program(intel, [EVIDENCE / "scatter_init.c"], tmp_path / "scatter_init")
    two = run_mpi(intel, 2, [exe], {}, timeout=120)
    assert two.returncode == 0 and sorted(two.stdout.splitlines())[-2:] == [
        "rank 1 of 2: first start 0 (recv[0] 8)", "rank 1 of 2: second start 0 "], two.describe()
    three = run_mpi(intel, 3, [exe], {}, timeout=60)   # the last rank hangs: stopped here
    assert three.returncode != 0
    [root] = [x for x in three.stdout.splitlines() if x.startswith("rank 0 of 3: second start ")]
    assert root.split()[6] != "0" and "Invalid communicator" in three.stdout, three.describe()


def test_allgather_init_crashes_after_a_few_starts(intel: mpi.MpiLibrary, tmp_path: Path) -> None:
    exe = build.compile_program(intel, [EVIDENCE / "allgather_init.c"], tmp_path / "allgather_init")
    run = run_mpi(intel, 2, [exe, "32768", "5"], {}, timeout=120)
    assert run.returncode != 0 and "start 5 of 32768 bytes done" not in run.stdout, run.describe()
    assert "start 1 of 32768 bytes done, 0 wrong bytes so far" in run.stdout, run.describe()
    small = run_mpi(intel, 2, [exe, "1024", "5"], {}, timeout=120)
    assert small.returncode == 0 and "rank 1: 5 starts, 0 wrong bytes" in small.stdout, small.describe()
