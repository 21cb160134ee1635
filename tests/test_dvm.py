"""Launches into one persistent Open MPI DVM (mpi/dvm.py, native/launch/ct_dvmrun.c): each launch
new rank processes, its settings in its ranks, failures and stops as with mpirun, and no rank or
daemon left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from colltune.measure import runner
from colltune.measure.settings import BenchSettings
from colltune.mpi import build, dvm, launch
from colltune.mpi import libraries as mpi
from colltune.store import Store

JOB = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *probe = getenv("CT_DVM_PROBE");
    printf("rank %d of %d pid %d probe %s\n", rank, size, (int)getpid(), probe ? probe : "-");
    fflush(stdout);
    if (argc > 2) {  /* a pid file per rank, then sleep: a launch to stop */
        char path[4096];
        snprintf(path, sizeof path, "%s.%d", argv[2], rank);
        FILE *f = fopen(path, "w");
        fprintf(f, "%d", (int)getpid());
        fclose(f);
        sleep(60);
    }
    if (argc > 1 && rank == 1 && atoi(argv[1]) > 0)
        exit(atoi(argv[1]));
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(autouse=True)
def _on_this_host(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SLURM_JOB_ID", "COLLTUNE_LAUNCHER", "COLLTUNE_MPIEXEC_FLAGS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COLLTUNE_DVM", "1")  # off by default (mpi/dvm.py)


@pytest.fixture(scope="module")
def job(openmpi: mpi.MpiLibrary, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("dvm")
    (where / "job.c").write_text(JOB)
    return build.compile_program(openmpi, [where / "job.c"], where / "job")


@pytest.fixture(scope="module", autouse=True)
def _tool(openmpi: mpi.MpiLibrary) -> None:
    tool, why = dvm.tool_path(openmpi)
    if tool is None and why.startswith("no PMIx headers"):  # a host without libpmix-dev: mpirun only
        pytest.skip(why)
    assert tool is not None, why


@pytest.fixture
def running(openmpi: mpi.MpiLibrary):  # type: ignore[no-untyped-def]
    started, why = launch.start_dvm(openmpi)
    assert started is not None, why
    with started:
        assert started.wait_ready(30)
        yield started


def _ranks(stdout: str) -> list[tuple[int, int, int, str]]:
    lines = [line.split() for line in stdout.splitlines() if line.startswith("rank ")]
    return sorted((int(w[1]), int(w[3]), int(w[5]), w[7]) for w in lines)


def _rank_pid_files(pidfile: Path, ranks: int, within: float = 60.0) -> list[Path]:
    """The job's per-rank pid files (`<pidfile>.<rank>`), once every rank has written its pid
    (or `within` seconds have passed: the caller's reads then fail and say which)."""
    files = [Path(f"{pidfile}.{r}") for r in range(ranks)]
    deadline = time.monotonic() + within
    while not all(f.exists() and f.read_text() for f in files) and time.monotonic() < deadline:
        time.sleep(0.05)
    return files


def _gone(pids: list[int], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


def test_each_launch_is_new_ranks_with_their_settings(openmpi: mpi.MpiLibrary, job: Path, running: dvm.Dvm) -> None:
    seen = []
    for probe in ("first", "second"):
        proc = launch.popen(openmpi, 3, [str(job)], {"CT_DVM_PROBE": probe}, dvm=running)
        out, err = proc.communicate(timeout=60)
        assert launch.via_dvm(proc)
        assert proc.returncode == 0, err
        ranks = _ranks(out)
        assert [(r, size, p) for r, size, _, p in ranks] == [(0, 3, probe), (1, 3, probe), (2, 3, probe)]
        seen.append({pid for _, _, pid, _ in ranks})
    assert not seen[0] & seen[1]  # fresh processes every launch
    assert running.proc is not None and running.proc.poll() is None  # the daemon stays


def test_a_failing_rank_fails_the_launch(openmpi: mpi.MpiLibrary, job: Path, running: dvm.Dvm) -> None:
    proc = launch.popen(openmpi, 2, [str(job), "3"], {}, dvm=running)
    proc.communicate(timeout=60)
    assert launch.via_dvm(proc) and proc.returncode == 1


def test_a_stopped_launch_leaves_no_rank(openmpi: mpi.MpiLibrary, job: Path, running: dvm.Dvm, tmp_path: Path) -> None:
    """What measure.runner does to stop a launch (SIGTERM to its process group) ends its ranks,
    although they are the DVM's children, not the launch tool's."""
    pidfile = tmp_path / "pid"
    proc = launch.popen(openmpi, 2, [str(job), "0", str(pidfile)], {}, dvm=running)
    files = _rank_pid_files(pidfile, 2)
    pids = [int(f.read_text()) for f in files]
    runner._stop_process(proc)
    assert proc.returncode == 128 + signal.SIGTERM
    assert _gone(pids)
    assert running.proc is not None and running.proc.poll() is None


def test_closing_the_dvm_ends_its_jobs(openmpi: mpi.MpiLibrary, job: Path, tmp_path: Path) -> None:
    started, why = launch.start_dvm(openmpi)
    assert started is not None, why
    assert started.wait_ready(30)
    daemon = started.proc
    assert daemon is not None
    pidfile = tmp_path / "pid"
    proc = launch.popen(openmpi, 2, [str(job), "0", str(pidfile)], {}, dvm=started)
    files = _rank_pid_files(pidfile, 2)
    started.close()
    assert daemon.returncode is not None
    assert _gone([int(f.read_text()) for f in files])
    proc.communicate(timeout=30)
    assert proc.returncode != 0


def test_a_dead_dvm_is_not_used(openmpi: mpi.MpiLibrary, job: Path, running: dvm.Dvm) -> None:
    assert running.proc is not None
    os.killpg(running.proc.pid, signal.SIGKILL)
    running.proc.wait(timeout=10)
    assert running.argv(2, [str(job)], {}) is None
    proc = launch.popen(openmpi, 2, [str(job)], {"CT_DVM_PROBE": "mpirun"}, dvm=running)
    out, err = proc.communicate(timeout=60)
    assert not launch.via_dvm(proc) and proc.returncode == 0, err
    assert [p for *_, p in _ranks(out)] == ["mpirun", "mpirun"]


def test_the_dvm_ends_when_colltune_is_killed(tmp_path: Path) -> None:
    starter = ("import os, signal, sys\n"
               "os.environ['COLLTUNE_DVM'] = '1'\n"
               "from colltune.mpi import launch, libraries\n"
               "d, why = launch.start_dvm(libraries.resolve('openmpi'))\n"
               "assert d is not None and d.wait_ready(30), why\n"
               "print(d.proc.pid, flush=True)\n"
               "os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert _gone([int(done.stdout.split()[0])])


def test_no_dvm_where_it_does_not_apply(openmpi: mpi.MpiLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    mpich = mpi.MpiLibrary(name="mpich", family="mpich", version="MPICH Version: 5.0.2",
                           mpicc=Path("/m/bin/mpicc"), mpiexec=Path("/m/bin/mpiexec"))
    assert launch.start_dvm(mpich) == (None, "not Open MPI on this host")
    for off in ("0", ""):
        monkeypatch.setenv("COLLTUNE_DVM", off)
        assert launch.start_dvm(openmpi) == (None, "COLLTUNE_DVM is not 1 (off by default: slower than mpirun here)")
    monkeypatch.delenv("COLLTUNE_DVM")
    assert launch.start_dvm(openmpi)[0] is None
    monkeypatch.setenv("COLLTUNE_DVM", "1")
    monkeypatch.setenv("COLLTUNE_MPIEXEC_FLAGS", "--host a,b")
    assert launch.start_dvm(openmpi) == (None, "COLLTUNE_MPIEXEC_FLAGS given (mpirun's own options)")
    monkeypatch.delenv("COLLTUNE_MPIEXEC_FLAGS")
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    assert launch.start_dvm(openmpi) == (None, "not Open MPI on this host")


def test_a_session_measures_in_its_dvm_with_the_handoff(openmpi: mpi.MpiLibrary, tmp_path: Path) -> None:
    """A runner session with a ready DVM: every launch in it, one after another as with mpirun
    (launch k+1 started while k ends, measuring only after k's exit), the DVM gone afterwards."""
    settings = BenchSettings(collectives=["bcast"], sizes=[64], nprocs=[2], launches=3,  # type: ignore[arg-type]
                             stop={"methods": [], "max_reps": 12, "warmup": 2, "check_every": 4})
    db = tmp_path / "d.duckdb"
    with runner.Session(dvm=True) as session:
        started = session.start_dvm(openmpi)
        assert started is not None and started.wait_ready(30), session.dvm_note
        daemon = started.proc
        run_id = runner.run(settings, db, progress=False, session=session)
    assert daemon is not None and daemon.returncode is not None
    with Store(db, read_only=True) as store:
        every = store.environment(run_id)
        launches = store.launches(run_id)
        m = store.measurements(run_id)
    fact = {(int(i), k): v for i, k, v in every[["launch_idx", "key", "value"]].itertuples(index=False)}
    assert sorted(launches.launch_idx) == [0, 1, 2] and set(launches.status) == {"ok"}
    assert [fact[i, "dvm"] for i in range(3)] == ["true", "true", "true"]
    assert [fact[i, "started_ahead"] for i in range(3)] == ["false", "true", "true"]
    assert set(m.groupby(["launch_idx", "collective", "variant"]).size()) == {14}
    finished = [(t - pd.Timestamp(0)).total_seconds() for t in launches.sort_values("launch_idx")["finished"]]
    for k in (1, 2):
        assert float(fact[k - 1, "measuring_until"]) <= finished[k - 1] <= float(fact[k, "measuring_from"])
