"""Trace files of the learning mode (docs/select.md, "Trace files") and their ingestion.

`read_trace` reads one `rank-N.cttrace`, `write_trace` writes one (the simulator and tests use
it: the same bytes the runtime writes), `ingest` joins a directory's ranks by (comm_id,
call_index) into one row per call (runtime = max over traced ranks of the local duration, the
seed's metric) and stores them in `trace_runs` / `trace_calls`. The record layout is declared
once, in RECORD_FIELDS; the record size is always taken from the header, so a runtime that adds
fields at the end stays readable.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from colltune import catalog
from colltune.errors import ColltuneError
from colltune.store import Store

MAGIC = b"CTTRACE1"
VERSION = 1
HEADER = struct.Struct("<8sIIIIQQQQd")  # magic, version, record_bytes, rank, size, seed, hash, n, overflow, wall
# (field, numpy type, offset) of a version 1 record, 32 bytes.
RECORD_FIELDS: tuple[tuple[str, str, int], ...] = (
    ("comm_id", "<u4", 0), ("call_index", "<u4", 4), ("collective", "u1", 8), ("member", "u1", 9),
    ("outcome", "u1", 10), ("size_bin", "u1", 11), ("msg_bytes", "<u4", 12), ("comm_size", "<u2", 16),
    ("nodes", "u1", 18), ("ppn", "u1", 19), ("start", "<f4", 20), ("duration", "<f4", 24),
    ("reason", "<u4", 28),
)
RECORD_BYTES = 32
# outcome code -> (outcome, mode) columns of trace_calls
OUTCOMES = {0: ("applied", "fixed"), 1: ("not_applicable", None), 2: ("applied", "exploit"),
            3: ("applied", "explore")}
_FILE = re.compile(r"rank-(\d+)\.cttrace")


class TraceError(ColltuneError):
    """A trace file or directory is unusable; the message names the file and what is wrong."""


def record_dtype(record_bytes: int) -> np.dtype:
    need = max(off + np.dtype(t).itemsize for _, t, off in RECORD_FIELDS)
    if record_bytes < need:
        raise ValueError(f"records of {record_bytes} bytes are shorter than the {need} this colltune reads")
    return np.dtype({"names": [f for f, _, _ in RECORD_FIELDS], "formats": [t for _, t, _ in RECORD_FIELDS],
                     "offsets": [o for _, _, o in RECORD_FIELDS], "itemsize": record_bytes})


@dataclass
class TraceFile:
    rank: int
    world_size: int
    seed: int
    table_hash: int
    overflow: int
    wall_s: float
    portfolios: dict[str, list[str]]  # collective -> members in runtime index order
    records: np.ndarray  # of record_dtype


def read_trace(path: str | Path) -> TraceFile:
    p = Path(path)
    data = p.read_bytes()
    if len(data) < HEADER.size:
        raise TraceError(f"{p}: {len(data)} bytes, shorter than the {HEADER.size}-byte header (truncated?)")
    magic, version, rec_bytes, rank, size, seed, thash, n, overflow, wall = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise TraceError(f"{p}: not a colltune trace (magic {magic!r}, expected {MAGIC!r})")
    if version != VERSION:
        raise TraceError(f"{p}: trace version {version}, this colltune reads {VERSION}; ingest it with "
                         "the colltune that ran the application")
    end = data.find(b"\n\n", HEADER.size - 1)
    if end < 0:
        raise TraceError(f"{p}: the members text after the header has no terminating empty line")
    portfolios: dict[str, list[str]] = {}
    for line in data[HEADER.size:end].decode("utf-8", "replace").splitlines():
        words = line.split()
        if words:
            portfolios[words[0]] = words[1:]
    start = end + 2
    try:
        dtype = record_dtype(rec_bytes)
    except ValueError as exc:
        raise TraceError(f"{p}: {exc}") from None
    if len(data) - start != n * rec_bytes:
        raise TraceError(f"{p}: header says {n} records of {rec_bytes} bytes, the file holds "
                         f"{len(data) - start} bytes after the members text (truncated?)")
    records = np.frombuffer(data, dtype=dtype, count=n, offset=start)
    return TraceFile(rank, size, seed, thash, overflow, wall, portfolios, records)


def write_trace(path: str | Path, trace: TraceFile) -> Path:
    """The bytes the runtime writes at MPI_Finalize for these records (version 1 layout)."""
    rec = np.zeros(len(trace.records), dtype=record_dtype(RECORD_BYTES))
    for name, _, _ in RECORD_FIELDS:
        rec[name] = trace.records[name]
    text = "".join(f"{c} {' '.join(m)}\n" for c, m in trace.portfolios.items()) + "\n"
    header = HEADER.pack(MAGIC, VERSION, RECORD_BYTES, trace.rank, trace.world_size, trace.seed,
                         trace.table_hash, len(rec), trace.overflow, trace.wall_s)
    p = Path(path)
    p.write_bytes(header + text.encode() + rec.tobytes())
    return p


def _bits(values: np.ndarray) -> np.ndarray:
    """bitlen of non-negative integers."""
    v = values.astype(np.uint64)
    out = np.zeros(len(v), dtype=np.int64)
    while (nz := v > 0).any():
        out += nz
        v = v >> np.uint64(1)
    return out


def calls_frame(traces: list[TraceFile]) -> tuple[pd.DataFrame, int]:
    """One row per (comm_id, call_index), joined over the traced ranks; and how many calls the
    ranks disagree on (collective or member): a broken rank-consistency, reported, not hidden."""
    names = catalog.load().collective_names()
    parts = []
    for t in traces:
        df = pd.DataFrame({f: t.records[f] for f, _, _ in RECORD_FIELDS})
        df["rank"] = t.rank
        parts.append(df)
    raw = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[f for f, _, _ in RECORD_FIELDS])
    if raw.empty:
        return pd.DataFrame(), 0
    raw = raw.sort_values(["comm_id", "call_index", "rank"], kind="stable")
    g = raw.groupby(["comm_id", "call_index"], sort=True)
    first = g.first()
    disagree = int(((g["collective"].nunique() > 1) | (g["member"].nunique() > 1)).sum())
    out = first.reset_index()[["comm_id", "call_index"]].astype("int64")
    coll_idx = first["collective"].to_numpy(int)
    if (coll_idx >= len(names)).any():
        raise TraceError(f"collective index {int(coll_idx.max())} beyond the {len(names)} collectives of this "
                         "colltune's collectives.toml; ingest with the colltune that ran the application")
    out["collective"] = [names[i] for i in coll_idx]
    portfolios = traces[0].portfolios
    members = []
    for c, m in zip(out["collective"], first["member"].to_numpy(int), strict=True):
        port = portfolios.get(c)
        if port is None or m >= len(port):
            raise TraceError(f"member index {m} of {c} is not in the trace's members text")
        members.append(port[m])
    out["member"] = members
    codes = first["outcome"].to_numpy(int)
    out["outcome"] = [OUTCOMES.get(c, ("unknown", None))[0] for c in codes]
    out["mode"] = [OUTCOMES.get(c, ("unknown", None))[1] for c in codes]
    out["reason"] = first["reason"].to_numpy("int64")
    out["msg_bytes"] = first["msg_bytes"].to_numpy("int64")
    out["comm_size"] = first["comm_size"].to_numpy("int64")
    out["nodes"] = first["nodes"].to_numpy("int64")
    out["ppn"] = first["ppn"].to_numpy("int64")
    # Bins stored uncapped (bitlen rules of docs/select.md); a table with fewer bins caps them.
    out["size_bin"] = _bits(out["msg_bytes"].to_numpy())
    out["nodes_bin"] = _bits(out["nodes"].clip(lower=1).to_numpy()) - 1
    out["ppn_bin"] = _bits(out["ppn"].clip(lower=1).to_numpy()) - 1
    out["runtime_s"] = g["duration"].max().to_numpy("float64")
    out["ranks_traced"] = g["rank"].nunique().to_numpy("int64")
    out["start_s"] = g["start"].min().to_numpy("float64")
    return out, disagree


@dataclass
class IngestResult:
    trace_run_id: str
    ranks: int
    records: int
    calls: int
    overflow: int
    disagreements: int


def ingest(trace_dir: str | Path, db: str | Path | Store, *, command: str = "", batch: int | None = None,
           app: str | None = None, mpi_name: str = "", mpi_version: str = "", abi_family: str = "") -> IngestResult:
    """Load every rank-N.cttrace of `trace_dir` as one application run."""
    d = Path(trace_dir)
    files = sorted((p for p in d.glob("rank-*.cttrace") if _FILE.fullmatch(p.name)),
                   key=lambda p: int(_FILE.fullmatch(p.name).group(1)))  # type: ignore[union-attr]
    if not files:
        raise TraceError(f"{d}: no rank-N.cttrace files; run the application with "
                         f"`colltune run --learn TABLE --trace-dir {d} -- ...` first")
    traces = [read_trace(p) for p in files]
    seeds = {t.seed for t in traces}
    if len(seeds) != 1 or len({t.world_size for t in traces}) != 1:
        raise TraceError(f"{d}: the trace files come from different runs (seeds {sorted(seeds)}); "
                         "give each run its own trace directory")
    calls, disagree = calls_frame(traces)
    world = traces[0].world_size
    whole = calls[calls["comm_size"] == world] if not calls.empty else calls
    run_id = f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    run = {
        "trace_run_id": run_id, "ingested": datetime.now(timezone.utc).replace(tzinfo=None),
        "trace_dir": str(d.resolve()), "command": command, "app": app or _app_name(command), "batch": batch,
        "mpi_name": mpi_name, "mpi_version": mpi_version, "abi_family": abi_family, "world_size": world,
        "nodes": int(whole["nodes"].max()) if not whole.empty else None,
        "ppn": int(whole["ppn"].max()) if not whole.empty else None,
        "seed": traces[0].seed, "table_hash": traces[0].table_hash,
        "records": sum(len(t.records) for t in traces), "overflow": sum(t.overflow for t in traces),
        "wall_s": max(t.wall_s for t in traces), "portfolios": json.dumps(traces[0].portfolios),
    }
    store = db if isinstance(db, Store) else Store(db)
    try:
        store.write_trace_run(run, calls if not calls.empty else calls)
    finally:
        if not isinstance(db, Store):
            store.close()
    return IngestResult(run_id, len(traces), int(run["records"]), len(calls), int(run["overflow"]), disagree)


def _app_name(command: str) -> str:
    """The program of a launch line: the first word after the launcher that is a path or a
    program on PATH (not an option, not a number)."""
    words = command.split()
    for w in words[1:]:
        if not w.startswith("-") and not w.isdigit() and ("/" in w or shutil.which(w)):
            return Path(w).name
    return Path(words[-1]).name if words else ""
