"""Who is writing a run: a lock file next to the results database, held while a process measures.

A run's status says `running` from its creation until its writer sets `complete` or
`interrupted`. A writer killed outright (SIGKILL, the out-of-memory killer, a lost node) never
gets to say so; the kernel does release its locks. So each writer holds an flock on
`.<database file name>.<run id>.lock` in the database's folder for as long as it measures, with
its PID and host written in it: a `running` run whose lock nobody holds has no writer and is
resumed as interrupted (`colltune bench --resume latest`), and one whose lock is held is never
resumed by a second process. flock works on local file systems and on NFS (Linux emulates it
with POSIX locks there; a lost client's locks go when its lease expires).
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

from colltune.errors import ColltuneError


class RunBusyError(ColltuneError):
    """Another live process is measuring this run."""


def lock_path(db_path: str | Path, run_id: str) -> Path:
    db_path = Path(db_path)
    return db_path.with_name(f".{db_path.name}.{run_id}.lock")


def _owner_text() -> str:
    return f"PID {os.getpid()} on {socket.gethostname()}"


def _read_owner(path: Path) -> str:
    try:
        return path.read_text().strip() or "an unknown process"
    except OSError:
        return "an unknown process"


class RunLock:
    """The writer's hold on a run; release() (or the process's end, however it ends) frees it."""

    def __init__(self, db_path: str | Path, run_id: str) -> None:
        self.path = lock_path(db_path, run_id)
        self.run_id = run_id
        tries = 0
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                tries += 1
                if tries < 10:  # live_writer's probe holds a shared lock for a moment
                    time.sleep(0.1)
                    continue
                raise RunBusyError(
                    f"run {run_id} is being measured by {_read_owner(self.path)} (it holds {self.path}); "
                    "wait for it to finish or stop that process, then resume") from None
            # A writer that finished meanwhile unlinked the file we opened: lock the new one.
            try:
                if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{_owner_text()}\n".encode())
        self._fd: int | None = fd

    def release(self) -> None:
        """Unlink first, then unlock: a file that exists unlocked means a writer died."""
        if self._fd is None:
            return
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def live_writer(db_path: str | Path, run_id: str) -> str | None:
    """"PID n on host" of the live process measuring the run, or None when no process holds its
    lock (finished, killed, or a colltune before run locks)."""
    path = lock_path(db_path, run_id)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_owner(path)
    finally:
        os.close(fd)  # closing drops a lock taken just now
    return None


def last_writer(db_path: str | Path, run_id: str) -> str | None:
    """Who held the lock last, from the file a killed writer leaves behind (None: no file)."""
    path = lock_path(db_path, run_id)
    return _read_owner(path) if path.exists() else None
