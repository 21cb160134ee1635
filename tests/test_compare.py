"""`colltune compare` on synthetic databases with planted differences (tests/check_synth.py)."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from check_synth import Truth, simulate, write_db
from click.testing import CliRunner

from colltune.cli import main
from colltune.compare import config, data, judge
from colltune.compare import stats as cstats
from colltune.compare import tables as ctables
from colltune.verify import stats as vstats
from colltune.verify.stats import Interval

PLAN = {"allreduce": ["default", "default#aa", "allreduce_as_reduce_bcast"],
        "bcast": ["default", "default#aa", "bcast_as_scatter_allgather"],
        "reduce": ["default", "default#aa"]}
SIZES = [8, 1024]


def _library_db(path: Path, name: str, factors: dict[tuple[str, str], float], seed: int,
                plan: dict[str, list[str]] = PLAN, sizes: list[int] = SIZES, launch_sigma: float = 0.02) -> Path:
    # The A/A copy is the same code as the default: it gets the default's factor.
    factors = {**factors, **{(c, "default#aa"): f for (c, v), f in factors.items() if v == "default"}}
    write_db(path, simulate(Truth(factors=factors), plan, sizes, launches=10, launch_sigma=launch_sigma, seed=seed),
             run_id=f"run-{name}")
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE runs SET mpi_name = ?", [name])
        con.execute("UPDATE environment SET value = ? WHERE key = 'mpi_version'", [f"{name} 1.0"])
    return path


# Planted: B (mpich) runs allreduce 2x faster, A (openmpi) runs bcast 1.5x faster, reduce alike.
PLANTED = {("allreduce", "default"): 1.0, ("bcast", "default"): 1.0, ("reduce", "default"): 1.0}
PLANTED_B = {("allreduce", "default"): 0.5, ("bcast", "default"): 1.5, ("reduce", "default"): 1.0}


@pytest.fixture
def two_dbs(tmp_path: Path) -> tuple[Path, Path]:
    return (_library_db(tmp_path / "a.duckdb", "openmpi", PLANTED, seed=1),
            _library_db(tmp_path / "b.duckdb", "mpich", PLANTED_B, seed=2))


def test_planted_differences_give_the_planted_verdicts(two_dbs: tuple[Path, Path]) -> None:
    members = data.from_sources([str(p) for p in two_dbs])
    assert [m.label for m in members] == ["openmpi", "mpich"]
    cmp = judge.compare(members)
    got = {(r.collective, r.msg_bytes): (r.verdict, r.faster) for r in cmp.verdicts.itertuples()}
    assert got == {("allreduce", 8): ("B faster", "mpich"), ("allreduce", 1024): ("B faster", "mpich"),
                   ("bcast", 8): ("A faster", "openmpi"), ("bcast", 1024): ("A faster", "openmpi"),
                   ("reduce", 8): ("no difference", ""), ("reduce", 1024): ("no difference", "")}
    ratio = cmp.verdicts.set_index(["collective", "msg_bytes"])["ratio"]
    assert ratio[("allreduce", 8)] == pytest.approx(2.0, rel=0.05)
    assert ratio[("bcast", 1024)] == pytest.approx(1 / 1.5, rel=0.05)
    # A/A across launches: the identical copy is never called faster.
    assert len(cmp.calibration) == 12 and (cmp.calibration["faster"] == "").all()
    assert cmp.left_out.empty


def test_noise_leaves_small_differences_undecided(tmp_path: Path) -> None:
    a = _library_db(tmp_path / "a.duckdb", "openmpi", PLANTED, seed=3, launch_sigma=0.3)
    b = _library_db(tmp_path / "b.duckdb", "mpich", {**PLANTED_B, ("bcast", "default"): 1.0}, seed=4,
                    launch_sigma=0.3)
    cmp = judge.compare(data.from_sources([str(a), str(b)]))
    got = {(r.collective, r.msg_bytes): r.verdict for r in cmp.verdicts.itertuples()}
    # 30% launch noise: an interval of the ratio from 10 launches cannot fit in +-5%.
    assert got == {("allreduce", 8): "B faster", ("allreduce", 1024): "B faster", ("bcast", 8): "undecided",
                   ("bcast", 1024): "undecided", ("reduce", 8): "undecided", ("reduce", 1024): "undecided"}


def test_best_of_both_and_violations_per_library(two_dbs: tuple[Path, Path], tmp_path: Path) -> None:
    a = _library_db(tmp_path / "a2.duckdb", "openmpi", {**PLANTED, ("bcast", "bcast_as_scatter_allgather"): 0.5}, seed=5)
    cmp = judge.compare(data.from_sources([str(a), str(two_dbs[1])]))
    best = ctables.best_table(cmp).set_index(["collective", "msg_bytes"])
    assert best.loc[("allreduce", 8), "fastest_default"] == "mpich"
    assert best.loc[("bcast", 8), "best_configuration"] == "openmpi"
    assert best.loc[("bcast", 8), "best_variant"] == "bcast_as_scatter_allgather"
    assert best.loc[("bcast", 8), "gain_over_fastest_default"] == pytest.approx(2.0, rel=0.05)
    vio = ctables.violations_table(cmp).set_index(["configuration", "scope"])
    assert vio.loc[("openmpi", "pattern"), "brave"] == 2  # the planted mock-up at both sizes
    worst = ctables.worst_table(cmp)
    assert worst.iloc[0]["slower"] == "openmpi" and worst.iloc[0]["collective"] == "allreduce"


def test_single_library_database_is_refused(two_dbs: tuple[Path, Path]) -> None:
    r = CliRunner().invoke(main, ["compare", str(two_dbs[0])])
    assert r.exit_code == 2
    assert f"{two_dbs[0]} holds a single run (openmpi, run run-openmpi): a comparison needs two" in r.output


def test_mismatched_grids_compare_common_points(tmp_path: Path) -> None:
    a = _library_db(tmp_path / "a.duckdb", "openmpi", PLANTED, seed=1)
    b = _library_db(tmp_path / "b.duckdb", "mpich", PLANTED_B, seed=2,
                    plan={"allreduce": PLAN["allreduce"], "gather": ["default"]}, sizes=[8, 1024, 4096])
    cmp = judge.compare(data.from_sources([f"A={a}", f"B={b}"]))
    assert cmp.common.values.tolist() == [[4, "allreduce", 8], [4, "allreduce", 1024]]
    left = {(r.collective, r.msg_bytes): (r.measured_by, r.missing_from) for r in cmp.left_out.itertuples()}
    assert left == {("allreduce", 4096): ("B", "A"), ("bcast", 8): ("A", "B"), ("bcast", 1024): ("A", "B"),
                    ("gather", 8): ("B", "A"), ("gather", 1024): ("B", "A"), ("gather", 4096): ("B", "A"),
                    ("reduce", 8): ("A", "B"), ("reduce", 1024): ("A", "B")}
    # Violation counts and quality cover the common points only.
    assert set(cmp.guideline_verdicts("A")["collective"]) == {"allreduce"}
    r = CliRunner().invoke(main, ["compare", f"A={a}", f"B={b}", "--quiet"])
    assert r.exit_code == 0, r.output
    assert "8 point(s) were not measured by every configuration and are left out" in r.output
    assert "gather 4 KiB at 4 procs (only B)" in r.output


def test_cli_writes_every_table(two_dbs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["compare", *map(str, two_dbs), "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "openmpi vs mpich: 6 points: openmpi faster at 2, mpich faster at 2, no difference at 2" in r.output
    counts = pd.read_csv(out / "verdict_counts.csv")
    assert counts.to_dict("records") == [{"a": "openmpi", "b": "mpich", "points": 6, "A faster": 2, "B faster": 2,
                                          "no difference": 2, "undecided": 0}]
    env = pd.read_csv(out / "environment.csv").set_index("fact")
    assert env.loc["mpi_version", "differs"]
    stems = ["absolute", "relative", "violations", "grouped", "best_of_both", "quality", "worst_slowdowns",
             "verdict_counts", "calibration", "environment", "left_out"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{t}.{ext}" for t in stems for ext in ("csv", "parquet")] + ["compare.html"])
    page = (out / "compare.html").read_text()
    assert "<b>openmpi</b> is faster at <b>2</b>, <b>mpich</b> at <b>2</b>" in page
    for title in ("Which is faster where", "Best of both", "Guideline violations", "Quality scores",
                  "Worst slowdowns", "A/A calibration", "Configurations and environment"):
        assert f"<h2>{title}</h2>" in page
    assert "<h2>Left out</h2>" not in page  # same grid: the section is skipped


def test_measuring_options_need_configurations(two_dbs: tuple[Path, Path]) -> None:
    r = CliRunner().invoke(main, ["compare", *map(str, two_dbs), "--mpi", "openmpi,mpich"])
    assert r.exit_code == 2 and "not both" in r.output
    r = CliRunner().invoke(main, ["compare", "-n", "2", "--db", str(two_dbs[0])])
    assert r.exit_code == 2 and "--nprocs set how to measure" in r.output


def test_configurations() -> None:
    cs = config.configurations(["openmpi"], ["dyn:openmpi:OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
                                             "COLLTUNE_MPIEXEC_FLAGS='--mca btl self,vader'"])
    assert cs == [config.Config("openmpi", "openmpi"), config.Config("dyn", "openmpi", {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "COLLTUNE_MPIEXEC_FLAGS": "--mca btl self,vader"})]
    assert [c.label for c in config.configurations(["/opt/ompi-4.1/bin/mpicc", "/opt/ompi-5.0/bin/mpicc"], [])] \
        == ["ompi-4.1", "ompi-5.0"]
    with pytest.raises(config.CompareError, match="given twice"):
        config.configurations(["openmpi", "openmpi"], [])
    with pytest.raises(config.CompareError, match="at least two"):
        config.configurations(["mpich"], [])
    with pytest.raises(config.CompareError, match="is not VAR=VALUE"):
        config.parse_config("x:openmpi:novalue")


def test_decide_and_band() -> None:
    assert cstats.band(0.05) == (0.95, pytest.approx(1 / 0.95))
    ci = Interval(0.97, 1.04)
    assert cstats.decide(ci, 0.5, 0.05, 0.05) is cstats.Verdict.SAME
    assert cstats.decide(Interval(1.2, 1.4), 0.001, 0.05, 0.05) is cstats.Verdict.B_FASTER
    assert cstats.decide(Interval(0.6, 0.8), 0.001, 0.05, 0.05) is cstats.Verdict.A_FASTER
    # Significant but within the tolerance, interval crossing the band edge: undecided.
    assert cstats.decide(Interval(1.02, 1.07), 0.001, 0.05, 0.05) is cstats.Verdict.UNDECIDED
    # Significant, the ratio (~1.1) beyond the band but the interval reaching into it: the saving
    # may be under the tolerance, undecided (before: "B faster" on the point estimate).
    assert cstats.decide(Interval(1.04, 1.16), 0.001, 0.05, 0.05) is cstats.Verdict.UNDECIDED
    assert cstats.decide(Interval(0.86, 0.96), 0.001, 0.05, 0.05) is cstats.Verdict.UNDECIDED
    assert cstats.decide(Interval(1.06, 1.16), 0.001, 0.05, 0.05) is cstats.Verdict.B_FASTER
    # Beyond the band but not significant after Holm: undecided.
    assert cstats.decide(Interval(1.2, 1.4), 0.06, 0.05, 0.05) is cstats.Verdict.UNDECIDED
    assert cstats.decide(Interval(0.9, 1.6), 0.2, 0.05, 0.05) is cstats.Verdict.UNDECIDED
    assert cstats.decide(Interval(math.nan, math.nan), math.nan, 0.05, 0.05) is cstats.Verdict.UNDECIDED
    assert vstats.min_attainable_p(10, 10, two_sided=True) == pytest.approx(2 / 184756)
    assert vstats.min_attainable_p(10, 10) == pytest.approx(1 / 184756)
    assert vstats.min_attainable_p(1, 1, two_sided=True) == 1.0  # 2 x 1/2, capped
    assert vstats.min_attainable_p(3, 3, vstats.Test.WELCH_LOG, two_sided=True) == 0.0


def test_launches_alternate_repetition_by_repetition() -> None:
    from colltune.compare.measure import alternate
    from colltune.measure.planning import LaunchSpec

    a = [LaunchSpec(0, 2, 0), LaunchSpec(1, 2, 1)]
    # Intel MPI: each repetition's ordinary launch is followed by one per fixed algorithm.
    b = [LaunchSpec(0, 2, 0), LaunchSpec(1, 2, 0, ("allreduce", "3")), LaunchSpec(2, 2, 1),
         LaunchSpec(3, 2, 1, ("allreduce", "3"))]
    assert [(i, s.idx) for i, s in alternate([a, b])] == [(0, 0), (1, 0), (1, 1), (0, 1), (1, 2), (1, 3)]


def test_configuration_settings_apply_only_during_its_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "0")
    monkeypatch.delenv("COLLTUNE_MPIEXEC_FLAGS", raising=False)
    c = config.Config("dyn", "openmpi", {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                                         "COLLTUNE_MPIEXEC_FLAGS": "--mca btl self,vader"})
    with c.applied():
        assert os.environ["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
        assert os.environ["COLLTUNE_MPIEXEC_FLAGS"] == "--mca btl self,vader"
    assert os.environ["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "0"
    assert "COLLTUNE_MPIEXEC_FLAGS" not in os.environ


def test_three_libraries_are_compared_pair_by_pair(two_dbs: tuple[Path, Path], tmp_path: Path) -> None:
    c = _library_db(tmp_path / "c.duckdb", "intel", {**PLANTED, ("reduce", "default"): 0.5}, seed=6)
    cmp = judge.compare(data.from_sources([*map(str, two_dbs), str(c)]))
    pairs = cmp.verdicts.groupby(["a", "b"], sort=False).size()
    assert pairs.to_dict() == {("openmpi", "mpich"): 6, ("openmpi", "intel"): 6, ("mpich", "intel"): 6}
    reduce = cmp.verdicts[cmp.verdicts["collective"] == "reduce"]
    assert reduce["faster"].tolist() == ["", "", "intel", "intel", "intel", "intel"]
    best = ctables.best_table(cmp).set_index(["collective", "msg_bytes"])
    assert best.loc[("reduce", 8), "fastest_default"] == "intel"
    from colltune.compare import report

    page = report.render(cmp)
    assert page.count('alt="ratio ') == 3  # one heat map per pair


NB_PLAN = {"allreduce": ["default", "default#aa", "default#nonblocking", "lib:allreduce:ring#nonblocking"]}


def test_sides_compare_the_nonblocking_forms_and_their_algorithms(tmp_path: Path) -> None:
    """Planted: equal blocking calls; mpich's MPI_Iallreduce twice as fast as Open MPI's, whose
    ring algorithm is as fast as mpich's: the verdicts follow the side each configuration names."""
    a = _library_db(tmp_path / "a.duckdb", "openmpi", {("allreduce", "default"): 1.0,
                                                       ("allreduce", "default#nonblocking"): 2.0}, seed=6, plan=NB_PLAN)
    b = _library_db(tmp_path / "b.duckdb", "mpich", {("allreduce", "default"): 1.0}, seed=7, plan=NB_PLAN)
    sources = [str(a), str(b)]

    def verdicts(*sides: str) -> dict[int, tuple[str, str]]:
        members = data.from_sources(sources)
        data.set_sides(members, sides)
        return {r.msg_bytes: (r.verdict, r.faster) for r in judge.compare(members).verdicts.itertuples()}

    assert verdicts() == {8: ("no difference", ""), 1024: ("no difference", "")}
    assert verdicts("default#nonblocking") == {8: ("B faster", "mpich"), 1024: ("B faster", "mpich")}
    assert verdicts("openmpi=lib:allreduce:ring#nonblocking", "mpich=default#nonblocking") == {
        8: ("no difference", ""), 1024: ("no difference", "")}
    members = data.from_sources(sources)
    data.set_sides(members, ["default#nonblocking"])
    cmp = judge.compare(members)
    absolute = ctables.absolute_table(cmp).set_index("msg_bytes")
    assert absolute.loc[8, "openmpi median_s"] / absolute.loc[8, "mpich median_s"] == pytest.approx(2.0, rel=0.05)
    assert "openmpi is judged by default#nonblocking at every point (--side)" in cmp.messages
    with pytest.raises(config.CompareError, match="no configuration is labelled 'intel'"):
        data.parse_sides(["intel=default#nonblocking"], ["openmpi", "mpich"])
    with pytest.raises(config.CompareError, match="a side is the library's own call"):
        data.parse_sides(["allreduce_as_reduce_bcast"], ["openmpi", "mpich"])
    with pytest.raises(config.CompareError, match="optionally followed by #nonblocking or #persistent"):
        data.parse_sides(["lib:allreduce:ring#later"], ["openmpi", "mpich"])
    r = CliRunner().invoke(main, ["compare", "--mpi", "openmpi,mpich", "-c", "allreduce", "--side",
                                  "mpich=default#nonblocking", "--dry-run"])
    assert r.exit_code == 2 and "add default#nonblocking to --variants" in r.output
