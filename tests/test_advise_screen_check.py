"""benchmarks/advise/check_screen.py (issue 34's one-screen criteria) on the outputs of advise that
benchmarks/advise/round15 keeps (main 168613e's front end on ExaML, QE, HPCC, LAMMPS and
OpenFOAM), and on small made-up screens: what each criterion reads and that it can fail."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ADVISE = Path(__file__).parents[1] / "benchmarks" / "advise"
ROUND = ADVISE / "round15"
sys.path.insert(0, str(ADVISE))

import check_screen  # noqa: E402


def _check(app: str, exempt: bool = False) -> dict:
    return check_screen.check(ROUND / f"advise-{app}.txt", ROUND / f"advise-{app}-findings.json", exempt)


def test_committed_screens_fit_one_screen_but_their_command_lines_are_wider() -> None:
    got = {app: (r["lines"], len(r["wide"]), len(r["wide_commands"]), r["findings_shown"], r["findings_json"])
           for app in ("lammps", "qe", "hpcc", "examl", "openfoam") for r in [_check(app)]}
    assert got == {"lammps": (39, 2, 2, 6, 17), "qe": (39, 2, 2, 6, 46), "hpcc": (39, 2, 2, 6, 15),
                   "examl": (33, 2, 2, 6, 131), "openfoam": (34, 2, 2, 6, 15)}
    assert all(not _check(app)["criteria"]["width"] for app in got)
    assert all(_check(app, exempt=True)["criteria"]["width"] for app in got)


def test_committed_rows_that_name_no_application_frame() -> None:
    failing = {app: [v["row"] for v in _check(app)["rows"] if not v["names"]]
               for app in ("lammps", "qe", "hpcc", "examl", "openfoam")}
    # LAMMPS 2, 3, 5 and ExaML 1: the 80-column middle cut leaves only an offset of the pair
    assert failing == {"lammps": [2, 3, 5], "qe": [], "hpcc": [], "examl": [1], "openfoam": []}
    lammps = _check("lammps")["rows"]
    assert lammps[0]["verdict"] == "run setting: no call site"
    assert lammps[5]["verdict"] == "names write"
    assert _check("openfoam")["rows"][0]["verdict"] == "names scalarSol... (cut), scalarSol... (cut)"
    # stripped binaries: an address, and no line of the output says why it is not a line
    assert [v["why"] for v in _check("hpcc")["rows"]] == [True, False, False, False, False, False]
    assert _check("openfoam")["ok"] is False and _check("openfoam", exempt=True)["ok"] is True


def _screen(tmp_path: Path, rows: list[str], findings: list[dict], extra: int = 0) -> dict:
    lines = ["colltune advise: 2 ranks", *(["filler"] * extra),
             "What to change, safe first, by predicted saving (--explain N: the details)",
             " #    saving  finding: what, where, the change", *rows, "next steps:"]
    (tmp_path / "s.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "s.json").write_text(json.dumps({"findings": findings}))
    return check_screen.check(tmp_path / "s.txt", tmp_path / "s.json", False)


def test_a_row_passes_with_a_line_and_fails_on_a_layer_frame_or_a_cut(tmp_path: Path) -> None:
    app = {"strategy": "pattern", "data": {"first": "PCG::solve (PCG.C:142) <- Foam::reduce",
                                           "second": "PCG::solve (PCG.C:150) <- Foam::reduce"}}
    layer = {"strategy": "pattern", "data": {"first": "Foam::reduce (libPstream.so+0x6daa)",
                                             "second": "Foam::reduce (libPstream.so+0x6daa)"}}
    cut = {"strategy": "pattern", "data": {"first": "ns::Solver::residual_norm (libapp.so+0x1234)"}}
    r = _screen(tmp_path, [" 1         -  reductions 9x PCG::solve (PCG.C:142, :150): fuse (check)",
                           " 2         -  reductions 9x Foam::reduce (libPstream.so+0x6daa): fuse",
                           " 3         -  reductions 9x ns::Sol...libapp.so+0x1234): fuse"], [app, layer, cut])
    assert [v["names"] for v in r["rows"]] == [True, False, False]
    assert r["rows"][0]["verdict"] == "names PCG.C:142, PCG.C:150"
    assert "is a layer frame" in r["rows"][1]["verdict"]
    assert r["criteria"] == {"lines": True, "width": True, "names": False, "why": True}


def test_forty_one_lines_or_a_site_less_pattern_fail(tmp_path: Path) -> None:
    setting = {"strategy": "mapping", "data": {"host": "vm"}}
    assert _screen(tmp_path, [" 1         -  placement on vm"], [setting], extra=35)["ok"] is True
    r = _screen(tmp_path, [" 1         -  placement on vm"], [setting], extra=36)
    assert (r["lines"], r["criteria"]["lines"]) == (41, False)
    r = _screen(tmp_path, [" 1         -  something"], [{"strategy": "pattern", "data": {}}])
    assert r["rows"][0]["verdict"] == "no call site, not a setting" and not r["ok"]
    r = _screen(tmp_path, [" 1         -  Barrier 3x hpcc+0x19a82: remove"],
                [{"strategy": "pattern", "data": {"first": "hpcc+0x19a82"}}])
    assert r["criteria"] == {"lines": True, "width": True, "names": True, "why": False}
