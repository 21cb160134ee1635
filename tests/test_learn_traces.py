"""Trace files (docs/select.md) -> trace_runs / trace_calls, exact rows; broken files refused."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from colltune import catalog
from colltune.cli import main
from colltune.learn.traces import (
    calls_frame,
    HEADER,
    HEADER_V1,
    HEADER_V2,
    V1_FIELDS,
    TraceError,
    TraceFile,
    calls_array,
    ingest,
    read_trace,
    record_dtype,
    write_trace,
)
from colltune.store import Store

NAMES = catalog.load().collective_names()
AR, BC = NAMES.index("allreduce"), NAMES.index("bcast")
PORT = {"allreduce": ["default", "allreduce_as_reduce_bcast", "lib:allreduce:4"],
        "bcast": ["default", "bcast_as_scatter_allgather"]}


def _records(rows: list[tuple]) -> np.ndarray:
    rec = calls_array(len(rows))
    for i, r in enumerate(rows):
        rec[i] = (*r, *[0] * (len(rec.dtype.names) - len(r)))   # redrawn: 0 unless given
    return rec


# comm_id, call_index, collective, member, outcome, reason, msg_bytes, comm_size, nodes, ppn, start, duration
RANK0 = [
    (0, 0, AR, 1, 3, 0, 8, 4, 2, 2, 0.5, 0.25),
    (0, 1, BC, 0, 2, 0, 1024, 4, 2, 2, 1.0, 0.125),
    (5, 0, AR, 2, 1, 7, 1 << 20, 2, 1, 2, 2.0, 0.5),
]
RANK2 = [
    (0, 0, AR, 1, 3, 0, 8, 4, 2, 2, 0.25, 0.375),
    (0, 1, BC, 0, 2, 0, 1024, 4, 2, 2, 1.5, 0.0625),
]
MEMBERS_TEXT = (b"allreduce default allreduce_as_reduce_bcast lib:allreduce:4\n"
                b"bcast default bcast_as_scatter_allgather\n\n")


def _write_dir(d: Path, seed: int = 99, rank2_member: int = 1) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    r2 = [list(r) for r in RANK2]
    r2[0][3] = rank2_member
    write_trace(d / "rank-0.cttrace", TraceFile(0, 4, seed, 0xABCDEF, 0, 3.5, PORT, _records(RANK0)))
    write_trace(d / "rank-2.cttrace", TraceFile(2, 4, seed, 0xABCDEF, 3, 4.0, PORT, _records([tuple(r) for r in r2]),
                                                "records", 2, 600.0, 1.75))
    return d


def test_read_back_what_was_written(tmp_path: Path) -> None:
    d = _write_dir(tmp_path / "t")
    data = (d / "rank-0.cttrace").read_bytes()
    assert data[:12] == b"CTTRACE1" + struct.pack("<I", 5) and HEADER.size == 104
    # header, members text, two communicators of 16 bytes, three records of 20 bytes
    assert len(data) == 104 + len(MEMBERS_TEXT) + 2 * 16 + 3 * 20
    # stop 0 (open), no unrewarded records, record limit (the records), no time bound, stopped at wall_s
    assert data[72:104] == struct.pack("<IIQdd", 0, 0, 3, 0.0, 3.5)
    comms = data[104 + len(MEMBERS_TEXT):104 + len(MEMBERS_TEXT) + 32]
    assert struct.unpack("<8I", comms) == (0, 4, 2, 2, 5, 2, 1, 2)
    last = data[-20:]   # comm 1, call 0, allreduce, member 2, not applicable (1) | reason 7 << 2
    assert last == struct.pack("<HHBBBBIIf", 1, 0, AR, 2, 1 | 7 << 2, 0, 1 << 20, 2 << 20, 0.5)
    t = read_trace(d / "rank-0.cttrace")
    assert (t.rank, t.world_size, t.seed, t.table_hash, t.overflow, t.wall_s) == (0, 4, 99, 0xABCDEF, 0, 3.5)
    assert (t.stop, t.record_limit, t.seconds_limit, t.stop_s) == ("open", 3, 0.0, 3.5)
    assert t.portfolios == PORT
    assert [tuple(r) for r in t.records.tolist()] == [(*r, 0) for r in RANK0]
    t2 = read_trace(d / "rank-2.cttrace")
    assert (t2.overflow, t2.stop, t2.record_limit, t2.seconds_limit, t2.stop_s) == (3, "records", 2, 600.0, 1.75)


def test_redrawn_calls_keep_their_mark_and_reason(tmp_path: Path) -> None:
    """Status bit 7: the call's first draw was not proven for it and it was drawn again; the
    member drawn then may still be refused by the library (reason 10 here)."""
    rows = [(0, 0, AR, 1, 3, 0, 8, 4, 1, 4, 0.5, 0.25, 1), (0, 1, AR, 2, 1, 10, 8, 4, 1, 4, 0.75, 0.25, 1)]
    write_trace(tmp_path / "rank-0.cttrace", TraceFile(0, 4, 1, 2, 0, 1.0, PORT, _records(rows)))
    data = (tmp_path / "rank-0.cttrace").read_bytes()
    assert data[-20 + 6] == 1 | 10 << 2 | 1 << 7 and data[-40 + 6] == 3 | 1 << 7
    rec = read_trace(tmp_path / "rank-0.cttrace").records
    assert rec["redrawn"].tolist() == [1, 1] and rec["reason"].tolist() == [0, 10]
    assert rec["outcome"].tolist() == [3, 1]
    calls, _ = calls_frame([read_trace(tmp_path / "rank-0.cttrace")])
    assert calls["redrawn"].tolist() == [True, True] and calls["mode"].tolist()[0] == "explore"


def test_version_2_files_are_still_read(tmp_path: Path) -> None:
    """Version 2: the version 3 layout without the 32 bytes of bounds after the header."""
    d = _write_dir(tmp_path / "t")
    raw = (d / "rank-0.cttrace").read_bytes()
    fields = list(HEADER.unpack(raw[:104]))[:12]
    fields[1] = 2
    (d / "rank-0.cttrace").write_bytes(HEADER_V2.pack(*fields) + raw[104:])
    t = read_trace(d / "rank-0.cttrace")
    assert (t.rank, t.overflow, t.wall_s, t.stop, t.record_limit, t.stop_s) == (0, 0, 3.5, None, None, None)
    assert [tuple(r) for r in t.records.tolist()] == [(*r, 0) for r in RANK0]


def test_call_indices_and_starts_beyond_the_stored_bits(tmp_path: Path) -> None:
    """Call indices are stored mod 2^16 and restored per communicator; starts keep 2^-20 s over
    40 bits (a start of 3 days is exact to the tick)."""
    rows = [(7, i, AR, 0, 2, 0, 8, 2, 1, 2, 3 * 86400 + i / 1024, 1e-6) for i in range(65534, 65539)]
    rows.insert(2, (9, 0, BC, 1, 3, 0, 4, 3, 1, 3, 0.0, 2.5))
    write_trace(tmp_path / "rank-0.cttrace", TraceFile(0, 3, 1, 0, 0, 1.0, PORT, _records(rows)))
    rec = read_trace(tmp_path / "rank-0.cttrace").records
    assert rec["call_index"].tolist() == [65534, 65535, 0, 65536, 65537, 65538]
    assert rec["comm_id"].tolist() == [7, 7, 9, 7, 7, 7]
    assert rec["start"].tolist() == [r[10] for r in rows]
    assert rec["duration"].tolist() == [np.float32(1e-6).item()] * 2 + [2.5] + [np.float32(1e-6).item()] * 3


def test_version_1_files_are_still_read(tmp_path: Path) -> None:
    v1 = np.zeros(1, dtype=record_dtype(32, V1_FIELDS))
    v1[0] = (5, 70000, AR, 2, 1, 1 << 20, 2, 1, 2, 2.0, 0.5, 7)
    head = HEADER_V1.pack(b"CTTRACE1", 1, 32, 0, 4, 99, 0xABCDEF, 1, 0, 3.5)
    (tmp_path / "rank-0.cttrace").write_bytes(head + MEMBERS_TEXT + v1.tobytes())
    t = read_trace(tmp_path / "rank-0.cttrace")
    assert [tuple(r) for r in t.records.tolist()] == [(5, 70000, AR, 2, 1, 7, 1 << 20, 2, 1, 2, 2.0, 0.5, 0)]


def test_ingest_exact_rows(tmp_path: Path) -> None:
    d = _write_dir(tmp_path / "t")
    res = ingest(d, tmp_path / "db.duckdb", command="mpiexec -n 4 ./miniapp -x", batch=3,
                 mpi_name="openmpi", mpi_version="Open MPI v5.0.11", abi_family="openmpi")
    assert (res.ranks, res.records, res.calls, res.overflow, res.disagreements) == (2, 5, 3, 3, 0)
    with Store(tmp_path / "db.duckdb", read_only=True) as s:
        runs = s.trace_runs()
        calls = s.trace_calls()
    run = runs.iloc[0].to_dict()
    assert {k: run[k] for k in ("trace_run_id", "command", "app", "batch", "mpi_name", "mpi_version",
                                "abi_family", "world_size", "nodes", "ppn", "seed", "table_hash",
                                "records", "overflow", "wall_s")} == {
        "trace_run_id": res.trace_run_id, "command": "mpiexec -n 4 ./miniapp -x", "app": "miniapp", "batch": 3,
        "mpi_name": "openmpi", "mpi_version": "Open MPI v5.0.11", "abi_family": "openmpi", "world_size": 4,
        "nodes": 2, "ppn": 2, "seed": 99, "table_hash": 0xABCDEF, "records": 5, "overflow": 3, "wall_s": 4.0}
    assert run["trace_dir"] == str(d.resolve())
    calls = calls.astype(object).where(calls.notna(), None)
    rows = calls.drop(columns=["trace_run_id"]).to_dict("records")
    assert rows == [
        {"comm_id": 0, "call_index": 0, "collective": "allreduce", "member": "allreduce_as_reduce_bcast",
         "outcome": "applied", "mode": "explore", "reason": 0, "msg_bytes": 8, "comm_size": 4, "nodes": 2,
         "ppn": 2, "size_bin": 4, "nodes_bin": 1, "ppn_bin": 1, "runtime_s": 0.375, "ranks_traced": 2,
         "start_s": 0.25, "redrawn": False},
        {"comm_id": 0, "call_index": 1, "collective": "bcast", "member": "default", "outcome": "applied",
         "mode": "exploit", "reason": 0, "msg_bytes": 1024, "comm_size": 4, "nodes": 2, "ppn": 2,
         "size_bin": 11, "nodes_bin": 1, "ppn_bin": 1, "runtime_s": 0.125, "ranks_traced": 2, "start_s": 1.0,
         "redrawn": False},
        {"comm_id": 5, "call_index": 0, "collective": "allreduce", "member": "lib:allreduce:4",
         "outcome": "not_applicable", "mode": None, "reason": 7, "msg_bytes": 1 << 20, "comm_size": 2,
         "nodes": 1, "ppn": 2, "size_bin": 21, "nodes_bin": 0, "ppn_bin": 1, "runtime_s": 0.5,
         "ranks_traced": 1, "start_s": 2.0, "redrawn": False},
    ]


def test_rank_disagreement_is_counted(tmp_path: Path) -> None:
    d = _write_dir(tmp_path / "t", rank2_member=0)
    assert ingest(d, tmp_path / "db.duckdb").disagreements == 1


def test_longer_records_of_a_newer_runtime_are_read(tmp_path: Path) -> None:
    """record_bytes comes from the header: fields appended by the runtime are skipped."""
    d = _write_dir(tmp_path / "t")
    raw = (d / "rank-0.cttrace").read_bytes()
    head, rest = raw[:104], raw[104:]
    cut = rest.index(b"\n\n") + 2 + 2 * 16
    text, recs = rest[:cut], rest[cut:]
    wide = b"".join(recs[i:i + 20] + b"\xee" * 8 for i in range(0, len(recs), 20))
    fields = list(HEADER.unpack(head))
    fields[2] = 28
    (d / "rank-0.cttrace").write_bytes(HEADER.pack(*fields) + text + wide)
    assert read_trace(d / "rank-0.cttrace").records["duration"].tolist() == [0.25, 0.125, 0.5]


@pytest.mark.parametrize("mutate,message", [
    (lambda b: b"CTTRACE9" + b[8:], "not a colltune trace"),
    (lambda b: b[:8] + struct.pack("<I", 6) + b[12:], "trace version 6, this colltune reads 1 to 5"),
    (lambda b: b[:-5], "header says 3 records of 20 bytes"),
    (lambda b: b[:40], "shorter than the 104-byte header"),
    (lambda b: b[:72] + struct.pack("<I", 3) + b[76:], "stop code 3 in the header"),
    (lambda b: b[:12] + struct.pack("<I", 16) + b[16:], "records of 16 bytes are shorter than the 20"),
    (lambda b: b[:64] + struct.pack("<I", 200) + b[68:], "communicator table of 200 entries"),
    (lambda b: b[:-20] + struct.pack("<H", 2) + b[-18:], "a record names communicator 2 of a table of 2"),
    (lambda b: b[:104] + b"allreduce default", "no terminating empty line"),
])
def test_broken_files_are_refused(tmp_path: Path, mutate, message: str) -> None:
    d = _write_dir(tmp_path / "t")
    p = d / "rank-0.cttrace"
    p.write_bytes(mutate(p.read_bytes()))
    with pytest.raises(TraceError, match=message):
        read_trace(p)


def test_directories_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match="no rank-N.cttrace files"):
        ingest(tmp_path / "empty", tmp_path / "db.duckdb")
    d = _write_dir(tmp_path / "mixed")
    write_trace(d / "rank-3.cttrace", TraceFile(3, 4, 100, 0, 0, 1.0, PORT, _records(RANK2)))
    with pytest.raises(TraceError, match="different runs"):
        ingest(d, tmp_path / "db.duckdb")


def test_cli_ingest(tmp_path: Path) -> None:
    d = _write_dir(tmp_path / "t")
    out = CliRunner().invoke(main, ["traces", "ingest", str(d), "--db", str(tmp_path / "x.duckdb"),
                                    "--batch", "1", "--command", "mpiexec -n 4 ./a"])
    assert out.exit_code == 0, out.output
    assert "2 rank files, 5 records, 3 calls, 3 calls not recorded (traces closed at their record or time bound" in out.output
    with Store(tmp_path / "x.duckdb", read_only=True) as s:
        assert s.trace_runs()["batch"].tolist() == [1]
        assert len(s.trace_calls()) == 3


def test_nonblocking_records_and_their_rewards(tmp_path: Path) -> None:
    """Version 4: a record's collective index past the collectives names the collective's
    nonblocking portfolio (`<coll>#nonblocking`), version 5: past twice their number its
    persistent one (`<coll>#persistent`); a NaN duration is a started call (persistent request)
    without a reward, counted in the header, and a call without one on any traced rank has none
    (NaN runtime: left out of training)."""
    n = len(catalog.load().collective_names())
    port = {**PORT, "allreduce#nonblocking": ["default", "lib:allreduce:ring#nonblocking"],
            "bcast#persistent": ["default", "lib:bcast:binomial#persistent"]}
    nan = float("nan")
    rank0 = [(0, 0, n + AR, 1, 3, 0, 8, 4, 1, 4, 0.5, 0.25, 0), (0, 1, n + AR, 0, 3, 0, 8, 4, 1, 4, 0.75, nan, 0),
             (0, 2, 2 * n + BC, 1, 3, 0, 8, 4, 1, 4, 0.875, 0.0625, 0)]
    rank1 = [(0, 0, n + AR, 1, 3, 0, 8, 4, 1, 4, 0.5, 0.125, 0), (0, 1, n + AR, 0, 3, 0, 8, 4, 1, 4, 0.75, 0.5, 0),
             (0, 2, 2 * n + BC, 1, 3, 0, 8, 4, 1, 4, 0.875, nan, 0)]
    write_trace(tmp_path / "rank-0.cttrace", TraceFile(0, 4, 1, 2, 0, 1.0, port, _records(rank0)))
    write_trace(tmp_path / "rank-1.cttrace", TraceFile(1, 4, 1, 2, 0, 1.0, port, _records(rank1)))
    data = (tmp_path / "rank-0.cttrace").read_bytes()
    assert struct.unpack_from("<I", data, 76)[0] == 1
    t = read_trace(tmp_path / "rank-0.cttrace")
    assert t.unrewarded == 1 and t.portfolios["allreduce#nonblocking"] == port["allreduce#nonblocking"]
    assert struct.unpack_from("<I", data, 8)[0] == 5 and t.portfolios["bcast#persistent"] == port["bcast#persistent"]
    calls, _ = calls_frame([t, read_trace(tmp_path / "rank-1.cttrace")])
    assert calls["collective"].tolist() == ["allreduce#nonblocking"] * 2 + ["bcast#persistent"]
    assert calls["member"].tolist() == ["lib:allreduce:ring#nonblocking", "default", "lib:bcast:binomial#persistent"]
    assert calls["runtime_s"].iloc[0] == 0.25 and np.isnan(calls["runtime_s"].iloc[1:]).all()
    with Store(tmp_path / "t.duckdb") as store:
        assert ingest(tmp_path, store).unrewarded == 2
        points = store.trace_points(None, explored_only=True)
    assert points[["collective", "member", "time_s"]].values.tolist() == [
        ["allreduce#nonblocking", "lib:allreduce:ring#nonblocking", 0.25]]
