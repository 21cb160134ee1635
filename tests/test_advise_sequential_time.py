"""benchmarks/advise/sequential_time.py (issue 34's quiet-window wall-time measurement) without
timing anything: its TSV read back, the blocks' ratios and the verdict on fixed data, an OpenFOAM
case checked against --cells, and quiet_windows.sh's plan of a list of pairs."""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ADVISE = Path(__file__).parents[1] / "benchmarks" / "advise"
sys.path.insert(0, str(ADVISE))

import sequential_time as st  # noqa: E402

HEADER = "\t".join(st.FIELDS)


def _tsv(tmp_path: Path, ratios: list[float], result: str = "-4.7774327", last: int = 4) -> Path:
    """Blocks with plain runs of 1.0 s and two profiled runs each that sum to 2 x the block's
    ratio (ratio - 0.01 s, then ratio + 0.01 s): each block's log ratio is log(ratio). `last`: how
    many runs of the last block were written (4: complete)."""
    rows = [HEADER]
    for b, r in enumerate(ratios, 1):
        order = "PQQP" if b % 2 else "QPPQ"
        walls = {"P": [1.0, 1.0], "Q": [r + 0.01, r - 0.01]}
        for pos, letter in enumerate(order):
            if b == len(ratios) and pos >= last:
                break
            mode = "plain" if letter == "P" else "profiled"
            own = ("0", "0.000", "0.000") if letter == "P" else ("13", "0.034", f"{10 + b:.3f}")
            rows.append("\t".join((str(b), order, str(pos), mode, f"{walls[letter].pop():.4f}", "0.8", result, *own)))
    path = tmp_path / "seq.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_tsv_reads_back_and_each_complete_block_gives_its_log_ratio(tmp_path: Path) -> None:
    runs = st.read_runs(_tsv(tmp_path, [1.0, 1.02, 1.05, 0.98], last=3))
    assert len(runs) == 15
    assert runs[0] == st.Run(1, "PQQP", 0, "plain", 1.0, 0.8, "-4.7774327", 0.0, 0)
    assert runs[1] == st.Run(1, "PQQP", 1, "profiled", 0.99, 0.8, "-4.7774327", 11.0, 13)
    # the fourth block lost its last run (a window's end): left out
    assert [round(x, 12) for x in st.block_logs(runs)] == [0.0, round(math.log(1.02), 12), round(math.log(1.05), 12)]


def test_a_tsv_of_before_session_13_has_no_own_account(tmp_path: Path) -> None:
    path = tmp_path / "old.tsv"
    path.write_text("block\torder\tpos\tmode\twall_s\tload1\tresult\n1\tPQQP\t0\tplain\t1.0670\t2.1\tx\n")
    assert st.read_runs(path) == [st.Run(1, "PQQP", 0, "plain", 1.067, 2.1, "x", None, None)]


def test_a_changed_result_line_stops_the_statistics(tmp_path: Path) -> None:
    runs = st.read_runs(_tsv(tmp_path, [1.0] * 6))
    runs[5] = dataclasses.replace(runs[5], result="-4.7774328")
    with pytest.raises(ValueError, match="2 different result lines"):
        st.block_logs(runs)


def test_the_verdict_over_the_bar(tmp_path: Path) -> None:
    ratios = [1.02, 1.03, 1.025, 1.035, 1.02, 1.03, 1.025, 1.03]
    lines = st.report(st.read_runs(_tsv(tmp_path, ratios)), 0.01)
    # 8 blocks: the median's interval is the smallest and largest ratio (99.2%: 1 - 2 / 2^8)
    assert lines == [
        "8 blocks (32 runs, 2 ranks bound to the 2 cores); plain run median 1.000 s (spread 0.00%), "
        "profiled median 1.027 s; 1-min load before a run 0.80-0.80",
        "a block's log ratio: sd 0.0052 (a block's ratio +-0.52%), skewness -0.04",
        "profiled / plain, mean: 1.0269, 95% interval 1.0224-1.0313 (Student t)",
        "profiled / plain, median: 1.0275, 99.2% interval 1.0200-1.0350 (distribution-free)",
        "the profiled runs' own account (rank files): own cost median 14.5 ms (1.41% of the profiled median), "
        "sampling synchronisations median 13",
        "against the 1% bar: over 1%: both lower ends (1.0224, 1.0200) are over 1.01",
        "the mean is at or over the bar: no number of blocks shows 'at most'",
    ]


def test_the_verdict_at_most_and_not_resolved(tmp_path: Path) -> None:
    close = [1.0, 1.002, 0.998, 1.001, 0.999, 1.0, 1.003, 0.997]
    lines = st.report(st.read_runs(_tsv(tmp_path, close)), 0.01)
    assert lines[-2] == "against the 1% bar: at most 1%: both upper ends (1.0017, 1.0030) are at most 1.01"
    assert lines[-1] == "blocks that would put both upper ends under 1.01 at this mean and spread: ~6"
    wide = [0.95, 1.06, 1.0, 1.04, 0.97, 1.03, 1.01, 0.99]
    lines = st.report(st.read_runs(_tsv(tmp_path, wide)), 0.01)
    assert lines[-2] == "against the 1% bar: not resolved: an interval contains 1.01 or ends over it"
    assert lines[-1] == "blocks that would put both upper ends under 1.01 at this mean and spread: ~434"


def test_fewer_than_six_blocks_give_the_run_times_and_no_verdict(tmp_path: Path) -> None:
    # a dry run's three blocks and the fourth's first two runs
    lines = st.report(st.read_runs(_tsv(tmp_path, [1.01, 1.03, 1.02, 1.05], last=2)), 0.01)
    assert lines == [
        "3 blocks (14 runs, 2 ranks bound to the 2 cores); plain run median 1.000 s (spread 0.00%), "
        "profiled median 1.020 s; 1-min load before a run 0.80-0.80",
        "the profiled runs' own account (rank files): own cost median 12.0 ms (1.18% of the profiled median), "
        "sampling synchronisations median 13",
        "no verdict: 3 complete blocks, at least 6 are needed for a 95% interval of the median",
    ]
    assert st.report(st.read_runs(_tsv(tmp_path, [1.0], last=3)), 0.01) == \
        ["0 complete blocks (3 runs): nothing to report"]


def test_the_committed_dry_runs_read_back_without_a_verdict() -> None:
    # benchmarks/advise/dry-session17: 3 blocks of each new application at nice 19, load 5.7-8.2
    got = {app: st.report(st.read_runs(ADVISE / "dry-session17" / f"seq-{app}.tsv"), 0.01)
           for app in ("examl", "qe", "hpcc", "openfoam-100cells")}
    lines = "3 blocks (12 runs, 2 ranks bound to the 2 cores); plain run median {} s (spread {}), profiled median " \
            "{} s; 1-min load before a run {}|the profiled runs' own account (rank files): own cost median {} ms " \
            "({} of the profiled median), sampling synchronisations median {}|no verdict: 3 complete blocks, at " \
            "least 6 are needed for a 95% interval of the median"
    assert {app: "|".join(got[app]) for app in got} == {
        "examl": lines.format("20.619", "28.12%", "15.411", "6.73-8.19", "36.2", "0.23%", "5989"),
        "qe": lines.format("18.561", "21.92%", "26.287", "5.74-6.93", "10.9", "0.04%", "433"),
        "hpcc": lines.format("2.438", "39.34%", "2.196", "6.68-7.06", "6.4", "0.29%", "204"),
        "openfoam-100cells": lines.format("38.474", "17.61%", "39.940", "6.60-8.06", "114.0", "0.29%", "9935"),
    }
    assert {r.result for r in st.read_runs(ADVISE / "dry-session17" / "seq-hpcc.tsv")} == {"2.40163e-12"}


def _cavity(out: Path, cells: int, end: str = "0.1") -> None:
    case = out / "cavity"
    (case / "processor1").mkdir(parents=True)
    (case / "system").mkdir()
    (case / "system" / "controlDict").write_text(f"deltaT          0.0005;\nendTime         {end};\n")
    (case / "system" / "blockMeshDict").write_text(
        f"blocks\n(\n    hex (0 1 2 3 4 5 6 7) ({cells} {cells} 1) simpleGrading (1 1 1)\n);\n")


def test_an_openfoam_case_is_checked_against_cells_and_steps(tmp_path: Path) -> None:
    _cavity(tmp_path / "bar", 40)
    app = st.openfoam(tmp_path / "bar", st.Case())
    assert (app.variant, st.tsv_name(app, "profiled"), st.tsv_name(app, "pass")) == \
        ("", "seq-openfoam.tsv", "seq-openfoam-pass.tsv")
    with pytest.raises(SystemExit, match=r"prepared with 40x40 cells, not 100x100: CELLS=100 bash "
                                         r"benchmarks/advise/openfoam.sh \S+/bar prepare 200$"):
        st.openfoam(tmp_path / "bar", st.Case(cells=100))
    with pytest.raises(SystemExit, match=r"prepared for 200 steps, not 400: bash benchmarks/advise/openfoam.sh"):
        st.openfoam(tmp_path / "bar", st.Case(steps=400))
    _cavity(tmp_path / "big", 100)
    app = st.openfoam(tmp_path / "big", st.Case(cells=100))
    assert (app.variant, st.tsv_name(app, "pass")) == ("-100cells", "seq-openfoam-100cells-pass.tsv")
    with pytest.raises(SystemExit, match="not 40x40"):
        st.openfoam(tmp_path / "big", st.Case())


def test_the_table_of_applications() -> None:
    assert sorted(st.APPS) == ["examl", "hpcc", "lammps", "openfoam", "qe"]


def _windows(tmp_path: Path, action: str, pairs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ADVISE / "quiet_windows.sh"), str(tmp_path / "out"), action, pairs],
                          capture_output=True, text=True)


def test_quiet_windows_plan_names_one_tsv_a_pair(tmp_path: Path) -> None:
    got = _windows(tmp_path, "plan", "examl:12 hpcc:pass:6.5 openfoam@100:8 openfoam@40:profiled:3")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == [
        "examl:12: sequential_time.py OUT --app examl --minutes 12 -> OUT/seq-examl.tsv",
        "hpcc:pass:6.5: sequential_time.py OUT --app hpcc --pass --minutes 6.5 -> OUT/seq-hpcc-pass.tsv",
        "openfoam@100:8: sequential_time.py OUT/openfoam-100 --app openfoam --cells 100 --minutes 8 "
        "-> OUT/openfoam-100/seq-openfoam-100cells.tsv",
        "openfoam@40:profiled:3: sequential_time.py OUT --app openfoam --minutes 3 -> OUT/seq-openfoam.tsv",
        "blocks start within 29.5 minutes (each pair's last block comes on top)",
    ]


@pytest.mark.parametrize(("pairs", "error"), [
    ("examl:12 examl:profiled:3", "examl:profiled:3 and examl:12: the same TSV seq-examl.tsv"),
    ("lammps@100:5", "lammps@100:5: @CELLS is OpenFOAM's (a number)"),
    ("qe:full:3", "qe:full:3: mode 'full' is neither profiled nor pass"),
    ("vasp:3", "vasp:3: no application 'vasp'"),
    ("qe", "qe: minutes ''"),
])
def test_quiet_windows_refuses_a_bad_list_before_running_anything(tmp_path: Path, pairs: str, error: str) -> None:
    got = _windows(tmp_path, "run", pairs)
    assert (got.returncode, got.stdout, got.stderr.strip()) == (2, "", error)
    assert not (tmp_path / "out").exists()


def _modes_tsv(tmp_path: Path, blocks: list[dict[str, float]], orders: list[str]) -> Path:
    """--modes blocks: each block's runs in its order (the modes' indexes in the first block's)."""
    modes = list(blocks[0])
    rows = [HEADER]
    for b, (walls, order) in enumerate(zip(blocks, orders), 1):
        for pos, i in enumerate(order):
            mode = modes[int(i)]
            own = ("0", "0.000", "0.000") if not mode.startswith("profiled") else ("9", "0.020", "3.000")
            rows.append("\t".join((str(b), order, str(pos), mode, f"{walls[mode]:.4f}", "0.5", "r", *own)))
    path = tmp_path / "seq-openfoam-modes.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_mode_is_plain_pass_or_profiled_with_its_own_settings() -> None:
    assert st.parse_mode("profiled") == ("profiled", {})
    assert st.parse_mode("profiled:COLLTUNE_PROFILE_RUN_SAMPLE=0:COLLTUNE_PROFILE_RUN_LIGHT=1") == (
        "profiled", {"COLLTUNE_PROFILE_RUN_SAMPLE": "0", "COLLTUNE_PROFILE_RUN_LIGHT": "1"})
    for bad, why in [("fast", "starts with plain, pass or profiled"), ("profiled:SAMPLE=0", "not a COLLTUNE_"),
                     ("pass:COLLTUNE_X", "not a COLLTUNE_"), ("plain:COLLTUNE_PROFILE_RUN_LIGHT=0", "no colltune")]:
        with pytest.raises(ValueError, match=why):
            st.parse_mode(bad)


def test_mode_blocks_give_each_mode_against_plain_and_the_profiled_against_pass(tmp_path: Path) -> None:
    # six blocks, plain 1.0 s; pass 1.0 then 1.01 (three each); profiled 1.02 and 1.03 (three each)
    blocks = [{"plain": 1.0, "pass": 1.0 + 0.01 * (b % 2), "profiled": 1.02 + 0.01 * (b % 2)} for b in range(6)]
    path = _modes_tsv(tmp_path, blocks, ["012", "201", "120", "021", "102", "210"])
    runs = st.read_runs(path)
    assert [r.mode for r in runs[:3]] == ["plain", "pass", "profiled"]
    assert [round(x, 12) for x in st.mode_logs(runs, "profiled", "pass")] == \
        [round(math.log(1.02), 12), round(math.log(1.03 / 1.01), 12)] * 3
    lines = st.report_modes(runs, 0.01)
    assert lines[0] == "6 blocks of 3 modes (18 runs, 2 ranks bound to the 2 cores); 1-min load before a run 0.50-0.50"
    assert lines[1:4] == ["plain: median run 1.000 s", "pass: median run 1.005 s", "profiled: median run 1.025 s"]
    pass_plain = [line for line in lines if line.startswith("pass / plain")]
    assert pass_plain and pass_plain[0].startswith("pass / plain: 6 blocks, mean 1.0050 (")
    prof_plain = [line for line in lines if line.startswith("profiled / plain")][0]
    assert prof_plain.startswith("profiled / plain: 6 blocks, mean 1.0250 (") and prof_plain.endswith("over 1%")
    prof_pass = [line for line in lines if line.startswith("profiled / pass")][0]
    assert prof_pass.startswith("profiled / pass: 6 blocks, mean 1.0199 (")
    assert lines[-1] == "the profiled runs' own account (rank files): own cost median 3.0 ms"


def test_mode_windows_pool_with_their_blocks_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # two --modes windows read together (--read A --read B): twelve blocks, none merged, the
    # ratio over both windows' blocks; the intervals at --looks 2
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    orders = ["012", "201", "120", "021", "102", "210"]
    a = _modes_tsv(tmp_path / "a", [{"plain": 1.0, "pass": 1.0, "profiled": 1.02 + 0.01 * (b % 2)}
                                    for b in range(6)], orders)
    b = _modes_tsv(tmp_path / "b", [{"plain": 1.0, "pass": 1.0, "profiled": 1.00 + 0.01 * (b % 2)}
                                    for b in range(6)], orders)
    runs = st.read_pooled([a, b])
    assert sorted({r.block for r in runs}) == [1, 2, 3, 4, 5, 6, *range(1_000_001, 1_000_007)]
    assert [round(x, 12) for x in st.mode_logs(runs, "profiled", "plain")] == \
        [round(math.log(x), 12) for x in [1.02, 1.03] * 3 + [1.00, 1.01] * 3]
    geometric = (1.02 * 1.03 * 1.00 * 1.01) ** 0.25
    lines = st.report_modes(runs, 0.01, st.looks_confidence(2))
    assert lines[0] == "12 blocks of 3 modes (36 runs, 2 ranks bound to the 2 cores); 1-min load before a run 0.50-0.50"
    [prof_plain] = [line for line in lines if line.startswith("profiled / plain")]
    assert prof_plain.startswith(f"profiled / plain: 12 blocks, mean {geometric:.4f} (")
    assert st.main([str(tmp_path), "--app", "openfoam", "--read", str(a), "--read", str(b), "--looks", "2"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == lines and err == ""


def test_the_command_line_refuses_bad_modes(tmp_path: Path) -> None:
    script = ADVISE / "sequential_time.py"
    for modes, error in [("plain", "two or more different modes"), ("plain,plain", "two or more different modes"),
                         ("plain,fast", "starts with plain, pass or profiled")]:
        run = subprocess.run([sys.executable, str(script), str(tmp_path), "--app", "openfoam", "--modes", modes],
                             capture_output=True, text=True)
        assert run.returncode == 2 and error in run.stderr, run.stderr


def test_blocks_of_two_modes_are_run_then_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the default design (PQQP/QPPQ blocks, no --modes, no --read): its TSV is read once written
    # (session 21: the check for a --modes TSV read the TSV before there was one, and crashed)
    ratios = [1.02, 1.01, 1.03, 1.02, 1.01, 1.03]
    app = dataclasses.make_dataclass("App", ["name", "variant"])("openfoam", "")
    monkeypatch.setitem(st.APPS, "openfoam", lambda out, case: app)
    made: list[tuple[Path, str, int, float | None]] = []

    def run_blocks(app_, tsv: Path, blocks, minutes, seed, append, lib: str, other: str) -> None:
        made.append((tsv, other, blocks, minutes))
        tsv.write_text(_tsv(tmp_path / "fixture", ratios).read_text())

    (tmp_path / "fixture").mkdir()
    monkeypatch.setattr(st, "run_blocks", run_blocks)
    lib = ["--lib", "/nonexistent/libcolltune.so"]
    assert st.main([str(tmp_path), "--app", "openfoam", *lib]) == 0
    assert made == [(tmp_path / "seq-openfoam.tsv", "profiled", 12, None)]
    assert (tmp_path / "seq-openfoam.txt").read_text().startswith("6 blocks")
    # --minutes alone: the minutes decide (it once stopped a 100-minute window at 12 blocks)
    assert st.main([str(tmp_path), "--app", "openfoam", "--minutes", "100", *lib]) == 0
    assert st.main([str(tmp_path), "--app", "openfoam", "--minutes", "100", "--blocks", "40", *lib]) == 0
    assert made[1:] == [(tmp_path / "seq-openfoam.tsv", "profiled", 1_000_000, 100.0),
                        (tmp_path / "seq-openfoam.tsv", "profiled", 40, 100.0)]


def test_page_faults_reads_perf_report_rows() -> None:
    """page_faults.py (the faults of a profiled OpenFOAM run): perf report's rows by function
    and by object, the comment lines skipped, a function's rows summed."""
    import page_faults as pf

    report = ("# Samples: 7K of event 'page-faults'\n#\n# Samples  Symbol\n"
              "           33  [.] ct_chain_unwind\n            22  [.] ct_find.constprop.0\n"
              "             5  [k] clear_page_erms\n             2  [.] ct_chain_unwind\n\n")
    assert pf.parse_report(report) == {"ct_chain_unwind": 35, "ct_find.constprop.0": 22, "clear_page_erms": 5}
    by_object = "# Shared Object\n  6976  libOpenFOAM.so\n   120  [kernel.kallsyms]\n    84  libcolltune.so\n"
    assert pf.parse_report(by_object) == {"libOpenFOAM.so": 6976, "[kernel.kallsyms]": 120, "libcolltune.so": 84}


def test_page_faults_configurations(tmp_path: Path) -> None:
    import page_faults as pf

    lib = tmp_path / "libcolltune.so"
    lib.write_bytes(b"")
    assert pf.parse_config(f"now={lib}") == ("now", str(lib), "profiled")
    assert pf.parse_config(f"off={lib}:pass") == ("off", str(lib), "pass")
    assert pf.parse_config("plain=-:plain") == ("plain", "-", "plain")
    for bad, says in ((f"now={tmp_path / 'missing.so'}", "no file"), (f"now={lib}:fast", "NAME=LIBCOLLTUNE"),
                      ("=x", "NAME=LIBCOLLTUNE"), ("now=-", "NAME=LIBCOLLTUNE")):
        with pytest.raises(SystemExit, match=says):
            pf.parse_config(bad)


def test_cpu_share_configurations_and_table(tmp_path: Path) -> None:
    """cpu_share.py: a configuration's settings go to its runs; libcolltune's samples split into
    its MPI_* entry points (the light path) and the rest; shares of the application's samples."""
    import cpu_share as cs

    lib = tmp_path / "libcolltune.so"
    lib.write_bytes(b"")
    assert cs.parse_config(f"now={lib}") == cs.Config("now", str(lib), "profiled", {})
    assert cs.parse_config(f"b={lib}:profiled:COLLTUNE_PROFILE_RUN_BUDGET=2500") == \
        cs.Config("b", str(lib), "profiled", {"COLLTUNE_PROFILE_RUN_BUDGET": "2500"})
    assert cs.parse_config(f"off={lib}:pass") == cs.Config("off", str(lib), "pass", {})
    for bad, says in ((f"now={tmp_path / 'missing.so'}", "no file"), (f"now={lib}:plain", "NAME=LIBCOLLTUNE"),
                      (f"now={lib}:fast", "starts with plain"), (f"now={lib}:profiled:BUDGET=1", "not a COLLTUNE_"),
                      ("=x", "NAME=LIBCOLLTUNE"), ("now=", "NAME=LIBCOLLTUNE")):
        with pytest.raises(SystemExit, match=says):
            cs.parse_config(bad)
    s = cs.split(80000, {"MPI_Allreduce": 49, "MPI_Irecv": 20, "ct_profchain_site": 65, "ct_light_take": 30})
    assert s == cs.Shares(80000, 69, 95)
    assert s.percent(s.light + s.rest) == pytest.approx(0.205) and cs.Shares(0, 0, 0).percent(0) == 0.0
    configs = [cs.parse_config(f"now={lib}"), cs.parse_config(f"b={lib}:profiled:COLLTUNE_PROFILE_RUN_BUDGET=2500")]
    assert cs.split(100, {}, 1.25, 12) == cs.Shares(100, 0, 0, 1.25, 12)
    assert cs.comm_of(st.App("openfoam", tmp_path, ["./rank.sh"], re.compile("x"))) == "icoFoam"
    assert cs.comm_of(st.App("examl", tmp_path, ["/usr/lib/examl/bin/examl-avx2", "-t"], re.compile("x"))) == "examl-avx2"
    assert cs.comm_of(st.App("x", tmp_path, ["/opt/a/a_program_named_long"], re.compile("x"))) == "a_program_named"
    configs.append(cs.parse_config(f"off={lib}:pass"))
    rows = {"now": [cs.Shares(40000, 40, 60, 0.9, 12), cs.Shares(50000, 50, 100, 1.1, 14),
                    cs.Shares(20000, 10, 30, 0.8, 11)],
            "b": [cs.Shares(10000, 10, 40, 1.5, 440)], "off": [cs.Shares(30000, 15, 0)]}
    assert cs.table(configs, rows, "icoFoam", 3).splitlines()[3:] == [
        "| now (profiled) | 40000 | 0.25% (0.25, 0.30, 0.20) | 0.10% (0.10, 0.10, 0.05) | 0.15% (0.15, 0.20, 0.15) "
        "| 0.90 (0.90, 1.10, 0.80) | 12 (12, 14, 11) |",
        "| b (profiled COLLTUNE_PROFILE_RUN_BUDGET=2500) | 10000 | 0.50% (0.50) | 0.10% (0.10) | 0.40% (0.40) "
        "| 1.50 (1.50) | 440 (440) |",
        "| off (pass) | 30000 | 0.05% (0.05) | 0.05% (0.05) | 0.00% (0.00) | - | - |"]


def test_the_openfoam_rank_scripts_are_one_text_with_their_own_last_lines() -> None:
    # the library reaches icoFoam alone (README, "twentieth round"): a harness with its own copy
    # of these lines once kept the old `unset LD_PRELOAD`, too late
    import concurrent_time
    import openfoam_phases

    head = ("#!/bin/bash\nsource /usr/share/openfoam/etc/bashrc 2>/dev/null\n"
            '[ -n "${RANK_PRELOAD-}" ] && export LD_PRELOAD=$RANK_PRELOAD\nunset RANK_PRELOAD\n')
    stamp = 'echo "$EPOCHREALTIME" > "$PHASE_OUT.exec.$OMPI_COMM_WORLD_RANK"\n'
    assert st.OPENFOAM_RANK == head + "exec icoFoam -parallel\n"
    assert openfoam_phases.RANK == head + stamp + "exec icoFoam -parallel\n"
    assert openfoam_phases.RANK_FILE == head + stamp + \
        "exec icoFoam -parallel > log.rank$OMPI_COMM_WORLD_RANK 2>&1\n"
    assert concurrent_time.RANK == head + ("exec /usr/bin/time -f '%U %S' -o "
                                           '"$CT_CPU_DIR/rank-$OMPI_COMM_WORLD_RANK" icoFoam -parallel\n')


def test_windows_pool_with_their_blocks_apart_and_looks_widen_the_intervals(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # window D was looked at twice (952 and 1,311 blocks) before window F: pooled, each interval
    # at 1 - 0.05 / 3, so that stopping at whichever look first passed is still a 5% error
    (tmp_path / "d").mkdir()
    (tmp_path / "f").mkdir()
    d = _tsv(tmp_path / "d", [1.02, 1.01, 1.03, 1.02, 1.01, 1.03])
    f = _tsv(tmp_path / "f", [1.00, 1.01, 0.99, 1.00, 1.02, 1.00])
    runs = st.read_pooled([d, f])
    assert sorted({r.block for r in runs}) == [1, 2, 3, 4, 5, 6, *range(1_000_001, 1_000_007)]
    assert np.allclose(st.block_logs(runs), np.log([1.02, 1.01, 1.03, 1.02, 1.01, 1.03,
                                                    1.00, 1.01, 0.99, 1.00, 1.02, 1.00]))
    assert st.looks_confidence(1) == 0.95 and st.looks_confidence(3) == 1 - 0.05 / 3
    with pytest.raises(ValueError, match="at least 1"):
        st.looks_confidence(0)
    once, thrice = st.report(runs, 0.01), st.report(runs, 0.01, st.looks_confidence(3))
    assert once[2] == "profiled / plain, mean: 1.0116, 95% interval 1.0036-1.0197 (Student t)"
    assert thrice[2] == "profiled / plain, mean: 1.0116, 98.33% interval 1.0013-1.0220 (Student t)"
    # 12 blocks: the order statistics' levels over 95% and 98.33% are 96.1% (the 3rd and 10th of
    # the sorted ratios) and 99.4% (the 2nd and 11th)
    assert once[3] == "profiled / plain, median: 1.0100, 96.1% interval 1.0000-1.0200 (distribution-free)"
    assert thrice[3] == "profiled / plain, median: 1.0100, 99.4% interval 1.0000-1.0300 (distribution-free)"
    assert st.main([str(tmp_path), "--app", "openfoam", "--read", str(d), "--read", str(f), "--looks", "3"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[2] == thrice[2] and err == ""
    assert st.main([str(tmp_path), "--app", "openfoam", "--read", str(d), "--read", str(f)]) == 0
    assert capsys.readouterr().err == ("note: 2 windows pooled at --looks 1: each window was looked at on "
                                       "its own before; give --looks\n")
