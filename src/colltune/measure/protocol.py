"""The contract with the C driver `colltune-bench`: its command line and what it writes.

Output format: docs/measurement.md (JSON lines for launch/job/summary/skip records, `R,` CSV
lines for raw repetitions). `read_driver_output` parses it; `to_launch_data` turns one launch's
output into rows of the store's jobs and measurements tables.
"""

from __future__ import annotations

import io
import json
import os
import platform
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from colltune import __version__, catalog
from colltune.measure.driver_options import LINE_KEYS, RECORD_COLUMNS, RECORD_DTYPES
from colltune.measure.planning import Plan
from colltune.measure.settings import BenchError, BenchSettings
from colltune.mpi import build, launch, smpi
from colltune.mpi import libraries as mpi
from colltune.schema import JOB_COLUMNS, MEASUREMENT_COLUMNS
from colltune.store.runs import LaunchData


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
    end: dict[str, Any] = field(default_factory=dict)




def _check_keys(kind: Any, obj: dict[str, Any]) -> None:
    """A line of a known type must carry every key native/spec/driver.toml gives it; one that does
    not comes from a driver built by another colltune, and reading on would store wrong rows."""
    missing = [k for k in LINE_KEYS.get(kind, ()) if k not in obj]
    if missing:
        raise BenchError(f"the measurement driver wrote a {kind!r} line without {', '.join(missing)}: "
                         "it was built from another colltune; rebuild it with `colltune mpi build`")


def json_record(line: str) -> dict[str, Any] | None:
    """A driver's JSON line (colltune-bench's, colltune-selftest's) as a dict; None for any other
    line: MPI libraries print their own notices on stdout, a crash truncates the last line."""
    if not line.startswith("{"):
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def read_driver_output(text: str) -> DriverOutput:
    """Parse the driver's records; a truncated last line (crash) is ignored."""
    out = DriverOutput()
    rec_lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("R,"):
            if line.count(",") == len(RECORD_COLUMNS):
                rec_lines.append(line[2:])
            continue
        obj = json_record(line)
        if obj is None:
            continue
        kind = obj.get("type")
        _check_keys(kind, obj)
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
            out.end = obj
    if rec_lines:
        out.records = pd.read_csv(io.StringIO("\n".join(rec_lines)), header=None,
                                  names=list(RECORD_COLUMNS), dtype=RECORD_DTYPES)
    else:
        out.records = pd.DataFrame(columns=list(RECORD_COLUMNS))
    return out


def launch_environment(out: DriverOutput, lib: mpi.MpiLibrary, rank_env: dict[str, str],
                 artifacts: build.Artifacts, nprocs: int | None = None) -> dict[str, str]:
    env: dict[str, str] = {}
    launcher = launch.launcher_env(lib, nprocs=nprocs)
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
        # How waiting ranks used their core (Open MPI yields only when ranks outnumber cores):
        # a launch that yields is load-sensitive, so comparisons must show it.
        "idle_wait": launch.idle_wait(lib, launcher, out.cvars.get("mpi_yield_when_idle")), "cores_available": str(launch.cores_available()),
    })
    if lib.family == "smpi":  # the simulated machine: what the host names alone do not say
        plat = smpi.platform(os.environ.get(smpi.PLATFORM_VAR), nprocs or 1)
        env.update({"smpi_platform": plat.name, "smpi_config": " ".join(smpi.config_flags({**os.environ, **rank_env}))})
    # the measuring phase on the host's clock (UTC epoch seconds): comparable across launches
    env.update({key: f"{out.end[key]:.6f}" for key in ("measuring_from", "measuring_until") if key in out.end})
    env.update({f"cvar:{k}": v for k, v in out.cvars.items()})
    prefixes = ("OMPI_MCA_", "MPIR_CVAR_", "I_MPI_", "COLLTUNE_", "UCX_", "FI_", "PMIX_MCA_")
    for key, value in sorted({**os.environ, **launcher, **rank_env}.items()):
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
        cat = catalog.load()
        return {"collective": j.collective, "msg_bytes": j.msg_bytes, "datatype": j.datatype,
                "op": j.op if cat.is_reduction(j.collective) else None,
                "root": j.root if cat.is_rooted(j.collective) else None}

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


def driver_argv(settings: BenchSettings, artifacts: build.Artifacts, job_file: Path, out_file: Path,
                seed: int, nprocs: int = 0) -> list[str]:
    """`nprocs` > 0: the driver refuses to measure in a world of another size (measure.confirm)."""
    argv = [str(artifacts.bench), "run", str(job_file), "--out", str(out_file),
            "--sync", settings.sync, "--metric", settings.metric, "--seed", str(seed),
            *settings.stop.driver_args()]
    if settings.profile is not None:
        argv += ["--profile", str(settings.profile.resolve())]
    if nprocs > 0:
        argv += ["--expect-procs", str(nprocs)]
    return argv
