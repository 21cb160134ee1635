"""The profiling mode's light path on a real MPI library (native/runtime/requests.c, "the light
path of repeated calls"): per-function totals exact, each site's part of the sample, the calls
made to take the full path counted exactly, patterns counted through their first call's sample.
tests/programs/advise_light.c: a halo exchange at two sites (3 steps of 4 at halo_a), two small
reductions back to back (norm_a, norm_b), a broadcast every 8th step."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from advise_support import PROGRAMS, profiled

from colltune.mpi import build

STEPS = 3000
# a rank's calls of each function (advise_light.c's header)
EXACT = {"Isend": 2 * STEPS, "Irecv": 2 * STEPS, "Waitall": STEPS, "allreduce": 2 * STEPS,
         "bcast": STEPS // 8}


def _words(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()]


def _run(lib, art, tmp_path: Path, light: str) -> list[list[list[str]]]:
    exe = build.compile_program(lib, [PROGRAMS / "advise_light.c"], tmp_path / "advise_light",
                                ["-g", "-Wextra"])
    # no synchronisations (SAMPLE 0), so no budget: the light period widens only by the sample's
    # size, and no call is made to take the full path for a synchronisation
    run = profiled(lib, art, 2, [exe, str(STEPS)], tmp_path / "p",
                   {"COLLTUNE_PROFILE_RUN_LIGHT": light, "COLLTUNE_PROFILE_RUN_SAMPLE": "0"})
    assert "light " in run.stdout, run.describe()
    return [_words(tmp_path / "p" / f"rank-{r}") for r in (0, 1)]


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_light_path_totals_are_exact_and_samples_add_up(family, request, tmp_path):
    lib, art = request.getfixturevalue(family), request.getfixturevalue(f"{family}_build")
    for words in _run(lib, art, tmp_path, "1"):
        counted: dict[str, int] = defaultdict(int)     # calls counted at the points
        sampled: dict[str, int] = defaultdict(int)     # their part of the sample
        points = {(w[1], w[2]): int(w[5]) for w in words if w[0] in ("coll", "p2p")}
        for w in words:
            if w[0] in ("coll", "p2p"):
                counted[w[1]] += int(w[5])
            if w[0] == "sampled":
                assert (w[2], w[3]) in points and int(w[6]) <= points[(w[2], w[3])]
                sampled[w[2]] += int(w[6])
        light = {w[1]: (int(w[2]), int(w[3])) for w in words if w[0] == "light"}
        assert sorted(light) == sorted(EXACT)
        for name, (calls, sample) in light.items():
            # the function's total: its light path's calls (sample included) and, at the points,
            # the calls counted exactly (before it opened, or made to take the full path)
            assert calls + counted[name] - sampled[name] == EXACT[name], name
            assert sample == sampled[name] and sample > 0, name
        # 21,375 calls at one in 64 (32..96): ~330 samples, under 2,048: the period never widened
        assert [w[1:] for w in words if w[0] == "poll_period"] == [["64", "0"]]
        # a pattern pair is counted when its first call is a sample (then its second is made to
        # take the full path) or was made while the light path was shut
        [pattern] = [w for w in words if w[0] == "pattern"]
        [pattern_sampled] = [w for w in words if w[0] == "pattern_sampled"]
        first = pattern[2]
        first_sampled = {w[3]: int(w[6]) for w in words if w[:3] == ["sampled", "coll", "allreduce"]}
        assert pattern_sampled[1:6] == pattern[1:6] and pattern_sampled[8] == "allreduce"
        assert int(pattern_sampled[6]) == first_sampled[first]        # no sample dropped
        assert int(pattern_sampled[7]) == 8 * int(pattern_sampled[6])  # 8 bytes each
        # every call of norm_a before the light path opened made a pair (the one it opened in
        # may not: norm_a's full path found it open, so it was no pattern's first call)
        assert points[("allreduce", first)] - int(pattern[6]) in (0, 1)


@pytest.mark.parametrize("family", ["openmpi"])
def test_light_path_off_keeps_every_count_exact(family, request, tmp_path):
    lib, art = request.getfixturevalue(family), request.getfixturevalue(f"{family}_build")
    for words in _run(lib, art, tmp_path, "0"):
        assert not [w for w in words if w[0] in ("light", "sampled", "pattern_sampled")]
        counted: dict[str, int] = defaultdict(int)
        for w in words:
            if w[0] in ("coll", "p2p"):
                counted[w[1]] += int(w[5])
        assert dict(counted) == EXACT
        [pattern] = [w for w in words if w[0] == "pattern"]
        assert pattern[1] == "small_reductions" and int(pattern[6]) == STEPS


def test_advise_reads_the_light_path_back_to_exact_totals(openmpi, openmpi_build, tmp_path):
    # The same run read by advise (profile_run.scale_samples): each function's points sum to its
    # exact total; every estimated point and the pattern carry an interval around their estimate.
    from colltune.advise import callsites, profile_run

    _run(openmpi, openmpi_build, tmp_path, "1")
    run = profile_run.read(tmp_path / "p")
    for r in run.ranks:
        totals: dict[str, int] = defaultdict(int)
        for p in r.points:
            totals[p.name] += p.calls
            if p.calls_interval is not None:
                lo, hi = p.calls_interval
                assert lo <= p.calls <= hi, p
        assert dict(totals) == EXACT
        labels = callsites.of(run, r)
        isend = {labels[p.site].label.split(" (")[0] for p in r.points if p.name == "Isend"}
        assert isend == {"halo_a", "halo_b"}
        [pattern] = r.patterns
        assert pattern.name == "small_reductions" and pattern.pairs_interval is not None
        lo, hi = pattern.pairs_interval
        # (pairs and bytes are each scaled and rounded: 8 bytes a pair, to a rounding)
        assert lo <= pattern.pairs <= hi and abs(pattern.bytes - 8 * pattern.pairs) < 8


def _comms_expected(steps: int, nprocs: int) -> tuple[int, dict[str, int]]:
    """advise_light_comms.c's printed sum and a rank's calls of each function."""
    ranks = range(nprocs)
    common = reduced = 0
    for s in range(steps):
        common += sum(r + s % 7 for r in ranks) + 3 * sum(r - s % 5 for r in ranks)
        if s % 4 == 0:
            common += 5 * nprocs * (s % 11) + 7 * sum(r * (s % 3) for r in ranks)
        if s % 3 == 0:
            reduced += nprocs - 1 + s          # rank 1's MPI_MAX of rank + s
        if s % 5 == 0:
            common += s % 13
    calls = {"allreduce": 2 * steps + 2 * -(-steps // 4) + 1, "reduce": -(-steps // 3),
             "bcast": -(-steps // 5)}
    return nprocs * common + reduced, calls


def _gap(period: int, k: int) -> int:
    """profcomm.c's ct_profcomm_gap: calls from one sample to the next (splitmix64's finaliser)."""
    mask = (1 << 64) - 1
    z = (k + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return 1 if period <= 1 else period // 2 + z % (period + 1)


def _samples(calls: int, period: int) -> int:
    """A communicator's sampled calls among its first `calls` (the second, then by the gaps)."""
    n, k = 1, 0
    while n < calls:
        n, k = n + _gap(period, k), k + 1
    return k


def _comms_syncs(steps: int, period: int) -> int:
    """advise_light_comms.c's synchronisations on a rank: MPI_COMM_WORLD's calls and each pair's
    (made again every 50 steps), each communicator sampled on its own schedule."""
    world = steps + -(-steps // 5) + 1
    pairs = [sum(1 + 2 * (s % 4 == 0) + (s % 3 == 0) + (s % 7 == 3) for s in range(first, min(first + 50, steps)))
             for first in range(0, steps, 50)]
    return _samples(world, period) + sum(_samples(n, period) for n in pairs)


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_light_path_across_communicators_keeps_results_totals_and_synchronisations(family, request, tmp_path):
    # Synchronisations on (one in 4 collective calls a communicator, no budget to widen it): the
    # wrappers' light path must count every communicator's calls as the ranks all do, or the
    # ranks would disagree on the synchronised calls (a hang, or a collective matched with
    # another). Communicators alternate (the wrappers' cache misses) and are freed and made again;
    # a Barrier (no light path) comes between the light calls on one.
    lib, art = request.getfixturevalue(family), request.getfixturevalue(f"{family}_build")
    steps = 1200
    exe = build.compile_program(lib, [PROGRAMS / "advise_light_comms.c"], tmp_path / "comms",
                                ["-g", "-Wextra"])
    run = profiled(lib, art, 2, [exe, str(steps)], tmp_path / "p",
                   {"COLLTUNE_PROFILE_RUN_LIGHT": "1", "COLLTUNE_PROFILE_RUN_SAMPLE": "4",
                    "COLLTUNE_PROFILE_RUN_BUDGET": "0"})
    total, exact = _comms_expected(steps, 2)
    assert f"comms {total}\n" in run.stdout, run.describe()
    syncs = []
    for r in (0, 1):
        words = _words(tmp_path / "p" / f"rank-{r}")
        counted: dict[str, int] = defaultdict(int)
        sampled: dict[str, int] = defaultdict(int)
        for w in words:
            if w[0] == "coll":
                counted[w[1]] += int(w[5])
            if w[0] == "sampled" and w[1] == "coll":
                sampled[w[2]] += int(w[6])
        light = {w[1]: int(w[2]) for w in words if w[0] == "light"}
        assert sorted(light) == sorted(exact), r
        for name, calls in light.items():
            assert calls + counted[name] - sampled[name] == exact[name], (r, name)
        [line] = [w for w in words if w[0] == "sample_syncs"]
        syncs.append(int(line[1]))
    # every rank synchronised at the calls of the schedule (one in 4 of each communicator's calls
    # on average): the wrappers' light calls, counted in their hot line and added to their
    # communicator's count only when a full path needs it (a Barrier on the same communicator, a
    # sample, another communicator), were all counted before the schedule was read
    assert syncs == [_comms_syncs(steps, 4)] * 2, syncs


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_a_function_with_few_calls_keeps_its_own_sample_beside_a_polling_loop(family, request, tmp_path):
    # advise_light with 1,000 MPI_Test polls a step before the halo exchange: 3,000,000 polls a
    # rank against 3,000 MPI_Waitall. Each light function has its own period (requests.c): the
    # polls' widens as their sample reaches 2,048 (no budget acts: it is the whole run), the
    # others' stays at one in 64, gaps 32..96 from the first light call, so a function with L
    # light calls keeps 1 + (L - 1 - 95) / 96 .. 1 + (L - 1) / 32 samples. One process-wide period
    # (before) left MPI_Waitall 2 samples of 2,995 calls, and a site's time stood on one call.
    lib, art = request.getfixturevalue(family), request.getfixturevalue(f"{family}_build")
    from colltune.advise import callsites, profile_run

    exe = build.compile_program(lib, [PROGRAMS / "advise_light.c"], tmp_path / "advise_light",
                                ["-g", "-Wextra"])
    polls = 1000
    run = profiled(lib, art, 2, [exe, str(STEPS), str(polls)], tmp_path / "p",
                   {"COLLTUNE_PROFILE_RUN_LIGHT": "1", "COLLTUNE_PROFILE_RUN_BUDGET": "1000000"})
    assert "light " in run.stdout, run.describe()
    prof = profile_run.read(tmp_path / "p")
    for r in prof.ranks:
        words = _words(tmp_path / "p" / f"rank-{r.rank}")
        light = {w[1]: (int(w[2]), int(w[3])) for w in words if w[0] in ("light", "polls")}
        [(period, widened)] = [(int(w[1]), int(w[2])) for w in words if w[0] == "poll_period"]
        test_calls, test_sample = light["Test"]
        # exact: the light polls, and at the site those dropped from the sample (and the last
        # loop's, one or a few)
        at_site = sum(int(w[5]) for w in words if w[:2] == ["p2p", "Test"])
        assert STEPS * polls < test_calls + at_site - test_sample <= STEPS * polls + 10
        assert 1024 <= test_sample < 2048
        assert period == 64 * 2 ** widened and widened >= 4   # the polls' period, the widest
        for name in ("Isend", "Irecv", "Waitall", "allreduce", "bcast"):
            calls, sample = light[name]
            assert 1 + (calls - 96) // 96 <= sample <= 1 + (calls - 1) // 32, (r.rank, name, calls, sample)
        # MPI_Waitall's two sites, each estimated from its part of ~47 samples: the true calls
        # (3 steps of 4 at halo_a) within the estimate's 95% interval
        labels = callsites.of(prof, r)
        waitall = {labels[p.site].label.split(" (")[0]: p for p in r.points if p.name == "Waitall"}
        for site, true in (("halo_a", STEPS * 3 // 4), ("halo_b", STEPS // 4)):
            lo, hi = waitall[site].calls_interval
            assert lo <= true <= hi and waitall[site].sample >= 5, (r.rank, site, waitall[site])
