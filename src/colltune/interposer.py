"""The interposer's settings for one launch, as `colltune run` and `colltune mpi env` give them,
and the reading of what it prints back (its counting table's functions section).

The files a user names are read first with colltune's own readers, which accept exactly what the
runtime accepts: a bad tuning profile or selection table is refused here, naming its line,
instead of giving a warning in every rank. The environment itself is assembled by
colltune.mpi.runenv, which reads no file (so mpi/ depends on no format of tune/ or learn/).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from colltune.mpi import runenv
from colltune.mpi.build import Artifacts
from colltune.mpi.libraries import MpiError, MpiLibrary


def rank_environment(
    lib: MpiLibrary,
    artifacts: Artifacts,
    force: str | None = None,
    profile: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    extra: Mapping[str, str] | None = None,
    learn: str | os.PathLike[str] | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
) -> dict[str, str]:
    """mpi.runenv.rank_environment, once the profile and the selection table named are read (and
    the proof, for the library algorithms --force may name)."""
    if profile is not None:
        from colltune.tune.profile import ProfileError, read_profile  # pydantic: only with --profile

        try:
            read_profile(Path(profile).expanduser().resolve())
        except ProfileError as exc:
            raise MpiError(f"--profile: {exc}") from exc
    if learn is not None and str(learn) != "-":
        from colltune.learn.table import TableError, read_table, refuse_members_fixed_per_launch

        try:
            table = read_table(Path(learn).expanduser().resolve())
        except TableError as exc:
            raise MpiError(f"--learn: {exc}") from exc
        refuse_members_fixed_per_launch(table, lib, str(learn))
    members: list[str] = []
    if force and "lib:" in force:   # the library's own algorithms, as its proof names them
        from colltune.measure import proof

        members = sorted(proof.read_passed(proof.proof_path(artifacts)))
    return runenv.rank_environment(lib, artifacts, force=force, profile=profile, verbose=verbose, extra=extra,
                                   learn=learn, trace_dir=trace_dir, library_members=members)


# A row of the counting table's functions section (COLLTUNE_VERBOSE=1, rank 0 at MPI_Finalize):
# function, calls, bytes ("-" where no size applies), started, completed.
FUNCTION_LINE = re.compile(r"^colltune:   (MPI_\w+)\s+(\d+)\s+(\d+|-)\s+(\d+)\s+(\d+)$")


def counted_functions(stderr: str) -> dict[str, tuple[int, int | None, int, int]]:
    """function -> (calls, bytes or None, started, completed), from a counting run's stderr."""
    out: dict[str, tuple[int, int | None, int, int]] = {}
    inside = False
    for line in stderr.splitlines():
        if line.startswith("colltune: functions:"):
            inside = True
        elif line.startswith("colltune: end of functions"):
            inside = False
        elif inside and (m := FUNCTION_LINE.match(line)):
            size = None if m.group(3) == "-" else int(m.group(3))
            out[m.group(1)] = (int(m.group(2)), size, int(m.group(4)), int(m.group(5)))
    return out
