"""Plain-language advice for each violation: what to run to fix it, per MPI library."""

from __future__ import annotations

import pandas as pd

from colltune.check import human_bytes

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


def advice(row: pd.Series, family: str, db_hint: str = "results.duckdb") -> str:
    """One paragraph (plain text, may contain `code`) for one violating verdict."""
    size = human_bytes(int(row["msg_bytes"]))
    s = float(row["slowdown"])
    prefix = ("Uncertain (the difference is within one MPI_Barrier, re-measure with more repetitions "
              "before acting): " if bool(row["barrier_warning"]) else "")
    kind = row["kind"]
    if kind == "pattern":
        return (f"{prefix}{row['lhs']} takes {s:.2f}x as long as its mock-up {row['rhs']} ({row['guideline']}). "
                f"Fix it without touching the application: `colltune tune --db {db_hint} --out tuned.prf`, then "
                f"`colltune run --profile tuned.prf -- mpiexec ...`; the interposer replaces the call by the "
                f"mock-up at this size only. Worth reporting to the library's developers.")
    if kind == "library":
        alg = str(row["variant"]).split(":", 2)[-1]
        return (f"{prefix}{row['lhs']} takes {s:.2f}x as long as the library's own {alg} algorithm at {size}: the "
                f"library's default choice is wrong here. For every size: `{library_setting(family, row['collective'], alg)}`. "
                f"For this size range only: `colltune tune` then `colltune export` writes the library's own tuning "
                f"file (Open MPI dynamic rules, MPICH JSON selection, Intel I_MPI_ADJUST ranges).")
    if kind == "monotony":
        return (f"{prefix}{row['lhs']} is {s:.2f}x slower than the larger {row['rhs']}: the library switches "
                f"algorithm badly between these sizes. Padding the message up to {human_bytes(int(row['ref_bytes']))} "
                f"would be faster; tuning the switch point (library tuning file) fixes it for everyone.")
    if kind == "split":
        return (f"{prefix}{row['lhs']} is {s:.2f}x slower than {row['rhs']} (estimated from the smaller size): "
                f"splitting the message into {int(row['k'])} calls would be faster, a sign that the large-message "
                f"algorithm or its segment size is poorly tuned for this machine.")
    return f"{prefix}{row['lhs']} vs {row['rhs']}: slowdown {s:.2f}."
