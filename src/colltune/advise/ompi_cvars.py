"""Open MPI 4's control variables for a profiling run, read with the library's own ompi_info.

On Open MPI before 5 the first MPI_T_init_thread loads every component's parameters (0.21 s on
Debian's 4.1.4 here, 3% of an ExaML run, at MPI_Finalize where it delays every rank), so the
profiling mode does not read MPI_T there (native/runtime/profenv.c writes `cvars_skipped`).
ompi_info reads the same parameter sources as the ranks: defaults, parameter files, `OMPI_MCA_*`
in the environment; a launch line's `--mca NAME VALUE` reaches the ranks as `OMPI_MCA_NAME`, so it
is passed that way. The names kept are the runtime's (ct_cvar_wanted in native/runtime/profenv.c).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from colltune.advise.profile_run import ProfileRun

KEYS = ("eager", "rndv", "rendezvous", "algorithm", "coll_tuned", "max_send_size", "async_progress")


def wanted(name: str) -> bool:
    low = name.lower()
    return any(k in low for k in KEYS) or name in ("pml", "btl")


def mca_of(command: Sequence[str]) -> dict[str, str]:
    """`--mca NAME VALUE` (also -mca, --gmca, -gmca) pairs of a launch line."""
    out: dict[str, str] = {}
    for i, word in enumerate(command[:-2]):
        if word in ("--mca", "-mca", "--gmca", "-gmca"):
            out[command[i + 1]] = command[i + 2]
    return out


def parse(text: str) -> dict[str, str]:
    """`mca:<framework>:<component>:param:<name>:value:<value>` lines of `ompi_info --parsable`."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 6)
        if len(parts) == 7 and parts[0] == "mca" and parts[3] == "param" and parts[5] == "value" \
                and wanted(parts[4]):
            out[parts[4]] = parts[6] or "-"
    return out


def ompi_info_of(mpicc: Path) -> Path | None:
    """The ompi_info next to the library's mpicc (mpicc.openmpi -> ompi_info)."""
    for name in (mpicc.name.replace("mpicc", "ompi_info"), "ompi_info"):
        if (mpicc.parent / name).exists():
            return mpicc.parent / name
    return None


def fill(run: ProfileRun, library_version: str, mpicc: Path, command: Sequence[str] = (),
         environ: Mapping[str, str] | None = None) -> bool:
    """Fill the cvars of the ranks that skipped MPI_T, if `mpicc` is the library that ran (its
    version string is the run's); False when nothing was filled."""
    skipped = [r for r in run.ranks if r.cvars_skipped]
    tool = ompi_info_of(mpicc)
    if not skipped or tool is None or library_version.splitlines()[0] != run.ranks[0].library:
        return False
    env = {**(os.environ if environ is None else environ),
           **{f"OMPI_MCA_{k}": v for k, v in mca_of(command).items()}}
    proc = subprocess.run([str(tool), "--all", "--parsable"], capture_output=True, text=True,
                          env=env, check=False)
    values = parse(proc.stdout) if proc.returncode == 0 else {}
    for r in skipped:
        r.cvars.update(values)
    return bool(values)
