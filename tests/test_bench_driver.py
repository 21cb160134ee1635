"""The measurement driver's protocol on the embedded Open MPI: records, warm-up, interleaving,
skips, time budget, window synchronization, clock offsets, and that library algorithms really run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colltune.measure.protocol import DriverOutput, read_driver_output
from colltune.mpi import build, launch
from colltune.mpi import libraries as mpi


def drive(lib: mpi.MpiLibrary, art: build.Artifacts, tmp_path: Path, nprocs: int, jobs: str,
          *args: str, rank_env: dict[str, str] | None = None) -> DriverOutput:
    job_file = tmp_path / "jobs.txt"
    job_file.write_text(jobs)
    out = tmp_path / "out.txt"
    proc = launch.run(lib, nprocs, [str(art.bench), "run", str(job_file), "--out", str(out), *args],
                      rank_env=rank_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return read_driver_output(out.read_text())


# No time budget: on a loaded machine the default 3 s per job would stop a window-synchronized
# job early and the counts below would depend on the load.
FIXED = ("--stop", "fixed", "--max-reps", "20", "--warmup", "3", "--check-every", "5", "--time-budget", "0")
VARIANTS = ["default", "default#aa", "allreduce_as_reduce_bcast", "lib:allreduce:ring"]


def test_records_warmup_and_interleaving(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                         tmp_path: Path) -> None:
    out = drive(openmpi, openmpi_build, tmp_path, 3,
                f"allreduce 1024 int sum - {','.join(VARIANTS)}\n", *FIXED, "--seed", "7")
    assert out.ended
    assert out.jobs[0]["variants"] == VARIANTS
    assert out.jobs[0]["count"] == 256
    rec = out.records
    assert len(rec) == 4 * 23
    for vi in range(4):
        mine = rec[rec.variant_idx == vi]
        assert list(mine.rep) == list(range(23))
        assert list(mine.warmup) == [1] * 3 + [0] * 20
        assert mine.valid.all()
        assert (mine.runtime_s > 0).all() and (mine.makespan_s > 0).all()
    # every round of 4 records holds each variant once, in an order that changes between rounds
    rounds = [tuple(rec.variant_idx[i:i + 4]) for i in range(0, len(rec), 4)]
    assert all(sorted(r) == [0, 1, 2, 3] for r in rounds)
    assert len(set(rounds)) > 1
    assert [s["nrep"] for s in out.summaries] == [20] * 4
    # global times on synchronized clocks: the makespan spans first start to last end, and a
    # repetition starts (after the barrier) only when the previous one ended everywhere
    assert ((rec.end_s - rec.start_s) - rec.makespan_s).abs().max() < 5e-9
    assert (rec.start_s.to_numpy()[1:] >= rec.end_s.to_numpy()[:-1] - 1e-5).all()
    assert {s["stop"] for s in out.summaries} <= {"max_reps", "converged"}


def test_order_depends_on_the_seed_only(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                        tmp_path: Path) -> None:
    job = "bcast 64 byte - 0 default,default#aa,bcast_as_allgatherv\n"
    a = drive(openmpi, openmpi_build, tmp_path, 2, job, *FIXED, "--seed", "11").records
    b = drive(openmpi, openmpi_build, tmp_path, 2, job, *FIXED, "--seed", "11").records
    c = drive(openmpi, openmpi_build, tmp_path, 2, job, *FIXED, "--seed", "12").records
    assert list(a.variant_idx) == list(b.variant_idx)
    assert list(a.variant_idx) != list(c.variant_idx)


def test_jobs_run_in_an_order_drawn_from_the_seed(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                  tmp_path: Path) -> None:
    """Whatever disturbs a launch's start or end must not always hit its first and last job."""
    jobs = "".join(f"bcast {n} byte - 0 default\n" for n in (1, 2, 4, 8, 16, 32, 64, 128))
    fixed = ("--stop", "fixed", "--max-reps", "2", "--warmup", "0", "--check-every", "2")

    def order(seed: str) -> list[int]:
        return [int(s["job"]) for s in drive(openmpi, openmpi_build, tmp_path, 2, jobs, *fixed, "--seed", seed).summaries]

    a, b, c = order("11"), order("11"), order("12")
    assert sorted(a) == sorted(c) == list(range(8))
    assert a == b and a != c
    assert a != list(range(8))


def test_skips_are_reported(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts, tmp_path: Path) -> None:
    jobs = ("allreduce 1024 int prod - default,no_such_variant,bcast_as_allgatherv,tuned,lib:allreduce:nope\n"
            "reduce_scatter_block 6 unsigned_char sum - default\n"
            "barrier 0 - - - default,default#aa,bcast_as_allgatherv\n")
    # a gate file a rank does not find (one on another host) does not hold it: it goes on to the barrier
    out = drive(openmpi, openmpi_build, tmp_path, 4, jobs, *FIXED, "--gate", str(tmp_path / "elsewhere"))
    assert out.ended and out.end["measuring_from"] <= out.end["measuring_until"]
    reasons = {(s["job"], s["variant"]): s["reason"] for s in out.skips}
    assert reasons[(0, "no_such_variant")] == "unknown variant"
    assert reasons[(0, "bcast_as_allgatherv")] == "a variant of bcast, not of allreduce"
    assert reasons[(0, "tuned")] == "`tuned` needs --profile FILE"
    assert "has no algorithm 'nope'" in reasons[(0, "lib:allreduce:nope")]
    # Barrier is a row of the table now (issue 33): its variants are its own, like any row's
    assert reasons[(2, "bcast_as_allgatherv")] == "a variant of bcast, not of barrier"
    assert out.job_skips == [{"type": "job_skip", "job": 1,
                              "reason": "6 bytes is not a multiple of 4 (unsigned_char times p)"}]
    assert out.jobs[0]["variants"] == ["default"]
    assert out.jobs[2]["variants"] == ["default", "default#aa"]
    assert len(out.records) == 23 + 2 * 23


def test_inapplicable_mockup_is_skipped_with_its_reason(openmpi: mpi.MpiLibrary,
                                                        openmpi_build: build.Artifacts,
                                                        tmp_path: Path) -> None:
    # allgather_as_alltoall needs p*n bytes of scratch: 2*4096 B is over a 1 KiB cap
    out = drive(openmpi, openmpi_build, tmp_path, 2,
                "allgather 4096 byte - - default,allgather_as_alltoall,allgather_as_gather_bcast\n",
                *FIXED, rank_env={"COLLTUNE_SCRATCH_BYTES": "1024"})
    assert out.jobs[0]["variants"] == ["default", "allgather_as_gather_bcast"]
    assert out.skips == [{"type": "skip", "job": 0, "variant": "allgather_as_alltoall",
                          "reason": "scratch"}]


def test_time_budget_stops_a_job(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                 tmp_path: Path) -> None:
    out = drive(openmpi, openmpi_build, tmp_path, 2, "allreduce 8 unsigned_char sum - default,default#aa\n",
                "--stop", "rse", "--rse", "1e-9", "--max-reps", "100000", "--time-budget", "0.2",
                "--check-every", "10", "--warmup", "0")
    assert [s["stop"] for s in out.summaries] == ["time_budget", "time_budget"]
    n = out.summaries[0]["nrep"]
    assert 1 <= n < 100000
    assert len(out.records) == 2 * n


def test_chunks_shrink_to_fit_the_time_budget(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                              tmp_path: Path) -> None:
    # an 8 MiB allreduce takes milliseconds: a full chunk of 100 rounds would overrun a 0.05 s
    # budget many times over; the chunk is cut to what the warm-up says fits (at least 1 round)
    out = drive(openmpi, openmpi_build, tmp_path, 2, "allreduce 8388608 unsigned_char sum - default,default#aa\n",
                "--stop", "rse", "--rse", "1e-9", "--max-reps", "100000", "--time-budget", "0.05",
                "--check-every", "100", "--warmup", "3")
    assert [s["stop"] for s in out.summaries] == ["time_budget", "time_budget"]
    assert 1 <= out.summaries[0]["nrep"] < 100


def test_window_sync_records_validity_and_makespan(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                   tmp_path: Path) -> None:
    out = drive(openmpi, openmpi_build, tmp_path, 2, "bcast 1024 byte - 0 default,default#aa\n",
                "--sync", "window", *FIXED)
    assert out.launch["sync"] == "window"
    measured = out.records[out.records.warmup == 0]
    assert len(measured) == 40
    assert set(measured.valid) <= {0, 1}
    assert measured.makespan_s.notna().all()
    for s in out.summaries:
        assert s["window_s"] > 0
        assert s["valid"] == int(measured[measured.variant_idx == out.jobs[0]["variants"].index(s["variant"])].valid.sum())
    valid = measured[measured.valid == 1]
    # a valid start is on time on every rank, so the makespan covers the slowest local duration
    assert (valid.makespan_s >= valid.runtime_s - 1e-6).all()


def test_bad_job_file_names_the_line(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                     tmp_path: Path) -> None:
    job_file = tmp_path / "jobs.txt"
    job_file.write_text("# comment\nallreduce 8 unsigned_char sum - default\nbcst 8 byte - 0 default\n")
    proc = launch.run(openmpi, 2, [str(openmpi_build.bench), "run", str(job_file)], timeout=60)
    assert proc.returncode != 0
    assert f"{job_file}:3: unknown collective 'bcst'" in proc.stderr


def test_clock_offsets_within_half_round_trip(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts) -> None:
    proc = launch.run(openmpi, 3, [str(openmpi_build.bench), "clocktest", "--rounds", "3",
                                   "--pingpongs", "30"], timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 3 * 2
    for row in rows:
        # the root's reading lies inside our send..receive interval: |error| <= rtt/2, plus the
        # two back-to-back clock reads that define the truth
        assert abs(row["error"]) <= row["rtt"] / 2 + 2e-6, row


def test_openmpi_algorithms_really_run(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                       tmp_path: Path) -> None:
    """A double sum whose bits depend on the summation order: Open MPI 5 at 6 ranks gives the
    classes {basic_linear, nonoverlapping}, {recursive_doubling, rabenseifner, default},
    {ring, segmented_ring}; a forced algorithm that did not run would land in the default's."""
    algs = ["basic_linear", "nonoverlapping", "recursive_doubling", "rabenseifner", "ring", "segmented_ring"]
    variants = ",".join(["default", *(f"lib:allreduce:{a}" for a in algs)])
    out = drive(openmpi, openmpi_build, tmp_path, 6, f"allreduce 8000 double sum - {variants}\n", "--probe")
    h = {p["variant"].split(":")[-1]: p["hash"] for p in out.probes}
    assert len(h) == 7
    assert h["basic_linear"] == h["nonoverlapping"]
    assert h["recursive_doubling"] == h["rabenseifner"] == h["default"]
    assert h["ring"] == h["segmented_ring"]
    assert len({h["basic_linear"], h["default"], h["ring"]}) == 3


@pytest.mark.mpich
def test_mpich_algorithms_really_run(mpich: mpi.MpiLibrary, mpich_build: build.Artifacts,
                                     tmp_path: Path) -> None:
    variants = "default,lib:allreduce:recursive_doubling,lib:allreduce:ring,lib:allreduce:tree"
    out = drive(mpich, mpich_build, tmp_path, 3, f"allreduce 8000 double sum - {variants}\n", "--probe")
    h = {p["variant"]: p["hash"] for p in out.probes}
    assert h["default"] == h["lib:allreduce:recursive_doubling"]
    assert len({h["default"], h["lib:allreduce:ring"], h["lib:allreduce:tree"]}) == 3
    # the library's own choice comes back after forced algorithms, whatever the order
    mixed = "lib:allreduce:ring,default,lib:allreduce:tree,default#aa"
    again = drive(mpich, mpich_build, tmp_path, 3, f"allreduce 8000 double sum - {mixed}\n", "--probe")
    g = {p["variant"]: p["hash"] for p in again.probes}
    assert g == {"default": h["default"], "default#aa": h["default"], "lib:allreduce:ring": h["lib:allreduce:ring"],
                 "lib:allreduce:tree": h["lib:allreduce:tree"]}


@pytest.mark.mpich
def test_mpich_forced_algorithm_is_honoured(mpich: mpi.MpiLibrary, mpich_build: build.Artifacts,
                                            tmp_path: Path) -> None:
    """The driver sets MPIR_CVAR_COLLECTIVE_FALLBACK=error while a library variant runs, so
    MPICH refuses, instead of silently replacing, a forced algorithm that cannot serve the
    call: allgather's recursive doubling needs a power-of-two number of processes. At 3 ranks
    the variant is skipped with MPICH's reason (never measured under a name it did not run);
    at 2 it runs."""
    job = "allgather 64 byte - - default,lib:allgather:recursive_doubling\n"
    three = drive(mpich, mpich_build, tmp_path, 3, job, *FIXED)
    assert three.jobs[0]["variants"] == ["default"]
    assert [s["variant"] for s in three.skips] == ["lib:allgather:recursive_doubling"]
    assert three.skips[0]["reason"].startswith("the library refused this algorithm for this call: ")
    assert "not usable" in three.skips[0]["reason"]
    two = drive(mpich, mpich_build, tmp_path, 2, job, *FIXED)
    assert two.jobs[0]["variants"] == ["default", "lib:allgather:recursive_doubling"]
    assert len(two.records) == 2 * 23


def test_openmpi_refused_algorithm_is_skipped(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                              tmp_path: Path) -> None:
    out = drive(openmpi, openmpi_build, tmp_path, 3, "alltoall 64 byte - - default,lib:alltoall:two_proc\n",
                *FIXED)
    assert out.jobs[0]["variants"] == ["default"]
    assert out.skips[0]["reason"] == ("the library refused this algorithm for this call: "
                                      "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported")


def test_tuned_follows_the_profile(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                   tmp_path: Path) -> None:
    """`tuned` takes the interposer's decision per call: the profile's variant at 8000 bytes
    (same result bits as that mock-up), the library at 16000 bytes (same bits as default)."""
    profile = tmp_path / "p.prf"
    profile.write_text("colltune-profile 1\ncollective allreduce\n  procs 4 4\n"
                       "    bytes 8000 8000 allreduce_as_reduce_bcast\nend\n")
    jobs = ("allreduce 8000 double sum - default,allreduce_as_reduce_bcast,tuned\n"
            "allreduce 16000 double sum - default,allreduce_as_reduce_bcast,tuned\n")
    out = drive(openmpi, openmpi_build, tmp_path, 4, jobs, "--probe", "--profile", str(profile))
    h = {(p["job"], p["variant"]): p["hash"] for p in out.probes}
    for job in (0, 1):
        assert h[(job, "default")] != h[(job, "allreduce_as_reduce_bcast")]
    assert h[(0, "tuned")] == h[(0, "allreduce_as_reduce_bcast")]
    assert h[(1, "tuned")] == h[(1, "default")]


def test_nrep1_rule_from_the_one_element_reference(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                   tmp_path: Path) -> None:
    """Seed 000: t1 from the 1-element job (once per collective), then per job and variant
    nrep = max(ceil(t1 / min latency), k), capped by max_reps."""
    jobs = ("allreduce 1024 unsigned_char sum - default,allreduce_as_reduce_bcast\n"
            "reduce_scatter_block 64 int sum - default\n")
    out = drive(openmpi, openmpi_build, tmp_path, 2, jobs, "--stop", "nrep1", "--max-reps", "3000",
                "--time-budget", "0", "--k", "12", "--check-every", "1", "--warmup", "1")
    refs = {r["collective"]: r for r in out.references}
    assert sorted(refs) == ["allreduce", "reduce_scatter_block"]
    assert refs["allreduce"]["msg_bytes"] == 1 and refs["reduce_scatter_block"]["msg_bytes"] == 8
    for s in out.summaries:
        assert s["stop"] in ("converged", "max_reps")
        assert 12 <= s["nrep_target"] <= 3000
        job_records = out.records[(out.records.job == s["job"]) & (out.records.warmup == 0)]
        vi = out.jobs[s["job"]]["variants"].index(s["variant"])
        times = job_records[job_records.variant_idx == vi].runtime_s
        # every variant ran at least its own target; the target follows from t1 and the
        # pilot's minimum (the first b1 + b2 = 16 samples at most, hence >= the overall min)
        assert s["nrep"] >= s["nrep_target"]
        t1 = refs[out.jobs[s["job"]]["collective"]]["t1_s"]
        assert s["nrep_target"] <= max(min(-(-t1 // times.min()), 3000), 12)



def test_intel_algorithm_only_in_its_own_launch(intel: mpi.MpiLibrary, tmp_path: Path) -> None:
    """Intel MPI fixes algorithms per launch: lib:allreduce:N is measured only where the launch
    has I_MPI_ADJUST_ALLREDUCE=N, and then it is really that algorithm (result bits)."""
    art = build.ensure_built(intel)
    job = "allreduce 8000 double sum - lib:allreduce:1,lib:allreduce:8\n"
    hashes = {}
    for alg in ("1", "8"):
        out = drive(intel, art, tmp_path, 4, job, "--probe", rank_env={"I_MPI_ADJUST_ALLREDUCE": alg})
        assert [p["variant"] for p in out.probes] == [f"lib:allreduce:{alg}"]
        other = "8" if alg == "1" else "1"
        assert [s["variant"] for s in out.skips] == [f"lib:allreduce:{other}"]
        assert "I_MPI_ADJUST_ALLREDUCE=" + other in out.skips[0]["reason"]
        hashes[alg] = out.probes[0]["hash"]
    assert hashes["1"] != hashes["8"]


def test_intel_nonblocking_algorithm_is_applied_and_persistent_ignores_it(intel: mpi.MpiLibrary,
                                                                         tmp_path: Path) -> None:
    """I_MPI_ADJUST_IALLREDUCE is really applied to MPI_Iallreduce (result bits of an
    order-sensitive sum at 3 ranks: id 4, ring, differs from the library's choice; id 1 gives
    its bits) and only in a launch that sets it; MPI_Allreduce_init ignores it (its bits stay the
    library's under id 4), so Intel MPI has no algorithm of the persistent form."""
    art = build.ensure_built(intel)
    job = "allreduce 8000 double sum - default#nonblocking,default#persistent,lib:allreduce:1#nonblocking,lib:allreduce:4#nonblocking\n"
    hashes = {}
    for alg in ("", "1", "4"):
        out = drive(intel, art, tmp_path, 3, job, "--probe", rank_env={"I_MPI_ADJUST_IALLREDUCE": alg} if alg else None)
        hashes[alg] = {p["variant"]: p["hash"] for p in out.probes}
        skipped = {"1", "4"} - {alg}
        assert sorted(s["variant"] for s in out.skips) == [f"lib:allreduce:{a}#nonblocking" for a in sorted(skipped)]
        assert all(f"I_MPI_ADJUST_IALLREDUCE={s['variant'].split(':')[2].split('#')[0]}" in s["reason"] for s in out.skips)
    library = hashes[""]["default#nonblocking"]
    assert hashes[""] == {"default#nonblocking": library, "default#persistent": library}
    assert hashes["1"] == {"default#nonblocking": library, "default#persistent": library,
                           "lib:allreduce:1#nonblocking": library}
    ring = hashes["4"]["lib:allreduce:4#nonblocking"]
    assert ring != library
    assert hashes["4"] == {"default#nonblocking": ring, "default#persistent": library, "lib:allreduce:4#nonblocking": ring}


def test_intel_algorithms_are_proven_against_a_launch_without_their_setting(intel: mpi.MpiLibrary,
                                                                          tmp_path: Path) -> None:
    """Under I_MPI_ADJUST_IALLREDUCE=4 the library's own MPI_Iallreduce is the ring, so its proof
    judges it against the library's results of a launch without the setting (--reference-out,
    then --reference-in): at 3 ranks the ring adds floats in another order than the library's
    choice (that class fails), ints exactly (that one passes). Results of another member's cases
    are refused, not judged (tests/test_native_export.py runs the proof's Python side)."""
    art = build.ensure_built(intel)
    ref = str(tmp_path / "reference")
    member = ["--member", "lib:allreduce:4#nonblocking", "--classes",
              "separate/builtin/float/16-2047B,separate/builtin/int/16-2047B"]
    argv = [str(art.selftest), "--sweep", *member]
    assert launch.run(intel, 3, argv + ["--reference-out", ref], timeout=300).returncode == 0
    out = launch.run(intel, 3, argv + ["--reference-in", ref], rank_env={"I_MPI_ADJUST_IALLREDUCE": "4"}, timeout=300)
    assert out.returncode == 0, out.stderr
    [line] = [json.loads(x) for x in out.stdout.splitlines() if x.startswith('{"type":"proof"')]
    assert (sorted(line["tested"]), line["failed"]) == (["separate/builtin/float/16-2047B",
                                                         "separate/builtin/int/16-2047B"],
                                                        ["separate/builtin/float/16-2047B"])
    other = launch.run(intel, 3, [str(art.selftest), "--sweep", "--member", "lib:bcast:2#nonblocking",
                                  "--reference-in", ref], rank_env={"I_MPI_ADJUST_IBCAST": "2"}, timeout=300)
    assert other.returncode != 0
    assert "the reference results are out of step with this launch's cases" in other.stderr


@pytest.mark.parametrize(("sync", "metric"), [("barrier", "max"), ("dissemination", "makespan"), ("none", "max")])
def test_summary_statistics_follow_the_chosen_metric(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                     tmp_path: Path, sync: str, metric: str) -> None:
    """The stopping statistics rank 0 reports are those of the records it wrote, on the metric
    asked for: recomputed here from the raw records."""
    out = drive(openmpi, openmpi_build, tmp_path, 2, "scan 256 int sum - default,scan_as_exscan_reducelocal\n",
                "--sync", sync, "--metric", metric, *FIXED)
    assert out.launch["sync"] == sync and out.launch["metric"] == metric
    column = "runtime_s" if metric == "max" else "makespan_s"
    for vi, name in enumerate(out.jobs[0]["variants"]):
        s = next(s for s in out.summaries if s["variant"] == name)
        x = out.records[(out.records.variant_idx == vi) & (out.records.warmup == 0) & (out.records.valid == 1)][column]
        assert s["valid"] == len(x) == 20
        # records carry 10 significant digits, the driver computed on full doubles
        assert s["rse"] == pytest.approx(x.std(ddof=1) / len(x) ** 0.5 / x.mean(), rel=1e-6)


def test_records_are_streamed_before_a_crash(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                             tmp_path: Path) -> None:
    """Killed mid-job, the driver leaves every finished chunk on disk, and no `end` line."""
    import os
    import signal
    import time

    job_file = tmp_path / "jobs.txt"
    job_file.write_text("allreduce 64 unsigned_char sum - default,default#aa\n")
    out = tmp_path / "out.txt"
    proc = launch.popen(openmpi, 2, [str(openmpi_build.bench), "run", str(job_file), "--out", str(out),
                                     "--stop", "fixed", "--max-reps", "100000000", "--time-budget", "0",
                                     "--check-every", "10"])
    deadline = time.monotonic() + 60
    while (not out.exists() or out.read_text().count("\nR,") < 100) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    text = out.read_text()
    parsed = read_driver_output(text)
    assert not parsed.ended and parsed.summaries == []
    assert len(parsed.records) >= 100
    # written a chunk at a time (one write of < 4 KiB): warm-up with the first chunk, then
    # whole chunks of 10 rounds of 2 variants
    assert text.endswith("\n")
    assert (len(parsed.records) - 2 * 3) % 20 == 0


def test_every_line_has_exactly_the_keys_of_the_spec(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                     tmp_path: Path) -> None:
    """native/spec/driver.toml declares the JSON lines once: the driver's real output carries
    every type it lists, each with exactly its keys in its order (the C writer is hand-written,
    so this is what binds it to the table the front end reads with)."""
    from colltune.measure.driver_options import LINE_KEYS

    jobs = ("allreduce 1024 int sum - default,no_such_variant\n"
            "reduce_scatter_block 7 unsigned_char sum - default\n")
    job_file = tmp_path / "jobs.txt"
    job_file.write_text(jobs)
    seen: dict[str, list[str]] = {}
    # --probe runs the probe alone, so two launches show every line
    for mode in (["--stop", "nrep1", "--max-reps", "20", "--warmup", "1"], ["--probe"]):
        out = tmp_path / "out.txt"
        proc = launch.run(openmpi, 2, [str(openmpi_build.bench), "run", str(job_file), "--out", str(out),
                                       "--time-budget", "0", "--check-every", "5", *mode], timeout=120)
        assert proc.returncode == 0, proc.stderr
        for line in out.read_text().splitlines():
            if line.startswith("{"):
                keys = list(json.loads(line))
                assert keys[0] == "type"
                kind = json.loads(line)["type"]
                assert keys[1:] == seen.setdefault(kind, keys[1:]), line
    assert {kind: tuple(keys) for kind, keys in seen.items()} == LINE_KEYS


def test_a_line_without_its_keys_is_refused() -> None:
    from colltune.measure.settings import BenchError

    with pytest.raises(BenchError, match="'summary' line without nrep, valid.*colltune mpi build"):
        read_driver_output('{"type":"summary","job":0,"variant":"default"}\n')
    # unknown types (a newer driver's extra lines) and truncated lines (a crash) are left alone
    assert read_driver_output('{"type":"later","x":1}\n{"type":"summ').summaries == []
