"""A run whose writer was killed outright is resumed by `--resume latest` (issue 14, defect 5).

The writer holds an flock while it measures (colltune.measure.runlock); the kernel releases it
however the process ends, so `running` + no lock holder = interrupted."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from colltune.commands.bench import command as bench_command
from colltune.measure import runlock, runner
from colltune.store import Store, StoreError

COLLTUNE = str(Path(sys.executable).parent / "colltune")
HOST = socket.gethostname()


def _make_run(db: Path, run_id: str, status: str = "running") -> None:
    with Store(db) as store:
        store.create_run(kind="bench", command="colltune bench", mpi_name="openmpi", mpi_version="v",
                         abi_family="openmpi", settings={}, variants=[], run_id=run_id)
        if status != "running":
            store.set_run_status(run_id, status)  # type: ignore[arg-type]
        time.sleep(0.01)  # distinct creation times


def _hold_lock(db: Path, run_id: str) -> subprocess.Popen[str]:
    """Another process measuring `run_id`: holds its lock until killed."""
    code = ("import sys, time\nfrom colltune.measure.runlock import RunLock\n"
            f"lock = RunLock({str(db)!r}, {run_id!r})\nprint('held', flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_live_writer_is_left_alone_and_a_dead_one_is_resumed(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    _make_run(db, "old-interrupted", "interrupted")
    _make_run(db, "live")
    holder = _hold_lock(db, "live")
    try:
        owner = f"PID {holder.pid} on {HOST}"
        assert runlock.live_writer(db, "live") == owner
        # the live run is skipped: the older interrupted one is the one to resume
        assert runner.resumable_run(db) == ("old-interrupted", "")
        with pytest.raises(runlock.RunBusyError, match=f"run live is being measured by {owner} "):
            runlock.RunLock(db, "live")
        with Store(db) as store:
            store.set_run_status("old-interrupted", "complete")
        assert runner.resumable_run(db) == (None, f"; still being measured: live (measured by {owner})")
        result = CliRunner().invoke(bench_command, ["--db", str(db), "--resume", "latest"])
        assert result.exit_code == 2
        assert f"no interrupted run in {db}; still being measured: live (measured by {owner})" in result.output
    finally:
        holder.kill()
        holder.wait()
    assert runlock.live_writer(db, "live") is None
    assert runner.resumable_run(db) == (
        "live", f"run live was left `running` but its writer, {owner}, is gone: resuming it as interrupted")
    with runlock.RunLock(db, "live") as lock:  # a resume takes the lock over, and removes it after
        assert lock.path.read_text() == f"PID {os.getpid()} on {HOST}\n"
    assert not runlock.lock_path(db, "live").exists()


def test_running_run_without_any_lock_file_is_interrupted(tmp_path: Path) -> None:
    """A run left `running` by a colltune from before run locks."""
    db = tmp_path / "r.duckdb"
    _make_run(db, "before-locks")
    assert runner.resumable_run(db) == (
        "before-locks", "run before-locks was left `running` but no process holds its lock: "
                        "resuming it as interrupted")


def _launches(db: Path) -> tuple[str, list[tuple[int, str, object]]] | None:
    try:
        with Store(db, read_only=True) as store:
            runs = store.runs()
            if runs.empty:
                return None
            run_id = str(runs.run_id.iloc[-1])
            rows = store.launches(run_id)
            return run_id, list(zip(rows.launch_idx, rows.status, rows.started, strict=True))
    except StoreError:  # the bench holds the file for a moment while it writes a launch
        return None


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie is dead; whoever inherited it reaps it


@pytest.mark.slow
def test_sigkilled_bench_is_resumed_with_latest(tmp_path: Path) -> None:
    db = tmp_path / "out" / "b.duckdb"
    # 1 MiB allreduces: the 2.5 s budget, not 100000 repetitions, ends every launch even on a quiet
    # machine, so each launch outlasts runner.FLUSH_AFTER_S and is stored as it ends (64 B launches
    # took 0.25 s there and the three were written together, with no moment between them)
    argv = [COLLTUNE, "bench", "-c", "allreduce", "-s", "1MiB", "-n", "2", "-R", "3", "--no-barrier",
            "--max-reps", "100000", "--time-budget", "2.5", "--db", str(db), "--quiet"]
    bench = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    seen = None
    while time.monotonic() < deadline and bench.poll() is None:
        seen = _launches(db)
        if seen and [(i, s) for i, s, _ in seen[1]] == [(0, "ok")]:
            break
        time.sleep(0.1)
    assert seen is not None and bench.poll() is None, (
        f"the bench ended before its second launch: {bench.stderr.read() if bench.poll() is not None else ''}")
    run_id, first = seen
    children: list[str] = []
    for _ in range(50):  # launch 1's launcher starts right after launch 0 is stored
        children = Path(f"/proc/{bench.pid}/task/{bench.pid}/children").read_text().split()
        if children:
            break
        time.sleep(0.1)
    assert len(children) == 1
    bench.send_signal(signal.SIGKILL)
    assert bench.wait() == -signal.SIGKILL
    launcher = int(children[0])
    for _ in range(100):  # the launcher follows its parent (PR_SET_PDEATHSIG), ranks with it
        if _gone(launcher):
            break
        time.sleep(0.1)
    assert _gone(launcher)

    with Store(db, read_only=True) as store:
        assert store.run_info(run_id)["status"] == "running"
        assert store.finished_launches(run_id) == {0}
    assert runlock.last_writer(db, run_id) == f"PID {bench.pid} on {HOST}"

    resumed = subprocess.run([COLLTUNE, "bench", "--db", str(db), "--resume", "latest", "--quiet"],
                             capture_output=True, text=True, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert (f"run {run_id} was left `running` but its writer, PID {bench.pid} on {HOST}, is gone: "
            "resuming it as interrupted") in " ".join(resumed.stderr.split())
    assert resumed.stdout.strip() == run_id
    with Store(db, read_only=True) as store:
        assert store.run_info(run_id)["status"] == "complete"
        launches = store.launches(run_id)
    assert launches.launch_idx.tolist() == [0, 1, 2] and set(launches.status) == {"ok"}
    assert launches.started.iloc[0] == first[0][2]  # launch 0 kept, not measured again
    assert not runlock.lock_path(db, run_id).exists()
