"""The command lines colltune prints as next steps, built in one place from the facts of this
machine and this run, so that each runs as printed (issue 27).

Facts that decide a line: how the user started colltune (`colltune` on PATH, or the path they
typed), the MPI library a run used (its own mpiexec, `--mpi` for commands that do not infer it
from the launcher), ranks against this machine's cores (Open MPI refuses more ranks than cores
without `--oversubscribe`; colltune's own launches always pass it, a line for the user must too),
a Slurm allocation (`srun`), running as root (Open MPI refuses it unless told), and the run's own
settings (`--preset`). Paths are printed as the user gave them: the next step runs from the same
directory.

Every line is printed after `  $ ` so that it can be copied, and read back by tests
(tests/test_journey.py, printed_steps). Given a width (advise's one screen of 80 columns), a
longer line is wrapped at its words with the shell's continuation (` \\` at a line's end, the next
piece indented): pasted whole it is still one command; a word is never split.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from colltune.invocation import _same_file, colltune_word
from colltune.mpi import launch
from colltune.mpi.libraries import MpiError, MpiLibrary

APP = "./your_app"  # the user's program and its arguments: the one word they replace
PROMPT = "  $ "


@dataclass(frozen=True)
class Step:
    """One next step: what it does, and the shell line that does it."""

    what: str
    line: str


def colltune() -> str:
    """The word that starts colltune again (colltune.invocation)."""
    return colltune_word()


def program(path: str | os.PathLike[str]) -> str:
    """A program the user runs by name: its bare name when PATH finds this very file, else its
    path (relative to the current directory when it is below it)."""
    path = Path(path)
    on_path = shutil.which(path.name)
    if on_path is not None and _same_file(on_path, path):
        return path.name
    return shlex.quote(_relative(path))


def _relative(path: Path) -> str:
    cwd = Path.cwd()
    try:
        rel = path.absolute().relative_to(cwd)
    except ValueError:
        return str(path)
    if cwd == Path(cwd.anchor):  # everything is below /: absolute reads better
        return str(path.absolute())
    return str(rel) if os.sep in str(rel) else f".{os.sep}{rel}"


def openmpi_slots() -> int:
    """Slots Open MPI gives a single node by default: its physical cores (hardware threads of one
    core count once) among the CPUs this process may use."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return launch.cores_available()
    cores = set()
    for cpu in cpus:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add((topo.joinpath("physical_package_id").read_text().strip(),
                       topo.joinpath("core_id").read_text().strip()))
        except OSError:
            return launch.cores_available()
    return min(len(cores), launch.cores_available()) if cores else launch.cores_available()


def launch_words(lib: MpiLibrary | None, nprocs: int, app: Sequence[str] = (APP,), *,
                 for_hand: bool = False) -> list[str]:
    """`mpiexec -n N [--oversubscribe] APP` for `lib` on this machine (`srun -n N` inside a Slurm
    allocation). `for_hand`: a launch without `colltune run`, which must name srun's PMI plugin
    itself (colltune run adds it)."""
    if launch.use_srun():
        plugin = [f"--mpi={launch.srun_plugin(lib)}"] if for_hand and lib is not None else []
        return ["srun", "-n", str(nprocs), *plugin, *app]
    mpiexec = program(lib.mpiexec) if lib is not None else "mpiexec"
    extra = ["--oversubscribe"] if lib is not None and lib.family == "openmpi" and nprocs > openmpi_slots() else []
    return [mpiexec, "-n", str(nprocs), *extra, *app]


def launch_line(lib: MpiLibrary | None, nprocs: int, app: Sequence[str] = (APP,), *, for_hand: bool = False) -> str:
    return " ".join(launch_words(lib, nprocs, app, for_hand=for_hand))


def root_exports(lib: MpiLibrary | None) -> list[str]:
    """What a hand launch of Open MPI needs as root (colltune's own launches set it): nothing
    when the user exported it already or is not root."""
    if lib is None or lib.family != "openmpi" or os.geteuid() != 0:
        return []
    return [f"export {k}=1" for k in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")
            if os.environ.get(k) != "1"]


def library_of_run(spec: str | None) -> MpiLibrary | None:
    """The library a stored run measured (its `--mpi`, None: the default), if it is here."""
    from colltune.mpi import libraries

    try:
        return libraries.resolve(spec)
    except MpiError:
        return None


def mpi_option(spec: str | None) -> str:
    """` --mpi X` for commands that cannot infer the library from a launcher, '' for the default."""
    return f" --mpi {shlex.quote(spec)}" if spec else ""


def cli(*words: str | os.PathLike[str]) -> str:
    """A colltune command line: `colltune` as started, then the words quoted for the shell."""
    return " ".join([colltune(), *(shlex.quote(str(w)) for w in words)])


def command(words: Iterable[str]) -> str:
    """Words (already in shell form, e.g. from launch_words) joined; a user's own command line
    given as a list of arguments is quoted."""
    return " ".join(words)


def quoted(argv: Sequence[str]) -> str:
    return shlex.join(list(argv))


CONTINUED = " \\"       # the shell's line continuation, at the end of a wrapped piece
INDENT = "    "            # a wrapped command's further pieces, under its first word (past `  $ `)
# A shell word as printed: unquoted characters, backslash escapes, '...' and "..." strings.
_WORD = re.compile(r"""(?:[^\s'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+""")


def wrapped(line: str, width: int | None) -> list[str]:
    """A step's line as printed: `  $ LINE`, or within `width` columns its words packed into
    pieces joined by the shell's continuation (each piece but the last ends with ` \\`, the next
    starts with INDENT). A single word longer than the width stays whole on its own piece."""
    if width is None or len(PROMPT) + len(line) <= width:
        return [PROMPT + line]
    out, current = [], PROMPT
    for word in _WORD.findall(line):
        fresh = current in (PROMPT, INDENT)
        if not fresh and len(current) + 1 + len(word) + len(CONTINUED) > width:
            out.append(current + CONTINUED)
            current = INDENT
            fresh = True
        current += word if fresh else " " + word
    return out + [current]


def printed_lines(steps: Sequence[Step], title: str = "next steps", note: str | None = None,
                  width: int | None = None) -> list[str]:
    """What `show` prints: a title, then per step what it does and its line after `  $ `."""
    if not steps:
        return []
    out = [f"{title}{f' ({note})' if note else ''}:"]
    for step in steps:
        out.append(f"  {step.what}:")
        out += wrapped(step.line, width)
    return out


def show(steps: Sequence[Step], title: str = "next steps", file: object = None, note: str | None = None,
         width: int | None = None) -> None:
    """Print the steps (printed_lines); `width`: wrap each command line within it."""
    if not steps:
        return
    out = file if file is not None else sys.stdout
    for line in printed_lines(steps, title, note, width):
        print(line, file=out)  # type: ignore[arg-type]
    out.flush()  # type: ignore[attr-defined]


def placeholder_note(steps: Sequence[Step]) -> str | None:
    return f"{APP} stands for your program and its arguments" if any(APP in s.line for s in steps) else None


def printed_steps(text: str) -> list[Step]:
    """The steps `show` printed into `text`, in order (for tests and scripts); a wrapped line is
    read back as the one line it continues."""
    lines = text.splitlines()
    steps = []
    for i, line in enumerate(lines):
        if not line.startswith(PROMPT) or i == 0:
            continue
        command, k = line[len(PROMPT):], i
        while command.endswith(CONTINUED) and k + 1 < len(lines) and lines[k + 1].startswith(INDENT):
            k += 1
            command = command[:-len(CONTINUED)] + " " + lines[k][len(INDENT):]
        steps.append(Step(lines[i - 1].strip().removesuffix(":"), command))
    return steps


# ---------------------------------------------------------------------------------------------
# The steps after each command

def out_dir_for(db_path: Path, out_dir: Path | None = None) -> Path:
    """Where a next step writes its files: the directory the user chose, else the database's."""
    if out_dir is not None:
        return out_dir
    return db_path.parent if str(db_path.parent) not in ("", ".") else Path("colltune-out")


def after_check(db_path: Path, out_dir: Path | None, has_report: bool) -> list[Step]:
    steps = [Step("write a tuning profile from this check",
                  cli("tune", "--db", db_path, "--out", out_dir_for(db_path, out_dir) / "tuned.prof"))]
    if not has_report:
        steps.append(Step("the HTML report of this check", cli("report", "--db", db_path, "--out",
                                                                   out_dir_for(db_path, out_dir))))
    return steps


# A first learning loop: two runs of the application already train the models and show the
# progress table; every further `learn run` with the same database goes on from there.
LEARN_BATCHES = 2
NATIVE = ("openmpi", "mpich", "intel")  # libraries `colltune export --native` writes files for


def after_tune(db_path: Path, profile_path: Path, *, rules: int, nprocs: int, run_settings: dict[str, object],
               library_points: int) -> list[Step]:
    """Apply the profile, measure its gain, write the library's own file, advise an application."""
    spec = run_settings.get("mpi")
    spec = str(spec) if spec else None
    lib = library_of_run(spec)
    app = launch_line(lib, nprocs)
    steps = []
    if rules:
        steps.append(Step("apply the profile to your application (no recompilation)",
                          f"{cli('run', '--profile', profile_path)} -- {app}"))
        steps.append(Step("or launch by hand or through srun: print the settings",
                          cli("mpi", "env", "--profile", profile_path) + mpi_option(spec)))
        preset = f" --preset {run_settings['preset']}" if run_settings.get("preset") else ""
        steps.append(Step("measure the gain (tuned vs default, in the same launches)",
                          cli("validate", "--profile", profile_path, "--db", db_path) + mpi_option(spec) + preset))
    if library_points and lib is not None and lib.name in NATIVE:
        steps.append(Step(f"write {lib.name}'s own tuning file ({library_points} points where one of its algorithms "
                          "is faster than its default)",
                          cli("export", "--native", lib.name, "--db", db_path, "--out", out_dir_for(db_path) / "native")))
    steps.append(Step("what to change in your application, from one profiling run of it",
                      f"{cli('advise', '--db', db_path)} -- {app}"))
    return steps


def root_prefix(lib: MpiLibrary | None) -> str:
    """`VAR=1 ...` in front of a hand launch of Open MPI as root (colltune's own launches set it)."""
    return "".join(line.removeprefix("export ") + " " for line in root_exports(lib))


def after_export_native(settings_file: Path, library: str, nprocs: int) -> list[Step]:
    """Run the application with the library's own tuning file (no interposer)."""
    lib = library_of_run(library)
    if library == "intel":
        how = f". {shlex.quote(str(settings_file))} && {launch_line(lib, nprocs)}"
    else:
        how = f". {shlex.quote(str(settings_file))} && {root_prefix(lib)}{launch_line(lib, nprocs, for_hand=True)}"
    return [Step(f"run your application with {library}'s own tuning file (no colltune in it)", how)]


def after_validate(db_path: Path) -> list[Step]:
    return [Step("the HTML report: the check, and this validation as \"Tuned vs default\"",
                 cli("report", "--db", db_path, "--out", out_dir_for(db_path)))]


def after_advise(db_path: Path, command_argv: Sequence[str], out_dir: Path, files: dict[str, str],
                 verified: bool, missing: int = 0) -> list[Step]:
    app = quoted(command_argv)
    steps = []
    if missing:
        steps.append(Step(f"measure the {missing} point(s) of the application the database lacks, then advise",
                          f"{cli('advise', '--db', db_path, '--out', out_dir, '--measure')} -- {app}"))
    if "profile" in files or "env" in files:
        source = f". {shlex.quote(files['env'])} && " if "env" in files else ""
        run = cli("run", "--profile", files["profile"]) if "profile" in files else cli("run")
        steps.append(Step("run it with the advice applied", f"{source}{run} -- {app}"))
        if not verified:
            steps.append(Step("measure what the advice gains in this application",
                              f"{cli('advise', '--db', db_path, '--out', out_dir, '--verify')} -- {app}"))
    # (80 columns: advise's output is one screen)
    steps.append(Step(f"learn the best algorithms in {LEARN_BATCHES} runs (each loop goes on from the "
                      "database)",
                      f"{cli('learn', 'run', '--batches', str(LEARN_BATCHES), '--db', db_path)} -- {app}"))
    return steps


def after_learn_run(db_path: Path, profile_path: Path) -> list[Step]:
    return [Step("write what the loop learned as a profile", cli("learn", "export", "--db", db_path, "--out",
                                                                  profile_path))]


def after_learn_export(db_path: Path, profile_path: Path, launch_argv: Sequence[str] | None,
                       library_verdicts: str | None, rules: int) -> list[Step]:
    """`launch_argv`: the application's launch line as the learning runs recorded it.
    `library_verdicts`: the native library name when a check in the database judged its algorithms."""
    app = quoted(launch_argv) if launch_argv else launch_line(library_of_run(None), 4)
    what = (f"run the application with the learned profile ({rules} rule{'s' if rules != 1 else ''})" if rules else
            "run the application with the learned profile (no rules yet: the library decides every call; "
            "`learn run` again learns more)")
    steps = [Step(what, f"{cli('run', '--profile', profile_path)} -- {app}")]
    if library_verdicts:
        steps.append(Step(f"write {library_verdicts}'s own tuning file from the check's verdicts on its algorithms",
                          cli("export", "--native", library_verdicts, "--db", db_path, "--out",
                              out_dir_for(db_path) / "native")))
    return steps
