"""libcolltune's profiling mode (COLLTUNE_PROFILE_RUN): exact counts, call sites, sampling,
environment facts, composition with force; and the p2p wrappers' generator is current."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from advise_support import compile_advise_programs, profiled

from colltune.advise import callsites, profile_run, where

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def programs(openmpi, tmp_path_factory):
    return compile_advise_programs(openmpi, tmp_path_factory.mktemp("advise"))


def test_p2p_wrappers_are_current():
    proc = subprocess.run([sys.executable, str(REPO / "native" / "gen" / "gen_p2p.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


M64 = (1 << 64) - 1


def gap(period: int, k: int) -> int:
    """native/runtime/profcomm.c's ct_profcomm_gap: calls from sample k to the next."""
    if period <= 1:
        return 1
    z = (k + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return period // 2 + (z ^ (z >> 31)) % (period + 1)


def schedule(period: int, calls: int) -> list[int]:
    """The sampled call numbers on a communicator at a fixed period."""
    out, n, k = [], 1, 0
    while n < calls:
        out.append(n)
        n, k = n + gap(period, k), k + 1
    return out


def test_schedule_does_not_lock_onto_a_cycle():
    # ExaML alternates Reduce and Bcast: a fixed even period would sample only one of the two.
    for period in (2, 16, 64, 1024):
        sampled = schedule(period, 400 * period)
        odd = sum(n % 2 for n in sampled)
        assert 0.35 < odd / len(sampled) < 0.65, (period, odd, len(sampled))
        assert 0.8 * period < (sampled[-1] - sampled[0]) / (len(sampled) - 1) < 1.2 * period


def _rows(rank: profile_run.RankProfile) -> dict[tuple[str, str, int, int], tuple[int, int, int]]:
    sites = callsites.of(profile_run.ProfileRun(Path(), [rank]), rank)
    return {(p.name, sites[p.site].label, p.nprocs, p.bin): (p.calls, p.bytes, p.samples)
            for p in rank.points}


def test_counts_sites_and_samples(openmpi, openmpi_build, programs, tmp_path):
    # Budget 0: the period stays at 16 (the budget's adaptation is tested below).
    profiled(openmpi, openmpi_build, 2, [programs["advise_sites"]], tmp_path / "p",
             {"COLLTUNE_PROFILE_RUN_BUDGET": "0"})
    run = profile_run.read(tmp_path / "p")
    assert [r.rank for r in run.ranks] == [0, 1] and run.nprocs == 2
    # One call counter per communicator: Bcast calls are numbers 0-19 on MPI_COMM_WORLD, Allreduce
    # 20-49; sampled: the second call, then gaps of 16 on average jittered by the sample's number.
    assert schedule(16, 50) == [1, 21, 39]
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
            assert p.timed == p.calls   # a point's first 64 calls are all timed


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


def test_unwritable_directory_is_reported_at_init(openmpi, openmpi_build, programs, tmp_path):
    # A path under a regular file cannot be made (even by root): said at MPI_Init, by each rank,
    # and the application runs on unchanged; its parents are made where they can be.
    (tmp_path / "file").write_text("")
    run = profiled(openmpi, openmpi_build, 2, [programs["advise_sites"]], tmp_path / "file" / "p")
    assert "ok" in run.stdout
    for rank in (0, 1):
        assert (f"COLLTUNE_PROFILE_RUN={tmp_path / 'file' / 'p'} cannot be made: Not a directory (rank "
                f"{rank}'s profile will be lost at MPI_Finalize") in run.stderr, run.describe()
    profiled(openmpi, openmpi_build, 2, [programs["advise_sites"]], tmp_path / "a" / "b" / "p")
    assert sorted(f.name for f in (tmp_path / "a" / "b" / "p").iterdir()) == ["rank-0", "rank-1"]


def test_missing_ranks_are_refused(openmpi, openmpi_build, programs, tmp_path):
    profiled(openmpi, openmpi_build, 2, [programs["advise_sites"]], tmp_path / "p")
    (tmp_path / "p" / "rank-1").unlink()
    with pytest.raises(profile_run.ProfileRunError, match="1 rank files for 2 ranks"):
        profile_run.read(tmp_path / "p")


@pytest.mark.parametrize("profiling", [False, True])
def test_one_collective_at_init(openmpi, openmpi_build, programs, tmp_path, profiling):
    # libcolltune's only collective at MPI_Init is the settings agreement (init.c), which also
    # carries the profiling mode's sampling check: one PMPI_Allreduce whether profiling is on or
    # off. A shim preloaded after libcolltune counts the PMPI_Allreduce calls on MPI_UINT64_T.
    from colltune.mpi import build, runenv
    from interposer_support import run_mpi

    shim = build.compile_program(openmpi, [REPO / "tests" / "programs" / "pmpi_count_shim.c"],
                                 tmp_path / "libpmpicount.so", ["-shared", "-fPIC", "-ldl"])
    env = dict(runenv.rank_environment(openmpi, openmpi_build))
    env["LD_PRELOAD"] += f" {shim}"
    if profiling:
        env["COLLTUNE_PROFILE_RUN"] = str(tmp_path / "p")
    run = run_mpi(openmpi, 2, [str(programs["advise_none"])], env)
    assert run.returncode == 0, run.describe()
    counts = sorted(line for line in run.stdout.splitlines() if line.startswith("pmpi_count"))
    assert counts == ["pmpi_count rank 0 uint64_allreduce 1", "pmpi_count rank 1 uint64_allreduce 1"]
    assert (tmp_path / "p" / "rank-1").exists() == profiling


def test_ranks_sampling_differently_sample_nothing(openmpi, openmpi_build, programs, tmp_path):
    # Rank 0 samples every 16th call, rank 1 every 8th, rank 2 does not profile at all: a barrier
    # on some ranks only would hang, so the agreement at MPI_Init turns sampling off everywhere.
    from colltune.mpi import runenv
    from interposer_support import mpmd_argv, run_argv

    base = dict(runenv.rank_environment(openmpi, openmpi_build))
    # Every context sets every variable: Open MPI's -x of one context reaches the others.
    prof = {**base, "COLLTUNE_PROFILE_RUN": str(tmp_path / "p"), "COLLTUNE_PROFILE_RUN_SAMPLE": "16"}
    prog = [programs["advise_sites"]]
    run = run_argv(openmpi, mpmd_argv(openmpi, [(1, prog, prof), (1, prog, {**prof, "COLLTUNE_PROFILE_RUN_SAMPLE": "8"}),
                                                 (1, prog, {**prof, "COLLTUNE_PROFILE_RUN": ""})]))
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert len(run.messages("COLLTUNE_PROFILE_RUN_BUDGET differ across ranks")) == 1, run.describe()
    files = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert files == ["rank-0", "rank-1"]
    for f in files:
        rank = profile_run.read_rank(tmp_path / "p" / f)
        assert rank.sample_every == 0 and sum(p.samples for p in rank.points) == 0
        assert sum(p.calls for p in rank.points if p.kind == "coll") == 50


def test_sampling_stays_within_its_budget(openmpi, openmpi_build, programs, tmp_path):
    # advise_calls makes 200,000 Allreduce of 8 bytes: at the default period (16) that is 12,500
    # synchronisations. With a budget of 1 millionth of the run (its head start 250 ns) the ranks
    # double the period together: every rank made the same number of synchronisations (none
    # hung), far fewer than the fixed period's. (Their cost against the budget is a timing: on a
    # loaded machine a descheduled synchronisation raises the learned latency after the fact, so
    # no bound on it is asserted here.)
    profiled(openmpi, openmpi_build, 2, [programs["advise_calls"], "200000"], tmp_path / "p",
             {"COLLTUNE_PROFILE_RUN_BUDGET": "1"})
    run = profile_run.read(tmp_path / "p")
    syncs = {r.sample_syncs for r in run.ranks}
    assert len(syncs) == 1 and 2 <= syncs.pop() < len(schedule(16, 200000)) / 2
    for r in run.ranks:
        assert r.sample_budget_ppm == 1 and r.sync_latency_ns is not None
        [p] = [p for p in r.points if p.kind == "coll"]
        assert p.calls == 200000 and p.samples == r.sample_syncs
        # timed: the first 64, then one in 16 (gaps 8..24 averaging 16), and every sampled call
        assert 64 + 199936 / 17 < p.timed < 64 + 199936 / 15 + p.samples, p.timed
        assert p.max_ns <= p.total_ns


def widened_syncs(calls: int) -> int:
    """Synchronisations of a run whose own cost is over the budget from the first sampled call
    on: each doubles the period (capped at 2^20), the draws replayed from the same gaps."""
    period, n, k, syncs = 16, 1, 0, 0
    while n < calls:
        syncs += 1
        period = min(2 * period, 1 << 20)
        n, k = n + gap(period, k), k + 1
    return syncs


def test_point_to_point_cost_widens_the_period(openmpi, openmpi_build, programs, tmp_path):
    # advise_halo phased: 200,000 MPI_Sendrecv first (no collective, so no sample), then 3,000
    # MPI_Allreduce. The budget counts the call path's own time, point-to-point calls included:
    # with a budget of 1 millionth (its head start 250 ns) it is over budget at the first sampled
    # call (the second Allreduce; 200,000 calls of tens of nanoseconds each), and stays over, so
    # every synchronisation doubles the period. The schedule is then exact: replayed here. (When
    # only the synchronisations counted, the period never widened here: 185 synchronisations, the
    # fixed period's, for 2 ms of sampling against the 1 ms fixed allowance of the time.)
    reductions = 3000
    profiled(openmpi, openmpi_build, 2, [programs["advise_halo"], "100000", str(reductions)],
             tmp_path / "p", {"COLLTUNE_PROFILE_RUN_BUDGET": "1"})
    run = profile_run.read(tmp_path / "p")
    expected = widened_syncs(reductions)
    assert expected == 7 and len(schedule(16, reductions)) == 185
    for r in run.ranks:
        assert r.sample_syncs == expected and r.period_widened == expected and r.period_narrowed == 0
        assert r.own_cost_ns is not None and r.own_cost_ns > 1_000_000, r.own_cost_ns
        [p] = [p for p in r.points if p.kind == "coll"]
        assert p.calls == reductions and p.samples == expected
        assert sorted(p.calls for p in r.points if p.kind == "p2p") == [100000, 100000]


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_polling_is_sampled_in_the_budget_and_its_time_goes_to_the_collective(family, request, tmp_path):
    # advise_poll: 2,000,000 MPI_Test that complete nothing while no collective request is
    # followed (requests.c's light path: counted per function only), 3 of 4 at test_a, 1 of 4 at
    # test_b; then MPI_Test at test_c until its receive completes (light too); then 3,000
    # MPI_Allreduce at a budget of 1 millionth; then an MPI_Iallreduce polled by MPI_Testany
    # together with a receive that cannot complete yet (a followed request: the exact path).
    # - The Test totals are exact. Only the polls' countdown's reached the points, each timed:
    #   one in 64 (gaps 32..96, a countdown per function), the period doubled at every 64th
    #   sample taken (the run is over its budget from the first: the sample's own asking,
    #   requests.c's CT_POLL_BUDGET_EVERY) and at synchronisations (over the budget, polls
    #   sampled since the last), each time half the sample dropped at random (counted at its
    #   site, out of the function's total). A site's calls are its sample scaled to the total,
    #   rounded so that the sites sum to it, with the exact binomial interval.
    # - The sampled polls' own time is in the budget (each stands for itself; the light polls'
    #   few instructions each are not measured): full paths of a few hundred instructions
    #   against a budget of a few microseconds (the schedule with p2p's cost over it from the
    #   first call is test_point_to_point_cost_widens_the_period's).
    # - Under a budget of the whole run (never over it) the period doubles only when the sample
    #   reaches 2,048: 4 doublings in 2,000,000 polls (a 5th near), the sample 1,024..2,047.
    # - The MPI_Testany polls, given a collective's request, are every one counted and timed,
    #   their time shared half and half: the collective's waiting is the MPI_Testany point's
    #   time, to the nanosecond (both are sums of the same shares).
    from advise_support import PROGRAMS
    from scipy import stats

    from colltune.mpi import build

    lib, art = request.getfixturevalue(family), request.getfixturevalue(f"{family}_build")
    exe = build.compile_program(lib, [PROGRAMS / "advise_poll.c"], tmp_path / "advise_poll", ["-g", "-Wextra"])
    polls, reductions = 2_000_000, 3000
    run = profiled(lib, art, 2, [exe, str(polls), str(reductions)], tmp_path / "p",
                   {"COLLTUNE_PROFILE_RUN_BUDGET": "1"})
    assert f"poll {2.0 * reductions + 3.0:.1f}" in run.stdout, run.describe()

    def printed(what: str) -> dict[int, int]:
        return {int(line.split()[1]): int(line.split()[3]) for line in run.stdout.splitlines()
                if line.startswith("rank ") and f" {what} " in line}

    testany, tests_c = printed("testany"), printed("test")
    assert sorted(testany) == sorted(tests_c) == [0, 1], run.describe()
    on_world = reductions + 2   # on MPI_COMM_WORLD: a barrier, the reductions, a barrier
    prof = profile_run.read(tmp_path / "p")
    for r in prof.ranks:
        assert widened_syncs(on_world) <= r.sample_syncs <= len(schedule(16, on_world)) == 185
        assert r.period_narrowed == 0 and r.period_widened <= r.sample_syncs
        made = polls + tests_c[r.rank]
        [(name, (total, sampled))] = r.polls.items()
        words = [line.split() for line in (tmp_path / "p" / f"rank-{r.rank}").read_text().splitlines()]
        raw = {int(w[2], 16): (int(w[5]), int(w[6])) for w in words if w[:2] == ["p2p", "Test"]}
        samples = {int(w[2], 16): int(w[3]) for w in words if w[:2] == ["polled", "Test"]}
        assert all(timed == n for n, timed in raw.values())   # every sampled poll timed
        # their own time counted (a full path takes far more than 20 ns; the rest of the own
        # cost: 3,000 reductions' countdown samples and the synchronisations' latency)
        latency = r.sample_syncs * r.sync_latency_ns
        assert r.own_cost_ns - latency > 20 * sum(n for n, _ in raw.values())
        dropped = sum(n for n, _ in raw.values()) - sum(samples.values())
        assert (name, total) == ("Test", made - dropped) and sum(samples.values()) == sampled
        # over the budget at every 64th sample taken: the period doubled there, half the sample
        # dropped, so it settles at 64..127 (more doublings at synchronisations: half again);
        # 2,000,000 polls at 64 samples a period take ~9 doublings from 1 in 64
        assert r.poll_period == 64 * 2 ** r.poll_widened and 8 <= r.poll_widened <= 13
        assert 16 <= sampled < 192
        labels = callsites.of(prof, r)
        tests = {labels[p.site].label.split(" (")[0]: p for p in r.points if p.kind == "p2p" and p.name == "Test"}
        assert sorted(tests) == ["test_a", "test_b", "test_c"] or sorted(tests) == ["test_a", "test_b"]
        assert sum(p.calls for p in tests.values()) == made   # exact
        for fn, p in tests.items():
            calls, timed = raw[p.site]
            s = samples.get(p.site, 0)
            exact = calls - s           # the samples dropped at doublings
            if s == 0:   # (test_c's few polls: its samples may all be dropped, or none taken)
                assert p.calls == exact and p.calls_interval is None
                continue
            share = s * total / sampled
            assert abs(p.calls - exact - share) < 1
            ci = stats.binomtest(s, sampled).proportion_ci(0.95, method="exact")
            lo, hi = max(s, math.floor(ci.low * total)), min(total, math.ceil(ci.high * total))
            est = p.calls - exact
            assert p.calls_interval == (exact + min(lo, est), exact + max(hi, est))
            # the timed polls' mean times the estimate (less where the rank's estimates were over
            # its run: bound_estimates)
            assert p.total_lo_ns <= p.total_ns <= round(p.total_lo_ns * p.calls / timed)
        # test_a 1,500,000 and test_b 500,000 polls: each estimate within 6 standard deviations
        for fn, true in (("test_a", polls * 3 // 4), ("test_b", polls // 4)):
            sd = made * (true / made * (1 - true / made) / sampled) ** 0.5
            assert abs(tests[fn].calls - true) < 6 * sd, (fn, tests[fn].calls, true, sd)
        testany_point = [p for p in r.points if p.kind == "p2p" and p.name == "Testany"]
        [ta] = testany_point
        assert ta.calls == ta.timed == testany[r.rank] and ta.calls_interval is None
        [iallreduce] = [q for q in r.requests if q.name == "iallreduce"]
        assert iallreduce.completed == 1 and iallreduce.wait_ns == ta.total_ns > 0
        assert iallreduce.wait_ns <= iallreduce.span_ns

    # the sample's size alone: taken at 1/64 up to 2,048, then half of it dropped at each
    # doubling (binomial: 1,024 +- 23 kept)
    roomy = profiled(lib, art, 2, [exe, str(polls), str(reductions)], tmp_path / "q",
                     {"COLLTUNE_PROFILE_RUN_BUDGET": "1000000"})
    assert f"poll {2.0 * reductions + 3.0:.1f}" in roomy.stdout, roomy.describe()
    for r in profile_run.read(tmp_path / "q").ranks:
        [(_, (total, sampled))] = r.polls.items()
        assert r.poll_period == 64 * 2 ** r.poll_widened and 4 <= r.poll_widened <= 5
        assert 900 < sampled < 2048


def test_many_chains_at_one_site_are_unwound_once(openmpi, openmpi_build, programs, tmp_path):
    # advise_chains: eight callers of one MPI_Allreduce site at one stack depth, in turn, 1000
    # rounds; each caller then reaches one MPI_Irecv, MPI_Isend and MPI_Waitall site through two
    # functions (16 chains at each, told apart by the frame above the site only 2 ways, as
    # OpenFOAM's Waitall). The thread's chain cache keeps every chain met (a list per site and
    # depth, hints by the previous call's chain and by the frame above the site), so each chain
    # is unwound once (before a spill: every one of the 8,000 calls unwound, as ExaML's recursion
    # did 16,875 times for 167 chains), and every call is counted at its own chain: the collective
    # path by arguments, the point-to-point wrappers' and MPI_Waitall's inline repetitions.
    run_ = profiled(openmpi, openmpi_build, 2, [programs["advise_chains"], "1000"], tmp_path / "p")
    assert "chains 52000.0 24000.0" in run_.stdout, run_.describe()
    run = profile_run.read(tmp_path / "p")
    for r in run.ranks:
        assert r.chain_unwinds == 8 + 3 * 16 and r.chains_lost == 0 and len(r.chains) == 8 + 3 * 16
        # chain ids are consecutive pointers, numbered as the chains were met (profchain.c), so
        # the memo tables (indexed by id >> 3) give each of these chains an entry of its own,
        # whatever addresses the loader chose
        ids = sorted(r.chains)
        assert [b - a for a, b in zip(ids, ids[1:])] == [8] * (len(ids) - 1)
        assert sorted(p.calls for p in r.points if p.kind == "coll") == [1000] * 8
        for name, size in (("Irecv", 8), ("Isend", 8), ("Waitall", 0)):
            points = [p for p in r.points if p.kind == "p2p" and p.name == name]
            assert sorted(p.calls for p in points) == [1000] * 16, name
            assert {p.bytes for p in points} == {1000 * size}, name


def test_more_chains_than_the_old_memo_tables_share_no_entry(openmpi, openmpi_build, programs, tmp_path):
    # advise_many_chains: 300 paths through a 4-way recursion reach one MPI_Allreduce, MPI_Irecv,
    # MPI_Isend and MPI_Waitall site each, every path in turn, 100 rounds: 1,200 chains (QE's
    # pw.x has 1,214), numbered as they are met. The memo tables have an entry per chain id
    # (CT_CHAIN_IDS), so each chain makes its entry once: 300 collective entries, 600 point-to-
    # point (Irecv, Isend), 300 polling (Waitall). With 256/512/256 entries, chain n and n + 256
    # alternated in one entry and every call remade it (30,000 collective entries).
    run_ = profiled(openmpi, openmpi_build, 2, [programs["advise_many_chains"], "300", "100"], tmp_path / "p")
    assert "many_chains 439200.0 384600" in run_.stdout, run_.describe()
    run = profile_run.read(tmp_path / "p")
    for r in run.ranks:
        assert r.chain_unwinds == 1200 and r.chains_lost == 0 and len(r.chains) == 1200
        assert r.memo_made == (300, 600, 300)
        assert sorted(p.calls for p in r.points if p.kind == "coll") == [100] * 300
        for name in ("Irecv", "Isend", "Waitall"):
            assert sorted(p.calls for p in r.points if p.kind == "p2p" and p.name == name) == [100] * 300, name


def test_summary_states_the_profiling_cost():
    # advise's first line: the costliest rank's own time over its wall (the budget's figure);
    # nothing from files that do not say it (format 4 before the own_cost line).
    from types import SimpleNamespace

    from colltune.advise import output

    def advice(*ranks: tuple[int | None, int]) -> SimpleNamespace:
        return SimpleNamespace(run=SimpleNamespace(ranks=[SimpleNamespace(own_cost_ns=c, wall_ns=w) for c, w in ranks]))

    assert output._own_cost(advice((5_000_000, 10**9), (12_000_000, 10**9))) == ", profiling's own time ~1.2%"
    assert output._own_cost(advice((None, 10**9))) == ""


def test_summary_head_drops_the_library_version_before_cutting_a_figure():
    # Session 30's ExaML screen: "colltune advise: 2 ranks, Open MPI v4.1...all 9.16 s, ...": the
    # middle cut took "w" of "wall". The version goes first; the figures stay whole.
    from colltune.advise import output

    own = ", profiling's own time ~0.1%"
    assert output._head_line(2, "Open MPI v4.1.4", "9.16 s", own) == \
        "colltune advise: 2 ranks, Open MPI; wall 9.16 s, profiling's own time ~0.1%"
    assert output._head_line(2, "Open MPI v4.1.4", "9.16 s", "") == \
        "colltune advise: 2 ranks, Open MPI v4.1.4; wall 9.16 s"
    assert output._head_line(2, "MPICH Version:\t4.0.2", "9.16 s", own) == \
        "colltune advise: 2 ranks, MPICH Version; wall 9.16 s, profiling's own time ~0.1%"
    long = output._head_line(2, "A very long vendor MPI library name without any version", "1.00 s", own)
    assert len(long) == 80 and long.startswith("colltune advise: 2 ranks, A very") and long.endswith("time ~0.1%")


def _memcheck_blocks(log: Path) -> list[str]:
    """valgrind's report as blocks (an error, a loss record), its `==PID==` prefixes removed."""
    lines = [line.split("== ", 1)[-1] if line.startswith("==") else line
             for line in log.read_text().splitlines()]
    return [b for b in "\n".join(lines).split("\n\n") if b.strip()]


@pytest.mark.slow
def test_memo_is_flushed_and_freed_at_finalize(openmpi, openmpi_build, programs, tmp_path):
    # Each thread memoises a call site's last call in a block of its own (native/runtime/
    # profcall.c); MPI_Finalize adds the entries' repetitions to the points, then frees the
    # blocks. Rank 0 under memcheck: no block of ct_memo_new's left at exit, no access to freed
    # memory from libcolltune, and the counts as exact as without valgrind.
    import shutil

    from colltune.mpi import runenv
    from interposer_support import mpmd_argv, run_argv

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.skip("valgrind is not installed (make setup-valgrind)")
    env = {**runenv.rank_environment(openmpi, openmpi_build), "COLLTUNE_PROFILE_RUN": str(tmp_path / "p"),
           "COLLTUNE_PROFILE_RUN_BUDGET": "0"}
    log = tmp_path / "memcheck.log"
    memcheck = [valgrind, "--leak-check=full", "--show-leak-kinds=all", "--num-callers=40", f"--log-file={log}"]
    prog = [programs["advise_sites"]]
    run = run_argv(openmpi, mpmd_argv(openmpi, [(1, [*memcheck, *prog], env), (1, prog, env)]), timeout=600)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    blocks = _memcheck_blocks(log)
    assert any(b.startswith("LEAK SUMMARY") for b in blocks), log.read_text()[-2000:]
    assert [b for b in blocks if "ct_memo_new" in b] == []
    assert [b for b in blocks if b.startswith("Invalid") and "libcolltune" in b] == []
    coll = {("bcast", "site_bcast (advise_sites.c:11)", 2, 10): (20, 20 * 1024, 1),
            ("allreduce", "site_allreduce (advise_sites.c:18)", 2, 3): (30, 30 * 8, 2)}
    rank0 = profile_run.read_rank(tmp_path / "p" / "rank-0")
    assert _rows(rank0) == {**coll, ("Send", "site_p2p (advise_sites.c:25)", 0, 17): (5, 10**6, 0)}


def test_format_3_estimates_the_untimed_calls(tmp_path):
    # 1000 calls, 100 of them timed (7 ms): the point's time is their mean times all its calls.
    f = tmp_path / "rank-0"
    f.write_text("colltune-profile-run 3\nrank 0\nnprocs 1\nwall_ns 900000000\nhost h\nlibrary L\n"
                 "cores_online 2\nomp_num_threads -\nsample_every 16\n"
                 "coll bcast 0x401000 1 4 1000 100 7000001 90000 24000 3 300 30 5 16 31\n"
                 "coll barrier 0x401010 1 -1 10 0 0 0 0 0 0 0 0 0 0\n"
                 "p2p Send 0x401020 0 3 5 5 500 200 40 0 0 0 0 8 8\nend\n")
    bcast, barrier, send = profile_run.read_rank(f).points
    assert (bcast.calls, bcast.timed, bcast.total_ns, bcast.max_ns, bcast.bytes) == (1000, 100, 70000010, 90000, 24000)
    assert (bcast.samples, bcast.own_ns, bcast.wait_ns, bcast.bytes_min, bcast.bytes_max) == (3, 300, 30, 16, 31)
    assert (barrier.timed, barrier.total_ns, barrier.bytes_min, barrier.bytes_max) == (0, 0, None, None)
    assert (send.kind, send.timed, send.total_ns) == ("p2p", 5, 500)
    f.write_text(f.read_text().replace(" 10 0 0 0 0 0 0 0 0 0 0", " 10 11 0 0 0 0 0 0 0 0 0"))
    with pytest.raises(profile_run.ProfileRunError, match="malformed line"):
        profile_run.read_rank(f)


def test_estimates_never_exceed_the_run(tmp_path):
    # A busy machine: 100 of 1000 Allreduce timed, 0.707 s in all (a few descheduled), in a run of
    # 2.02 s. Their mean times the calls said 7.07 s, "collectives 350.0%". The measured 0.707 s
    # stays, the estimated rest is scaled so that the rank's calls fill at most its run.
    f = tmp_path / "rank-0"
    f.write_text("colltune-profile-run 4\nrank 0\nnprocs 1\nwall_ns 2020000000\nhost h\nlibrary L\n"
                 "cores_online 2\nomp_num_threads -\nsample_every 16\n"
                 "coll allreduce 0x401000 1 3 1000 100 707000000 300000000 8000 0 0 0 0 8 8\n"
                 "p2p Send 0x401020 0 3 5 5 13000000 3000000 40 0 0 0 0 8 8\nend\n")
    rank = profile_run.read_rank(f)
    allreduce, send = rank.points
    assert (send.total_ns, send.total_lo_ns, send.total_hi_ns) == (13000000, 13000000, 13000000)
    assert allreduce.total_lo_ns == 707000000 and allreduce.total_hi_ns == 2020000000
    assert allreduce.total_ns + send.total_ns == 2020000000
    [row] = [r for r in where.rows(profile_run.ProfileRun(tmp_path, [rank])) if r.kind == "coll"]
    assert row.share == pytest.approx(2007000000 / 2020000000) and row.share <= 1
    assert row.time_interval_s == (pytest.approx(0.707), pytest.approx(2.02))
    # Below the run, nothing changes.
    f.write_text(f.read_text().replace("wall_ns 2020000000", "wall_ns 9000000000"))
    assert profile_run.read_rank(f).points[0].total_ns == 7070000000


def test_route_names_say_what_serves_a_profiled_call(openmpi, openmpi_build, tmp_path):
    # Profiling activates every wrapper and times whoever serves the call: colltune_route_name
    # (a debug query, printed by tests/programs/ct_routes.c) names it, not "counting".
    from colltune import catalog
    from colltune.mpi import build
    prog = build.compile_program(openmpi, [REPO / "tests" / "programs" / "ct_routes.c"],
                                 tmp_path / "ct_routes", ["-ldl"])
    names = catalog.load().collective_names()

    def routes(directory: str, **kw) -> dict[str, str]:
        run = profiled(openmpi, openmpi_build, 2, [prog, "3"], tmp_path / directory, **kw)
        assert "ok 3 calls" in run.stdout, run.describe()
        return dict(line.split()[1:3] for line in run.stdout.splitlines() if line.startswith("route "))

    assert routes("plain") == dict.fromkeys(names, "profiling")
    assert routes("force", force="bcast=bcast_as_allgatherv") == {
        **dict.fromkeys(names, "profiling"), "bcast": "profiling+force"}
    assert routes("counting", verbose=True) == dict.fromkeys(names, "profiling+counting")


def test_open_mpi_4_cvars_come_from_ompi_info(tmp_path):
    # Debian's Open MPI 4.1: its first MPI_T_init_thread takes ~0.2 s (every component's
    # parameters loaded), so the ranks skip MPI_T and the front end asks ompi_info, with the launch
    # line's --mca settings as the ranks get them.
    from pathlib import Path as P

    from colltune.advise import ompi_cvars
    from colltune.measure import proof
    from colltune.mpi import build
    from colltune.mpi import libraries as mpi

    mpicc = P("/usr/bin/mpicc.openmpi")
    if not mpicc.exists():
        pytest.skip("Debian's Open MPI is missing (apt-get install openmpi-bin libopenmpi-dev)")
    lib = mpi.identify(mpicc)
    art = build.ensure_built(lib)
    proof.ensure_proven(lib)
    exe = build.compile_program(lib, [REPO / "tests" / "programs" / "advise_sites.c"], tmp_path / "sites", ["-g"])
    profiled(lib, art, 2, [exe], tmp_path / "p")
    run = profile_run.read(tmp_path / "p")
    for r in run.ranks:
        assert r.cvars_skipped == "ompi_info" and r.cvars == {}
        assert "\ncvar " not in (tmp_path / "p" / f"rank-{r.rank}").read_text()
    command = ["mpirun.openmpi", "--mca", "btl_vader_eager_limit", "8192", "-n", "2", str(exe)]
    assert ompi_cvars.fill(run, lib.version, lib.mpicc, command, {"PATH": "/usr/bin:/bin"})
    for r in run.ranks:
        assert r.cvars["btl_vader_eager_limit"] == "8192" and "coll_tuned_bcast_algorithm" in r.cvars
        assert all(ompi_cvars.wanted(name) for name in r.cvars)
    # Another library's version string: nothing is filled (its ompi_info would describe another run).
    other = profile_run.read(tmp_path / "p")
    assert not ompi_cvars.fill(other, "Open MPI v5.0.11", lib.mpicc, command)
