"""Call patterns one call could replace (native/runtime/profcomm.c, advise/patterns.py): each
planted pattern found exactly with its sites, every near miss not (tests/programs/
advise_patterns.c), Fortran's Reduce + Bcast (tests/programs/advise_fortran.f90, in
test_advise_where.py), and the predicted saving from a database."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from advise_support import compile_advise_programs, profiled
from click.testing import CliRunner

from colltune.advise import collectives, measure, patterns, profile_run
from colltune.advise.points import AppPoint
from colltune.commands.advise import command as advise_cmd
from colltune.measure import runner
from colltune.measure.settings import BenchSettings
from colltune.store import Store


@pytest.fixture(scope="module")
def programs(openmpi, tmp_path_factory):
    return compile_advise_programs(openmpi, tmp_path_factory.mktemp("advise"))


PLANTED = [
    ("reduce_bcast", "planted (advise_patterns.c:31)", "planted (advise_patterns.c:32)", "MPI_Reduce", "MPI_Bcast",
     5, 12, 32),
    ("small_reductions", "planted (advise_patterns.c:36)", "planted (advise_patterns.c:37)", "MPI_Allreduce",
     "MPI_Allreduce", 4, 8, 24),
    ("barrier_before_sync", "planted (advise_patterns.c:41)", "planted (advise_patterns.c:42)", "MPI_Barrier",
     "MPI_Allreduce", 3, 6, 8),
]


@pytest.mark.parametrize("nprocs", [2, 3])
def test_planted_patterns_and_no_near_miss(openmpi, openmpi_build, programs, tmp_path, nprocs):
    profiled(openmpi, openmpi_build, nprocs, [programs["advise_patterns"]], tmp_path / "p")
    run = profile_run.read(tmp_path / "p")
    found = [(p.name, p.first, p.second, p.first_call, p.second_call, p.bin, p.pairs, p.mean_bytes)
             for p in patterns.find(run)]
    assert found == [(n, a, b, c1, c2, bin_, pairs, float(size)) for n, a, b, c1, c2, bin_, pairs, size in PLANTED]
    for r in run.ranks:
        assert r.patterns_lost == 0
        # Only the root (rank 0) of the "another buffer" near miss can see that the broadcast
        # sends another buffer, and only ranks 0 and 1 make the point-to-point call in between:
        # the other ranks recorded those, and the minimum over ranks drops them.
        near = [p for p in r.patterns if p.name == "reduce_bcast" and p.pairs == 5]
        assert len(near) == {0: 0, 1: 1}.get(r.rank, 2)


def test_findings_and_predicted_saving(openmpi, openmpi_build, programs, tmp_path):
    profiled(openmpi, openmpi_build, 2, [programs["advise_patterns"]], tmp_path / "p")
    run = profile_run.read(tmp_path / "p")
    # A database where, back to back, Reduce + Bcast (the mock-up allreduce_as_reduce_bcast) takes
    # 105 ns and the library's Allreduce 5 ns at 32 bytes; 24 and 48 bytes for the small reductions.
    table = pd.DataFrame([
        {"collective": "allreduce", "nprocs": 2, "msg_bytes": 32, "variant": "default", "median_s": 5e-9},
        {"collective": "allreduce", "nprocs": 2, "msg_bytes": 32, "variant": "allreduce_as_reduce_bcast",
         "median_s": 105e-9},
        {"collective": "allreduce", "nprocs": 2, "msg_bytes": 24, "variant": "default", "median_s": 4e-6},
        {"collective": "allreduce", "nprocs": 2, "msg_bytes": 48, "variant": "default", "median_s": 4.5e-6}])
    pats = patterns.find(run)
    patterns.predict(pats, run, table)
    by = {p.name: p for p in pats}
    assert by["reduce_bcast"].saving_per_pair_s == pytest.approx(100e-9)
    assert by["reduce_bcast"].saving_s == pytest.approx(12 * 100e-9)
    assert by["small_reductions"].saving_per_pair_s == pytest.approx(2 * 4e-6 - 4.5e-6)
    barrier = by["barrier_before_sync"]
    assert barrier.saving_per_pair_s is not None and barrier.saving_per_pair_s > 0   # measured in this run
    # A fixed wall time: the run's own (0.3-1 s with the machine's load) would put 1.2 us on both
    # sides of the negligible share (patterns.NEGLIGIBLE of the run) from run to run.
    [f] = [f for f in patterns.findings(pats, 0.001) if f.data["pattern"] == "reduce_bcast"]
    assert f.title == ("MPI_Bcast of MPI_Reduce's result from the same root, directly after it, 12 times: "
                       "one MPI_Allreduce would do")
    assert f.changes == {"source": "replace MPI_Reduce at planted (advise_patterns.c:31) and MPI_Bcast at "
                                   "planted (advise_patterns.c:32) by one MPI_Allreduce into the reduce's "
                                   "result buffer"}
    assert f.saving_s == pytest.approx(1.2e-6)
    # Without a database: no prediction, and --measure is told to time the calls back to back.
    empty = pd.DataFrame(columns=["collective", "nprocs", "msg_bytes", "variant", "median_s"])
    pats = patterns.find(run)
    patterns.predict(pats, run, empty)
    # One point per log2 bin (the 48 bytes of the fused small reductions share the 32-byte bin).
    assert sorted((p.collective, p.nprocs, p.bin, p.mean_bytes, p.loop) for p in patterns.missing_points(pats)) == [
        ("allreduce", 2, 4, 24, True), ("allreduce", 2, 5, 32, True)]


def test_cli_reports_patterns(openmpi, openmpi_build, programs, tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(advise_cmd, ["--db", str(tmp_path / "none.duckdb"), "--out", str(out), "--",
                                          str(openmpi.mpiexec), "-n", "2", "--bind-to", "core",
                                          str(programs["advise_patterns"])], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    report = json.loads((out / "advise.json").read_text())
    assert [(p["name"], p["pairs"]) for p in report["patterns"]] == [(n, pairs) for n, *_, pairs, _ in PLANTED]
    kinds = [f["data"]["pattern"] for f in report["findings"] if f["strategy"] == "pattern"]
    assert sorted(kinds) == sorted(n for n, *_ in PLANTED)
    barrier = next(r for r in report["where"]["collectives"] if r["name"] == "MPI_Barrier")
    assert barrier["calls"] == 6 + 2 * 5 and barrier["bytes_min"] is None


def test_moving_buffers(openmpi, openmpi_build, programs, tmp_path):
    # ExaML reduces into other buffers almost every call: the memo of a site's last call hits
    # anyway, and the broadcast's buffer is checked against the reduce's result on every call.
    profiled(openmpi, openmpi_build, 2, [programs["advise_moving"]], tmp_path / "p")
    run = profile_run.read(tmp_path / "p")
    assert [(p.name, p.first, p.second, p.pairs) for p in patterns.find(run)] == [
        ("reduce_bcast", "main (advise_moving.c:13)", "main (advise_moving.c:14)", 10)]
    assert sorted(p.pairs for r in run.ranks for p in r.patterns) == [10, 20]   # the root, the other


def test_measure_times_pattern_points_back_to_back():
    # --measure: a pattern's points in runs of their own, kind "loop", back to back, the default
    # against the pair's mock-up for MPI_Allreduce; the application's own points synchronized,
    # with the library's algorithms.
    points = [AppPoint("allreduce", 2, 5, mean_bytes=32, loop=True), AppPoint("allreduce", 2, 5, mean_bytes=32),
              AppPoint("reduce", 3, 4, mean_bytes=16, loop=True), AppPoint("allreduce", 2, 4, mean_bytes=24, loop=True)]
    runs = measure.plan(points, "openmpi")
    assert [(b.collectives, b.nprocs, b.sizes, b.sync, b.variants, b.barrier, b.library_algorithms,
             measure.kind_of(b)) for b in runs] == [
        (["allreduce"], [2], [24, 32], "none", ["default", "allreduce_as_reduce_bcast"], False, False, "loop"),
        (["allreduce"], [2], [32], "dissemination", None, True, True, "bench"),
        (["reduce"], [3], [16], "none", ["default"], False, False, "loop")]


def test_loop_medians_are_kept_apart(openmpi, openmpi_build, tmp_path):
    # The same points timed back to back and from synchronized starts, in one database: advise's
    # pattern predictions read only the first, its collective choices and `learn` only the second.
    db = tmp_path / "db.duckdb"
    run_ids = {}
    for sync, kind in (("none", "loop"), ("dissemination", "bench")):
        bench = BenchSettings(collectives=["allreduce"], sizes=[32], nprocs=[2], launches=1, sync=sync,
                              variants=["default", "allreduce_as_reduce_bcast"], barrier=False,
                              stop={"methods": [], "max_reps": 30})
        run_ids[sync] = runner.run(bench, db, command="test", kind=kind)
    with Store(db, read_only=True) as store:
        m = store.measurements(valid_only=True, include_warmup=False)
        learnt = store.library_medians(store.run_info(run_ids["none"])["mpi_name"])
    assert set(m.groupby("run_id")["sync"].unique().map(tuple)) == {("none",), ("dissemination",)}
    for loop, sync in ((True, "none"), (False, "dissemination")):
        expect = m[m["run_id"] == run_ids[sync]].groupby("variant")["runtime_s"].median()
        got = collectives.medians(db, "openmpi", loop=loop).set_index("variant")["median_s"]
        assert got.to_dict() == expect.to_dict() and len(got) == 2
    assert set(learnt["launch"].str.split(":").str[0]) == {run_ids["dissemination"]}
