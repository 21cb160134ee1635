"""The light path's lines in a profiling run's rank file (format 5: `light`, `sampled`,
`pattern_sampled`; docs/advise.md "The light path"): the per-site estimates, their intervals and
the scaled bytes, time and pattern pairs, recomputed by hand from a fixed file; the marks where
they are shown; format 4 still read; each disagreeing file refused with the line named. No MPI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from colltune.advise import collectives, patterns, points, profile_run, where
from colltune.report.sections.advise import _site_calls

HEAD = ("rank 0\nnprocs 4\nwall_ns 10000000000\nhost h\nlibrary L\ncores_online 2\n"
        "omp_num_threads -\nsample_every 16\n")

# Isend: 1,001 calls on its light path, 40 of them its sample: 30 at 0x401000 (bin 10: 32 calls
# there, 2 counted exactly), 10 at 0x401020 (all 10 of its calls). A second point at 0x401000 (bin
# 4, no `sampled` line) is exact: the sample is keyed by the whole point, not (name, site).
# allreduce: 2,001 calls, 50 sampled: 35 at 0x402000 (40 calls there), 15 at 0x402040 (15).
# The small_reductions pattern between them: 20 pairs, 160 bytes, of which 15 pairs and 120 bytes
# had a sampled allreduce first. Test: 100 polls, 4 sampled, all at 0x401040 (5 calls).
LINES = """\
p2p Isend 0x401000 0 10 32 32 32000 2000 32768 0 0 0 0 1024 1024
sampled p2p Isend 0x401000 0 10 30
p2p Isend 0x401000 0 4 3 3 900 400 60 0 0 0 0 20 20
p2p Isend 0x401020 0 10 10 10 10000 1500 15000 0 0 0 0 1024 1980
sampled p2p Isend 0x401020 0 10 10
light Isend 1001 40
coll allreduce 0x402000 4 3 40 40 400000 20000 320 2 10000 5000 2000 8 8
sampled coll allreduce 0x402000 4 3 35
coll allreduce 0x402040 4 3 15 15 150000 20000 120 0 0 0 0 8 8
sampled coll allreduce 0x402040 4 3 15
light allreduce 2001 50
pattern small_reductions 0x402000 0x402040 4 3 20 160
pattern_sampled small_reductions 0x402000 0x402040 4 3 15 120 allreduce
p2p Test 0x401040 0 -1 5 5 5000 1000 0 0 0 0 0 0 0
polled Test 0x401040 4
polls Test 100 4
poll_period 64 0
"""


def rank_file(tmp_path: Path, lines: str = LINES, version: int = 5) -> Path:
    f = tmp_path / "rank-0"
    f.write_text(f"colltune-profile-run {version}\n{HEAD}{lines}end\n")
    return f


def test_sampled_points_and_patterns_are_estimates_with_their_intervals(tmp_path):
    rank = profile_run.read_rank(rank_file(tmp_path))
    assert rank.light == {"Isend": profile_run.FunctionSample(1001, 40),
                          "allreduce": profile_run.FunctionSample(2001, 50)}
    assert rank.sampled[profile_run.PointKey("p2p", "Isend", 0x401000, 0, 10)] == 30
    assert rank.poll_period == 64
    got = {(p.name, p.site, p.bin): (p.calls, p.calls_interval, p.bytes, p.bytes_min, p.bytes_max, p.total_ns,
                                     p.total_lo_ns, p.total_hi_ns, p.sample, p.sample_calls) for p in rank.points}
    # Each point: its counted calls (CALLS - N) plus its share of its function's total, N x
    # CALLS_f / SAMPLED_f, rounded so that the function's shares sum to CALLS_f (largest remainder
    # up): Isend 750.75 -> 751 and 250.25 -> 250 (1,001), allreduce 1,400.7 -> 1,401 and 600.3 -> 600
    # (2,001), Test 100. The interval: counted + the exact (Clopper-Pearson) 95% interval of
    # N / SAMPLED_f times CALLS_f, floor and ceiling, at least N: scipy's binomtest gives
    # 30/40 x 1,001: 588.63-873.96; 10/40: 127.04-412.37; 35/50 x 2,001: 1,108.39-1,643.59;
    # 15/50: 357.41-892.61; 4/4 x 100: 39.76-100.
    # Bytes scale with the calls (a point is one size bin: 1,024 x 753; 1,500 x 250), the range stays;
    # the time is the timed calls' mean times the calls, its top every untimed call as long as the
    # longest timed one (32,000 + (2 + 874 - 32) x 2,000).
    assert got == {
        ("Isend", 0x401000, 10): (753, (590, 876), 771072, 1024, 1024, 753000, 32000, 1720000, 30, 751),
        ("Isend", 0x401000, 4): (3, None, 60, 20, 20, 900, 900, 900, 0, 0),
        ("Isend", 0x401020, 10): (250, (127, 413), 375000, 1024, 1980, 250000, 10000, 614500, 10, 250),
        ("allreduce", 0x402000, 3): (1406, (1113, 1649), 11248, 8, 8, 14060000, 400000, 32580000, 35, 1401),
        ("allreduce", 0x402040, 3): (600, (357, 893), 4800, 8, 8, 6000000, 150000, 17710000, 15, 600),
        ("Test", 0x401040, -1): (101, (40, 101), 0, None, None, 101000, 5000, 101000, 4, 100),
    }
    # The pattern: 5 pairs counted, 15 x 2,001 / 50 = 600.3 -> 600 estimated; bytes 40 + 4,802.4 -> 4,842;
    # pairs' interval 5 + (357, 893).
    [pat] = rank.patterns
    assert (pat.pairs, pat.bytes, pat.pairs_interval) == (605, 4842, (362, 898))

    run = profile_run.ProfileRun(tmp_path, [rank])
    rows = {r.name: r for r in where.rows(run)}
    # A function's total is exact: its light calls plus the calls counted exactly.
    assert (rows["MPI_Isend"].calls, rows["MPI_Allreduce"].calls, rows["MPI_Test"].calls) == (1006, 2006, 101)
    # A site's calls: its points' sum; the interval: their counted calls (2 + 3) plus the interval
    # of their summed sample (30 of 40 again: 588-874).
    sites = rows["MPI_Isend"].as_dict()["sites"]
    assert [(s["site"], s["calls"], s["calls_estimated"], s.get("calls_interval")) for s in sites] == [
        ("0x401000", 756, True, [593, 879]), ("0x401020", 250, True, [127, 413])]
    assert json.loads(json.dumps(where.as_json(run, list(rows.values()))))["p2p"][0]["sites"][1]["calls_interval"] \
        == [127, 413]
    assert _site_calls(sites[0]) == "~756 (593-879)"
    lines = where.text(run, list(rows.values()), top=3)
    assert [line.split()[0] for line in lines if "0x4010" in line or "0x4020" in line] == [
        "~1,406", "~600", "~756", "~250", "~101"]
    assert lines.count("    ~ estimated from a sample of the calls (intervals in the JSON)") == 3
    # A size bin's calls (both allreduce sites): counted 5 plus 50 of 50 sampled, whose interval
    # (1,858.69-2,001) allows calls at sites no sample reached.
    [ap] = points.collective_points(run)
    assert (ap.calls, ap.calls_interval, ap.sites_estimated) == (2006, (1863, 2006), {"0x402000", "0x402040"})
    assert collectives.calls_text(ap) == ("~2006 calls (estimated from a sample of the calls, 95% 1863-2006; "
                                          "the predicted saving with them)")

    [found] = patterns.find(run)
    assert (found.pairs, found.pairs_interval, found.mean_bytes) == (605, (362, 898), 4842 / 605)
    found.saving_per_pair_s, found.basis = 1e-6, "basis"
    [f] = patterns.findings([found], 1.0)
    assert f.title.startswith("small reductions back to back on one communicator, ~605 times:")
    assert f.brief == "reductions ~605x 0x402000, 0x402040: fuse (check)"
    assert f.evidence[0] == "~605 pairs on every rank at 4 ranks, 8 B per call: 0x402000 then 0x402040"
    assert f.evidence[1] == "pairs estimated from a sample of the calls (a light path): 95% 362-898"
    assert f.evidence[3] == ("predicted saving 605.0 us = ~605 x 1.0 us (0.06% of the run, 95% 362.0 us-898.0 us); "
                             "basis")
    assert (f.data["pairs"], f.data["pairs_estimated"], f.data["pairs_interval"]) == (605, True, [362, 898])


def test_every_call_sampled_is_exact_and_format_5_without_light_lines_is_counted(tmp_path):
    # SAMPLED_f == CALLS_f: nothing to estimate, the interval is the point itself.
    f = rank_file(tmp_path, "coll bcast 0x402000 4 3 9 9 9000 1000 72 0 0 0 0 8 8\n"
                            "sampled coll bcast 0x402000 4 3 6\nlight bcast 6 6\n")
    [p] = profile_run.read_rank(f).points
    assert (p.calls, p.calls_interval) == (9, (9, 9))
    # A file of the new format with no light path lines: every call counted.
    f = rank_file(tmp_path, "coll bcast 0x402000 4 3 9 9 9000 1000 72 0 0 0 0 8 8\n")
    [p] = profile_run.read_rank(f).points
    assert (p.calls, p.calls_interval, p.total_ns) == (9, None, 9000)


def test_format_4_is_still_read(tmp_path):
    f = rank_file(tmp_path, "coll bcast 0x402000 4 3 9 9 9000 1000 72 0 0 0 0 8 8\n"
                            "p2p Test 0x401040 0 -1 5 5 5000 1000 0 0 0 0 0 0 0\npolled Test 0x401040 4\n"
                            "polls Test 100 4\n", version=4)
    bcast, test = profile_run.read_rank(f).points
    assert (bcast.calls, bcast.calls_interval, test.calls, test.calls_interval) == (9, None, 101, (40, 101))
    # but not with format 5's lines
    f = rank_file(tmp_path, LINES, version=4)
    with pytest.raises(profile_run.ProfileRunError,
                       match=re.escape("malformed line 'sampled p2p Isend 0x401000 0 10 30' (format 4 has "
                                       "no sampled lines); rerun the profile")):
        profile_run.read_rank(f)


def _replaced(old: str, new: str) -> str:
    assert LINES.count(old) == 1, old
    return LINES.replace(old, new)


@pytest.mark.parametrize(("lines", "message"), [
    # the function's sample is not what its points' sampled lines hold
    (_replaced("light Isend 1001 40", "light Isend 1001 41"),
     "light and sampled lines disagree: `light Isend 1001 41`, its sampled lines hold 40"),
    # a sampled line without its point (another bin)
    (_replaced("sampled p2p Isend 0x401020 0 10 10", "sampled p2p Isend 0x401020 0 9 10"),
     "light and sampled lines disagree: `sampled p2p Isend 0x401020 0 9 10` has no p2p point line"),
    # a sampled line without its function's light line
    (_replaced("light allreduce 2001 50\n", ""),
     "light and sampled lines disagree: `sampled coll allreduce 0x402000 4 3 35` has no `light allreduce` line"),
    # more sampled calls than the point has
    (_replaced("sampled p2p Isend 0x401020 0 10 10", "sampled p2p Isend 0x401020 0 10 11"),
     "light and sampled lines disagree: 11 sampled of the point's 10 calls (p2p Isend 0x401020 0 10)"),
    # a sample larger than the calls it is taken from
    (_replaced("light Isend 1001 40", "light Isend 39 40"),
     "light and sampled lines disagree: `light Isend 39 40` samples more calls than it made"),
    # a pattern_sampled line without its pattern
    (_replaced("pattern small_reductions 0x402000 0x402040 4 3 20 160",
               "pattern small_reductions 0x402000 0x402040 4 4 20 160"),
     "pattern and pattern_sampled lines disagree: `pattern_sampled small_reductions 0x402000 0x402040 4 3 15 "
     "120 allreduce` has no pattern line"),
    # ... without its LEAD function's light line
    (_replaced("15 120 allreduce", "15 120 reduce"),
     "pattern and pattern_sampled lines disagree: `pattern_sampled small_reductions 0x402000 0x402040 4 3 15 "
     "120 reduce` has no `light reduce` line"),
    # ... with more pairs than its pattern line
    (_replaced("15 120 allreduce", "21 120 allreduce"),
     "pattern and pattern_sampled lines disagree: `pattern_sampled small_reductions 0x402000 0x402040 4 3 21 "
     "120 allreduce` hold 21 pairs of 120 bytes, its pattern line 20 of 160"),
    # ... or more than its LEAD's sample
    (_replaced("15 120 allreduce", "51 120 allreduce").replace(" 4 3 20 160", " 4 3 60 160"),
     "pattern and pattern_sampled lines disagree: `pattern_sampled small_reductions 0x402000 0x402040 4 3 51 "
     "120 allreduce` has more pairs than allreduce's sample (50)"),
    # a function on both light paths
    (LINES + "light Test 10 1\n",
     "light and polls lines disagree: `light Test 10 1` and `polls Test ...` for one function"),
    # the Test family's lines, checked by the same function
    (_replaced("polls Test 100 4", "polls Test 100 5"),
     "polls and polled lines disagree: `polls Test 100 5`, its polled lines hold 4"),
    (_replaced("polled Test 0x401040 4", "polled Test 0x401050 4"),
     "polls and polled lines disagree: `polled Test 0x401050 4` has no p2p point"),
    # a line given twice, a count that is no count
    (LINES + "light Isend 1001 40\n", "malformed line 'light Isend 1001 40' (a second light line for Isend)"),
    (_replaced("sampled p2p Isend 0x401020 0 10 10", "sampled p2p Isend 0x401020 0 10 -1"),
     "malformed line 'sampled p2p Isend 0x401020 0 10 -1' (-1: negative count)"),
    (_replaced("sampled p2p Isend 0x401020 0 10 10", "sampled send Isend 0x401020 0 10 10"),
     "malformed line 'sampled send Isend 0x401020 0 10 10' (send: not coll or p2p)"),
])
def test_disagreeing_lines_are_refused_naming_the_line(tmp_path, lines, message):
    f = rank_file(tmp_path, lines)
    with pytest.raises(profile_run.ProfileRunError) as err:
        profile_run.read_rank(f)
    assert str(err.value) == f"{f}: {message}; rerun the profile"
