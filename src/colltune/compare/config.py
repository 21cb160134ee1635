"""The configurations a comparison measures: a label, an MPI library, and settings of its own.

`--mpi openmpi,mpich` gives one configuration per library, labelled by its name.
`--config LABEL:LIB[:ASSIGNMENTS]` gives any configuration, e.g. one library before and after a
change: ASSIGNMENTS are shell-quoted `VAR=VALUE` words, set while that configuration's launches
run, exactly as if they had been exported before `colltune bench`:

    --config base:openmpi --config dyn:openmpi:"OMPI_MCA_coll_tuned_use_dynamic_rules=1"
    --config a:mpich --config b:mpich:"COLLTUNE_MPIEXEC_FLAGS='-bind-to core'"
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from colltune.errors import ColltuneError

_LABEL = re.compile(r"^[A-Za-z0-9_.+-]+$")
_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CompareError(ColltuneError):
    """A comparison cannot be made as asked; the message says what to give instead."""


@dataclass(frozen=True)
class Config:
    label: str
    mpi: str  # openmpi | mpich | intel | path of an mpicc
    env: dict[str, str] = field(default_factory=dict, hash=False)

    def describe(self) -> str:
        extra = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return f"{self.label}: {self.mpi}" + (f" with {extra}" if extra else "")

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Set this configuration's variables for the duration of its launches. The launcher
        command line (COLLTUNE_MPIEXEC_FLAGS), its environment and the recorded environment
        table all read the process environment, so one mechanism covers all three."""
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def parse_config(spec: str) -> Config:
    """`LABEL:LIB[:VAR=VALUE ...]` -> Config."""
    parts = spec.split(":", 2)
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise CompareError(f"--config {spec!r}: write LABEL:LIB[:VAR=VALUE ...], e.g. "
                           "after:openmpi:OMPI_MCA_coll_tuned_use_dynamic_rules=1")
    label, lib = parts[0], parts[1]
    if not _LABEL.match(label):
        raise CompareError(f"--config {spec!r}: label {label!r} may use letters, digits and _.+- only")
    env: dict[str, str] = {}
    try:
        words = shlex.split(parts[2]) if len(parts) == 3 else []
    except ValueError as exc:
        raise CompareError(f"--config {spec!r}: {exc} in the assignments") from None
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not _VAR.match(key):
            raise CompareError(f"--config {spec!r}: {word!r} is not VAR=VALUE")
        env[key] = value
    return Config(label, lib, env)


def _label_of(mpi: str) -> str:
    """A library name labels itself; a path its installation prefix (/opt/ompi-4.1/bin/mpicc ->
    ompi-4.1), so an upgrade reads as two versions."""
    if os.sep not in mpi:
        return mpi
    path = Path(mpi)
    return path.name if path.is_dir() or not path.name.startswith("mpicc") else path.parent.parent.name or mpi


def configurations(mpi_list: Sequence[str], config_specs: Sequence[str]) -> list[Config]:
    """The configurations of `--mpi a,b` followed by those of each `--config`; at least two,
    labels unique."""
    configs = [Config(_label_of(name), name) for name in mpi_list] + [parse_config(s) for s in config_specs]
    if len(configs) < 2:
        raise CompareError("a comparison needs at least two configurations: --mpi openmpi,mpich, or two "
                           "--config LABEL:LIB[:VAR=VALUE ...] (e.g. one library before and after a change); "
                           "to compare databases measured earlier, give their paths")
    seen: set[str] = set()
    for c in configs:
        if c.label in seen:
            raise CompareError(f"configuration {c.label!r} is given twice; to compare one library with itself "
                               f"under two settings give each a label: --config a:{c.mpi} "
                               f"--config b:{c.mpi}:VAR=VALUE")
        seen.add(c.label)
    return configs
