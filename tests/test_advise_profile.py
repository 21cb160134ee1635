"""libcolltune's profiling mode (COLLTUNE_PROFILE_RUN): exact counts, call sites, sampling,
environment facts, composition with force; and the p2p wrappers' generator is current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from advise_support import compile_advise_programs, profiled

from colltune.advise import profile_run, symbols

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def programs(openmpi, tmp_path_factory):
    return compile_advise_programs(openmpi, tmp_path_factory.mktemp("advise"))


def test_p2p_wrappers_are_current():
    proc = subprocess.run([sys.executable, str(REPO / "native" / "gen" / "gen_p2p.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def _rows(rank: profile_run.RankProfile) -> dict[tuple[str, str, int, int], tuple[int, int, int]]:
    sites = symbols.resolve({p.site for p in rank.points}, rank.maps)
    return {(p.name, sites[p.site].label, p.nprocs, p.bin): (p.calls, p.bytes, p.samples)
            for p in rank.points}


def test_counts_sites_and_samples(openmpi, openmpi_build, programs, tmp_path):
    profiled(openmpi, openmpi_build, 2, [programs["advise_sites"]], tmp_path / "p")
    run = profile_run.read(tmp_path / "p")
    assert [r.rank for r in run.ranks] == [0, 1] and run.nprocs == 2
    # One counter per communicator, sampled when it is 15 mod 16: Bcast calls are numbers 0-19
    # on MPI_COMM_WORLD (15 sampled), Allreduce 20-49 (31 and 47 sampled).
    coll = {("bcast", "site_bcast (advise_sites.c:11)", 2, 10): (20, 20 * 1024, 1),
            ("allreduce", "site_allreduce (advise_sites.c:18)", 2, 3): (30, 30 * 8, 2)}
    assert _rows(run.ranks[0]) == {**coll, ("Send", "site_p2p (advise_sites.c:25)", 0, 17): (5, 10**6, 0)}
    assert _rows(run.ranks[1]) == {**coll, ("Recv", "site_p2p (advise_sites.c:27)", 0, 17): (5, 10**6, 0)}
    for r in run.ranks:
        assert r.sample_every == 16 and r.lost_coll == 0 and r.lost_p2p == 0
        assert r.library.startswith("Open MPI v") and r.cores_online >= 1 and r.affinity
        assert int(r.cvars["btl_sm_eager_limit"]) > 0 and r.cvars["coll_tuned_bcast_algorithm"] == "0"
        assert 0 < sum(p.total_ns for p in r.points) < r.wall_ns
        for p in r.points:
            assert p.max_ns <= p.total_ns and (p.samples == 0 or p.wait_min_ns <= p.wait_ns)


def test_composes_with_force_and_counting(openmpi, openmpi_build, programs, tmp_path):
    run = profiled(openmpi, openmpi_build, 2, [programs["advise_sites"]], tmp_path / "p",
                   {"COLLTUNE_PROFILE_RUN_SAMPLE": "0"},
                   force="bcast=bcast_as_scatter_allgather", verbose=True)
    assert run.counts[("bcast", "force", "bcast_as_scatter_allgather", "applied")] == 20, run.describe()
    # The sampling barriers are PMPI calls: the counting table sees only the application's calls.
    assert run.counts[("allreduce", "none", "library", "library")] == 30, run.describe()
    prof = profile_run.read(tmp_path / "p")
    assert {(p.name, p.calls, p.samples) for p in prof.ranks[0].points if p.kind == "coll"} == {
        ("bcast", 20, 0), ("allreduce", 30, 0)}


def test_off_writes_nothing(openmpi, openmpi_build, programs, tmp_path):
    profiled(openmpi, openmpi_build, 2, [programs["advise_sites"]], tmp_path / "p",
             {"COLLTUNE_PROFILE_RUN": ""})
    assert not (tmp_path / "p").exists()


def test_missing_ranks_are_refused(openmpi, openmpi_build, programs, tmp_path):
    profiled(openmpi, openmpi_build, 2, [programs["advise_sites"]], tmp_path / "p")
    (tmp_path / "p" / "rank-1").unlink()
    with pytest.raises(profile_run.ProfileRunError, match="1 rank files for 2 ranks"):
        profile_run.read(tmp_path / "p")
