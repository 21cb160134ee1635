"""Measurement runs: settings, job files, launches of `colltune-bench`, records into the store.

A run measures every (collective, message size, variant) at every process count over R launches
(seed 002: the launch is the experimental unit). Within a launch, the C driver measures all
variants of a job interleaved in random order (docs/measurement.md). Each launch is written to
the results database in one transaction when it finishes, so Ctrl-C or a crash keeps every
finished launch; `run(..., resume_run_id=...)` measures the missing ones.

Public API: BenchSettings, StopSettings, run(), validate(), bench_options (click decorator),
settings_from_options(), read_driver_output(), BenchError.
"""

from __future__ import annotations

import io
import json
import os
import platform
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import click
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from colltune import __version__, catalog

from colltune.mpi import build

from colltune.mpi import launch

from colltune.mpi import libraries as mpi
from colltune.store import JOB_COLUMNS, MEASUREMENT_COLUMNS, LaunchData, Store, StoreError

# ---------------------------------------------------------------------------------------------
# What can be measured

REDUCTIONS = frozenset({"allreduce", "reduce", "reduce_scatter_block", "reduce_scatter", "scan"})

# Seed 003, Listing 4.2: collectives whose total data grows with p get the small list, the
# others the large one (collectives the listing lacks follow the same rule).
SIZES_SCALED = (1, 2, 4, 8, 32, 64, 512, 1024, 2048, 4096, 8192, 16384)
SIZES_UNSCALED = (1, 2, 8, 64, 512, 1024, 8192, 16384, 65536, 131072, 1048576, 8388608)
SCALED = frozenset({"allgather", "alltoall", "gather", "scatter"})

DATATYPE_SIZES = {"byte": 1, "char": 1, "signed_char": 1, "unsigned_char": 1, "int": 4,
                  "unsigned": 4, "long": 8, "int64": 8, "float": 4, "double": 8}
OPS = ("sum", "prod", "max", "min", "band", "bor", "bxor", "land", "lor")

# The libraries' own algorithms selectable at run time (MPI-NOTES.md), for
# `--library-algorithms`. Each name is resolved again by the driver through MPI_T, which reports
# a name the installed version lacks as a skipped variant.
LIBRARY_ALGORITHMS: dict[str, dict[str, tuple[str, ...]]] = {
    "openmpi": {
        "allreduce": ("basic_linear", "nonoverlapping", "recursive_doubling", "ring",
                      "segmented_ring", "rabenseifner"),
        "bcast": ("basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree",
                  "binomial", "knomial", "scatter_allgather", "scatter_allgather_ring"),
        "allgather": ("linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc",
                      "sparbit"),
        "alltoall": ("linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"),
        "reduce": ("linear", "chain", "pipeline", "binary", "binomial", "in-order_binary",
                   "rabenseifner"),
        "gather": ("basic_linear", "binomial", "linear_sync"),
        "scatter": ("basic_linear", "binomial", "linear_nb"),
        "reduce_scatter": ("non-overlapping", "recursive_halving", "ring", "butterfly"),
        "reduce_scatter_block": ("basic_linear", "recursive_doubling", "recursive_halving",
                                 "butterfly"),
        "scan": ("linear", "recursive_doubling"),
    },
    "mpich": {
        "allreduce": ("recursive_doubling", "reduce_scatter_allgather", "tree", "recexch", "ring",
                      "k_reduce_scatter_allgather", "recursive_multiplying"),
        "bcast": ("binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather",
                  "pipelined_tree", "tree"),
        "allgather": ("brucks", "recursive_doubling", "ring", "k_brucks", "recexch_doubling",
                      "recexch_halving"),
        "alltoall": ("brucks", "pairwise", "pairwise_sendrecv_replace", "scattered", "k_brucks"),
        "reduce": ("binomial", "reduce_scatter_gather"),
        "gather": ("binomial",),
        "scatter": ("binomial",),
        "reduce_scatter": ("noncommutative", "pairwise", "recursive_doubling", "recursive_halving"),
        "reduce_scatter_block": ("noncommutative", "pairwise", "recursive_doubling",
                                 "recursive_halving"),
        "scan": ("recursive_doubling",),
    },
}

# Intel MPI: I_MPI_ADJUST_<COLL>=<id> (impi_info -a; Developer Reference), fixed per launch.
# Ids without the topology-aware presets that need several nodes to differ.
LIBRARY_ALGORITHMS["intel"] = {
    "allreduce": ("1", "2", "3", "5", "7", "8", "9"),
    "bcast": ("1", "2", "3", "7", "8"),
    "allgather": ("1", "2", "3", "5"),
    "alltoall": ("1", "2", "3", "4"),
    "gather": ("1", "3"),
    "reduce": ("1", "2", "5", "7"),
    "reduce_scatter": ("1", "2", "3", "4"),
    "reduce_scatter_block": ("1", "2", "3", "4"),
    "scan": ("1",),
    "scatter": ("1", "3"),
}

# Algorithms that refuse other process counts with an error instead of falling back:
# (library, algorithm) -> the only process count they serve.
ALGORITHM_NPROCS = {("openmpi", "two_proc"): 2}

# Libraries whose algorithms are fixed for a whole launch (one launch per algorithm).
ALGORITHMS_AT_LAUNCH = frozenset({"intel"})

PSEUDO_VARIANTS = ("default", "default#aa", "tuned")


def algorithm_key(lib: mpi.MpiLibrary) -> str:
    """Which LIBRARY_ALGORITHMS table a library uses (Intel MPI is of the MPICH family)."""
    return lib.name if lib.name in LIBRARY_ALGORITHMS else lib.family


class BenchError(mpi.MpiError):
    """A bench cannot start or could not finish; the message says what to change."""


def variant_kind(name: str) -> str:
    """`kind` column of the variants table."""
    if name == "default":
        return "default"
    if name == "default#aa":
        return "aa"
    if name == "tuned":
        return "tuned"
    if name.startswith("lib:"):
        return "library"
    return "mockup"


# ---------------------------------------------------------------------------------------------
# Settings


class StopSettings(BaseModel):
    """When a job has been measured enough (seed 002 section 4.2, seed 000 section 4.2)."""

    model_config = ConfigDict(extra="forbid")

    methods: list[Literal["rse", "cov_mean", "cov_median", "nrep1"]] = Field(
        default_factory=lambda: ["rse"],
        description="rules that must all hold to stop (empty: run max_reps or the time budget)")
    rse: float = Field(0.025, gt=0, description="relative standard error of the mean")
    cov_mean: float = Field(0.01, gt=0)
    cov_mean_window: int = Field(20, ge=2)
    cov_median: float = Field(0.01, gt=0)
    cov_median_window: int = Field(20, ge=2)
    min_reps: int = Field(20, ge=1)
    max_reps: int = Field(1000, ge=1)
    warmup: int = Field(3, ge=0)
    check_every: int = Field(10, ge=1, description="rounds between two checks of the rules")
    time_budget_s: float = Field(3.0, ge=0, description="per job and launch; 0: none")
    ref_time_s: float | None = Field(None, gt=0, description="nrep1: t1, else measured per launch")
    nrep1_rse: float = Field(0.05, gt=0)
    b1: int = Field(8, ge=1)
    b2: int = Field(8, ge=0)
    k: int = Field(10, ge=1)

    @model_validator(mode="after")
    def _reps(self) -> StopSettings:
        if self.min_reps > self.max_reps:
            if "min_reps" in self.model_fields_set:
                raise ValueError(f"min_reps {self.min_reps} > max_reps {self.max_reps}")
            self.min_reps = self.max_reps  # only max_reps was given: it wins over the default
        return self

    def driver_args(self) -> list[str]:
        args = ["--stop", ",".join(self.methods) or "fixed", "--rse", repr(self.rse),
                "--cov-mean", repr(self.cov_mean), "--cov-mean-window", str(self.cov_mean_window),
                "--cov-median", repr(self.cov_median),
                "--cov-median-window", str(self.cov_median_window),
                "--min-reps", str(self.min_reps), "--max-reps", str(self.max_reps),
                "--warmup", str(self.warmup), "--check-every", str(self.check_every),
                "--time-budget", repr(self.time_budget_s), "--nrep1-rse", repr(self.nrep1_rse),
                "--b1", str(self.b1), "--b2", str(self.b2), "--k", str(self.k)]
        if self.ref_time_s:
            args += ["--ref-time", repr(self.ref_time_s)]
        return args


PRESETS: dict[str, dict[str, Any]] = {
    # about a minute on 4 ranks of this 2-core machine with the embedded Open MPI
    "quick": {"sizes": [8, 1024, 32768],
              "stop": {"min_reps": 10, "max_reps": 100, "time_budget_s": 0.2, "warmup": 2}},
    # seed 003 Listing 4.2: size lists per collective, 5000 repetitions, 3 s per job
    "full": {"sizes": None, "stop": {"max_reps": 5000, "time_budget_s": 3.0}},
}


class BenchSettings(BaseModel):
    """Everything a bench run needs; validated before anything is launched."""

    model_config = ConfigDict(extra="forbid")

    mpi: str | None = Field(None, description="None: embedded Open MPI; openmpi|mpich|intel|path")
    collectives: list[str] = Field(default_factory=lambda: catalog.load().collective_names())
    variants: list[str] | None = Field(
        None, description="None: default, every mock-up of each collective and default#aa")
    sizes: list[int] | None = Field(None, description="bytes; None: seed 003's lists per collective")
    nprocs: list[int] = Field(default_factory=lambda: [4])
    launches: int = Field(5, ge=1, description="R: launches per process count")
    sync: Literal["barrier", "dissemination", "window"] = "dissemination"
    metric: Literal["max", "makespan"] = "max"
    stop: StopSettings = Field(default_factory=StopSettings)
    datatype: str | None = Field(None, description="None: byte (unsigned_char for reductions)")
    op: str = "sum"
    root: int = Field(0, ge=0)
    aa: bool = Field(True, description="measure default#aa, the A/A control")
    barrier: bool = Field(True, description="measure the barrier for noise warnings")
    library_algorithms: bool = Field(False, description="add every lib:<coll>:<alg> known")
    profile: Path | None = Field(None, description="adds the `tuned` variant")
    seed: int = Field(1, ge=0)
    launch_timeout_s: float | None = Field(None, gt=0)
    allow_oversubscribe: bool = Field(False, description="MPICH ranks beyond the cores")
    preset: Literal["quick", "full"] | None = None

    @field_validator("collectives")
    @classmethod
    def _collectives(cls, value: list[str]) -> list[str]:
        known = catalog.load().collective_names()
        bad = [c for c in value if c not in known]
        if bad:
            raise ValueError(f"unknown collective(s) {', '.join(bad)}; known: {', '.join(known)} "
                             "(the barrier is measured by default, see --barrier/--no-barrier)")
        if not value:
            raise ValueError("no collective selected")
        return list(dict.fromkeys(value))

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("empty size list")
        bad = [s for s in value if s < 0]
        if bad:
            raise ValueError(f"message sizes must be >= 0 bytes, got {bad}")
        return sorted(set(value))

    @field_validator("nprocs")
    @classmethod
    def _nprocs(cls, value: list[int]) -> list[int]:
        if not value or any(n < 1 for n in value):
            raise ValueError(f"process counts must be >= 1, got {value}")
        return sorted(set(value))

    @field_validator("datatype")
    @classmethod
    def _datatype(cls, value: str | None) -> str | None:
        if value is not None and value not in DATATYPE_SIZES:
            raise ValueError(f"unknown datatype {value!r}; known: {', '.join(DATATYPE_SIZES)}")
        return value

    @field_validator("op")
    @classmethod
    def _op(cls, value: str) -> str:
        if value not in OPS:
            raise ValueError(f"unknown op {value!r}; known: {', '.join(OPS)}")
        return value

    @model_validator(mode="after")
    def _variants(self) -> BenchSettings:
        if self.variants is None:
            return self
        cat = catalog.load()
        known = {v.name: v.collective for v in cat.variants}
        for name in self.variants:
            if name in PSEUDO_VARIANTS or name in known:
                continue
            if name.startswith("lib:"):
                parts = name.split(":")
                if len(parts) != 3 or not parts[2]:
                    raise ValueError(f"library variant {name!r}: write lib:<collective>:<algorithm>")
                if parts[1] not in cat.collective_names():
                    raise ValueError(f"library variant {name!r}: unknown collective {parts[1]!r}")
                continue
            raise ValueError(f"unknown variant {name!r}; known: default, default#aa, tuned, "
                             f"lib:<collective>:<algorithm>, {', '.join(known)}")
        if "tuned" in self.variants and self.profile is None:
            raise ValueError("variant `tuned` needs a profile (--profile FILE)")
        return self

    @classmethod
    def from_preset(cls, preset: str | None, **overrides: Any) -> BenchSettings:
        """Preset values first, then explicit settings (None means: not given)."""
        values: dict[str, Any] = {}
        if preset:
            if preset not in PRESETS:
                raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
            base = PRESETS[preset]
            values["sizes"] = base["sizes"]
            values["stop"] = dict(base["stop"])
            values["preset"] = preset
        stop_over = overrides.pop("stop", None) or {}
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["stop"] = {**values.get("stop", {}), **{k: v for k, v in stop_over.items() if v is not None}}
        return cls(**values)

    # -- derived -------------------------------------------------------------------------------

    def datatype_for(self, collective: str) -> str:
        if self.datatype:
            return self.datatype
        return "unsigned_char" if collective in REDUCTIONS else "byte"

    def sizes_for(self, collective: str) -> list[int]:
        if self.sizes is not None:
            return list(self.sizes)
        return list(SIZES_SCALED if collective in SCALED else SIZES_UNSCALED)

    def variants_for(self, collective: str, family: str) -> list[str]:
        cat = catalog.load()
        if self.variants is None:
            names = ["default", *(v.name for v in cat.variants_of(collective))]
            if self.aa:
                names.append("default#aa")
            if self.profile is not None:
                names.append("tuned")
        else:
            names = [n for n in self.variants if n in PSEUDO_VARIANTS
                     or (n.startswith("lib:") and n.split(":")[1] == collective)
                     or (n in {v.name for v in cat.variants_of(collective)})]
        if self.library_algorithms:
            algs = LIBRARY_ALGORITHMS.get(family, {}).get(collective, ())
            names += [f"lib:{collective}:{a}" for a in algs]
        return list(dict.fromkeys(names))


# ---------------------------------------------------------------------------------------------
# Jobs


@dataclass(frozen=True)
class Job:
    collective: str
    msg_bytes: int
    datatype: str
    op: str
    root: int
    variants: tuple[str, ...]

    def line(self) -> str:
        reduction = self.collective in REDUCTIONS
        rooted = self.collective in ("bcast", "gather", "reduce", "scatter")
        return (f"{self.collective} {self.msg_bytes} {self.datatype} {self.op if reduction else '-'} "
                f"{self.root if rooted else '-'} {','.join(self.variants)}")


@dataclass
class Plan:
    """The jobs of one process count, and what was left out before launching (and why)."""

    nprocs: int
    jobs: list[Job]
    left_out: list[str] = field(default_factory=list)


def plan_jobs(settings: BenchSettings, nprocs: int, library: str,
              adjust: tuple[str, str] | None = None) -> Plan:
    """The jobs of one launch. `library` keys LIBRARY_ALGORITHMS. Where algorithms are fixed at
    launch (Intel MPI), the ordinary launches leave library variants out and `adjust` =
    (collective, algorithm) plans the launch measuring just `lib:<collective>:<algorithm>`."""
    plan = Plan(nprocs, [])
    at_launch = library in ALGORITHMS_AT_LAUNCH
    for coll in settings.collectives:
        if adjust is not None and coll != adjust[0]:
            continue
        names = settings.variants_for(coll, library)
        if adjust is not None:
            variants: tuple[str, ...] = (f"lib:{adjust[0]}:{adjust[1]}",)
        else:
            variants = tuple(v for v in names if not (at_launch and v.startswith("lib:")))
        for v in variants:
            only = ALGORITHM_NPROCS.get((library, v.split(":")[-1])) if v.startswith("lib:") else None
            if only is not None and only != nprocs:
                plan.left_out.append(f"{v}: {library} runs it on {only} processes only")
        variants = tuple(v for v in variants if not (
            v.startswith("lib:") and ALGORITHM_NPROCS.get((library, v.split(":")[-1]), nprocs) != nprocs))
        if not variants:
            plan.left_out.append(f"{coll}: none of the requested variants belongs to it")
            continue
        dtype = settings.datatype_for(coll)
        unit = DATATYPE_SIZES[dtype] * (nprocs if coll == "reduce_scatter_block" else 1)
        for size in settings.sizes_for(coll):
            if size % unit:
                plan.left_out.append(f"{coll} {size} B: not a multiple of {unit} B "
                                     f"({dtype}{' x p' if coll == 'reduce_scatter_block' else ''})")
                continue
            plan.jobs.append(Job(coll, size, dtype, settings.op, settings.root, variants))
    if settings.barrier and adjust is None:
        plan.jobs.append(Job("barrier", 0, "byte", "-", 0,
                             ("default", "default#aa") if settings.aa else ("default",)))
    return plan


def all_variants(settings: BenchSettings, library: str) -> list[tuple[str, str, str, str | None]]:
    """(collective, variant, kind, guideline) rows of the run's variants table."""
    cat = catalog.load()
    guideline = {v.name: v.guideline for v in cat.variants}
    rows = []
    for coll in settings.collectives:
        for name in settings.variants_for(coll, library):
            rows.append((coll, name, variant_kind(name), guideline.get(name)))
    if settings.barrier:
        rows.append(("barrier", "default", "default", None))
        if settings.aa:
            rows.append(("barrier", "default#aa", "aa", None))
    return rows


# ---------------------------------------------------------------------------------------------
# Validation before launching


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def check_nprocs(settings: BenchSettings, lib: mpi.MpiLibrary) -> None:
    """Too many ranks for the place we run: a clear error before anything starts."""
    if launch.use_srun():
        slots = int(os.environ.get("SLURM_NTASKS", "0") or 0)
        if slots and max(settings.nprocs) > slots:
            raise BenchError(f"{max(settings.nprocs)} processes requested but the Slurm allocation "
                             f"has {slots} tasks: ask for more (-n) or measure fewer processes")
        return
    cores = _cores()
    biggest = max(settings.nprocs)
    # MPICH polls; Open MPI and Intel MPI yield the core when they wait (MPI-NOTES.md)
    if lib.family == "mpich" and lib.name != "intel" and biggest > cores and not settings.allow_oversubscribe:
        raise BenchError(f"{lib.name} busy-polls: {biggest} ranks on {cores} cores make every "
                         f"collective take milliseconds; use at most -n {cores} here, or pass "
                         "--allow-oversubscribe to measure anyway")
    if biggest > 16 * cores:
        raise BenchError(f"{biggest} processes on {cores} cores is not a measurement; "
                         "run on a cluster (srun) or use fewer processes")


def validate(settings: BenchSettings) -> mpi.MpiLibrary:
    """Everything that can be checked without launching; returns the MPI library to use."""
    lib = mpi.resolve(settings.mpi)
    check_nprocs(settings, lib)
    if settings.profile is not None:
        from colltune.tune.profile import ProfileError, read_profile
        try:
            read_profile(settings.profile)
        except (OSError, ProfileError) as exc:
            raise BenchError(f"profile {settings.profile}: {exc}") from None
    key = algorithm_key(lib)
    if key in ALGORITHMS_AT_LAUNCH:
        bad = [v for c in settings.collectives for v in settings.variants_for(c, key)
               if v.startswith("lib:") and not v.split(":")[2].isdigit()]
        if bad:
            raise BenchError(f"{', '.join(bad)}: Intel MPI algorithms are numbers, e.g. lib:allreduce:3 "
                             "(I_MPI_ADJUST_ALLREDUCE=3; `impi_info -a` lists them)")
    for n in settings.nprocs:
        if not plan_jobs(settings, n, key).jobs:
            raise BenchError(f"nothing to measure at {n} processes: every size was left out")
    return lib


# ---------------------------------------------------------------------------------------------
# The driver's output


@dataclass
class DriverOutput:
    """What one launch of colltune-bench wrote (format: docs/measurement.md)."""

    launch: dict[str, Any] = field(default_factory=dict)
    cvars: dict[str, str] = field(default_factory=dict)
    jobs: dict[int, dict[str, Any]] = field(default_factory=dict)
    skips: list[dict[str, Any]] = field(default_factory=list)
    job_skips: list[dict[str, Any]] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    references: list[dict[str, Any]] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    records: pd.DataFrame = field(default_factory=pd.DataFrame)
    ended: bool = False


_RECORD_COLUMNS = ["job", "variant_idx", "rep", "warmup", "valid", "runtime_s", "makespan_s",
                   "start_s", "end_s"]


def read_driver_output(text: str) -> DriverOutput:
    """Parse the driver's records; a truncated last line (crash) is ignored."""
    out = DriverOutput()
    rec_lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("R,"):
            if line.count(",") == len(_RECORD_COLUMNS):
                rec_lines.append(line[2:])
            continue
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = obj.get("type")
        if kind == "launch":
            out.launch = obj
        elif kind == "cvar":
            out.cvars[obj["name"]] = obj["value"]
        elif kind == "job":
            out.jobs[int(obj["job"])] = obj
        elif kind == "skip":
            out.skips.append(obj)
        elif kind == "job_skip":
            out.job_skips.append(obj)
        elif kind == "summary":
            out.summaries.append(obj)
        elif kind == "reference":
            out.references.append(obj)
        elif kind == "probe":
            out.probes.append(obj)
        elif kind == "end":
            out.ended = True
    if rec_lines:
        out.records = pd.read_csv(io.StringIO("\n".join(rec_lines)), header=None, names=_RECORD_COLUMNS,
                                  dtype={"job": "int64", "variant_idx": "int64", "rep": "int64",
                                         "warmup": "int64", "valid": "int64"})
    else:
        out.records = pd.DataFrame(columns=_RECORD_COLUMNS)
    return out


def _environment(out: DriverOutput, lib: mpi.MpiLibrary, rank_env: dict[str, str],
                 artifacts: build.Artifacts) -> dict[str, str]:
    env: dict[str, str] = {}
    meta = out.launch
    hosts: list[str] = list(meta.get("hosts", []))
    per_node: dict[str, int] = {}
    for h in hosts:
        per_node[h] = per_node.get(h, 0) + 1
    env.update({
        "mpi_name": lib.name, "mpi_family": lib.family, "mpi_version": lib.version,
        "mpi_standard": str(meta.get("mpi_version", "")),
        "library_version": str(meta.get("library", "")).strip(),
        "cpu_model": str(meta.get("cpu_model", "")), "hostnames": ",".join(sorted(per_node)),
        "nodes": str(len(per_node)),
        "ranks_per_node": ",".join(str(per_node[h]) for h in sorted(per_node)),
        "sync": str(meta.get("sync", "")), "metric": str(meta.get("metric", "")),
        "wtick": str(meta.get("wtick", "")), "colltune_version": __version__,
        "frontend_host": platform.node(), "bench_binary": str(artifacts.bench),
        "launcher": "srun" if launch.use_srun() else str(lib.mpiexec),
    })
    env.update({f"cvar:{k}": v for k, v in out.cvars.items()})
    prefixes = ("OMPI_MCA_", "MPIR_CVAR_", "I_MPI_", "COLLTUNE_", "UCX_", "FI_")
    for key, value in sorted({**os.environ, **launch.launcher_env(lib), **rank_env}.items()):
        if key.startswith(prefixes) or key in ("SLURM_JOB_ID", "SLURM_NNODES", "SLURM_NTASKS"):
            env[f"env:{key}"] = value
    for ref in out.references:
        env[f"nrep1_t1_s:{ref['collective']}"] = str(ref["t1_s"])
    return env


def to_launch_data(out: DriverOutput, plan: Plan, *, launch_idx: int, repetition: int, seed: int,
                   started: datetime, finished: datetime, sync: str,
                   environment: dict[str, str]) -> LaunchData:
    """Driver records -> the rows of the jobs and measurements tables for one launch."""
    job_rows: list[dict[str, Any]] = []
    base = {"launch_idx": launch_idx, "nprocs": plan.nprocs}

    def job_info(jid: int) -> dict[str, Any]:
        j = plan.jobs[jid]
        return {"collective": j.collective, "msg_bytes": j.msg_bytes, "datatype": j.datatype,
                "op": j.op if j.collective in REDUCTIONS else None,
                "root": j.root if j.collective in ("bcast", "gather", "reduce", "scatter") else None}

    empty = {"nrep": 0, "rse": None, "valid_reps": 0, "cov_mean": None, "cov_median": None,
             "nrep_target": None, "window_s": None, "resyncs": None}
    for s in out.summaries:
        job_rows.append({**base, **job_info(int(s["job"])), "variant": s["variant"], "nrep": s["nrep"],
                         "stop_reason": s["stop"], "rse": s["rse"], "valid_reps": s["valid"],
                         "cov_mean": s["cov_mean"], "cov_median": s["cov_median"],
                         "nrep_target": s["nrep_target"] or None, "window_s": s["window_s"],
                         "resyncs": s["resyncs"], "skip_reason": None})
    for s in out.skips:
        job_rows.append({**base, **job_info(int(s["job"])), **empty, "variant": s["variant"],
                         "stop_reason": "skipped", "skip_reason": s["reason"]})
    for s in out.job_skips:
        for variant in plan.jobs[int(s["job"])].variants:
            job_rows.append({**base, **job_info(int(s["job"])), **empty, "variant": variant,
                             "stop_reason": "skipped", "skip_reason": s["reason"]})
    jobs = pd.DataFrame(job_rows, columns=JOB_COLUMNS[1:])

    rec = out.records
    if rec.empty:
        meas = pd.DataFrame(columns=MEASUREMENT_COLUMNS[1:])
    else:
        names = {(jid, i): name for jid, j in out.jobs.items() for i, name in enumerate(j["variants"])}
        keys = list(zip(rec["job"], rec["variant_idx"], strict=True))
        meas = pd.DataFrame({
            "launch_idx": launch_idx, "nprocs": plan.nprocs,
            "collective": [plan.jobs[j].collective for j in rec["job"]],
            "variant": [names[k] for k in keys],
            "msg_bytes": [plan.jobs[j].msg_bytes for j in rec["job"]],
            "rep": rec["rep"].astype("int32"), "warmup": rec["warmup"].astype(bool),
            "valid": rec["valid"].astype(bool), "runtime_s": rec["runtime_s"].astype(float),
            "makespan_s": rec["makespan_s"].astype(float), "sync": sync,
            "start_s": rec["start_s"].astype(float), "end_s": rec["end_s"].astype(float),
        })
    return LaunchData(launch_idx=launch_idx, nprocs=plan.nprocs, repetition=repetition, seed=seed,
                      started=started, finished=finished, environment=environment, jobs=jobs,
                      measurements=meas)


# ---------------------------------------------------------------------------------------------
# Running


def driver_argv(settings: BenchSettings, artifacts: build.Artifacts, job_file: Path, out_file: Path,
                seed: int) -> list[str]:
    argv = [str(artifacts.bench), "run", str(job_file), "--out", str(out_file),
            "--sync", settings.sync, "--metric", settings.metric, "--seed", str(seed),
            *settings.stop.driver_args()]
    if settings.profile is not None:
        argv += ["--profile", str(settings.profile.resolve())]
    return argv


def launch_seed(settings: BenchSettings, launch_idx: int) -> int:
    """Different interleaving per launch, identical on all ranks of one launch."""
    return (settings.seed * 1_000_003 + launch_idx * 7_919 + 1) % (2**63)


@dataclass(frozen=True)
class LaunchSpec:
    """One mpiexec of a run."""

    idx: int
    nprocs: int
    repetition: int  # 0..R-1 for its process count
    adjust: tuple[str, str] | None = None  # (collective, algorithm) fixed for this launch (Intel)

    def rank_env(self) -> dict[str, str]:
        if self.adjust is None:
            return {}
        return {f"I_MPI_ADJUST_{self.adjust[0].upper()}": self.adjust[1]}


def launch_plan(settings: BenchSettings, library: str = "openmpi") -> list[LaunchSpec]:
    """Process counts alternate, so that an interrupted run has launches of every process
    count. Where algorithms are fixed at launch, each repetition adds one launch per
    (collective, algorithm) right after the ordinary one."""
    adjusts: list[tuple[str, str]] = []
    if library in ALGORITHMS_AT_LAUNCH:
        adjusts = [(c, v.split(":")[2]) for c in settings.collectives
                   for v in settings.variants_for(c, library) if v.startswith("lib:")]
    specs: list[LaunchSpec] = []
    for r in range(settings.launches):
        for n in settings.nprocs:
            for adjust in (None, *adjusts):
                specs.append(LaunchSpec(len(specs), n, r, adjust))
    return specs


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@contextmanager
def _progress(enabled: bool, console: Console | None) -> Iterator[Progress | None]:
    if not enabled:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console or Console(stderr=True),
                  transient=False) as progress:
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
                out_file: Path, timeout: float | None,
                on_jobs: Callable[[int], None]) -> tuple[int, str]:
    """Start one launch, report finished jobs as the records stream in; (returncode, stderr)."""
    proc = launch.popen(lib, nprocs, argv, rank_env)
    start = time.monotonic()
    seen, offset, tail = 0, 0, b""
    try:
        while proc.poll() is None:
            time.sleep(0.2)
            if not out_file.exists():
                continue
            with open(out_file, "rb") as f:  # only what was added since the last look
                f.seek(offset)
                chunk = f.read()
            offset += len(chunk)
            lines = (tail + chunk).split(b"\n")
            tail = lines.pop()
            done = seen + sum(line.startswith((b'{"type":"job"', b'{"type":"job_skip"')) for line in lines)
            if done != seen:
                seen = done
                on_jobs(done)
            if timeout is not None and time.monotonic() - start > timeout:
                _stop_process(proc)
                return -1, f"launch timed out after {timeout:.0f} s"
    except BaseException:
        _stop_process(proc)
        raise
    _, stderr = proc.communicate()
    return proc.returncode, stderr


def _describe_failure(code: int, stderr: str) -> str:
    tail = "\n".join(line for line in stderr.strip().splitlines()[-8:])
    return f"exit code {code}" + (f": {tail}" if tail else "")


def run(settings: BenchSettings, db_path: str | Path, *, resume_run_id: str | None = None,
        progress: bool = True, console: Console | None = None, command: str | None = None,
        kind: str = "bench") -> str:
    """Measure everything `settings` asks for into `db_path`; returns the run id.

    With `resume_run_id`, the run's stored settings are used and only its missing launches are
    measured. Ctrl-C (KeyboardInterrupt) or a failed launch leaves the run `interrupted` with
    every finished launch stored, and re-raises (BenchError for a failed launch). The database
    is opened only to write, so it can be queried while a run is in progress."""
    db_path = Path(db_path)
    with Store(db_path) as store:
        if resume_run_id is not None:
            info = store.run_info(resume_run_id)
            if info["status"] == "complete":
                return resume_run_id
            settings = BenchSettings(**info["settings"])
            done = store.finished_launches(resume_run_id)
    lib = validate(settings)
    artifacts = build.ensure_built(lib)
    with Store(db_path) as store:
        if resume_run_id is None:
            run_id = store.create_run(
                kind=kind, command=command or "colltune bench", mpi_name=lib.name,
                mpi_version=lib.version, abi_family=lib.family,
                settings=json.loads(settings.model_dump_json()),
                variants=all_variants(settings, algorithm_key(lib)))
            done = set()
        else:
            run_id = resume_run_id
            store.set_run_status(run_id, "running")
    key = algorithm_key(lib)
    specs = launch_plan(settings, key)
    todo = [spec for spec in specs if spec.idx not in done]
    if console is not None and progress:
        for n in settings.nprocs:
            for note in sorted(set(plan_jobs(settings, n, key).left_out)):
                console.print(f"[yellow]left out at {n} processes:[/] {note}")
    try:
        _run_launches(db_path, run_id, settings, lib, artifacts, todo, len(specs), len(done),
                      progress, console)
    except BaseException:
        with Store(db_path) as store:
            store.set_run_status(run_id, "interrupted")
        raise
    with Store(db_path) as store:
        store.set_run_status(run_id, "complete")
    return run_id


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


def _store_launch(db_path: Path, run_id: str, launch: LaunchData, attempts: int = 20) -> None:
    """Another process may hold the database for a moment (a reader during the run): wait
    for it rather than lose the launch."""
    for attempt in range(attempts):
        try:
            store = Store(db_path)
        except StoreError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)
            continue
        with store:
            store.write_launch(run_id, launch)
        return


def _run_launches(db_path: Path, run_id: str, settings: BenchSettings, lib: mpi.MpiLibrary,
                  artifacts: build.Artifacts, todo: list[LaunchSpec], total: int, already: int,
                  show: bool, console: Console | None) -> None:
    key = algorithm_key(lib)
    with tempfile.TemporaryDirectory(prefix="colltune-bench-") as tmp, _progress(show, console) as bar:
        launches_task = bar.add_task("launches", total=total, completed=already) if bar else None
        jobs_task = bar.add_task("jobs", total=1) if bar else None
        for spec in todo:
            launch_idx, nprocs, repetition = spec.idx, spec.nprocs, spec.repetition
            plan = plan_jobs(settings, nprocs, key, spec.adjust)
            job_file = Path(tmp) / f"jobs-{launch_idx}.txt"
            job_file.write_text("".join(j.line() + "\n" for j in plan.jobs))
            out_file = Path(tmp) / f"launch-{launch_idx}.out"
            seed = launch_seed(settings, launch_idx)
            argv = driver_argv(settings, artifacts, job_file, out_file, seed)
            rank_env = spec.rank_env()
            if bar is not None:
                bar.update(jobs_task, total=len(plan.jobs), completed=0,
                           description=f"jobs (launch {launch_idx + 1}/{total}, {nprocs} procs)")
            started = _now()
            try:
                code, stderr = _run_launch(
                    lib, nprocs, argv, rank_env, out_file, settings.launch_timeout_s,
                    lambda n: bar.update(jobs_task, completed=max(n - 1, 0)) if bar else None)
            except KeyboardInterrupt:
                _store_launch(db_path, run_id, LaunchData(
                    launch_idx=launch_idx, nprocs=nprocs, repetition=repetition, seed=seed,
                    started=started, finished=_now(), status="interrupted", message="Ctrl-C"))
                raise
            finished = _now()
            text = out_file.read_text(errors="replace") if out_file.exists() else ""
            out = read_driver_output(text)
            if code != 0 or not out.ended:
                # Keep the failed launch's trace, not its partial data (it would bias verdicts).
                message = _describe_failure(code, stderr)
                _store_launch(db_path, run_id, LaunchData(
                    launch_idx=launch_idx, nprocs=nprocs, repetition=repetition, seed=seed,
                    started=started, finished=finished, status="failed", message=message))
                raise BenchError(
                    f"launch {launch_idx} ({nprocs} processes) failed, {message}\n"
                    f"command: {shlex.join(launch.mpiexec_argv(lib, nprocs, argv, rank_env))}\n"
                    f"finished launches are stored; complete the run with "
                    f"`colltune bench --db {db_path} --resume {run_id}`")
            env = _environment(out, lib, rank_env, artifacts)
            _store_launch(db_path, run_id, to_launch_data(
                out, plan, launch_idx=launch_idx, repetition=repetition, seed=seed, started=started,
                finished=finished, sync=settings.sync, environment=env))
            if bar is not None:
                bar.update(jobs_task, completed=len(plan.jobs))
                bar.advance(launches_task)


# ---------------------------------------------------------------------------------------------
# Command-line options, shared with `colltune check`


def _int_list(ctx: click.Context, param: click.Parameter, value: Sequence[str] | None) -> list[int] | None:
    if not value:
        return None
    out: list[int] = []
    for chunk in value:
        for item in chunk.split(","):
            item = item.strip().lower()
            if not item:
                continue
            mult = 1
            for suffix, factor in (("kib", 1024), ("mib", 1024**2), ("k", 1024), ("m", 1024**2), ("b", 1)):
                if item.endswith(suffix):
                    item, mult = item[: -len(suffix)], factor
                    break
            try:
                out.append(int(item) * mult)
            except ValueError:
                raise click.BadParameter(f"{chunk!r}: expected integers like 8,1024,64KiB") from None
    return out


def _str_list(ctx: click.Context, param: click.Parameter, value: Sequence[str] | None) -> list[str] | None:
    if not value:
        return None
    return [s.strip() for chunk in value for s in chunk.split(",") if s.strip()]


_BENCH_OPTIONS = [
    click.option("--preset", type=click.Choice(sorted(PRESETS)), default=None,
                 help="quick: 3 sizes, short jobs (~30 s for R=5 on 4 ranks here); full: seed 003's size lists, "
                      "up to 5000 repetitions / 3 s per job"),
    click.option("--mpi", "mpi_spec", default=None, metavar="LIB",
                 help="openmpi | mpich | intel | path to an mpicc (default: embedded Open MPI)"),
    click.option("-c", "--collectives", multiple=True, callback=_str_list, metavar="LIST",
                 help="collectives, comma-separated (default: all of the table)"),
    click.option("--variants", multiple=True, callback=_str_list, metavar="LIST",
                 help="variants to measure (default: default, every mock-up, default#aa); also "
                      "tuned and lib:<collective>:<algorithm>"),
    click.option("--library-algorithms", is_flag=True, default=None,
                 help="also measure every algorithm of the MPI library (lib:<coll>:<alg>)"),
    click.option("-s", "--sizes", multiple=True, callback=_int_list, metavar="LIST",
                 help="message sizes in bytes, e.g. 8,1KiB,64KiB (default: seed 003's per collective)"),
    click.option("-n", "--nprocs", multiple=True, callback=_int_list, metavar="LIST",
                 help="process counts (default 4)"),
    click.option("-R", "--launches", type=click.IntRange(1), default=None,
                 help="launches per process count, the statistical unit (default 5)"),
    click.option("--sync", type=click.Choice(["barrier", "dissemination", "window"]), default=None,
                 help="synchronization before each repetition (default dissemination)"),
    click.option("--metric", type=click.Choice(["max", "makespan"]), default=None,
                 help="value the stopping rules watch: max local duration or global makespan"),
    click.option("--stop", "stop_methods", multiple=True, callback=_str_list, metavar="LIST",
                 help="stopping rules that must all hold: rse,cov_mean,cov_median,nrep1 or fixed"),
    click.option("--rse", type=float, default=None, help="RSE threshold (default 0.025)"),
    click.option("--cov-mean", type=float, default=None, help="COV-of-means threshold (0.01)"),
    click.option("--cov-mean-window", type=int, default=None, help="window of means (20)"),
    click.option("--cov-median", type=float, default=None, help="COV-of-medians threshold (0.01)"),
    click.option("--cov-median-window", type=int, default=None, help="window of medians (20)"),
    click.option("--min-reps", type=int, default=None, help="repetitions before any stop (20)"),
    click.option("--max-reps", type=int, default=None, help="repetitions at most (1000)"),
    click.option("--warmup", type=int, default=None, help="warm-up repetitions, recorded and flagged (3)"),
    click.option("--time-budget", type=float, default=None, help="seconds per job and launch (3)"),
    click.option("--ref-time", type=float, default=None,
                 help="nrep1 rule: t1 in seconds (default: measured per launch on 1 element)"),
    click.option("--datatype", default=None, help="datatype (default byte; unsigned_char for reductions)"),
    click.option("--op", default=None, help="reduction op (default sum)"),
    click.option("--root", type=int, default=None, help="root of rooted collectives (default 0)"),
    click.option("--aa/--no-aa", default=None, help="measure default#aa, the A/A control (default on)"),
    click.option("--barrier/--no-barrier", "barrier_job", default=None,
                 help="measure the barrier for noise warnings (default on)"),
    click.option("--profile", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                 help="tuning profile: adds the variant `tuned` (what the interposer would do)"),
    click.option("--seed", type=int, default=None, help="seed of the randomized order (default 1)"),
    click.option("--launch-timeout", type=float, default=None, help="seconds before a launch is killed"),
    click.option("--allow-oversubscribe", is_flag=True, default=None,
                 help="allow more MPICH ranks than cores (busy-polling makes it slow)"),
]

BENCH_OPTION_NAMES = ("preset", "mpi_spec", "collectives", "variants", "library_algorithms", "sizes",
                      "nprocs", "launches", "sync", "metric", "stop_methods", "rse", "cov_mean",
                      "cov_mean_window", "cov_median", "cov_median_window", "min_reps", "max_reps",
                      "warmup", "time_budget", "ref_time", "datatype", "op", "root", "aa",
                      "barrier_job", "profile", "seed", "launch_timeout", "allow_oversubscribe")


def bench_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add every bench option to a click command; turn them into settings with
    `settings_from_options(kwargs)` (which pops them from kwargs)."""
    for option in reversed(_BENCH_OPTIONS):
        func = option(func)
    return func


def settings_from_options(kwargs: dict[str, Any]) -> BenchSettings:
    """BenchSettings from the options of `bench_options` (removed from kwargs); a bad value is a
    click.UsageError naming the option."""
    o = {name: kwargs.pop(name, None) for name in BENCH_OPTION_NAMES}
    stop = {"rse": o["rse"], "cov_mean": o["cov_mean"], "cov_mean_window": o["cov_mean_window"],
            "cov_median": o["cov_median"], "cov_median_window": o["cov_median_window"],
            "min_reps": o["min_reps"], "max_reps": o["max_reps"], "warmup": o["warmup"],
            "time_budget_s": o["time_budget"], "ref_time_s": o["ref_time"]}
    if o["stop_methods"] is not None:
        stop["methods"] = [] if o["stop_methods"] == ["fixed"] else o["stop_methods"]
    try:
        return BenchSettings.from_preset(
            o["preset"], mpi=o["mpi_spec"], collectives=o["collectives"], variants=o["variants"],
            library_algorithms=o["library_algorithms"], sizes=o["sizes"], nprocs=o["nprocs"],
            launches=o["launches"], sync=o["sync"], metric=o["metric"], stop=stop,
            datatype=o["datatype"], op=o["op"], root=o["root"], aa=o["aa"], barrier=o["barrier_job"],
            profile=o["profile"], seed=o["seed"], launch_timeout_s=o["launch_timeout"],
            allow_oversubscribe=o["allow_oversubscribe"])
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: "
                             f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
        raise click.UsageError(problems) from None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
