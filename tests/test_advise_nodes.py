"""advise on several nodes (src/colltune/advise/nodes.py): layout, both transports' eager limits,
collective time by where communicators lie, on synthetic profiling runs (no MPI).
tests/test_cluster.py runs `colltune advise -- srun -N 2 -n 4` for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from colltune.advise import nodes
from colltune.advise.profile_run import Point, ProfileRun, RankProfile

OMPI = "Open MPI v5.0.11, package: Open MPI"


def rank(r: int, host: str, points: list[Point], cvars: dict[str, str] | None = None) -> RankProfile:
    prof = RankProfile(r, 4, 10_000_000_000, host, OMPI, 2, None, 0, (r % 2,))
    prof.points = points
    prof.cvars = cvars or {}
    return prof


def coll(name: str, nprocs: int, seconds: float) -> Point:
    return Point("coll", name, 0x1000, nprocs, 3, 10, int(seconds * 1e9), 0, 80, 0, 0, 0, 0, 8, 8)


def send(size: int, calls: int, seconds: float) -> Point:
    return Point("p2p", "Send", 0x2000, 0, size.bit_length() - 1, calls, int(seconds * 1e9), 0, size * calls,
                 0, 0, 0, 0, size, size)


LIMITS = {"btl_sm_eager_limit": "4096", "btl_tcp_eager_limit": "65536"}


def two_by_two(hosts: tuple[str, ...] = ("a", "a", "b", "b")) -> ProfileRun:
    ranks = []
    for r, host in enumerate(hosts):
        points = [coll("allreduce", 4, 1.0), coll("bcast", 2, 0.5), coll("scan", 1, 0.25)]
        if r == 0:
            points.append(send(16384, 200, 0.4))
        ranks.append(rank(r, host, points, LIMITS))
    return ProfileRun(Path("/nonexistent"), ranks)


def test_two_nodes_facts_are_exact() -> None:
    (f,) = nodes.findings(two_by_two(), "openmpi")
    assert f.strategy == "nodes" and f.changes == {} and f.saving_s is None
    assert f.title == "2 nodes x 2: collectives 10.0% of the run across nodes, 2.5% on one node, 5.0% either"
    lay = f.data["layout"]
    assert lay["hosts"] == {"a": [0, 1], "b": [2, 3]} and lay["mapping"] == "block" and lay["uniform"]
    assert f.data["eager"] == {"on_node": {"variable": "btl_sm_eager_limit", "bytes": 4096},
                               "across": {"variable": "btl_tcp_eager_limit", "bytes": 65536}}
    assert f.data["time"]["collective_s"] == pytest.approx({"across": 1.0, "on_node": 0.25, "either": 0.5})
    assert f.data["time"]["p2p_s_per_host"] == pytest.approx({"a": 0.2, "b": 0.0})  # 0.4 s on rank 0, 2 ranks on a
    assert f.evidence[0] == "ranks per host (block): a: ranks 0,1; b: ranks 2,3"
    assert f.evidence[1] == ("eager threshold on a node: btl_sm_eager_limit = 4096 bytes; "
                             "across nodes: btl_tcp_eager_limit = 65536 bytes")
    assert f.evidence[2] == "MPI_Send at 0x2000: median 16 KiB goes by rendezvous on a node, eagerly across nodes"


def test_round_robin_uneven_and_one_host() -> None:
    (f,) = nodes.findings(two_by_two(("a", "b", "a", "b")), "openmpi")
    assert f.data["layout"]["mapping"] == "round-robin"
    (g,) = nodes.findings(two_by_two(("a", "a", "a", "b")), "openmpi")
    assert g.data["layout"]["text"] == "2 nodes, uneven: 3+1 ranks" and g.data["layout"]["mapping"] == "block"
    # 3 ranks on a: a communicator of 4 spans nodes, one of 2 may be either
    assert g.data["time"]["collective_s"] == pytest.approx({"across": 1.0, "on_node": 0.25, "either": 0.5})
    assert nodes.findings(two_by_two(("a", "a", "a", "a")), "openmpi") == []


def test_missing_cvars_are_said_not_guessed() -> None:
    run = two_by_two()
    for r in run.ranks:
        r.cvars = {}
    (f,) = nodes.findings(run, "openmpi")
    assert f.data["eager"] == {"on_node": None, "across": None} and f.data["protocol_splits"] == []
    assert "on a node: not reported by MPI_T; across nodes: not reported by MPI_T" in f.evidence[1]


def test_mpich_variables_without_a_byte_value_are_shown_as_they_are() -> None:
    """MPICH 5.0.2 (ch4: ucx, ofi) as measured on the cluster: the OFI threshold is -1 (unset) and
    the shared-memory eager variable names a module, not a size."""
    run = two_by_two(("a", "b", "a", "b"))
    for r in run.ranks:
        r.library = "MPICH Version: 5.0.2"
        r.cvars = {"MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD": "-1", "MPIR_CVAR_CH4_SHM_POSIX_EAGER": "-",
                   "MPIR_CVAR_CH4_OFI_RNDV_PROTOCOL": "0", "MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ": "-1",
                   "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE": "131072"}   # ch3's, listed by a ch4 build too
    (f,) = nodes.findings(run, "mpich")
    assert f.data["eager"] == {"on_node": None, "across": None}
    assert f.data["eager_variables"] == {"on_node": {"MPIR_CVAR_CH4_SHM_POSIX_EAGER": "-"},
                                         "across": {"MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD": "-1"}}
    assert f.evidence[1] == (
        "eager threshold on a node: MPIR_CVAR_CH4_SHM_POSIX_EAGER = - (no byte value: the transport's own "
        "default applies, which MPI_T does not report); across nodes: MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD = -1 "
        "(no byte value: the transport's own default applies, which MPI_T does not report)")
