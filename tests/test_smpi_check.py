"""`colltune check` on a deterministic simulator (docs/smpi.md, "Deterministic times"): SimGrid
SMPI repeats its times in every launch and repetition, so its check measures one launch of one
repetition per point and judges the exact ratios; a real library keeps its launches and tests."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner

from colltune.cli import main
from colltune.measure.settings import BenchSettings
from colltune.mpi import build
from colltune.mpi import libraries as mpi
from colltune.mpi import smpi
from colltune.verify import adaptive, decide
from colltune.verify.comparisons import Side

needs_smpi = pytest.mark.skipif(shutil.which("smpicc") is None or shutil.which("smpirun") is None,
                                reason="SimGrid SMPI absent: run `make setup-smpi` (libsimgrid-dev)")


def _side(*medians: float) -> Side:
    ids = np.arange(len(medians))
    return Side(ids, np.array(medians), np.array(medians), ids)


def test_exact_verdicts_are_the_ratios_own_with_the_simulators_jitter_undecided() -> None:
    settings = decide.CheckSettings(exact=True)  # tolerance 0.05: the boundary is 1/0.95 = 1.0526x
    limit = 1.0 / 0.95
    cases = {  # default's time, mock-up's time -> (significant, violation test, equivalence test)
        "twice as slow": (2.0, 1.0, (0.0, 0.0, 1.0)),
        "equal": (1.0, 1.0, (1.0, 1.0, 0.0)),
        "4% slower": (1.04, 1.0, (0.0, 1.0, 0.0)),
        "on the tolerance": (limit * 1.005, 1.0, (0.0, 1.0, 1.0)),
        "2% beyond it": (limit * 1.02, 1.0, (0.0, 0.0, 1.0)),
        "faster": (1.0, 3.0, (1.0, 1.0, 0.0)),
    }
    for name, (ref, alt, expected) in cases.items():
        e = decide.effect(_side(ref), _side(alt), settings)
        assert (e.test.p_value, e.violation.p_value, e.equivalence.p_value) == expected, name
        assert (e.n, e.slowdown, e.exact) == (1, ref / alt, True), name
    # several launches of one point: the median launch's ratio, still no test
    e = decide.effect(_side(2.0, 2.0, 2.2), _side(1.0, 1.0, 1.0), settings)
    assert (e.n, e.slowdown, e.violation.p_value) == (3, 2.0, 0.0)
    on = decide.effect(_side(limit * 1.005), _side(1.0), settings)
    assert decide.undecided_reason("pattern", on, 0.05, 0.01) == (
        f"undecided: the exact ratio {limit * 1.005:.4f}x of a deterministic simulator lies within 1% (its "
        "repeatability) of the tolerance (1.0526x): no number of launches decides it")
    # the same single launch without `exact` is not tested at all
    assert math.isnan(decide.effect(_side(2.0), _side(1.0), decide.CheckSettings()).violation.p_value)


def test_a_runs_recorded_smpi_flags_say_whether_its_times_repeat() -> None:
    assert smpi.deterministic_config(" ".join([*smpi.BASE_CONFIG, "--cfg=smpi/coll-selector:mpich"]))
    assert not smpi.deterministic_config("--cfg=smpi/simulate-computation:no --cfg=smpi/simulate-computation:yes")
    assert not smpi.deterministic_config("--cfg=smpi/coll-selector:mpich")
    assert not smpi.deterministic_config(None)


def _run_settings(db: Path) -> dict[str, object]:
    with duckdb.connect(str(db), read_only=True) as con:
        return json.loads(con.sql("select settings from runs").fetchall()[0][0])


@needs_smpi
def test_a_simulated_check_measures_one_launch_and_judges_its_exact_ratios(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """4 ranks of the fat tree (one node): the plan chosen for SMPI, one launch, one repetition
    after one warm-up per variant and size, no rounds; every verdict is the stored medians' ratio
    against the tolerance, and judging the database again gives the same verdicts."""
    monkeypatch.setenv(smpi.PLATFORM_VAR, "fattree-64x16")  # --platform sets it for the process: restored after
    db = tmp_path / "c.duckdb"
    args = ["check", "--mpi", "smpi", "--platform", "fattree-64x16", "-n", "4", "--preset", "quick",
            "-c", "gather,scatter", "-s", "1KiB,32KiB", "--db", str(db)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output  # violations found
    assert "deterministic simulator" in result.output
    settings = _run_settings(db)
    assert (settings["launches"], settings["rounds"]) == (1, 0)
    assert {k: settings["stop"][k] for k in ("min_reps", "max_reps", "warmup")} == \
        {"min_reps": 1, "max_reps": 1, "warmup": 1}
    with duckdb.connect(str(db), read_only=True) as con:
        per_point = con.sql("select collective, variant, msg_bytes, count(distinct launch_idx), sum(warmup::int), "
                            "sum((not warmup)::int) from measurements group by all").fetchall()
        medians = {(c, v, b): t for c, v, b, t in con.sql(
            "select collective, variant, msg_bytes, median(runtime_s) from measurements where not warmup "
            "group by all").fetchall()}
        verdicts = con.sql("select collective, variant, msg_bytes, kind, verdict, slowdown from verdicts "
                           "where kind in ('pattern', 'aa')").fetchall()
    assert {(n, w, m) for _, _, _, n, w, m in per_point} == {(1, 1, 1)}
    limit = 1.0 / 0.95
    by_point = {}
    for coll, variant, size, kind, verdict, slowdown in verdicts:
        ratio = medians[(coll, "default", size)] / medians[(coll, variant, size)]
        assert slowdown == pytest.approx(ratio, rel=1e-12)
        expected = ("violation" if ratio > limit * 1.01 else "no violation" if ratio < limit / 1.01
                    else "undecided")
        assert verdict == expected, (coll, variant, size, ratio)
        by_point[(coll, variant, size)] = verdict
    # the A/A copy is the default itself: never flagged
    assert {v for (c, var, s), v in by_point.items() if var == "default#aa"} == {"no violation"}
    # on one node the binomial Scatter loses to SMPI's linear Scatterv at 32 KiB (README, "`colltune check`
    # at 256 simulated ranks": 2.90x)
    assert by_point[("scatter", "scatter_as_scatterv", 32768)] == "violation"
    again = CliRunner().invoke(main, ["check", "--no-measure", "--db", str(db)])
    assert again.exit_code == 1, again.output
    with duckdb.connect(str(db), read_only=True) as con:
        rejudged = con.sql("select collective, variant, msg_bytes, kind, verdict, slowdown from verdicts "
                           "where kind in ('pattern', 'aa')").fetchall()
    assert sorted(rejudged) == sorted(verdicts)


@needs_smpi
def test_a_deterministic_library_gets_the_exact_plan_and_a_real_one_does_not() -> None:
    """The plan `colltune check` makes from the library it resolves: SMPI's one launch of one
    repetition after one warm-up and no rounds; the embedded Open MPI's the quick preset's 8
    launches, its stopping rule and 2 adaptive rounds."""
    plans = {}
    for spec in ("smpi", None):
        lib = mpi.resolve(spec)
        options = adaptive.measurement_defaults("quick", lib.deterministic)
        bench = adaptive.plan_rounds(BenchSettings.from_preset(
            "quick", launches=options.pop("launches"), stop=options), exact=lib.deterministic)
        plans[lib.name] = (lib.deterministic, bench.launches, bench.rounds, bench.stop.min_reps,
                           bench.stop.max_reps, bench.stop.warmup)
    assert plans == {"smpi": (True, 1, 0, 1, 1, 1), "openmpi": (False, 8, 2, 10, 40, 2)}


def test_a_users_shared_malloc_line_gets_no_member_and_says_why() -> None:
    """`colltune run -- smpirun --cfg=smpi/auto-shared-malloc-thresh:N ...`: the application's
    buffers of N bytes or more are one block for all ranks (docs/smpi.md "Large buffers"), so no
    result of the library's is a rank's own to prove a member against: no member serves such a
    line; 0 turns it off."""
    base = ["smpirun", "-np", "4", "--cfg=smpi/coll-selector:mpich"]
    assert smpi.unproven_choice([*base, "--cfg=smpi/auto-shared-malloc-thresh:0"]) is None
    why = smpi.unproven_choice([*base, "--cfg=smpi/auto-shared-malloc-thresh:65536"])
    assert why is not None and why.startswith(
        "the line shares the application's allocations of a size or more between the simulated ranks "
        "(--cfg=smpi/auto-shared-malloc-thresh:65536)")
    # the last setting wins, as in SimGrid
    assert smpi.unproven_choice([*base, "--cfg=smpi/auto-shared-malloc-thresh:4096",
                                 "--cfg=smpi/auto-shared-malloc-thresh:0"]) is None


@needs_smpi
def test_colltunes_own_state_stays_private_under_a_users_shared_malloc_line(tmp_path: Path) -> None:
    """A user's smpirun line with `--cfg=smpi/auto-shared-malloc-thresh:2048` shares every
    allocation of 2 KiB or more made through SimGrid's malloc. libcolltune is compiled with
    SMPI_NO_OVERRIDE_MALLOC (mpi/build.py), so its trace records and learning state stay each
    rank's own: the learning mode (every call exploring, traced) gives the plain run's results
    and writes, rank by rank, the very traces of the same line without the setting (main's build
    before it crashed this run: rank 0's trace buffer was every rank's). The drivers keep
    SimGrid's malloc, which their timing launches share on purpose."""
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf absent: run `make setup-smpi`")
    lib = mpi.resolve("smpi")
    art = build.ensure_built(lib)
    def imports(path: Path) -> set[str]:
        out = subprocess.run(["nm", "-D", "--undefined-only", str(path)], capture_output=True, text=True,
                             check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if "smpi_shared_" in line}
    assert imports(art.libcolltune) == set()
    assert {"smpi_shared_malloc_intercept", "smpi_shared_free"} <= imports(art.bench)
    app = build.compile_program(lib, [Path(__file__).parents[1] / "benchmarks" / "scale" / "app.c"],
                                tmp_path / "app")
    plat = smpi.platform("small")
    # no selector: SimGrid's default family, so that no member serves either line (the proof's is
    # the MPICH family) and the two runs differ by the sharing alone
    line = ["smpirun", "-np", "8", "-platform", str(plat.xml), "-hostfile", str(plat.hostfile(8)),
            "--cfg=smpi/simulate-computation:no"]
    shared = ["--cfg=smpi/auto-shared-malloc-thresh:2048"]
    plain = subprocess.run([*line, *shared, str(app), "20"], capture_output=True, text=True, check=False)
    assert plain.returncode == 0, plain.stderr
    result = [l.split(" simulated_s")[0] for l in plain.stdout.splitlines() if l.startswith("scale-app")]
    assert result and result[0].startswith("scale-app ranks 8 calls 20 checksum ")
    traces = {}
    for name, extra in (("private", ["--cfg=smpi/auto-shared-malloc-thresh:0"]), ("shared", shared)):
        (tmp_path / name).mkdir()
        run = subprocess.run([str(Path(sys.executable).with_name("colltune")), "run", "--mpi", "smpi", "--learn", "-",
                              "--trace-dir", str(tmp_path / name), "--", *line, *extra, str(app), "20"],
                             capture_output=True, text=True, check=False,
                             env={**os.environ, "COLLTUNE_SELECT_SEED": "1"})
        assert run.returncode == 0, run.stderr
        assert [l.split(" simulated_s")[0] for l in run.stdout.splitlines() if l.startswith("scale-app")] == result
        assert "colltune: no member serves this run" in run.stderr
        traces[name] = {f.name: f.read_bytes() for f in sorted((tmp_path / name).iterdir())}
    assert sorted(traces["shared"]) == [f"rank-{r}.cttrace" for r in range(8)]
    assert traces["shared"] == traces["private"]
    assert len(set(traces["shared"].values())) == 8   # each rank's own records
