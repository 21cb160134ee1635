"""Correctness of the variants: run the `colltune-selftest` driver and aggregate its results.

The driver (native/selftest/) runs every variant against the library's own collective on
identical inputs over a matrix of cases and prints JSON lines (see native/selftest/selftest.c).
This module launches it for a list of process counts, parses the lines into one data model and
sums them per variant. No I/O in the parsing and aggregation functions.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from colltune.measure.protocol import json_record
from colltune.mpi import build, launch
from colltune.mpi.libraries import MpiError, MpiLibrary

# How often a launch's watchdog looks at it (run_launch_lines).
POLL_S = 0.2
# Settings of the C core the driver honours; passed on to the ranks when set.
RANK_SETTINGS = ("COLLTUNE_SCRATCH_BYTES", "COLLTUNE_CHUNK_BYTES")


class SelftestError(MpiError):
    """The driver did not finish (crash, hang, MPI failure); the message says how it ended,
    `lines` holds what it printed on stdout before, `hung` whether it was stopped for silence or
    time."""

    exit_code = 1

    def __init__(self, message: str, lines: Sequence[str] = (), hung: bool = False,
                 stderr: str = "") -> None:
        super().__init__(message)
        self.lines = list(lines)
        self.hung = hung
        self.stderr = stderr   # all of it: the message holds its tail only


class VariantResult(BaseModel):
    """One variant in one launch (or summed over launches): a `variant` line of the driver."""

    model_config = ConfigDict(frozen=True)
    collective: str
    variant: str
    guideline: str
    cases: int
    failures: int
    not_applicable: dict[str, int]
    reason_mismatches: int
    nonuniform: int
    probes: int = 0
    probe_reasons: dict[str, int] = {}

    @property
    def ok(self) -> bool:
        return self.failures == 0 and self.reason_mismatches == 0 and self.nonuniform == 0

    @property
    def not_applicable_total(self) -> int:
        return sum(self.not_applicable.values())


class Failure(BaseModel):
    """One mismatch as a rank reported it: the case, what differed and how."""

    model_config = ConfigDict(frozen=True)
    nprocs: int
    variant: str
    rank: int
    case: dict[str, object]
    what: str  # result | sendbuf | error | reason
    detail: str


@dataclass(frozen=True)
class Launch:
    nprocs: int
    library: str
    seconds: float
    variants: tuple[VariantResult, ...]
    failures: tuple[Failure, ...]
    summary: dict[str, object] = field(hash=False, compare=False)


@dataclass(frozen=True)
class Report:
    library: MpiLibrary
    launches: tuple[Launch, ...]

    @property
    def variants(self) -> list[VariantResult]:
        return aggregate(self.launches)

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.variants)


def _add_counts(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + value
    return out


def parse(lines: Iterable[str], nprocs: int) -> Launch:
    """The driver's output of one launch. Raises ValueError if it has no summary line."""
    variants: list[VariantResult] = []
    failures: list[Failure] = []
    summary: dict[str, object] | None = None
    library = ""
    for line in lines:
        record = json_record(line.strip())
        if record is None:
            continue
        kind = record.get("type")
        if kind == "start":
            library = str(record.get("library", ""))
        elif kind == "variant":
            variants.append(VariantResult.model_validate(record))
        elif kind == "failure":
            failures.append(Failure.model_validate({**record, "nprocs": nprocs}))
        elif kind == "summary":
            summary = record
    if summary is None:
        raise ValueError("the driver printed no summary line")
    return Launch(nprocs, library or str(summary.get("library", "")),
                  float(summary.get("seconds", 0.0)),  # type: ignore[arg-type]
                  tuple(variants), tuple(failures), summary)


def aggregate(launches: Iterable[Launch]) -> list[VariantResult]:
    """Sum every variant's counts over launches, in catalog order of first appearance."""
    totals: dict[str, VariantResult] = {}
    for run in launches:
        for v in run.variants:
            t = totals.get(v.variant)
            if t is None:
                totals[v.variant] = v
                continue
            totals[v.variant] = t.model_copy(update={
                "cases": t.cases + v.cases,
                "failures": t.failures + v.failures,
                "not_applicable": _add_counts(t.not_applicable, v.not_applicable),
                "reason_mismatches": t.reason_mismatches + v.reason_mismatches,
                "nonuniform": t.nonuniform + v.nonuniform,
                "probes": t.probes + v.probes,
                "probe_reasons": _add_counts(t.probe_reasons, v.probe_reasons),
            })
    return list(totals.values())


def driver_argv(artifacts: build.Artifacts, quick: bool = False, big: bool = True,
                collective: str | None = None) -> list[str]:
    argv = [str(artifacts.selftest)]
    if quick:
        argv.append("--quick")
    if not big:
        argv.append("--no-big")
    if collective:
        argv += ["--collective", collective]
    return argv


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run_launch_lines(lib: MpiLibrary, nprocs: int, argv: Sequence[str], timeout: float | None,
                     on_progress: Callable[[int, int, str], None] | None = None,
                     launch_env: Mapping[str, str] | None = None,
                     idle: float | None = None) -> list[str]:
    """Run the driver on `nprocs` ranks and return its stdout lines; SelftestError if the launch
    did not end well (crash, hang, MPI failure). A hang: past `timeout` seconds in all, or, with
    `idle`, `timeout` seconds before its first line and then `idle` seconds without a line (a
    driver that prints as it goes may take as long as the machine's load makes it).
    `launch_env`: settings the ranks get too (Intel MPI's I_MPI_ADJUST_* of an algorithm fixed
    per launch)."""
    rank_env = {k: os.environ[k] for k in RANK_SETTINGS if os.environ.get(k)} | dict(launch_env or {})
    proc = launch.popen(lib, nprocs, argv, rank_env=rank_env)
    stderr_chunks: list[str] = []

    def drain_stderr() -> None:  # a full stderr pipe would block the launch
        stderr_chunks.append(proc.stderr.read() if proc.stderr else "")

    drain = threading.Thread(target=drain_stderr, daemon=True)
    drain.start()
    lines: list[str] = []
    done = threading.Event()
    stopped: list[str] = []   # why the watchdog stopped the launch

    def watchdog() -> None:
        started = last_seen = before = time.monotonic()
        seen = 0
        while not done.wait(POLL_S):
            now = time.monotonic()
            if now - before > 10 * POLL_S:
                # This thread itself did not run for a while (the whole job stopped with SIGSTOP,
                # or starved): that while is nobody's silence.
                started, last_seen = started + now - before, last_seen + now - before
            before = now
            if len(lines) != seen:
                seen, last_seen = len(lines), now
            if idle is not None and seen:
                over = now - last_seen > idle
                why = f"{idle:.0f} s without output"
            else:
                over = timeout is not None and now - started > timeout
                why = f"{timeout:.0f} s" + (" without output" if idle is not None else "")
            if over:
                stopped.append(why)
                # The driver is started in its own session: stop the whole launch, not only mpiexec.
                with contextlib.suppress(ProcessLookupError):   # it ended meanwhile
                    os.killpg(proc.pid, signal.SIGTERM)
                return

    watch = None
    if timeout is not None or idle is not None:
        watch = threading.Thread(target=watchdog, daemon=True)
        watch.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if on_progress is not None and line.startswith('{"type":"progress"'):
                record = json.loads(line)
                on_progress(int(record["done"]), int(record["total"]),
                            f"{record['comm']}: {record['collective']}")
        proc.wait()
    except BaseException:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
        raise
    finally:
        done.set()
        if watch is not None:
            watch.join()
    drain.join(timeout=5)
    stderr = "".join(stderr_chunks)
    command = " ".join(launch.mpiexec_argv(lib, nprocs, argv, rank_env))
    if proc.returncode != 0:
        how = (f"was stopped after the time limit ({stopped[0]})" if stopped
               else f"exited with code {proc.returncode}")
        raise SelftestError(f"the selftest driver on {nprocs} ranks of {lib.short_version} {how}:\n"
                            f"$ {command}\n{_tail(stderr) or _tail(''.join(lines))}", lines,
                            hung=bool(stopped), stderr=stderr)
    return lines


def run_launch(lib: MpiLibrary, nprocs: int, argv: Sequence[str],
               on_progress: Callable[[int, int, str], None] | None = None,
               timeout: float | None = None) -> Launch:
    """Run the driver on `nprocs` ranks; stream its progress; parse its results."""
    lines = run_launch_lines(lib, nprocs, argv, timeout, on_progress)
    try:
        return parse(lines, nprocs)
    except ValueError as exc:
        command = " ".join(launch.mpiexec_argv(lib, nprocs, argv, {}))
        raise SelftestError(f"the selftest driver on {nprocs} ranks of {lib.short_version}: {exc}"
                            f"\n$ {command}") from None


def run(lib: MpiLibrary, nprocs: Sequence[int], quick: bool = False, big: bool = True,
        collective: str | None = None,
        on_progress: Callable[[int, int, int, str], None] | None = None,
        timeout: float | None = None) -> Report:
    """Build the C core for `lib` if needed and run the selftest once per process count.

    on_progress(launch_index, done, total, what) is called as the driver advances."""
    artifacts = build.ensure_built(lib)
    argv = driver_argv(artifacts, quick=quick, big=big, collective=collective)
    launches = []
    for i, n in enumerate(nprocs):
        callback = None if on_progress is None else functools.partial(on_progress, i)
        launches.append(run_launch(lib, n, argv, callback, timeout))
    return Report(lib, tuple(launches))


def default_nprocs(lib: MpiLibrary) -> int:
    """4 ranks; libraries of the MPICH family busy-poll, so never more ranks than cores there."""
    if lib.family == "mpich":
        return max(2, min(4, os.cpu_count() or 2))
    return 4


def report_json(report: Report) -> str:
    """The aggregated results as one JSON document (for --json)."""
    return json.dumps({
        "library": report.library.as_dict(),
        "ok": report.ok,
        "launches": [{"nprocs": r.nprocs, "seconds": r.seconds, "summary": r.summary}
                     for r in report.launches],
        "variants": [v.model_dump() for v in report.variants],
        "failures": [f.model_dump() for r in report.launches for f in r.failures],
    }, indent=2)


__all__ = ["Failure", "Launch", "Report", "SelftestError", "VariantResult", "aggregate",
           "default_nprocs", "driver_argv", "parse", "report_json", "run", "run_launch",
           "run_launch_lines"]
