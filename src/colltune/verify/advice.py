"""Plain-language advice for each violation: what to run to fix it, per MPI library."""

from __future__ import annotations

import pandas as pd

from colltune.verify.check import human_bytes

# Open MPI coll/tuned algorithm ids (4.1/5.0, docs/MPI-NOTES), for the MCA command line.
OPENMPI_ALGORITHMS: dict[str, dict[str, int]] = {
    "allreduce": {"basic_linear": 1, "nonoverlapping": 2, "recursive_doubling": 3, "ring": 4,
                  "segmented_ring": 5, "rabenseifner": 6},
    "bcast": {"basic_linear": 1, "chain": 2, "pipeline": 3, "split_binary_tree": 4, "binary_tree": 5,
              "binomial": 6, "knomial": 7, "scatter_allgather": 8, "scatter_allgather_ring": 9},
    "allgather": {"linear": 1, "bruck": 2, "recursive_doubling": 3, "ring": 4, "neighbor": 5, "two_proc": 6,
                  "sparbit": 7},
    "alltoall": {"linear": 1, "pairwise": 2, "modified_bruck": 3, "linear_sync": 4, "two_proc": 5},
    "reduce": {"linear": 1, "chain": 2, "pipeline": 3, "binary": 4, "binomial": 5, "in-order_binary": 6,
               "rabenseifner": 7},
    "gather": {"basic_linear": 1, "binomial": 2, "linear_sync": 3},
    "scatter": {"basic_linear": 1, "binomial": 2, "linear_nb": 3},
    "reduce_scatter": {"non-overlapping": 1, "recursive_halving": 2, "ring": 3, "butterfly": 4},
    "reduce_scatter_block": {"basic_linear": 1, "recursive_doubling": 2, "recursive_halving": 3, "butterfly": 4},
    "scan": {"linear": 1, "recursive_doubling": 2},
}


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


def library_setting(family: str, collective: str, algorithm: str) -> str:
    """The library's own way to force this algorithm for every call of the collective."""
    if family == "openmpi":
        alg_id = algorithm if algorithm.isdigit() else OPENMPI_ALGORITHMS.get(collective, {}).get(algorithm)
        ident = alg_id if alg_id is not None else f"<id of {algorithm}: ompi_info --param coll tuned --level 9>"
        return (f"mpiexec --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_{collective}_algorithm {ident} ...")
    if family == "mpich":
        return f"export MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM={algorithm} MPIR_CVAR_DEVICE_COLLECTIVES=none"
    if family == "intel":
        return f"export I_MPI_ADJUST_{collective.upper()}=<id of {algorithm}: impi_info -a>"
    return f"the library's setting that selects the {algorithm} algorithm of {collective}"


KIND_INTRO = {
    "pattern": ("Mock-ups faster than the library's collective",
                "Fix it without touching the application: `colltune tune --db {db} --out tuned.prf`, then "
                "`colltune run --profile tuned.prf -- mpiexec ...`. The interposer replaces each call by the "
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
        alg = str(row["variant"]).split(":", 2)[-1]
        return (f"{row['lhs']} takes {s:.2f}x as long as the library's {alg} algorithm: "
                f"`{library_setting(family, row['collective'], alg)}`.{doubt}")
    if kind == "monotony":
        return (f"{row['lhs']} takes {s:.2f}x as long as {row['rhs']}; pad to "
                f"{human_bytes(int(row['ref_bytes']))}.{doubt}")
    if kind == "split":
        return f"{row['lhs']} takes {s:.2f}x as long as {row['rhs']}.{doubt}"
    return f"{row['lhs']} vs {row['rhs']}: slowdown {s:.2f}.{doubt}"
