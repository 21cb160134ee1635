"""The HTML report: every section, embedded plots, no external resources, the section hook."""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path

import duckdb
import pytest
from check_synth import Truth, simulate, write_db
from click.testing import CliRunner

import colltune.report.sections
from colltune.cli import main
from colltune.report import html as report
from colltune.verify import advice, check
from colltune.verify.quality import point_penalties

BUILTIN = ["summary", "environment", "method", "grouped", "advice", "slowdown", "heatmap", "calibration",
           "quality", "details"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    truth = Truth(base={"gather": 3e-6}, factors={
        ("bcast", "bcast_as_scatter_allgather"): {65536: 0.75, 1048576: 0.4},
        ("allreduce", "lib:allreduce:ring"): {1024: 0.6},
        ("gather", "gather_as_allgather"): 0.8,  # at 3 us: within one 2 us barrier at small sizes
        ("gather", "default"): {1048576: 3.0}, ("gather", "default#aa"): {1048576: 3.0},
    })
    plan = {"bcast": ["default", "default#aa", "bcast_as_scatter_allgather", "bcast_as_allgatherv"],
            "allreduce": ["default", "default#aa", "lib:allreduce:ring"],
            "gather": ["default", "default#aa", "gather_as_allgather"]}
    path = write_db(tmp_path_factory.mktemp("rep") / "r.duckdb",
                    simulate(truth, plan, [8, 1024, 65536, 1048576], launches=8, reps=20, seed=3))
    check.check_db(path)
    return path


def _sections(html: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)">', html)


def test_report_has_every_section_and_embedded_plots(db: Path, tmp_path: Path) -> None:
    path = report.write_report(db, tmp_path / "out")
    html = path.read_text()
    assert [s for s in _sections(html) if s in BUILTIN] == BUILTIN  # other modules may add sections
    images = re.findall(r'<img class="plot" alt="([^"]+)" src="data:image/png;base64,([^"]+)"', html)
    alts = [a for a, _ in images]
    # one slowdown plot per collective, one heat map, one A/A plot
    assert alts == ["slowdown of allreduce at 4 processes", "slowdown of bcast at 4 processes",
                    "slowdown of gather at 4 processes", "heat map of slowdowns at 4 processes", "A/A calibration"]
    for _, data in images:
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"
    # self-contained: nothing fetched from anywhere
    assert not re.search(r'<(script|link|iframe)\b', html)
    assert not re.search(r'src="(?!data:)', html)
    assert "<title>colltune check: Open MPI 5.0.11, 4 processes</title>" in html


def test_report_content_reflects_the_verdicts(db: Path, tmp_path: Path) -> None:
    html = report.write_report(db, tmp_path / "o").read_text()
    assert "the verdicts stored by <code>colltune check</code>" in html
    # advice per kind, with the library's own setting for the lib: algorithm
    assert "Mock-ups faster than the library&#x27;s collective" in html
    assert "coll_tuned_allreduce_algorithm 4" in html
    assert "Splitting a message is faster (split-robustness) (1)" in html
    assert "MPI_Gather(1 MiB) takes" in html
    assert "Uncertain: the gain is within one MPI_Barrier" in html  # gather at small sizes
    assert "passed: the check does not see differences that are not there" in html


def test_report_of_an_unchecked_run_judges_it_now(tmp_path: Path) -> None:
    path = write_db(tmp_path / "u.duckdb", simulate(Truth(), {"bcast": ["default", "default#aa"]}, [8, 64]))
    html = report.write_report(path, tmp_path / "o").read_text()
    assert "verdicts computed now with the default settings (none were stored)" in html
    assert "Nothing to do: no violation was found." in html
    assert check.load_verdicts(path).empty  # the report never writes to the database


def test_report_without_aa_says_calibration_is_missing(tmp_path: Path) -> None:
    path = write_db(tmp_path / "n.duckdb", simulate(Truth(), {"bcast": ["default", "bcast_as_allgatherv"]}, [8]))
    html = report.write_report(path, tmp_path / "o").read_text()
    assert "this run has no <code>default#aa</code> variant" in html


def test_extra_sections_from_the_package_are_rendered_in_order(db: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    (plugin_dir / "tuned_demo.py").write_text(
        "from colltune.report.html import Section\n"
        "def render(ctx):\n"
        "    return '<p>tuned rows: ' + str(len(ctx.verdicts)) + '</p>'\n"
        "SECTIONS = [Section(id='demo', title='Demo section', render=render, order=55),\n"
        "            Section(id='skipped', title='Skipped', render=lambda ctx: None, order=56)]\n")
    monkeypatch.setattr(colltune.report.sections, "__path__", [str(plugin_dir)])
    monkeypatch.setattr(report, "SECTIONS", [s for s in report.SECTIONS if s.id in BUILTIN])
    monkeypatch.delitem(sys.modules, "colltune.report.sections.tuned_demo", raising=False)
    html = report.write_report(db, tmp_path / "o").read_text()
    assert _sections(html) == BUILTIN[:5] + ["demo"] + BUILTIN[5:]
    n = len(check.load_verdicts(db))
    assert f"<p>tuned rows: {n}</p>" in html
    assert 'href="#demo">Demo section</a>' in html and "Skipped" not in html


def test_report_cli(db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "r")])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "r" / "report.html").is_file()
    missing = runner.invoke(main, ["report", "--db", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "r")])
    assert missing.exit_code == 2
    assert "no results database at" in missing.output


def test_library_settings_per_family() -> None:
    assert advice.library_setting("openmpi", "bcast", "binomial") == (
        "mpiexec --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm 6 ...")
    assert advice.library_setting("mpich", "allreduce", "ring") == (
        "export MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring MPIR_CVAR_DEVICE_COLLECTIVES=none")
    assert advice.library_setting("intel", "reduce", "x") == "export I_MPI_ADJUST_REDUCE=<id of x: impi_info -a>"
    assert advice.library_family({"mpi_name": "mpich", "abi_family": "mpich"}) == "mpich"
    assert advice.library_family({"mpi_name": "intel", "abi_family": "mpich"}) == "intel"
    assert report.short_library_name({"mpi_name": "mpich", "mpi_version": "MPICH Version: 5.0.2 ..."}) == "MPICH 5.0.2"


def test_heatmap_cells_follow_severity(db: Path) -> None:
    ctx = report.build_context(db)
    pts = point_penalties(ctx.verdicts, cautious=False).set_index(["collective", "msg_bytes"])
    assert pts.loc[("bcast", 1048576), "severity"] == "very critical"  # 2.5x
    assert pts.loc[("bcast", 65536), "severity"] == "tolerable"  # 1.33x
    # 8 B: every comparison shown inside the tolerance once the directional correction steps down
    # past the clear ones (issue 36), so a scored point without violation
    assert pts.loc[("bcast", 8), "severity"] == "very good"
    v = ctx.verdicts
    assert set(v[(v["collective"] == "bcast") & (v["msg_bytes"] == 8) & (v["kind"] == "pattern")]["verdict"]) == {
        "no violation"}
    # corrected per test over the whole family (the rule before, without a margin), none of them is
    # shown equivalent: a point with no decided comparison is not scored
    separate = check.judge(check.load_run(db), check.CheckSettings(rule="separate", margin=0.0)).verdicts
    assert set(separate[(separate["collective"] == "bcast") & (separate["msg_bytes"] == 8)
                        & (separate["kind"] == "pattern")]["verdict"]) == {"undecided"}
    assert ("bcast", 8) not in point_penalties(separate, cautious=False).set_index(["collective", "msg_bytes"]).index


def test_failed_calibration_is_shown_first(tmp_path: Path) -> None:
    # a broken A/A copy (it is 30% faster than the default it copies) must fail the calibration
    m = simulate(Truth(factors={("bcast", "default#aa"): 0.7}), {"bcast": ["default", "default#aa"]}, [8, 64],
                 seed=15)
    path = write_db(tmp_path / "f.duckdb", m)
    res = check.check_db(path)
    assert res.calibration()["passed"] is False and res.calibration()["violations"] == 2
    html = report.write_report(path, tmp_path / "o").read_text()
    assert "The A/A calibration failed:" in html
    assert html.index("The A/A calibration failed:") < html.index('<section id="environment">')


def test_report_says_which_library_algorithms_the_proof_refuses(db: Path, tmp_path: Path) -> None:
    html = report.write_report(db, tmp_path / "none").read_text()
    assert 'id="proof"' in html and "are <b>unproven</b>" in html
    # the run's bench binary names its build directory, where the proof lives
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    (build_dir / "proof.txt").write_text(
        "colltune-proof 2\nmember lib:allreduce:ring passed separate/builtin/float\n"
        "fail lib:allreduce:ring separate/builtin/int8 result on rank 0: differs\n")
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db.read_bytes())
    con = duckdb.connect(str(copy))
    run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    con.execute("INSERT INTO environment VALUES (?, 0, 'bench_binary', ?)",
                [run_id, str(build_dir / "colltune-bench")])
    con.close()
    html = report.write_report(copy, tmp_path / "with").read_text()
    assert "1 library algorithms measured; 1 of them are refused" in html
    assert "<td>lib:allreduce:ring</td><td>1</td><td>separate/builtin/int8</td>" in html


def test_an_estimate_outside_its_interval_gets_no_error_bar_on_that_side() -> None:
    # make demo's check once died drawing the A/A calibration: a copy's relative difference lay
    # outside its 95% interval (an interval of another statistic need not contain the estimate)
    import numpy as np

    from colltune.report.context import interval_bars

    below, above = interval_bars(np.array([0.25, -0.125, 0.0]), np.array([0.375, -0.25, np.nan]),
                                 np.array([0.5, 0.125, 0.0625]))
    assert below.tolist() == [0.0, 0.125, 0.0] and above.tolist() == [0.25, 0.25, 0.0625]
