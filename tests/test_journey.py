"""The journey of a new user, end to end on the embedded Open MPI, in an empty directory (issue 27).

make demo's check (fewer collectives: CI time) -> tune -> validate -> report -> the user's program
with the printed command -> advise -> learn run -> learn export -> the program with the learned
profile -> export --native -> the program with the library's own tuning file. Every command after
the check is a line colltune itself printed as a next step, run verbatim with bash; the program is
compiled as `./your_app`, the name the printed lines use for it. docs/first-hour.md shows the
same steps: every command line in it must be one the journey ran, in the same order.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from colltune.commands import nextsteps
from colltune.mpi import build
from colltune.mpi import libraries as mpi
from colltune.store import Store

ROOT = Path(__file__).resolve().parents[1]
COLLTUNE = Path(sys.executable).parent / "colltune"
PROGRAM = Path(__file__).parent / "programs" / "journey_app.c"
# The demo checks every collective; the journey needs two whose violations at 4 ranks on this
# machine are large and stable (allreduce: 1.5-2x against reduce+bcast and basic_linear), so
# that tune writes rules and a library algorithm for export --native.
COLLECTIVES = "allreduce,gather"
NPROCS = 4


def demo_recipe() -> list[str]:
    """The commands of make demo's recipe, with the Makefile's variables filled in."""
    text = (ROOT / "Makefile").read_text()
    recipe = text[text.index("\ndemo:") + 1:].split("\n\n", 1)[0].splitlines()[1:]
    values = {"$(COLLTUNE)": str(COLLTUNE), "$(NPROCS)": str(NPROCS), "$(DEMO_OUT)": "colltune-out", "$$": "$"}
    lines = []
    for line in recipe:
        for key, value in values.items():
            line = line.replace(key, value)
        lines.append(line.strip())
    return lines


class Journey:
    """Runs shell lines in the journey's directory and keeps what ran, for the walk-through."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.ran: list[str] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "COLLTUNE_"))}
        self.env["COLLTUNE_CACHE"] = os.environ.get("COLLTUNE_CACHE", str(Path.home() / ".cache" / "colltune"))

    def sh(self, line: str, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None,
           timeout: float = 600) -> str:
        proc = subprocess.run(["bash", "-c", line], cwd=self.cwd, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
        with (self.cwd.parent / "transcript.txt").open("a") as log:  # what a user would have seen
            log.write(f"$ {line}\n{proc.stdout}{proc.stderr}[exit {proc.returncode}]\n\n")
        assert proc.returncode in ok, f"`{line}` exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        self.ran.append(line)
        return proc.stdout + proc.stderr

    def steps(self, line: str, ok: tuple[int, ...] = (0,), **kw: object) -> tuple[str, dict[str, str]]:
        """Run `line`; its output and the next steps it printed, by what they do (first words)."""
        out = self.sh(line, ok, **kw)  # type: ignore[arg-type]
        return out, {s.what: s.line for s in nextsteps.printed_steps(out)}


def step(steps: dict[str, str], start: str) -> str:
    found = [line for what, line in steps.items() if what.startswith(start)]
    assert len(found) == 1, f"no single step starting {start!r} in {list(steps)}"
    return found[0]


def normalized(line: str, colltune: str = ".venv/bin/colltune", mpiexec: str = ".venv/bin/mpiexec") -> str:
    """A line as the walk-through shows it: colltune and mpiexec as started from the checkout
    after make demo; without what only some machines need (more ranks than cores, root)."""
    line = line.replace(colltune, ".venv/bin/colltune").replace(mpiexec, ".venv/bin/mpiexec")
    line = re.sub(r"OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)?=1 ", "", line)
    return re.sub(r" --oversubscribe\b", "", line)


@pytest.mark.slow
def test_the_first_hour(tmp_path: Path, openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts) -> None:
    home = tmp_path / "journey"
    home.mkdir()
    j = Journey(home)
    build.compile_program(openmpi, [PROGRAM], home / "your_app", ["-O2"])
    assert sorted(p.name for p in home.iterdir()) == ["your_app"]
    colltune, mpiexec = str(COLLTUNE), str(openmpi.mpiexec)
    app = f"{mpiexec} -n 4{' --oversubscribe' if NPROCS > nextsteps.openmpi_slots() else ''} ./your_app"
    db = "colltune-out/colltune.duckdb"

    # make demo: the check (fewer collectives), then tune, which prints the next steps.
    check, tune = demo_recipe()
    assert check.startswith(f"{colltune} check --preset quick --library-algorithms -n 4 --db {db} ")
    j.sh(check.replace(" check ", f" check -c {COLLECTIVES} --quiet ", 1))
    with Store(home / db, read_only=True) as store:
        (check_run,) = store.runs()["run_id"]
    tune_out, tuned = j.steps(tune)
    # export --native is offered only where the library's proof passed an algorithm that won
    # (issue 37 refuses e.g. basic_linear's float sums): which ones win is this machine's noise.
    native = f"{colltune} export --native openmpi --db {db} --out colltune-out/native"
    has_native = native in tuned.values()
    if not has_native:
        assert "library's proof refuses" in tune_out or "library algorithm is >=" not in tune_out, tune_out
    assert list(tuned.values()) == [
        f"{colltune} run --profile colltune-out/tuned.prof -- {app}",
        f"{colltune} mpi env --profile colltune-out/tuned.prof",
        f"{colltune} validate --profile colltune-out/tuned.prof --db {db} --preset quick",
        *([native] if has_native else []),
        f"{colltune} advise --db {db} -- {app}",
    ], tuned
    run_tuned, env_line, validate, advise = (line for line in tuned.values() if line != native)

    # validate, then the report: about the check, with the validation in its own section.
    _, validated = j.steps(validate, ok=(0, 1))  # 1: a point measured slower (noise on 2 cores)
    assert list(validated.values()) == [f"{colltune} report --db {db} --out colltune-out"]
    j.sh(validated.popitem()[1])
    page = (home / "colltune-out" / "report.html").read_text()
    assert f"<title>colltune check: Open MPI 5.0.11, {NPROCS} processes</title>" in page
    assert f"run {check_run} " in page
    assert '<section id="tuned"><h2>Tuned vs default</h2>' in page

    # The user's program with the profile, as printed; the counting table shows the profile served.
    out = j.sh(run_tuned, env={"COLLTUNE_VERBOSE": "1"})
    assert "journey_app ok 4" in out
    # The program calls allreduce and gather at the check's sizes: every rule of the profile serves.
    assert re.search(r"colltune:\s+(allreduce|gather)\s+profile\s+\w+\s+applied", out), out
    # By hand: the settings mpi env prints, then the launch line it shows.
    settings = j.sh(env_line)
    hand = [line.removeprefix("#   ") for line in settings.splitlines() if line.startswith(f"#   {mpiexec} ")]
    assert hand == [f'{mpiexec} -x LD_PRELOAD="$colltune_lib" -x COLLTUNE_PROFILE -n 4'
                    f"{' --oversubscribe' if '--oversubscribe' in app else ''} ./your_app"]
    assert "journey_app ok 4" in j.sh(f'eval "$({env_line})" && {hand[0]}')

    # advise, then what it prints: the advice applied, its verification, the learning loop.
    _, advised = j.steps(advise)
    learn = step(advised, "learn")
    for what, line in advised.items():
        if line != learn:
            assert "journey_app ok 4" in j.sh(line), what
    assert learn == f"{colltune} learn run --batches 2 --db {db} -- {app}"
    _, learned = j.steps(learn)
    assert list(learned.values()) == [f"{colltune} learn export --db {db} --out colltune-out/learned.prof"]
    _, exported = j.steps(learned.popitem()[1])
    assert list(exported.values()) == [f"{colltune} run --profile colltune-out/learned.prof -- {app}",
                                       *([native] if has_native else [])]
    assert "journey_app ok 4" in j.sh(list(exported.values())[0])
    if not has_native:
        return

    # export --native, and the program with the library's own tuning file.
    _, natives = j.steps(native)
    rules = home / "colltune-out" / "native" / "openmpi-dynamic-rules.conf"
    assert rules.is_file() and rules.with_name(rules.name + ".env").is_file()
    assert list(natives.values()) == [
        f". colltune-out/native/openmpi-dynamic-rules.conf.env && {root_prefix()}{app}"]
    assert "journey_app ok 4" in j.sh(natives.popitem()[1])

    # The walk-through shows these steps, in this order.
    walk = [normalized(line) for line in walkthrough_lines()]
    ran = [normalized(line, colltune, mpiexec) for line in j.ran]
    assert walk and _subsequence(walk, ran), (walk, ran)


def root_prefix() -> str:
    return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " if os.geteuid() == 0 else ""


def walkthrough_lines() -> list[str]:
    """The command lines of docs/first-hour.md: lines after `$ ` in its shell blocks, other than
    make's."""
    text = (ROOT / "docs" / "first-hour.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [line[2:] for block in blocks for line in block.splitlines()
            if line.startswith("$ ") and not line.startswith("$ make ")]


def _subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(any(item == x for x in it) for item in short)


@pytest.mark.slow
def test_advise_verify_says_the_rerun_failed_and_how_to_wrap(tmp_path: Path, openmpi: mpi.MpiLibrary,
                                                               openmpi_build: build.Artifacts) -> None:
    """An application that refuses to overwrite its output (as ExaML does) runs once, then fails
    in --verify's reruns: the error says so and how to wrap it, and the wrapper it describes works."""
    j = Journey(tmp_path / "app")
    j.cwd.mkdir()
    build.compile_program(openmpi, [PROGRAM.with_name("refuses_overwrite.c")], j.cwd / "refuses", ["-O2"])
    launch = f"{openmpi.mpiexec} -n 2 ./refuses"
    out = j.sh(f"{COLLTUNE} advise --verify --runs 1 -- {launch}", ok=(2,))
    message = out[out.index("error: "):]
    assert message.startswith(
        f"error: --verify: run 1 of 1 without the advice exited with status 1, after the first run of `{launch}` had "
        "succeeded: the application fails when it is started again in the same directory."), message
    lines = re.findall(r"`(#!/bin/sh)`, `(rm -f <its output files>)`, `(exec \./refuses)` \(chmod \+x fresh\.sh\)",
                       message)
    assert lines == [("#!/bin/sh", "rm -f <its output files>", "exec ./refuses")], message
    (j.cwd / "fresh.sh").write_text("\n".join(lines[0]).replace("<its output files>", "refuses.out") + "\n")
    (j.cwd / "fresh.sh").chmod(0o755)
    colltune, wrapped = re.search(r"then `(\S+) advise --verify \.\.\. -- (.*)`$", message.strip()).groups()
    assert (colltune, wrapped) == (str(COLLTUNE), f"{openmpi.mpiexec} -n 2 ./fresh.sh")  # colltune as started
    out = j.sh(f"{COLLTUNE} advise --verify --runs 1 -- {wrapped}")
    assert "--verify: 1 runs per side" in out


# --- the facts a printed line is built from, one at a time (no MPI launched) ---------------------

def test_oversubscribe_exactly_when_ranks_exceed_open_mpis_slots(openmpi: mpi.MpiLibrary,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "mpiexec")
    monkeypatch.setattr(nextsteps, "openmpi_slots", lambda: 2)
    word = nextsteps.program(openmpi.mpiexec)
    assert nextsteps.launch_line(openmpi, 2) == f"{word} -n 2 ./your_app"
    assert nextsteps.launch_line(openmpi, 3) == f"{word} -n 3 --oversubscribe ./your_app"
    mpich = replace(openmpi, name="mpich", family="mpich")  # Hydra runs any number of ranks
    assert nextsteps.launch_line(mpich, 8) == f"{word} -n 8 ./your_app"


def test_inside_a_slurm_allocation_the_lines_use_srun(openmpi: mpi.MpiLibrary,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    assert nextsteps.launch_line(openmpi, 4) == "srun -n 4 ./your_app"  # colltune run adds --mpi=pmix
    assert nextsteps.launch_line(openmpi, 4, for_hand=True) == "srun -n 4 --mpi=pmix ./your_app"


def test_programs_are_named_as_the_shell_finds_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "bin" / "mpiexec"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert nextsteps.program(tool) == "bin/mpiexec"  # below the directory: relative, as typed
    monkeypatch.chdir(tmp_path / "bin")
    assert nextsteps.program(tool) == "./mpiexec"
    monkeypatch.setenv("PATH", f"{tool.parent}:/usr/bin:/bin")
    assert nextsteps.program(tool) == "mpiexec"  # PATH finds this very file
    monkeypatch.chdir("/")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert nextsteps.program(tool) == str(tool)


def test_colltune_is_named_as_it_was_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from colltune import invocation
    from colltune.errors import ColltuneError

    monkeypatch.setattr(sys, "argv", [".venv/bin/colltune", "tune"])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert invocation.colltune_word() == ".venv/bin/colltune"
    shown = io.StringIO()
    ColltuneError("no verdicts: run `colltune check --db x.duckdb` first").show(shown)
    assert shown.getvalue() == "error: no verdicts: run `.venv/bin/colltune check --db x.duckdb` first\n"
    monkeypatch.setenv("PATH", f"{COLLTUNE.parent}:/usr/bin:/bin")
    monkeypatch.setattr(sys, "argv", [str(COLLTUNE), "tune"])
    assert invocation.colltune_word() == "colltune"


def test_no_step_that_cannot_work(openmpi: mpi.MpiLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile without rules has nothing to apply or validate; no winning library algorithm,
    no native file; a check of another library names it where the command cannot infer it."""
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "mpiexec")
    db, prof = Path("out/c.duckdb"), Path("out/tuned.prof")
    steps = nextsteps.after_tune(db, prof, rules=0, nprocs=2, run_settings={}, library_points=0)
    assert [s.line.split(" -- ")[0].split()[1:3] for s in steps] == [["advise", "--db"]]
    steps = nextsteps.after_tune(db, prof, rules=3, nprocs=2, run_settings={"mpi": "openmpi", "preset": "full"},
                                 library_points=0)
    assert [s.line.split()[1] for s in steps] == ["run", "mpi", "validate", "advise"]
    assert steps[1].line.endswith("mpi env --profile out/tuned.prof --mpi openmpi")
    assert steps[2].line.endswith("validate --profile out/tuned.prof --db out/c.duckdb --mpi openmpi "
                                  "--preset full")


# --- the report: the check by default, a validation as what it is -------------------------------

def _check_then_validate(tmp_path: Path) -> Path:
    import datetime as dt

    import duckdb
    from check_synth import Truth, simulate, write_db

    db = tmp_path / "r.duckdb"
    m = simulate(Truth(), {"bcast": ["default", "default#aa", "bcast_as_allgatherv"]}, [8, 64], launches=4, reps=10)
    write_db(db, m, run_id="check-1")
    write_db(db, simulate(Truth(), {"bcast": ["default", "tuned"]}, [8, 64], launches=4, reps=10),
             run_id="validate-2", created=dt.datetime(2026, 11, 22, 5, 0, 0))
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE runs SET kind = 'validate' WHERE run_id = 'validate-2'")
    return db


def test_report_defaults_to_the_latest_check_and_renders_a_validation_as_one(tmp_path: Path) -> None:
    from colltune.report import html as report

    db = _check_then_validate(tmp_path)
    page = report.write_report(db, tmp_path / "a").read_text()
    assert "<title>colltune check: Open MPI 5.0.11, 4 processes</title>" in page and "run check-1 " in page
    assert '<section id="summary">' in page
    for chosen in (report.write_report(db, tmp_path / "b", "validate-2"),
                   report.write_report(db, tmp_path / "c", kind="validate")):
        page = chosen.read_text()
        assert "<title>colltune validate: Open MPI 5.0.11, 4 processes</title>" in page and "run validate-2 " in page
        assert re.findall(r'<section id="([^"]+)">', page) == ["tuned", "environment"]
        assert "This validation run was measured but never judged" in page
        assert "A/A" not in page and "guideline" not in page


def test_report_shows_the_settings_as_a_table(tmp_path: Path) -> None:
    from colltune.report import check_sections
    from colltune.report import html as report

    assert check_sections.settings_rows({"nprocs": [2, 4], "stop": {"max_reps": 40, "ref_time_s": None},
                                         "preset": "quick"}) == [
        ("nprocs", "2, 4"), ("stop.max_reps", "40"), ("stop.ref_time_s", "-"), ("preset", "quick")]
    page = report.write_report(_check_then_validate(tmp_path), tmp_path / "o").read_text()
    assert "<details><summary>1 measurement setting of the run</summary>" in page
    assert "<tr><td>preset</td><td>synthetic</td></tr>" in page and "bench settings" not in page


def test_report_cli_says_which_run_it_rendered(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from colltune.cli import main

    db = _check_then_validate(tmp_path)
    result = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "o"), "--kind", "validate"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("report of validate run validate-2: ")


@pytest.mark.slow
def test_run_says_how_to_oversubscribe_when_open_mpi_refuses(tmp_path: Path, openmpi: mpi.MpiLibrary,
                                                               openmpi_build: build.Artifacts) -> None:
    """More ranks than Open MPI's slots without --oversubscribe: the launch fails (Open MPI's
    refusal), colltune run says why it may have and prints the line that runs."""
    j = Journey(tmp_path / "app")
    j.cwd.mkdir()
    build.compile_program(openmpi, [PROGRAM], j.cwd / "your_app", ["-O2"])
    nprocs = nextsteps.openmpi_slots() + 1
    if nprocs > 16:
        pytest.skip(f"{nprocs} ranks to exceed this machine's cores: too many for a test")
    out = j.sh(f"{COLLTUNE} run -- {openmpi.mpiexec} -n {nprocs} ./your_app 5", ok=(1,))
    hint = out[out.index("colltune: if Open MPI said there are not enough slots"):].splitlines()
    assert hint == [f"colltune: if Open MPI said there are not enough slots: {nprocs} ranks on {nprocs - 1} cores "
                    "need --oversubscribe:", f"  $ {COLLTUNE} run -- {openmpi.mpiexec} --oversubscribe -n {nprocs} "
                    "./your_app 5"]
    assert f"journey_app ok {nprocs}" in j.sh(hint[1].removeprefix("  $ "))
