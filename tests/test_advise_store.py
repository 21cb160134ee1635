"""`colltune advise` keeps its advice in the results database (table `advice`): written and read
back exactly, the `<db>.advise` side file of earlier versions shown read-only and imported once at
the first read-write open, the report section reading the table; --verify's figures per changed
point and per call pattern."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from colltune.advise import patterns as pat
from colltune.advise.collectives import Choice
from colltune.advise.points import AppPoint
from colltune.advise.profile_run import Point, ProfileRun, RankProfile
from colltune.advise.verify import Comparison, PatternFigure, PointFigure, Verification, pattern_seconds, point_label
from colltune.report.context import ReportContext
from colltune.report.sections import advise as section
from colltune.store import Store, advise_side_file


def _report(library: str, saving: float, title: str) -> dict:
    return {"library": library, "family": "openmpi", "nprocs": 2, "wall_s": 1.5, "shares": {},
            "predicted_saving_s": saving, "where": None, "patterns": [], "points": [],
            "findings": [{"strategy": "collectives", "title": title, "evidence": [], "changes": {"colltune": "x"},
                          "saving_s": saving, "warning": None, "data": {}}],
            "missing_points": [], "environment": {}, "files": {}}


def test_advice_round_trips(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    report = _report("Open MPI v5.0.11", 0.004, "MPI_Bcast at 2 ranks")
    with Store(db) as store:
        advice_id = store.add_advice(report, command="mpiexec -n 2 ./app", out_dir=tmp_path / "advise")
    with Store(db, read_only=True) as store:
        rows = store.advice()
        assert store.latest_advice() == report
    assert rows.drop(columns=["created", "report"]).to_dict("records") == [
        {"advice_id": advice_id, "command": "mpiexec -n 2 ./app", "out_dir": str(tmp_path / "advise"),
         "library": "Open MPI v5.0.11", "nprocs": 2, "wall_s": 1.5, "predicted_saving_s": 0.004}]


def _side_file(tmp_path: Path, db: Path) -> tuple[dict, dict]:
    """A side file as colltune before the table wrote it: the paths of two advise.json files that
    exist (written at 10:00 and 11:00) and of one that was removed since."""
    old, new = _report("Open MPI v5.0.11", 0.001, "old"), _report("MPICH 5.0.2", 0.002, "new")
    paths = []
    for name, report, hour in (("old", old, 10), ("gone", None, 0), ("new", new, 11)):
        path = tmp_path / name / "advise.json"
        if report is not None:
            path.parent.mkdir()
            path.write_text(json.dumps(report, indent=1) + "\n")
            stamp = datetime(2026, 11, 20, hour, tzinfo=timezone.utc).timestamp()
            os.utime(path, (stamp, stamp))
        paths.append(f"{path}\n")
    advise_side_file(db).write_text("".join(paths))
    return old, new


def test_side_file_is_shown_read_only_then_imported_once(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    Store(db).close()
    old, new = _side_file(tmp_path, db)
    with Store(db, read_only=True) as store:   # `colltune report` on the upgraded colltune
        rows = store.advice()
        assert store.latest_advice() == new
    assert rows[["advice_id", "library", "out_dir", "command"]].values.tolist() == [
        ["20261120-100000-side0", "Open MPI v5.0.11", str(tmp_path / "old"), ""],
        ["20261120-110000-side2", "MPICH 5.0.2", str(tmp_path / "new"), ""]]
    assert advise_side_file(db).exists()
    with Store(db) as store:                    # the first read-write open imports it
        assert store.advice()["advice_id"].tolist() == ["20261120-100000-side0", "20261120-110000-side2"]
    assert not advise_side_file(db).exists()
    imported = db.with_name("c.duckdb.advise.imported")
    assert imported.read_text().splitlines()[0] == str(tmp_path / "old" / "advise.json")
    imported.rename(advise_side_file(db))       # renamed back (a copy restored): never imported twice
    with Store(db) as store:
        assert [json.loads(r) for r in store.advice()["report"]] == [old, new]
        store.add_advice(_report("Open MPI v5.0.11", 0.003, "newest"), command="", out_dir="o")
        assert store.latest_advice()["findings"][0]["title"] == "newest"


def _context(tmp_path: Path, report: dict | None) -> ReportContext:
    db = tmp_path / "r.duckdb"
    with Store(db) as store:
        if report is not None:
            store.add_advice(report, command="mpiexec -n 2 ./app", out_dir="advise")
    return ReportContext(db, None, stored=False)


def test_report_section_reads_the_table(tmp_path: Path) -> None:
    report = _report("Open MPI v5.0.11", 0.004, "MPI_Bcast at 2 ranks, 4096..8191 bytes: bcast_as_scatter_allgather")
    report["verification"] = {"measured_gain_s": 0.0021, "predicted_gain_s": 0.004,
                              "agreement": "in-situ own cost at the advised points: off",
                              "points": [], "patterns": [{"verdict": "reduce_bcast: ... at most that cost"}]}
    ctx = _context(tmp_path, report)
    page = section.render(ctx)
    ctx.close()
    assert page == (
        '<p class="lead">2 ranks of Open MPI v5.0.11, wall 1.500 s; predicted saving 4.00 ms.</p>'
        "<p>--verify: measured gain 2.1 ms vs predicted 4.0 ms: in-situ own cost at the advised points: off</p>"
        "<ul><li>reduce_bcast: ... at most that cost</li></ul>"
        "<ol><li><b>MPI_Bcast at 2 ranks, 4096..8191 bytes: bcast_as_scatter_allgather</b> (predicted saving "
        "4.00 ms)<br><code>colltune: x</code></li></ol>")
    (tmp_path / "e").mkdir()
    empty = _context(tmp_path / "e", None)
    assert section.render(empty) is None
    empty.close()


# -- --verify per point and per pattern ------------------------------------------------------

def _rank(rank: int, points: list[Point]) -> RankProfile:
    return RankProfile(rank, 2, 10**9, "h", "Open MPI v5.0.11", 2, None, 16, (rank,), points=points)


def _coll(name: str, site: int, calls: int, total_ns: int, samples: int = 0, own_ns: int = 0) -> Point:
    return Point("coll", name, site, 2, 4, calls, total_ns, total_ns, 16 * calls, samples, own_ns, 0, 0)


def test_pattern_seconds_counts_the_pattern_share_of_its_sites() -> None:
    # Rank 0: 100 reduces at 0x10 (never sampled: all own cost, 1 ms), 100 bcasts at 0x20 with 10
    # samples of 2 us each (own cost 100 x 2 us = 0.2 ms of its 0.5 ms); 50 pairs of the pattern.
    run = ProfileRun(Path("."), [
        _rank(0, [_coll("reduce", 0x10, 100, 1_000_000), _coll("bcast", 0x20, 100, 500_000, 10, 20_000)]),
        _rank(1, [_coll("reduce", 0x10, 100, 400_000), _coll("bcast", 0x20, 100, 400_000)])])
    p = pat.Pattern("reduce_bcast", "0x10", "0x20", "MPI_Reduce", "MPI_Bcast", 2, 4, 50, 16.0)
    other = pat.Pattern("barrier_before_sync", "0x30", "0x20", "MPI_Barrier", "MPI_Bcast", 2, 4, 10, 16.0)
    # rank 0: 0.5 x 1 ms + 0.5 x 0.2 ms = 0.6 ms; rank 1: 0.5 x 0.4 + 0.5 x 0.4 = 0.4 ms
    # the barrier site made no call: 10 of the 100 bcasts, rank 1's 40 us
    assert pattern_seconds(run, [p, other]) == pytest.approx([600e-6, 40e-6])
    assert pattern_seconds(run, []) == []


def test_point_and_pattern_verdicts() -> None:
    choice = Choice(AppPoint("bcast", 2, 12, calls=300, own_s=0.05), 4096, 100e-6, "bcast_as_scatter_allgather", 20e-6)
    assert point_label(choice) == "MPI_Bcast, 2 ranks, 4096..8191 B -> bcast_as_scatter_allgather"
    fig = PointFigure(("bcast", 2, 12), Comparison(point_label(choice), [0.050, 0.051, 0.049], [0.026, 0.025, 0.027]),
                      choice.saving_s)
    assert fig.verdict() == ("MPI_Bcast, 2 ranks, 4096..8191 B -> bcast_as_scatter_allgather: prediction 24.0 ms "
                             "within 30% of the gain, measured 24.0 ms +- 1.3 ms")
    p = pat.Pattern("reduce_bcast", "f (a.c:3)", "f (a.c:4)", "MPI_Reduce", "MPI_Bcast", 2, 4, 50, 16.0,
                    saving_per_pair_s=10e-6)
    cost = Comparison("reduce_bcast", [0.0010, 0.0011, 0.0009], [0.0010, 0.0010, 0.0010])
    head = ("reduce_bcast: MPI_Reduce at f (a.c:3), then MPI_Bcast at f (a.c:4): a change to the source, not "
            "applied by --verify (both sides run the calls): they cost 1.0 ms in situ +- 90.6 us without the "
            "run-time advice, 1.0 ms with it")
    assert PatternFigure(p, cost).verdict() == (
        f"{head}; the predicted saving 500.0 us is at most that cost; fuse the calls and compare this figure at "
        "the new call site")
    p.saving_per_pair_s = 40e-6   # 2 ms: more than the calls cost
    assert PatternFigure(p, cost).verdict() == (
        f"{head}; the predicted saving 2.0 ms is off: more than the calls cost in situ, and fusing them cannot "
        "save more than that")
    p.saving_per_pair_s = None
    assert PatternFigure(p, cost).verdict() == f"{head}; no saving predicted (the database lacks the fused call)"
    v = Verification(cost, cost, 0.0, True, (fig, fig), (PatternFigure(p, cost),))
    assert v.details() == [fig.verdict(), fig.verdict(), PatternFigure(p, cost).verdict()]
    assert [f["label"] for f in v.as_json()["points"]] == [point_label(choice)] * 2   # type: ignore[index]
    assert Verification(cost, cost, 0.0, True, (fig,)).details() == []   # one point: the total says it


def test_verify_reports_each_pattern_in_situ(openmpi, openmpi_build, tmp_path):
    """On tests/programs/advise_patterns.c, without a database (no collective advice: an A/A
    comparison), --verify gives every pattern advised its in-situ figure on both sides."""
    from advise_support import compile_advise_programs
    from click.testing import CliRunner

    from colltune.commands.advise import command as advise_cmd

    program = compile_advise_programs(openmpi, tmp_path)["advise_patterns"]
    out = tmp_path / "out"
    res = CliRunner().invoke(advise_cmd, ["--db", str(tmp_path / "none.duckdb"), "--out", str(out), "--verify",
                                          "--runs", "2", "--", str(openmpi.mpiexec), "-n", "2", "--bind-to", "core",
                                          str(program)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    report = json.loads((out / "advise.json").read_text())
    v = report["verification"]
    advised = [(f["data"]["pattern"], f["data"]["pairs"]) for f in report["findings"] if f["strategy"] == "pattern"]
    assert sorted((f["pattern"], f["pairs"]) for f in v["patterns"]) == sorted(advised)
    # no database, no saving predicted: advised whatever they cost
    assert {("reduce_bcast", 12), ("small_reductions", 8)} <= set(advised)
    assert v["changed"] is False and v["predicted_gain_s"] == 0 and v["points"] == []
    for f in v["patterns"]:
        assert len(f["default_s"]) == len(f["tuned_s"]) == 2 and min(f["default_s"] + f["tuned_s"]) > 0
    [fuse] = [f for f in v["patterns"] if f["pattern"] == "reduce_bcast"]
    assert fuse["verdict"].startswith(
        "reduce_bcast: MPI_Reduce at planted (advise_patterns.c:31), then MPI_Bcast at planted "
        "(advise_patterns.c:32): a change to the source, not applied by --verify (both sides run the calls): "
        "they cost ")
    assert fuse["verdict"].endswith("; no saving predicted (the database lacks the fused call)")
    # the terminal names the pattern by its finding's number and brief (the verdict is the JSON's)
    number = 1 + [f["data"].get("pattern") for f in report["findings"]].index("reduce_bcast")
    assert f"#{number} Reduce+Bcast 12x planted (advise_patterns.c:31, :32): one MPI_Allreduce" in res.output
    with Store(tmp_path / "none.duckdb", read_only=True) as store:   # the advice is recorded, verification too
        assert store.latest_advice() == report
