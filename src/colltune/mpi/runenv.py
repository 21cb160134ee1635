"""Settings that put the interposer into the ranks of an MPI program.

`rank_environment` says what the ranks need (LD_PRELOAD and COLLTUNE_*), `inject` rewrites a
user's launcher command line so that the ranks, and only they, get it (Open MPI `-x`,
MPICH/Intel Hydra `-genv`, Slurm `srun --export`), `print_env` prints it for hand launches.
Names given to `--force` are checked here against the table before anything starts, with the
same rules as the C runtime, which checks again at MPI_Init. The files named (a tuning profile,
a selection table) are passed on unread: colltune.interposer reads them first for the commands
that take them from a user.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from colltune.mpi import launch, smpi
from colltune.mpi.build import Artifacts
from colltune.mpi.libraries import MpiError, MpiLibrary, discover

SRUN_NAMES = ("srun",)
LAUNCHER_NAME = re.compile(r"^(mpiexec|mpirun|orterun|prterun|mpiexec\.hydra)")


# The forms a library member may be of besides the blocking one, by suffix: forced on
# MPI_I<coll> and MPI_<Coll>_init, each its own slot (native/runtime/modes.c).
STARTED_FORMS = {"#nonblocking": "nonblocking", "#persistent": "persistent"}


def parse_force(spec: str, library_members: Sequence[str] = ()) -> dict[str, str]:
    """`bcast=bcast_as_allgatherv,allreduce=library` -> {collective: variant or "library"}.

    A value may also be one of `library_members`, the library's own algorithms as the proof
    names them (`lib:bcast:binomial`); one of the nonblocking form (`lib:allreduce:ring#nonblocking`)
    is forced on MPI_I<coll> and keyed `<collective>#nonblocking`, one of the persistent form
    (`...#persistent`) on MPI_<Coll>_init and keyed `<collective>#persistent`, so a collective
    may be given once per form. Raises MpiError naming the valid choices, like the C runtime does
    at MPI_Init."""
    from colltune import catalog  # pydantic: only when --force is given (colltune run's start)

    cat = catalog.load()
    names = cat.collective_names()
    chosen: dict[str, str] = {}
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        key, sep, value = (s.strip() for s in entry.partition("="))
        if not sep:
            raise MpiError(f"--force: entry {entry!r} is not collective=variant")
        if key not in names:
            raise MpiError(f"--force: unknown collective {key!r}; valid collectives: {', '.join(names)}")
        suffix = next((s for s in STARTED_FORMS if value.endswith(s)), "")
        slot = key + suffix
        if slot in chosen:
            raise MpiError(f"--force: collective {key!r} is given twice"
                           + (f" with a member of the {STARTED_FORMS[suffix]} form" if suffix else ""))
        own = [m for m in library_members if m.startswith(f"lib:{key}:")]
        valid = [v.name for v in cat.variants_of(key)] + own + ["library"]
        if value not in valid:
            hint = ("" if own or not value.startswith("lib:") else
                    " (the proof of this library lists none of its own algorithms for "
                    f"{key}: `colltune selftest` proves them where MPI_T can force them)")
            if suffix and not any(m.endswith(suffix) for m in own):
                hint = (f" (the algorithms of the {STARTED_FORMS[suffix]} forms are proven by "
                        f"`colltune selftest --{STARTED_FORMS[suffix]}`)")
            raise MpiError(f"--force: unknown variant {value!r} for {key}; valid choices for "
                           f"{key}: {', '.join(valid)}{hint}")
        chosen[slot] = value
    return chosen


def rank_environment(
    lib: MpiLibrary,
    artifacts: Artifacts,
    force: str | None = None,
    profile: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    extra: Mapping[str, str] | None = None,
    learn: str | os.PathLike[str] | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
    library_members: Sequence[str] = (),
) -> dict[str, str]:
    """Environment variables the ranks need to run under the interposer built for `lib`; the
    profile, the table and the proof (`library_members`: the `lib:` members --force may name)
    are not read here (colltune.interposer.rank_environment reads them)."""
    if artifacts.family != lib.family:
        raise MpiError(f"the build in {artifacts.dir} is for the {artifacts.family} ABI family, "
                       f"not {lib.family} ({lib.name}); build it with `colltune mpi build --mpi {lib.name}`")
    if not artifacts.libcolltune.exists():
        raise MpiError(f"{artifacts.libcolltune} is missing; run `colltune mpi build --mpi {lib.name}`")
    preload = [str(artifacts.libcolltune.resolve())]
    if inherited := os.environ.get("LD_PRELOAD", "").strip():
        preload.append(inherited)  # the user's own preloads stay, after ours
    env = {"LD_PRELOAD": " ".join(preload)}
    if force:
        chosen = parse_force(force, library_members)
        env["COLLTUNE_FORCE"] = ",".join(f"{k.split('#')[0]}={v}" for k, v in chosen.items())
    if profile is not None:
        env["COLLTUNE_PROFILE"] = str(Path(profile).expanduser().resolve())
    if verbose:
        env["COLLTUNE_VERBOSE"] = "1"
    env.update(learning_settings(learn, trace_dir))
    env.update(extra or {})
    return env


def learning_settings(learn: str | os.PathLike[str] | None,
                      trace_dir: str | os.PathLike[str] | None) -> dict[str, str]:
    """COLLTUNE_SELECT / COLLTUNE_TRACE_DIR of the learning mode (docs/select.md): the trace
    directory is created (the ranks only write into it, at MPI_Finalize)."""
    env: dict[str, str] = {}
    if learn is not None and str(learn) != "-":
        env["COLLTUNE_SELECT"] = str(Path(learn).expanduser().resolve())
    elif learn is not None:
        env["COLLTUNE_SELECT"] = "-"
    if trace_dir is not None:
        d = Path(trace_dir).expanduser().resolve()
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MpiError(f"--trace-dir {d}: cannot create it: {exc.strerror}") from exc
        if not os.access(d, os.W_OK | os.X_OK):
            raise MpiError(f"--trace-dir {d}: not writable; choose a directory you can write")
        env["COLLTUNE_TRACE_DIR"] = str(d)
    return env


@lru_cache(maxsize=16)
def launcher_family(launcher: str) -> str:
    """ABI family of an mpiexec/mpirun from its --version banner: openmpi | mpich | unknown."""
    try:
        out = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = out.stdout + out.stderr
    if re.search(r"Open MPI|OpenRTE|PRRTE|prterun", text):
        return "openmpi"
    if re.search(r"HYDRA|Intel\(R\) MPI|MPICH", text):
        return "mpich"
    return "unknown"


def _resolve(program: str) -> str | None:
    return shutil.which(program) if os.sep not in program else (program if os.access(program, os.X_OK) else None)


def library_for_launcher(launcher: str) -> MpiLibrary | None:
    """The known MPI library whose mpiexec is `launcher` (so `colltune run -- /path/mpiexec ...`
    needs no --mpi), or None."""
    path = _resolve(launcher)
    if path is None:
        return None
    real = Path(path).resolve()
    for lib in discover()[0]:
        if lib.mpiexec.resolve() == real:
            return lib
    return None


def inject(lib: MpiLibrary, argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The user's launcher command with `env` given to the ranks (flags right after the launcher),
    and variables to add to the launcher's own environment.

    The second part is for srun only: `--export` separates variables with commas, so values that
    contain one (COLLTUNE_FORCE) travel in srun's environment, which `--export=ALL` hands to the
    tasks; LD_PRELOAD never goes there (it would load the interposer into srun itself).
    Refuses a launcher of the other ABI family than `lib`: the interposer would refuse to load."""
    if not argv:
        raise MpiError("give the launch command after `--`, e.g. `colltune run -- mpiexec -n 4 ./app`")
    if lib.family == "smpi":  # link order, not LD_PRELOAD (docs/smpi.md)
        if Path(argv[0]).name != "smpirun":
            raise MpiError(f"SMPI programs run under smpirun, not {argv[0]!r}: "
                           "`colltune run --mpi smpi -- smpirun -np 16 ./app`")
        return smpi.interposed_command(argv, Path(env["LD_PRELOAD"].split()[0]), env)
    launcher = argv[0]
    name = Path(launcher).name
    if name in SRUN_NAMES:
        if "," in env.get("LD_PRELOAD", ""):
            raise MpiError(f"LD_PRELOAD {env['LD_PRELOAD']!r} contains a comma, which srun --export cannot pass")
        inline = {k: v for k, v in env.items() if k == "LD_PRELOAD" or "," not in v}
        exports = ",".join(["ALL", *(f"{k}={v}" for k, v in inline.items())])
        return ([launcher, f"--export={exports}", *launch.srun_mpi_flags(lib, argv[1:]), *argv[1:]],
                {k: v for k, v in env.items() if k not in inline})
    path = _resolve(launcher)
    if path is None:
        raise MpiError(f"launcher {launcher!r} not found; give mpiexec, mpirun or srun with its path")
    if not LAUNCHER_NAME.match(name):
        raise MpiError(f"{launcher!r} is not an MPI launcher; the command after `--` must start with "
                       f"mpiexec, mpirun or srun (e.g. `{lib.mpiexec} -n 4 ./app`)")
    # The library's own launcher needs no --version call (a process start in front of every launch).
    same = Path(path).resolve() == lib.mpiexec.resolve()
    family = lib.family if same else launcher_family(path)
    if family not in (lib.family, "unknown"):
        raise MpiError(
            f"{path} launches {family} programs but the interposer is for {lib.name} ({lib.family} "
            f"ABI); use `--mpi` with the library of this launcher, or launch with {lib.mpiexec}")
    flags: list[str] = []
    for key, value in env.items():
        flags += ["-x", f"{key}={value}"] if lib.family == "openmpi" else ["-genv", key, value]
    return [launcher, *flags, *argv[1:]], {}


def print_env(env: Mapping[str, str], lib: MpiLibrary, launch_words: Sequence[str] | None = None,
              exports: Sequence[str] = ()) -> str:
    """Shell lines for users who launch by hand or with srun.

    The COLLTUNE_* settings are exported (harmless to other programs); LD_PRELOAD is not: in a
    shell it would load the interposer (and its MPI library) into every command, the launcher
    included. It goes on the launcher's command line for the ranks only. `launch_words` is the
    plain launch the example lines start from (`mpiexec -n 4 ./app`, with the flags this machine
    needs: colltune.commands.nextsteps); `exports` are more lines for the launcher (Open MPI as
    root)."""
    launch_words = list(launch_words or [str(lib.mpiexec), "-n", "4", "./app"])
    preload = env.get("LD_PRELOAD", "")
    settings = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    lines = [f"# colltune interposer for {lib.name} ({lib.family} ABI)", *exports]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in settings.items()]
    lines.append(f"colltune_lib={shlex.quote(preload)}")
    lines.append("# then give LD_PRELOAD to the ranks only, e.g.")
    if launch_words[0] == "srun":
        srun_flags = [f'--export=ALL,LD_PRELOAD="$colltune_lib"']
        if not any(w.startswith("--mpi=") for w in launch_words):
            srun_flags.append(f"--mpi={launch.srun_plugin(lib)}")
        lines.append(f"#   {' '.join([launch_words[0], *srun_flags, *launch_words[1:]])}")
        return "\n".join(lines)
    app = launch_words[-1]
    lines.append(f'#   srun --export=ALL,LD_PRELOAD="$colltune_lib" --mpi={launch.srun_plugin(lib)} {app}')
    if lib.family == "openmpi":
        flags = ["-x LD_PRELOAD=\"$colltune_lib\"", *(f"-x {key}" for key in settings)]
    else:
        flags = ['-genv LD_PRELOAD "$colltune_lib"', *(f'-genv {key} "${key}"' for key in settings)]
    lines.append(f"#   {' '.join([launch_words[0], *flags, *launch_words[1:]])}")
    return "\n".join(lines)
