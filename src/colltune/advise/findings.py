"""What every strategy produces: findings with evidence, a predicted gain and the exact change."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Finding:
    strategy: str                    # collectives | eager | mapping | share
    title: str
    evidence: list[str]
    changes: dict[str, str]          # library family (openmpi, mpich, intel, colltune) -> change
    saving_s: float | None = None    # predicted saving of wall time; None: not predictable
    warning: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    # What the user must check before applying it, where the run cannot show that the change is
    # safe ("" where it can: run-time settings, a broadcast of the reduce's own result buffer).
    check: str = ""
    # The finding in one line: what, where, the change (the terminal's list; "" -> the title).
    brief: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def family_of(library: str) -> str:
    """openmpi / mpich / intel from MPI_Get_library_version's first line."""
    text = library.lower()
    if "intel" in text:
        return "intel"
    if "open mpi" in text:
        return "openmpi"
    return "mpich"


def ordered(findings: list[Finding]) -> list[Finding]:
    """What to do first: the changes whose safety the run shows before those the user must check,
    each by largest predicted saving, then the unpredicted ones; `share` last."""
    return sorted(findings, key=lambda f: (f.strategy == "share", bool(f.check), f.saving_s is None,
                                           -(f.saving_s or 0.0)))
