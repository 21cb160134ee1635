"""Plain-language advice for each violation: what to run to fix it, per MPI library."""

from __future__ import annotations

import pandas as pd

from colltune.catalog import library_variant
from colltune.mpi.algorithms import openmpi_algorithm_id
from colltune.units import human_bytes


def library_family(info: dict[str, object]) -> str:
    """openmpi / mpich / intel from the run's recorded library (abi_family alone cannot tell
    MPICH from Intel MPI)."""
    name = str(info.get("mpi_name") or "").lower()
    if "intel" in name or "impi" in name:
        return "intel"
    if "mpich" in name or "mvapich" in name:
        return "mpich"
    fam = str(info.get("abi_family") or "").lower()
    return fam or "openmpi"


def library_setting(family: str, collective: str, algorithm: str, form: str = "blocking") -> str:
    """The library's own way to force this algorithm for every call of the collective (of its
    nonblocking and persistent forms when `form` is one of them)."""
    if form != "blocking":
        if family == "openmpi":
            return f"mpiexec --mca coll_libnbc_i{collective}_algorithm {algorithm} ..."
        if family == "mpich":
            return (f"export MPIR_CVAR_I{collective.upper()}_INTRA_ALGORITHM={algorithm} "
                    "MPIR_CVAR_DEVICE_COLLECTIVES=none")
        return f"the library's setting that selects the {algorithm} algorithm of MPI_I{collective}"
    if family == "openmpi":
        alg_id = algorithm if algorithm.isdigit() else openmpi_algorithm_id(collective, algorithm)
        ident = alg_id if alg_id is not None else f"<id of {algorithm}: ompi_info --param coll tuned --level 9>"
        return (f"mpiexec --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_{collective}_algorithm {ident} ...")
    if family == "mpich":
        return f"export MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM={algorithm} MPIR_CVAR_DEVICE_COLLECTIVES=none"
    if family == "intel":
        return f"export I_MPI_ADJUST_{collective.upper()}=<id of {algorithm}: impi_info -a>"
    return f"the library's setting that selects the {algorithm} algorithm of {collective}"


KIND_INTRO = {
    "pattern": ("Mock-ups faster than the library's collective",
                "Fix it without touching the application: `colltune tune --db {db} --out tuned.prof`, then "
                "`colltune run --profile tuned.prof -- mpiexec ...`. The interposer replaces each call by the "
                "mock-up only at the sizes where it won. Worth reporting to the library's developers too."),
    "library": ("The library's default algorithm choice is wrong",
                "Force the better algorithm with the library's own setting (shown per case, it applies to every "
                "size), or let `colltune tune` then `colltune export` write the library's tuning file for just "
                "these size ranges (Open MPI dynamic rules, MPICH JSON selection, Intel I_MPI_ADJUST)."),
    "monotony": ("A larger message is faster (monotony)",
                 "The library switches algorithms badly between these sizes; padding the message up to the "
                 "larger size is faster today, moving the switch point in the library's tuning fixes it."),
    "split": ("Splitting a message is faster (split-robustness)",
              "Sending the message in k smaller calls would be faster (estimated from the smaller size): the "
              "large-message algorithm or its segment size is poorly tuned for this machine."),
}


def advice(row: pd.Series, family: str) -> str:
    """One sentence for one violating verdict (plain text, `code` in backticks)."""
    s = float(row["slowdown"])
    doubt = (" Uncertain: the gain is within one MPI_Barrier; re-measure with more repetitions before acting."
             if bool(row["barrier_warning"]) else "")
    kind = row["kind"]
    if kind == "pattern":
        return f"{row['lhs']} takes {s:.2f}x as long as {row['rhs']} ({row['guideline']}).{doubt}"
    if kind == "library":
        _, alg, form = library_variant(str(row["variant"]))
        return (f"{row['lhs']} takes {s:.2f}x as long as the library's {alg} algorithm: "
                f"`{library_setting(family, row['collective'], alg, form)}`.{doubt}")
    if kind == "monotony":
        return (f"{row['lhs']} takes {s:.2f}x as long as {row['rhs']}; pad to "
                f"{human_bytes(int(row['ref_bytes']))}.{doubt}")
    if kind == "split":
        return f"{row['lhs']} takes {s:.2f}x as long as {row['rhs']}.{doubt}"
    return f"{row['lhs']} vs {row['rhs']}: slowdown {s:.2f}.{doubt}"
