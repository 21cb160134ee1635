"""Trace files of the learning mode (docs/select.md, "Trace files") and their ingestion.

`read_trace` reads one `rank-N.cttrace`, `write_trace` writes one (the simulator and tests use
it: the same bytes the runtime writes), `ingest` joins a directory's ranks by (comm_id,
call_index) into one row per call (runtime = max over traced ranks of the local duration, the
seed's metric) and stores them in `trace_runs` / `trace_calls`. The record layout is declared
once, in native/spec/formats.toml (colltune.formats, RECORD_FIELDS here); the record size is always taken from the header, so a runtime that adds
fields at the end stays readable. Version 5 files are what the runtime writes: version 3's
layout (20-byte records, the communicator facts once per communicator, the header saying which
bound stopped the trace), with records of nonblocking calls (MPI_I<coll>, collective index +
the number of collectives: `<coll>#nonblocking`) whose duration is their reward or NaN where they
have none (completed together with other requests: docs/select.md, "Nonblocking calls"), counted
in the header's `unrewarded`, and records of persistent requests (MPI_<Coll>_init, collective
index + twice the number: `<coll>#persistent`) whose duration is the mean reward of their starts
completed alone, NaN if none was. Versions 4 (no persistent records), 3 (no nonblocking
records), 2 (no bounds) and 1 (32-byte records) are still read.
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

from colltune import catalog, formats
from colltune.errors import ColltuneError
from colltune.store.database import Store

MAGIC = formats.TRACE_MAGIC  # the format family; the version field says which layout follows
VERSION = formats.TRACE_VERSION
HEADER_V1 = struct.Struct("<8sIIIIQQQQd")  # magic, version, record_bytes, rank, size, seed, hash, n, overflow, wall
HEADER_V2 = struct.Struct("<8sIIIIQQQQdII")  # version 2: ... wall, n_comms, comm_bytes
# the current version: native/spec/formats.toml, where the C runtime's layout comes from too
HEADER = struct.Struct(formats.TRACE_HEADER)
# the header's stop code: why the runtime stopped recording before MPI_Finalize
STOPS = dict(enumerate(formats.TRACE_STOPS))
COMM = struct.Struct(formats.TRACE_COMM)  # comm_id, size, nodes, ppn: once per communicator in the file
COMM_BYTES = COMM.size
# (field, numpy type, offset) of a version 2 or 3 record, 20 bytes (docs/select.md "Trace files").
RECORD_FIELDS = formats.TRACE_RECORD_FIELDS
RECORD_BYTES = formats.TRACE_RECORD_BYTES
TICKS_PER_S = float(formats.TRACE_TICKS_PER_SECOND)  # start resolution: 2^-20 s (0.95 us), 40 bits: 12.7 days
# version 1 (32-byte records, every fact in every record): still read
V1_FIELDS: tuple[tuple[str, str, int], ...] = (
    ("comm_id", "<u4", 0), ("call_index", "<u4", 4), ("collective", "u1", 8), ("member", "u1", 9),
    ("outcome", "u1", 10), ("msg_bytes", "<u4", 12), ("comm_size", "<u2", 16), ("nodes", "u1", 18),
    ("ppn", "u1", 19), ("start", "<f4", 20), ("duration", "<f4", 24), ("reason", "<u4", 28),
)
# One traced call as the readers return it and write_trace takes it, whatever the file version.
CALL_DTYPE = np.dtype([
    ("comm_id", "<u4"), ("call_index", "<i8"), ("collective", "u1"), ("member", "u1"), ("outcome", "u1"),
    ("reason", "u1"), ("msg_bytes", "<i8"), ("comm_size", "<u4"), ("nodes", "<u4"), ("ppn", "<u4"),
    ("start", "<f8"), ("duration", "<f8"), ("redrawn", "u1"),
])
CALL_FIELDS = CALL_DTYPE.names
# outcome code -> (outcome, mode) columns of trace_calls
_OUTCOME_COLUMNS = {"fixed": ("applied", "fixed"), "not_applicable": ("not_applicable", None),
                    "exploit": ("applied", "exploit"), "explore": ("applied", "explore")}
OUTCOMES = {code: _OUTCOME_COLUMNS[name] for code, name in enumerate(formats.TRACE_OUTCOMES)}
_FILE = re.compile(r"rank-(\d+)\.cttrace")


class TraceError(ColltuneError):
    """A trace file or directory is unusable; the message names the file and what is wrong."""


def record_dtype(record_bytes: int, fields: tuple[tuple[str, str, int], ...] = RECORD_FIELDS) -> np.dtype:
    need = max(off + np.dtype(t).itemsize for _, t, off in fields)
    if record_bytes < need:
        raise ValueError(f"records of {record_bytes} bytes are shorter than the {need} this colltune reads")
    return np.dtype({"names": [f for f, _, _ in fields], "formats": [t for _, t, _ in fields],
                     "offsets": [o for _, _, o in fields], "itemsize": record_bytes})


def calls_array(n: int) -> np.ndarray:
    """Zeroed traced calls, to fill and pass to write_trace."""
    return np.zeros(n, dtype=CALL_DTYPE)


@dataclass
class TraceFile:
    rank: int
    world_size: int
    seed: int
    table_hash: int
    overflow: int
    wall_s: float
    portfolios: dict[str, list[str]]  # collective -> members in runtime index order
    records: np.ndarray  # of CALL_DTYPE
    # Version 3: which bound stopped the trace ("open": none, it ran to MPI_Finalize; "records":
    # the buffer was full; "seconds": the time bound), the bounds (seconds 0: none) and when it
    # stopped (s after MPI_Init; wall_s if open). None in files of versions 1 and 2.
    stop: str | None = "open"
    record_limit: int | None = None
    seconds_limit: float | None = None
    stop_s: float | None = None
    # Version 4: records of nonblocking calls without a reward (NaN duration); 0 before.
    unrewarded: int = 0


def _members_text(p: Path, data: bytes, at: int) -> tuple[dict[str, list[str]], int]:
    end = data.find(b"\n\n", at - 1)
    if end < 0:
        raise TraceError(f"{p}: the members text after the header has no terminating empty line")
    portfolios: dict[str, list[str]] = {}
    for line in data[at:end].decode("utf-8", "replace").splitlines():
        words = line.split()
        if words:
            portfolios[words[0]] = words[1:]
    return portfolios, end + 2


def _records(p: Path, data: bytes, start: int, n: int, rec_bytes: int,
             fields: tuple[tuple[str, str, int], ...]) -> np.ndarray:
    try:
        dtype = record_dtype(rec_bytes, fields)
    except ValueError as exc:
        raise TraceError(f"{p}: {exc}") from None
    if len(data) - start != n * rec_bytes:
        raise TraceError(f"{p}: header says {n} records of {rec_bytes} bytes, the file holds "
                         f"{len(data) - start} bytes for them (truncated?)")
    return np.frombuffer(data, dtype=dtype, count=n, offset=start)


def _unwrap_calls(comm: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Full call indices from their low 16 bits: a communicator's records are in call order,
    each less than 2^16 calls after the previous one (in this runtime exactly 1)."""
    full = np.zeros(len(low), dtype=np.int64)
    order = np.argsort(comm, kind="stable")
    bounds = np.flatnonzero(np.diff(comm[order].astype(np.int64))) + 1
    for idx in np.split(order, bounds):
        if len(idx):
            lo = low[idx].astype(np.int64)
            full[idx] = lo[0] + np.concatenate([[0], np.cumsum(np.diff(lo) % 65536)])
    return full


def _comm_table(p: Path, data: bytes, at: int, n_comms: int, comm_bytes: int) -> np.ndarray:
    if comm_bytes < COMM.size or len(data) < at + n_comms * comm_bytes:
        raise TraceError(f"{p}: communicator table of {n_comms} entries of {comm_bytes} bytes does not fit "
                         "the file (truncated?)")
    return np.array([COMM.unpack_from(data, at + i * comm_bytes) for i in range(n_comms)],
                    dtype=np.int64).reshape(n_comms, 4)


def _decode_v2(p: Path, comms: np.ndarray, rec: np.ndarray) -> np.ndarray:
    n_comms = len(comms)
    slot = rec["comm"].astype(np.int64)
    if len(rec) and int(slot.max()) >= n_comms:
        raise TraceError(f"{p}: a record names communicator {int(slot.max())} of a table of {n_comms}")
    out = calls_array(len(rec))
    out["comm_id"], out["comm_size"], out["nodes"], out["ppn"] = (comms[slot, i] for i in range(4))
    out["call_index"] = _unwrap_calls(slot, rec["call_lo"])
    out["collective"], out["member"], out["msg_bytes"] = rec["collective"], rec["member"], rec["msg_bytes"]
    # status: outcome in bits 0-1, reason in bits 2-6, bit 7 "drawn again" (docs/select.md)
    out["outcome"], out["reason"], out["redrawn"] = rec["status"] & 3, (rec["status"] >> 2) & 31, rec["status"] >> 7
    out["start"] = (rec["start_lo"].astype(np.float64) + rec["start_hi"].astype(np.float64) * 2.0**32) / TICKS_PER_S
    out["duration"] = rec["duration"]
    return out


def _decode_v1(rec: np.ndarray) -> np.ndarray:
    out = calls_array(len(rec))
    for f in ("comm_id", "call_index", "collective", "member", "outcome", "msg_bytes", "comm_size", "nodes",
              "ppn", "start", "duration"):
        out[f] = rec[f]
    out["reason"] = np.minimum(rec["reason"], 255)
    return out


def read_trace(path: str | Path) -> TraceFile:
    """One rank's trace file, version 2 or 1, as traced calls (CALL_DTYPE)."""
    p = Path(path)
    data = p.read_bytes()
    if len(data) < 12:
        raise TraceError(f"{p}: {len(data)} bytes, shorter than the trace header (truncated?)")
    magic, version = data[:8], struct.unpack_from("<I", data, 8)[0]
    if magic != MAGIC:
        raise TraceError(f"{p}: not a colltune trace (magic {magic!r}, expected {MAGIC!r})")
    if version not in (1, 2, 3, 4, 5):
        raise TraceError(f"{p}: trace version {version}, this colltune reads 1 to 5; ingest it with "
                         "the colltune that ran the application")
    head = {1: HEADER_V1, 2: HEADER_V2, 3: HEADER, 4: HEADER, 5: HEADER}[version]
    if len(data) < head.size:
        raise TraceError(f"{p}: {len(data)} bytes, shorter than the {head.size}-byte header (truncated?)")
    fields = head.unpack_from(data)
    _, _, rec_bytes, rank, size, seed, thash, n, overflow, wall = fields[:10]
    portfolios, at = _members_text(p, data, head.size)
    if version == 1:
        records = _decode_v1(_records(p, data, at, n, rec_bytes, V1_FIELDS))
    else:
        n_comms, comm_bytes = fields[10:12]
        comms = _comm_table(p, data, at, n_comms, comm_bytes)
        records = _decode_v2(p, comms, _records(p, data, at + n_comms * comm_bytes, n, rec_bytes, RECORD_FIELDS))
    if version < 3:
        return TraceFile(rank, size, seed, thash, overflow, wall, portfolios, records, stop=None)
    stop, unrewarded, limit, seconds, stop_s = fields[12:17]
    if stop not in STOPS:
        raise TraceError(f"{p}: stop code {stop} in the header, expected one of {sorted(STOPS)} (corrupt?)")
    return TraceFile(rank, size, seed, thash, overflow, wall, portfolios, records, STOPS[stop], limit, seconds,
                     stop_s, unrewarded if version >= 4 else 0)


def encode_records(calls: np.ndarray) -> tuple[bytes, np.ndarray]:
    """The communicator table and the version 2 records of traced calls (CALL_DTYPE), as the
    runtime writes them: communicators numbered in order of first appearance."""
    keys = list(zip(calls["comm_id"].tolist(), calls["comm_size"].tolist(), calls["nodes"].tolist(),
                    calls["ppn"].tolist(), strict=True))
    slots: dict[tuple[int, int, int, int], int] = {}
    slot = np.array([slots.setdefault(k, len(slots)) for k in keys], dtype=np.int64)
    rec = np.zeros(len(calls), dtype=record_dtype(RECORD_BYTES))
    rec["comm"], rec["call_lo"] = slot, calls["call_index"] & 0xFFFF
    rec["collective"], rec["member"], rec["msg_bytes"] = calls["collective"], calls["member"], \
        np.minimum(calls["msg_bytes"], 2**32 - 1)
    rec["status"] = (calls["outcome"] & 3) | ((calls["reason"].astype(np.int64) & 31) << 2) \
        | (calls["redrawn"].astype(np.int64) & 1) << 7
    ticks = np.minimum(np.round(calls["start"] * TICKS_PER_S), 2.0**40 - 1).astype(np.int64)
    rec["start_lo"], rec["start_hi"] = ticks & 0xFFFFFFFF, ticks >> 32
    rec["duration"] = calls["duration"]
    return b"".join(COMM.pack(*k) for k in slots), rec


def write_trace(path: str | Path, trace: TraceFile) -> Path:
    """The bytes the runtime writes at MPI_Finalize for these calls (version 5 layout; a trace
    without stated bounds is written as one that ran open to the end, with no time bound)."""
    comms, rec = encode_records(trace.records)
    text = "".join(f"{c} {' '.join(m)}\n" for c, m in trace.portfolios.items()) + "\n"
    stop = {v: k for k, v in STOPS.items()}[trace.stop or "open"]
    header = HEADER.pack(MAGIC, VERSION, RECORD_BYTES, trace.rank, trace.world_size, trace.seed,
                         trace.table_hash, len(rec), trace.overflow, trace.wall_s, len(comms) // COMM.size,
                         COMM.size, stop, int(np.isnan(trace.records["duration"]).sum()), trace.record_limit if trace.record_limit is not None else len(rec),
                         trace.seconds_limit or 0.0, trace.stop_s if trace.stop_s is not None else trace.wall_s)
    p = Path(path)
    p.write_bytes(header + text.encode() + comms + rec.tobytes())
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
        df = pd.DataFrame({f: t.records[f] for f in CALL_FIELDS})
        df["rank"] = t.rank
        parts.append(df)
    raw = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(CALL_FIELDS))
    if raw.empty:
        return pd.DataFrame(), 0
    raw = raw.sort_values(["comm_id", "call_index", "rank"], kind="stable")
    g = raw.groupby(["comm_id", "call_index"], sort=True)
    first = g.first()
    disagree = int(((g["collective"].nunique() > 1) | (g["member"].nunique() > 1)).sum())
    out = first.reset_index()[["comm_id", "call_index"]].astype("int64")
    coll_idx = first["collective"].to_numpy(int)
    if (coll_idx >= len(catalog.FORMS) * len(names)).any():
        raise TraceError(f"collective index {int(coll_idx.max())} beyond the {len(names)} collectives of this "
                         "colltune's collectives.toml; ingest with the colltune that ran the application")
    out["collective"] = [portfolio_name(names, i) for i in coll_idx]
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
    # a call without a reward on some traced rank (a nonblocking one completed with other
    # requests there) has none: NaN, which training leaves out
    unrewarded = raw["duration"].isna().groupby([raw["comm_id"], raw["call_index"]], sort=True).any()
    out["runtime_s"] = g["duration"].max().where(~unrewarded).to_numpy("float64")
    out["ranks_traced"] = g["rank"].nunique().to_numpy("int64")
    out["start_s"] = g["start"].min().to_numpy("float64")
    out["redrawn"] = first["redrawn"].to_numpy(bool)
    return out, disagree


def portfolio_name(names: list[str], index: int) -> str:
    """The portfolio a record's collective index names: a collective of collectives.toml, (index
    + the number of collectives, version 4) its nonblocking calls, `<coll>#nonblocking`, or (+ twice
    the number, version 5) its persistent requests, `<coll>#persistent`."""
    form, coll = divmod(index, len(names))
    return names[coll] if form == 0 else f"{names[coll]}#{catalog.FORMS[form]}"


@dataclass
class IngestResult:
    trace_run_id: str
    ranks: int
    records: int
    calls: int
    overflow: int
    disagreements: int
    # started calls (nonblocking, persistent requests) without a reward (completed with other
    # requests on some traced rank): explored, left out of training (docs/select.md,
    # "Nonblocking calls", "Persistent calls")
    unrewarded: int = 0


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
    started = calls["collective"].str.contains("#", regex=False) if not calls.empty else None
    unrewarded = int(started.mul(calls["runtime_s"].isna()).sum()) if started is not None else 0
    return IngestResult(run_id, len(traces), int(run["records"]), len(calls), int(run["overflow"]), disagree,
                        unrewarded)


def _app_name(command: str) -> str:
    """The program of a launch line: the first word after the launcher that is a path or a
    program on PATH (not an option, not a number)."""
    words = command.split()
    for w in words[1:]:
        if not w.startswith("-") and not w.isdigit() and ("/" in w or shutil.which(w)):
            return Path(w).name
    return Path(words[-1]).name if words else ""
