"""Running a bench: launches of `colltune-bench`, progress, records into the store.

A run measures every (collective, message size, variant) at every process count over R launches
(PGMPI: the launch is the experimental unit). Within a launch, the C driver measures all
variants of a job interleaved in random order (docs/measurement.md). Each launch is written to
the results database in one transaction when it finishes, so Ctrl-C or a crash keeps every
finished launch; `run(..., resume_run_id=...)` measures the missing ones.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import platform
import select
import shlex
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from colltune.measure import confirm, startup
from colltune.measure.planning import (
    LaunchSpec,
    Plan,
    Selection,
    adaptive_plan,
    all_variants,
    launch_plan,
    launch_seed,
    plan_jobs,
    validate,
)
from colltune.measure.protocol import (
    DriverOutput,
    driver_argv,
    launch_environment,
    read_driver_output,
    to_launch_data,
)
from colltune.measure.runlock import RunLock, last_writer, live_writer
from colltune.measure.settings import BenchError, BenchSettings
from colltune.mpi import build, launch, smpi
from colltune.mpi import libraries as mpi
from colltune.mpi.algorithms import ALGORITHMS_AT_LAUNCH, algorithm_key
from colltune.paths import writable_file
from colltune.store.database import Store, open_when_free
from colltune.store.runs import LaunchData, new_run_id


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def progress_bar(console: Console | None, *, disable: bool = False) -> Progress:
    """The launches' progress display of every measuring command (on stderr unless `console`)."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console or Console(stderr=True), transient=False, disable=disable)


@contextmanager
def _progress(enabled: bool, console: Console | None) -> Iterator[Progress | None]:
    if not enabled:
        yield None
        return
    with progress_bar(console) as progress:
        yield progress


def _stop_process(proc: subprocess.Popen[str]) -> None:
    """Stop the launcher and its ranks (its own session, so no signal reaches our parent)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _run_launch(lib: mpi.MpiLibrary, nprocs: int, argv: list[str], rank_env: dict[str, str],
                out_file: Path, timeout: float | None, on_jobs: Callable[[int], None],
                startup_timeout: float | None = None, *,
                proc: subprocess.Popen[str] | None = None, handoff: _Handoff | None = None,
                on_measured: Callable[[], None] | None = None) -> tuple[int, str]:
    """Run one launch (started here, or earlier as `proc` with its ranks held at `handoff`'s gate,
    opened now) to its exit, reporting finished jobs as the records stream in and calling
    `on_measured` once its ranks say the measuring is over; (returncode, stderr).
    A launch whose ranks have not all passed MPI_Init (no launch record) after `startup_timeout`
    seconds is stopped: nothing of it was measured, so the caller may start it again."""
    proc = proc or launch.popen(lib, nprocs, argv, rank_env)
    if handoff is not None:
        handoff.open_gate()
    measured_fd = handoff.measured_fd if handoff is not None and on_measured is not None else None
    start = time.monotonic()
    seen, offset, tail = 0, 0, b""
    ranks_started = False
    exited = _exit_waiter(proc)
    try:
        while proc.poll() is None:
            # progress every 50 ms; the launch's end and its measuring's end at once (a check is
            # dozens of 0.2 s launches)
            if exited(0.05, measured_fd) and measured_fd is not None:
                signal_ = _measured_signal(measured_fd)
                if signal_ is not None:
                    measured_fd = None  # ready from now on: look no more
                    if signal_ and on_measured is not None:
                        on_measured()
            if not out_file.exists():
                if startup_timeout is not None and time.monotonic() - start > startup_timeout:
                    _stop_process(proc)
                    return -1, (f"the ranks did not all pass MPI_Init within {startup_timeout:.0f} s "
                                f"(a launcher or PMI hang)")
                continue
            with open(out_file, "rb") as f:  # only what was added since the last look
                f.seek(offset)
                chunk = f.read()
            offset += len(chunk)
            lines = (tail + chunk).split(b"\n")
            tail = lines.pop()
            ranks_started = ranks_started or any(line.startswith(LAUNCH_RECORD) for line in lines)
            done = seen + sum(line.startswith((b'{"type":"job"', b'{"type":"job_skip"')) for line in lines)
            if done != seen:
                seen = done
                on_jobs(done)
            elapsed = time.monotonic() - start
            if timeout is not None and elapsed > timeout:
                _stop_process(proc)
                return -1, f"launch timed out after {timeout:.0f} s"
            if startup_timeout is not None and not ranks_started and elapsed > startup_timeout:
                _stop_process(proc)
                return -1, (f"the ranks did not all pass MPI_Init within {startup_timeout:.0f} s "
                            f"(a launcher or PMI hang)")
        # the byte and the exit seen by one look: the exit ended the loop first
        if measured_fd is not None and _measured_signal(measured_fd) and on_measured is not None:
            on_measured()
    except BaseException:
        _stop_process(proc)
        raise
    finally:
        exited(None)
    _, stderr = proc.communicate()
    return proc.returncode, stderr


def _measured_signal(fd: int) -> bool | None:
    """The measured FIFO once select() called it ready: True, rank 0's byte came; False, a writer
    left without one (the FIFO stays ready: stop watching it); None, nothing yet."""
    try:
        return bool(os.read(fd, 16))
    except BlockingIOError:
        return None


class _Handoff:
    """How consecutive launches pass the machine on when all their ranks run on this host
    (docs/measurement.md, "One launch after another"). Launch k's rank 0 writes a byte to a FIFO
    once its last job is measured; the front end then starts launch k+1, whose ranks start MPI
    while launch k's MPI ends and then wait, blocked on a shared lock of a gate file the front end
    holds exclusively, until launch k has exited and been read. Each launch is still its own
    mpiexec and MPI_Init (the experimental unit); no two measuring phases overlap."""

    def __init__(self, directory: Path, launch_idx: int, *, gated: bool) -> None:
        self.gate = directory / f"gate-{launch_idx}" if gated else None
        self.measured = directory / f"measured-{launch_idx}"
        self.gate_fd: int | None = None
        if self.gate is not None:
            self.gate_fd = os.open(self.gate, os.O_CREAT | os.O_RDWR, 0o600)
            fcntl.flock(self.gate_fd, fcntl.LOCK_EX)
        if not self.measured.exists():
            os.mkfifo(self.measured, 0o600)
        # read end without a writer yet: select() says ready only once rank 0 has written
        self.measured_fd = os.open(self.measured, os.O_RDONLY | os.O_NONBLOCK)

    def driver_args(self) -> list[str]:
        gate = ["--gate", str(self.gate)] if self.gate is not None else []
        return [*gate, "--measured", str(self.measured)]

    def open_gate(self) -> None:
        if self.gate_fd is not None:
            os.close(self.gate_fd)  # the lock goes with its last descriptor
            self.gate_fd = None

    def close(self) -> None:
        self.open_gate()
        if self.measured_fd >= 0:
            os.close(self.measured_fd)
            self.measured_fd = -1


def _exit_waiter(proc: subprocess.Popen[str]) -> Callable[..., bool]:
    """wait(seconds, other_fd) returns when `proc` exits, `other_fd` is readable (then True) or
    after `seconds`; wait(None) releases it. Linux: a pidfd wakes on the exit itself; elsewhere
    the wait sleeps through (the exit is seen up to `seconds` late: ~25 ms per launch on average,
    0.8 s of a quick check's 32 launches)."""
    try:
        fd: int | None = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None

    def wait(seconds: float | None, other_fd: int | None = None) -> bool:
        nonlocal fd
        if seconds is None:
            if fd is not None:
                os.close(fd)
                fd = None
            return False
        fds = [f for f in (fd, other_fd) if f is not None]
        if not fds:
            time.sleep(seconds)
            return False
        ready, _, _ = select.select(fds, [], [], seconds)
        return other_fd is not None and other_fd in ready

    return wait


STARTUP_ATTEMPTS = 3
STARTUP_RETRY_PAUSE_S = 1.0
LAUNCH_RECORD = b'{"type":"launch"'
# MPI_Init of a few ranks takes 0.1-3 s here, also across Slurm nodes; a launch still short of
# its launch record after this long hangs in the launcher or PMI (seen: an MPICH rank's garbled
# PMI-2 request under Slurm, after which the other ranks spin forever) and is started again.
STARTUP_TIMEOUT_S = 60.0
# A job stops at its time budget after the repetition under way; a launch taking this many times
# its jobs' budgets (plus the start allowance) does not end by itself.
BUDGET_FACTOR = 10.0


def restart_argv(argv: list[str], seed: int) -> list[str]:
    """The driver's command for a restart: the same, with `--seed SEED` once more (a no-op: the
    last one wins and it is the same seed), so the command line is longer. MPICH 5.0.2 under
    Slurm's PMI-2 garbles a request for some lengths of the ranks' command line (docs/cluster.md:
    one check's launch failed on every start, environment padding of 0-512 bytes changed nothing,
    the same command 15 bytes longer started cleanly), so restarting the same command would fail
    the same way."""
    return [*argv, "--seed", str(seed)]


def _ranks_started(driver_output: str) -> bool:
    """Whether the driver's ranks got as far as their launch record (MPI_Init done)."""
    return LAUNCH_RECORD.decode() in driver_output


def launch_timeouts(settings: BenchSettings, lib: mpi.MpiLibrary, jobs: int) -> tuple[float | None, float | None]:
    """(whole launch, start) timeouts in seconds, None: no limit. `--launch-timeout` sets the
    whole; by default it follows the jobs' time budgets. A simulated launch (SMPI) has none by
    default: its wall time follows the simulation (thousands of ranks in one process), not the
    budgets, which are simulated seconds."""
    if lib.name == "smpi":
        return settings.launch_timeout_s, None
    start = STARTUP_TIMEOUT_S if settings.launch_timeout_s is None else min(STARTUP_TIMEOUT_S, settings.launch_timeout_s)
    if settings.launch_timeout_s is not None:
        return settings.launch_timeout_s, start
    budget = settings.stop.time_budget_s
    whole = STARTUP_TIMEOUT_S + BUDGET_FACTOR * budget * jobs + 60.0 if budget > 0 else None
    return whole, start


def _describe_failure(code: int, stderr: str) -> str:
    tail = "\n".join(line for line in stderr.strip().splitlines()[-8:])
    return f"exit code {code}" + (f": {tail}" if tail else "")


class _Database:
    """Where a run's rows go: a database file the runner opens only to write, per batch of
    launches, so it can be queried while a run is in progress (`colltune bench`); or a store its
    caller holds open for longer (a check's launches and its rounds), through which every row goes
    at once."""

    def __init__(self, db: Path | Store) -> None:
        self.held = db if isinstance(db, Store) else None
        self.path = db.path if isinstance(db, Store) else db

    @contextmanager
    def open(self) -> Iterator[Store]:
        if self.held is not None:
            yield self.held
            return
        with open_when_free(self.path) as store:
            yield store


def run(settings: BenchSettings, db: str | Path | Store, *, resume_run_id: str | None = None,
        progress: bool = True, console: Console | None = None, command: str | None = None,
        kind: str = "bench", session: Session | None = None) -> str:
    """Measure everything `settings` asks for into `db` (a path, or a store held open: see
    _Database); returns the run id.

    With `resume_run_id`, the run's stored settings are used and only its missing launches are
    measured. Ctrl-C (KeyboardInterrupt) or a failed launch leaves the run `interrupted` with
    every finished launch stored, and re-raises (BenchError for a failed launch). The run's lock
    (measure.runlock) is held throughout: a run being measured by a live process is refused."""
    # the lock file lives next to the database
    database = _Database(db if isinstance(db, Store) else writable_file(db, "results database"))
    with RunLock(database.path, resume_run_id or new_run_id()) as lock:
        return _run_locked(settings, database, lock.run_id, resume_run_id is not None, progress=progress,
                           console=console, command=command, kind=kind, session=session)


def _run_locked(settings: BenchSettings, database: _Database, run_id: str, resume: bool, *, progress: bool,
                console: Console | None, command: str | None, kind: str, session: Session | None) -> str:
    resume_run_id = run_id if resume else None
    with database.open() as store:
        if resume_run_id is not None:
            info = store.run_info(resume_run_id)
            if info["status"] == "complete":
                return resume_run_id
            settings = BenchSettings(**info["settings"])
            done = store.finished_launches(resume_run_id)
    lib = validate(settings)
    artifacts = build.ensure_built(lib)
    with database.open() as store:
        if resume_run_id is None:
            store.create_run(
                kind=kind, command=command or "colltune bench", mpi_name=lib.name,
                mpi_version=lib.version, abi_family=lib.family,
                settings=json.loads(settings.model_dump_json()),
                variants=all_variants(settings, algorithm_key(lib)), run_id=run_id)
            done = set()
        else:
            store.set_run_status(run_id, "running")
    key = algorithm_key(lib)
    specs = launch_plan(settings, key)
    todo = [spec for spec in specs if spec.idx not in done]
    if console is not None and progress:
        for n in settings.nprocs:
            for note in sorted(set(plan_jobs(settings, n, key).left_out)):
                console.print(f"[yellow]left out at {n} processes:[/] {note}")
    try:
        if session is not None and settings.rounds > 0 and specs:  # round 1 follows: its likely first launch
            session.next = LaunchSpec(max(s.idx for s in specs) + 1, min(settings.nprocs),
                                      max(s.repetition for s in specs) + 1, round=1, library=key)
        _run_launches(database, run_id, settings, lib, artifacts, todo, len(specs), len(done),
                      progress, console, session=session)
    except BaseException:
        with database.open() as store:
            store.set_run_status(run_id, "interrupted")
        raise
    with database.open() as store:
        store.set_run_status(run_id, "complete")
    return run_id


def resumable_run(db_path: str | Path) -> tuple[str | None, str]:
    """The newest run `--resume latest` completes, and what to tell the user: an `interrupted`
    run, or a `running` one whose writer is gone (killed before it could say so; no process
    holds its lock). Runs still being measured are skipped; with none to resume, the message
    names them."""
    with Store(db_path, read_only=True) as store:
        runs = store.runs()
    busy: list[str] = []
    for run_id, status in reversed(list(zip(runs["run_id"], runs["status"], strict=True))):
        if status == "interrupted":
            return str(run_id), ""
        if status != "running":
            continue
        if (writer := live_writer(db_path, run_id)) is not None:
            busy.append(f"{run_id} (measured by {writer})")
            continue
        last = last_writer(db_path, run_id)
        gone = f"its writer, {last}, is gone" if last else "no process holds its lock"
        return str(run_id), f"run {run_id} was left `running` but {gone}: resuming it as interrupted"
    return None, (f"; still being measured: {', '.join(busy)}" if busy else "")


def describe(settings: BenchSettings) -> list[str]:
    """What `run` would do, line by line, without launching (validates like `run`)."""
    lib = validate(settings)
    key = algorithm_key(lib)
    specs = launch_plan(settings, key)
    lines = [f"MPI: {lib.short_version} ({lib.mpiexec})",
             f"{len(specs)} launches: R={settings.launches} x process counts {settings.nprocs}"
             + (" x (1 + one per library algorithm)" if key in ALGORITHMS_AT_LAUNCH
                and len(specs) > settings.launches * len(settings.nprocs) else ""),
             f"sync {settings.sync}, metric {settings.metric}, stop {','.join(settings.stop.methods) or 'fixed'} "
             f"(min {settings.stop.min_reps}, max {settings.stop.max_reps} reps, "
             f"{settings.stop.time_budget_s:g} s per job, {settings.stop.warmup} warm-up)"]
    for n in settings.nprocs:
        plan = plan_jobs(settings, n, key)
        pairs = sum(len(j.variants) for j in plan.jobs)
        budget = settings.stop.time_budget_s * len(plan.jobs)
        lines.append(f"{n} processes: {len(plan.jobs)} jobs, {pairs} (job, variant) pairs"
                     + (f", at most {budget:.0f} s of measuring per launch" if budget else ""))
        lines += [f"  {j.line()}" for j in plan.jobs]
        lines += [f"  left out: {note}" for note in sorted(set(plan.left_out))]
        for spec in specs:
            if spec.adjust is not None and spec.repetition == 0 and spec.nprocs == n:
                env = " ".join(f"{k}={v}" for k, v in spec.rank_env().items())
                lines.append(f"  and in a launch of its own with {env}:")
                lines += [f"    {j.line()}" for j in plan_jobs(settings, n, key, spec.adjust).jobs]
    return lines


# A quick check's launch takes ~0.2-0.35 s, opening the database ~0.1 s and each write ~30 ms
# (every launch's DELETEs scan their tables): launches are written in batches, one transaction
# each, so that at most this much measuring waits in memory (a longer launch is written as soon
# as it ends). Ctrl-C, SIGTERM (a batch system's time limit), a failed or refused launch and the
# end of the launches write them first; only a SIGKILL can lose what the last seconds measured.
FLUSH_AFTER_S = 2.0


class _LaunchWriter:
    """Finished launches on their way to the database."""

    def __init__(self, database: _Database, run_id: str) -> None:
        self.database, self.run_id = database, run_id
        self.flush_after_s = FLUSH_AFTER_S
        self.pending: list[LaunchData] = []
        self.written_at = time.monotonic()

    def add(self, launch: LaunchData, *, defer: bool = False) -> None:
        """Queue `launch`; written now if the last write is flush_after_s ago, unless `defer`:
        then the caller writes it when `due()` says so at a moment that delays no launch."""
        self.pending.append(launch)
        if not defer and self.due():
            self.flush()

    def due(self) -> bool:
        return bool(self.pending) and time.monotonic() - self.written_at >= self.flush_after_s

    def flush(self) -> None:
        """Another process may hold the database for a moment (a reader during the run): wait
        for it rather than lose the launches."""
        if not self.pending:
            return
        with self.database.open() as store:
            store.write_launches(self.run_id, self.pending)
            self.pending = []
        self.written_at = time.monotonic()


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM ends the launches like Ctrl-C (the running launch stopped, the finished ones
    stored, the run left `interrupted` to resume) instead of killing the process outright."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _refuse(database: _Database, run_id: str) -> None:
    """Nothing of a refused launch is stored; a run that has no launch yet is removed, so the
    database is as it was before the command."""
    with database.open() as store:
        if store.launches(run_id).empty:
            store.discard_run(run_id)


def _run_launches(database: _Database, run_id: str, settings: BenchSettings, lib: mpi.MpiLibrary,
                  artifacts: build.Artifacts, todo: list[LaunchSpec], total: int, already: int,
                  show: bool, console: Console | None, deadline: float | None = None,
                  session: Session | None = None) -> int:
    """Measure `todo` in order, none started after `deadline` (time.monotonic()); the number measured."""
    writer = _LaunchWriter(database, run_id)
    own = Session() if session is None else None
    try:
        with _sigterm_interrupts():
            return _measure_launches(writer, run_id, settings, lib, artifacts, todo, total, already, show,
                                     console, deadline, session or own)  # type: ignore[arg-type]
    finally:
        writer.flush()
        if own is not None:
            own.close()


@dataclass
class _Launch:
    """A launch ready to start (job file written, command line built), or started ahead (`proc`)."""

    spec: LaunchSpec
    plan: Plan | None  # None: started ahead of the call that names its jobs
    out_file: Path
    seed: int
    argv: list[str]
    rank_env: dict[str, str]
    handoff: _Handoff | None
    proc: subprocess.Popen[str] | None = None
    started: datetime | None = None
    text: str | None = None  # its output, read when its ranks said they measured no more
    parsed: DriverOutput | None = None  # `text` parsed while its MPI ends and the next launch's starts
    rows: LaunchData | None = None  # and its rows, from `parsed` (`finished` set at its exit)


def _ranks_on_this_host(lib: mpi.MpiLibrary, nprocs: int, argv: list[str], rank_env: dict[str, str]) -> bool:
    """Whether the launcher is asked to start every rank on this host: no srun, no host option,
    no Slurm allocation, no simulator (the handoff's FIFO and lock are local files)."""
    if lib.family == "smpi" or launch.use_srun():
        return False
    planned = launch.planned_layout(launch.mpiexec_argv(lib, nprocs, argv, rank_env))
    return planned is not None and planned[1][0] == 1


def _launch_line(text: str) -> str:
    """The driver's launch record (the ranks' hosts) of its output, without parsing the rest."""
    start = text.find(LAUNCH_RECORD.decode())
    return "" if start < 0 else text[start:text.find("\n", start) + 1 or len(text)]


def _here(nprocs: int, layout: confirm.Layout | None) -> bool:
    """Whether a launch of `nprocs` ranks was seen with all of them on this host."""
    return layout == ((platform.node(), nprocs),)


def _measure_launches(writer: _LaunchWriter, run_id: str, settings: BenchSettings, lib: mpi.MpiLibrary,
                      artifacts: build.Artifacts, todo: list[LaunchSpec], total: int, already: int,
                      show: bool, console: Console | None, deadline: float | None, session: Session) -> int:
    db_path = writer.database.path
    measured = 0
    key = algorithm_key(lib)
    layouts = session.layouts  # the node layout of each process count's first launch
    fast_start = startup.rank_env(lib, artifacts)  # same components, ~1.1 s less per launch

    def launch_env(spec: LaunchSpec) -> dict[str, str]:
        shared = smpi.timing_env(spec.nprocs) if lib.family == "smpi" else {}
        return {**fast_start, **shared, **spec.rank_env()}

    directory = session.directory
    with _progress(show, console) as bar:

        def write_jobs(launch_: _Launch) -> None:
            spec = launch_.spec
            launch_.plan = plan_jobs(settings, spec.nprocs, key, spec.adjust, spec.only)
            (directory / f"jobs-{spec.idx}.txt").write_text("".join(j.line() + "\n" for j in launch_.plan.jobs))

        def prepare(spec: LaunchSpec, gated: bool) -> _Launch:
            job_file = directory / f"jobs-{spec.idx}.txt"
            out_file = directory / f"launch-{spec.idx}.out"
            seed = launch_seed(settings, spec.idx)
            argv = driver_argv(settings, artifacts, job_file, out_file, seed, spec.nprocs)
            rank_env = launch_env(spec)
            handoff = None
            if _ranks_on_this_host(lib, spec.nprocs, argv, rank_env):
                handoff = _Handoff(directory, spec.idx, gated=gated)
                argv += handoff.driver_args()
            launch_ = _Launch(spec, None, out_file, seed, argv, rank_env, handoff)
            if spec.only is not None or spec.round == 0:  # its jobs are known
                write_jobs(launch_)
            return launch_

        ahead = session.adopt(todo[0] if todo else None, launch_env(todo[0]) if todo else dict(fast_start))
        if ahead is not None:
            write_jobs(ahead)  # its ranks read the job file past their gate
        elif todo and session.prelude is not None:  # the caller's work, while the first launch starts MPI
            ahead = prepare(todo[0], gated=True)
            if ahead.handoff is not None:
                ahead.started = _now()
                ahead.proc = launch.popen(lib, todo[0].nprocs, ahead.argv, ahead.rank_env)
        launches_task = bar.add_task("launches", total=total, completed=already) if bar else None
        jobs_task = bar.add_task("jobs", total=1) if bar else None
        try:
            if session.prelude is not None:
                prelude, session.prelude = session.prelude, None
                prelude()
            for i, spec in enumerate(todo):
                if ahead is None and deadline is not None and time.monotonic() > deadline:
                    break
                current, ahead = ahead or prepare(spec, gated=False), None
                following = todo[i + 1] if i + 1 < len(todo) else session.next

                def start_following(current: _Launch = current, following: LaunchSpec | None = following) -> None:
                    """Launch `current` measures no more: read its output, start the next launch,
                    held at its gate, where its ranks are known to run on this host, then parse
                    the output and write the launches that wait (_LaunchWriter.due) while this
                    launch's MPI ends and the next one's starts: done after its exit, that work
                    held the next launch at its gate (docs/measurement.md, "One launch after
                    another")."""
                    current.text = current.out_file.read_text(errors="replace")
                    start_next(current, following)
                    try:
                        current.parsed = read_driver_output(current.text)
                    except Exception:  # parsed again after the exit, where its error is raised
                        current.parsed = None
                    if writer.due():
                        writer.flush()

                def start_next(current: _Launch, following: LaunchSpec | None) -> None:
                    nonlocal ahead
                    if following is None or (deadline is not None and time.monotonic() > deadline):
                        return
                    seen = layouts.get(following.nprocs)
                    if seen is None and following.nprocs == current.spec.nprocs:  # its launch line only
                        seen = confirm.layout(read_driver_output(_launch_line(current.text)))
                    if not _here(following.nprocs, seen):
                        return
                    ahead = prepare(following, gated=True)
                    if ahead.handoff is None:  # a launcher line that may place ranks elsewhere
                        ahead = None
                        return
                    ahead.started = _now()
                    ahead.proc = launch.popen(lib, following.nprocs, ahead.argv, ahead.rank_env)

                try:
                    measured += _measure_one(writer, run_id, settings, lib, artifacts, current, total, bar,
                                             jobs_task, console, layouts, start_following, db_path)
                finally:
                    if current.handoff is not None:
                        current.handoff.close()
                if bar is not None:
                    bar.update(jobs_task, completed=len(current.plan.jobs) if current.plan else 0)
                    bar.advance(launches_task)
            else:  # every launch measured: one started ahead for the next call waits there
                session.ahead, ahead = ahead, None
        finally:
            session.next = None
            _discard(ahead)
    return measured


def _discard(ahead: _Launch | None) -> None:
    """A launch started ahead that will not measure: stopped at its gate, nothing of it measured."""
    if ahead is None:
        return
    if ahead.proc is not None:
        _stop_process(ahead.proc)
    if ahead.handoff is not None:
        ahead.handoff.close()


class Session:
    """The launches of one command measured in several calls of the runner (a check's first
    launches, then its rounds): one directory, and the launch after one call's last started
    while that one ends (docs/measurement.md, the handoff), its jobs written when the next call
    names them (the driver reads its job file past the gate). `next`: the launch the next call
    will most likely start with, set by the caller; a call that starts otherwise stops it.
    `prelude`: the caller's work (imports) done while the first launch starts MPI."""

    def __init__(self, prelude: Callable[[], None] | None = None) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="colltune-bench-")
        self.directory = Path(self._tmp.name)
        # run once while the first launch's ranks start MPI, held at their gate (before it starts
        # where they could run elsewhere)
        self.prelude = prelude
        self.next: LaunchSpec | None = None
        self.ahead: _Launch | None = None
        self.layouts: dict[int, confirm.Layout] = {}

    def adopt(self, spec: LaunchSpec | None, rank_env: dict[str, str]) -> _Launch | None:
        """The launch started ahead if it is `spec`'s (same index, process count, settings), else None."""
        ahead, self.ahead = self.ahead, None
        if ahead is None:
            return None
        if spec is not None and (ahead.spec.idx, ahead.spec.nprocs, ahead.spec.adjust, ahead.rank_env) \
                == (spec.idx, spec.nprocs, spec.adjust, rank_env):
            ahead.spec = spec
            return ahead
        _discard(ahead)
        return None

    def close(self) -> None:
        _discard(self.ahead)
        self.ahead = None
        self._tmp.cleanup()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _measure_one(writer: _LaunchWriter, run_id: str, settings: BenchSettings, lib: mpi.MpiLibrary,
                 artifacts: build.Artifacts, current: _Launch, total: int, bar: Progress | None, jobs_task: Any,
                 console: Console | None, layouts: dict[int, confirm.Layout], on_measured: Callable[[], None],
                 db_path: Path) -> int:
    """Run `current` (started again where its launcher died before any rank ran), store it; 1."""
    spec, plan = current.spec, current.plan
    assert plan is not None  # written when the launch was prepared or adopted
    launch_idx, nprocs, repetition, seed = spec.idx, spec.nprocs, spec.repetition, current.seed
    argv, rank_env, out_file = current.argv, current.rank_env, current.out_file
    if bar is not None:
        bar.update(jobs_task, total=len(plan.jobs), completed=0,
                   description=f"jobs (launch {launch_idx + 1}/{total}, {nprocs} procs)")
    whole_timeout, start_timeout = launch_timeouts(settings, lib, len(plan.jobs))
    for attempt in range(1, STARTUP_ATTEMPTS + 1):
        proc, current.proc = current.proc, None
        started = current.started if proc is not None and current.started is not None else _now()
        if proc is None:
            out_file.unlink(missing_ok=True)
            proc = launch.popen(lib, nprocs, argv, rank_env)

        def measured(started: datetime = started) -> None:
            on_measured()
            if current.parsed is not None and current.parsed.ended:
                try:
                    current.rows = _launch_rows(current, current.parsed, settings, lib, artifacts, started)
                except Exception:  # built again after the exit, where its error is raised
                    current.rows = None

        try:
            code, stderr = _run_launch(
                lib, nprocs, argv, rank_env, out_file, whole_timeout,
                lambda n: bar.update(jobs_task, completed=max(n - 1, 0)) if bar else None, start_timeout,
                proc=proc, handoff=current.handoff, on_measured=measured)
        except KeyboardInterrupt:
            writer.add(LaunchData(
                launch_idx=launch_idx, nprocs=nprocs, repetition=repetition, seed=seed,
                started=started, finished=_now(), status="interrupted", message="Ctrl-C"))
            raise
        finally:
            if proc is not None and proc.poll() is None:  # a stand-in for _run_launch (tests) left it
                _stop_process(proc)
                out_file.unlink(missing_ok=True)  # what it wrote is no attempt's output
        finished = _now()
        text = current.text if current.text is not None else (
            out_file.read_text(errors="replace") if out_file.exists() else "")
        if code == 0 or _ranks_started(text) or attempt == STARTUP_ATTEMPTS:
            break
        # The launcher failed before any rank ran (e.g. Open MPI: "The PMIx server's
        # listener thread failed to start"): nothing was measured, so starting the same
        # launch again changes no result.
        if console is not None:
            console.print(f"[yellow]launch {launch_idx} failed before any rank started "
                          f"({_describe_failure(code, stderr).splitlines()[0]}); starting it again[/]",
                          highlight=False)
        argv = restart_argv(argv, seed)
        time.sleep(STARTUP_RETRY_PAUSE_S)
    out = current.parsed if current.parsed is not None and text is current.text else read_driver_output(text)
    refused = confirm.refusal(lib, nprocs, out, stderr, layouts.get(nprocs))
    if refused is not None:
        writer.flush()
        _refuse(writer.database, run_id)
        raise BenchError(
            f"launch {launch_idx} ({nprocs} processes) refused, {refused}; nothing of it was stored\n"
            f"command: {shlex.join(launch.mpiexec_argv(lib, nprocs, argv, rank_env))}")
    layouts.setdefault(nprocs, confirm.layout(out))
    if code != 0 or not out.ended:
        # Keep the failed launch's trace, not its partial data (it would bias verdicts).
        message = _describe_failure(code, stderr)
        writer.add(LaunchData(
            launch_idx=launch_idx, nprocs=nprocs, repetition=repetition, seed=seed,
            started=started, finished=finished, status="failed", message=message))
        raise BenchError(
            f"launch {launch_idx} ({nprocs} processes) failed, {message}\n"
            f"command: {shlex.join(launch.mpiexec_argv(lib, nprocs, argv, rank_env))}\n"
            f"finished launches are stored; complete the run with "
            f"`colltune bench --db {db_path} --resume {run_id}`")
    rows = current.rows if current.rows is not None and out is current.parsed else \
        _launch_rows(current, out, settings, lib, artifacts, started)
    # in a handoff the next launch's measured signal writes it (start_following), else now if due
    writer.add(dataclasses.replace(rows, finished=finished), defer=current.handoff is not None)
    return 1


def _launch_rows(current: _Launch, out: DriverOutput, settings: BenchSettings, lib: mpi.MpiLibrary,
                 artifacts: build.Artifacts, started: datetime) -> LaunchData:
    """The rows of a launch that measured everything (its `finished` filled in at its exit)."""
    spec, plan = current.spec, current.plan
    assert plan is not None
    env = launch_environment(out, lib, current.rank_env, artifacts, nprocs=spec.nprocs)
    if current.handoff is not None:
        env["started_ahead"] = "true" if current.started is not None else "false"
    if spec.round:
        env["round"] = str(spec.round)
    return to_launch_data(out, plan, launch_idx=spec.idx, repetition=spec.repetition, seed=current.seed,
                          started=started, finished=started, sync=settings.sync, environment=env)


def extend(settings: BenchSettings, store: Store, run_id: str, only: dict[int, Selection],
           launches: int, round_: int, after: tuple[int, int], deadline: float | None = None,
           session: Session | None = None) -> int:
    """One adaptive round of `colltune check` on its open store: up to `launches` more launches
    per process count of a measured run, each measuring only `only`'s (collective, size,
    variant), numbered after the run's stored launches (`after`: their largest launch index and
    repetition); no launch starts after `deadline` (time.monotonic()). Returns the number of
    launches measured."""
    lib = validate(settings)
    artifacts = build.ensure_built(lib)
    key = algorithm_key(lib)
    specs = adaptive_plan(settings, key, only, launches, after[0] + 1, after[1] + 1, round_)
    if session is not None and round_ < settings.rounds and specs:  # the next round's likely first launch
        session.next = LaunchSpec(specs[-1].idx + 1, min(settings.nprocs), max(s.repetition for s in specs) + 1,
                                  round=round_ + 1, library=key)
    with RunLock(store.path, run_id):
        return _run_launches(_Database(store), run_id, settings, lib, artifacts, specs, len(specs), 0, False, None,
                             deadline, session)


# ---------------------------------------------------------------------------------------------
# Launch by launch, for callers that alternate the launches of several runs (colltune compare)


@dataclass
class PreparedRun:
    """A created run (validated, built, in status `running`) whose launches the caller measures
    one at a time with `measure_launch`, e.g. alternating with another run's."""

    db_path: Path
    run_id: str
    settings: BenchSettings
    lib: mpi.MpiLibrary
    artifacts: build.Artifacts
    specs: list[LaunchSpec]


def prepare(settings: BenchSettings, db_path: str | Path, *, command: str, kind: str) -> PreparedRun:
    """Validate, build and create the run as `run` does, launching nothing."""
    lib = validate(settings)
    artifacts = build.ensure_built(lib)
    key = algorithm_key(lib)
    db_path = writable_file(db_path, "results database")
    lock = RunLock(db_path, new_run_id())
    try:
        with open_when_free(db_path) as store:
            store.create_run(
                kind=kind, command=command, mpi_name=lib.name, mpi_version=lib.version, abi_family=lib.family,
                settings=json.loads(settings.model_dump_json()), variants=all_variants(settings, key),
                run_id=lock.run_id)
    except BaseException:
        lock.release()
        raise
    prepared = PreparedRun(db_path, lock.run_id, settings, lib, artifacts, launch_plan(settings, key))
    weakref.finalize(prepared, lock.release)  # held while the caller measures, or to the exit
    return prepared


def measure_launch(prepared: PreparedRun, spec: LaunchSpec) -> None:
    """Measure and store one launch of a prepared run (the same loop as `run`, without its
    progress display); a failed launch is stored and raised as BenchError, Ctrl-C re-raised."""
    _run_launches(_Database(prepared.db_path), prepared.run_id, prepared.settings, prepared.lib, prepared.artifacts,
                  [spec], len(prepared.specs), 0, False, None)


def reopen(db_path: str | Path, run_id: str) -> PreparedRun:
    """A stored run prepared again with its stored settings; `specs` are its missing launches."""
    with open_when_free(db_path) as store:
        settings = BenchSettings(**store.run_info(run_id)["settings"])
        done = store.finished_launches(run_id)
        store.set_run_status(run_id, "running")
    lib = validate(settings)
    specs = [s for s in launch_plan(settings, algorithm_key(lib)) if s.idx not in done]
    return PreparedRun(Path(db_path), run_id, settings, lib, build.ensure_built(lib), specs)
