"""The MPI libraries' own collective algorithms that colltune can select, per library.

One place for the names (MPI-NOTES.md): the benchmark's `lib:<collective>:<algorithm>` variants,
the advice per violation and the native tuning-file exports all read them from here. For Open MPI
the algorithm id of `coll_tuned_<coll>_algorithm` is the 1-based position in its tuple.
"""

from __future__ import annotations

import re

from colltune.mpi.libraries import MpiLibrary

# The libraries' own algorithms selectable at run time (MPI-NOTES.md), for
# `--library-algorithms`. Each name is resolved again by the driver through MPI_T, which reports
# a name the installed version lacks as a skipped variant.
LIBRARY_ALGORITHMS: dict[str, dict[str, tuple[str, ...]]] = {
    "openmpi": {
        "allreduce": ("basic_linear", "nonoverlapping", "recursive_doubling", "ring",
                      "segmented_ring", "rabenseifner"),
        "bcast": ("basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree",
                  "binomial", "knomial", "scatter_allgather", "scatter_allgather_ring"),
        "allgather": ("linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc",
                      "sparbit"),
        "alltoall": ("linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"),
        "reduce": ("linear", "chain", "pipeline", "binary", "binomial", "in-order_binary",
                   "rabenseifner"),
        "gather": ("basic_linear", "binomial", "linear_sync"),
        "scatter": ("basic_linear", "binomial", "linear_nb"),
        "reduce_scatter": ("non-overlapping", "recursive_halving", "ring", "butterfly"),
        "reduce_scatter_block": ("basic_linear", "recursive_doubling", "recursive_halving",
                                 "butterfly"),
        "scan": ("linear", "recursive_doubling"),
        # none of allgatherv (Open MPI 5.0.11 registers coll_tuned_allgatherv_algorithm read-only
        # for MPI_T: no run-time member, nothing measured), gatherv or scatterv (no variable)
        "alltoallv": ("basic_linear", "pairwise"),
        "barrier": ("linear", "double_ring", "recursive_doubling", "bruck", "two_proc", "tree"),
        "exscan": ("linear", "recursive_doubling"),
    },
    "mpich": {
        "allreduce": ("recursive_doubling", "reduce_scatter_allgather", "tree", "recexch", "ring",
                      "k_reduce_scatter_allgather", "recursive_multiplying"),
        "bcast": ("binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather",
                  "pipelined_tree", "tree"),
        "allgather": ("brucks", "recursive_doubling", "ring", "k_brucks", "recexch_doubling",
                      "recexch_halving"),
        "alltoall": ("brucks", "pairwise", "pairwise_sendrecv_replace", "scattered", "k_brucks"),
        "reduce": ("binomial", "reduce_scatter_gather"),
        "gather": ("binomial",),
        "scatter": ("binomial",),
        "reduce_scatter": ("noncommutative", "pairwise", "recursive_doubling", "recursive_halving"),
        "reduce_scatter_block": ("noncommutative", "pairwise", "recursive_doubling",
                                 "recursive_halving"),
        "scan": ("recursive_doubling",),
        "allgatherv": ("brucks", "recursive_doubling", "ring"),
        "alltoallv": ("pairwise_sendrecv_replace", "scattered"),
        "alltoallw": ("pairwise_sendrecv_replace", "scattered"),
        "barrier": ("k_dissemination", "recexch"),
        "exscan": ("recursive_doubling",),
        "gatherv": ("linear",),
        "scatterv": ("linear",),
        # MPIR_CVAR_NEIGHBOR_<COLL>_INTRA_ALGORITHM: `nb` (the nonblocking schedule, waited for)
        "neighbor_allgather": ("nb",),
        "neighbor_allgatherv": ("nb",),
        "neighbor_alltoall": ("nb",),
        "neighbor_alltoallv": ("nb",),
        "neighbor_alltoallw": ("nb",),
    },
}

# The algorithms of the nonblocking form (`lib:<collective>:<algorithm>#nonblocking`, and
# `#persistent`: the libraries build MPI_<Coll>_init's schedule with the same variable), as MPI_T
# lists them on Open MPI 5.0.11 (coll_libnbc_i<coll>_algorithm, read by libnbc on every call;
# libnbc has no variable for the other collectives) and MPICH 5.0.2
# (MPIR_CVAR_I<COLL>_INTRA_ALGORITHM). Left out: the library's own choice (`ignore`, `auto`,
# `sched_auto`), MPICH's `sched_smp` (the blocking `smp` hangs on one node, libalg.c),
# `sched_noncommutative` (the blocking one asserts at non-power-of-two sizes) and the alltoall(v/w)
# `*_inplace` ones (MPICH refuses them but for MPI_IN_PLACE, which the bench does not call).
NONBLOCKING_ALGORITHMS: dict[str, dict[str, tuple[str, ...]]] = {
    "openmpi": {
        "allgather": ("linear", "recursive_doubling"),
        "allreduce": ("ring", "binomial", "rabenseifner", "recursive_doubling"),
        "bcast": ("linear", "binomial", "chain", "knomial"),
        "exscan": ("linear", "recursive_doubling"),
        "reduce": ("chain", "binomial", "rabenseifner"),
        "scan": ("linear", "recursive_doubling"),
    },
    "mpich": {
        "barrier": ("sched_recursive_doubling", "tsp_recexch", "tsp_k_dissemination"),
        "bcast": ("sched_binomial", "sched_scatter_recursive_doubling_allgather",
                  "sched_scatter_ring_allgather", "tsp_tree", "tsp_scatterv_recexch_allgatherv",
                  "tsp_scatterv_ring_allgatherv", "tsp_ring"),
        "gather": ("sched_binomial", "tsp_tree"),
        "gatherv": ("sched_linear", "tsp_linear"),
        "scatter": ("sched_binomial", "tsp_tree"),
        "scatterv": ("sched_linear", "tsp_linear"),
        "allgather": ("sched_ring", "sched_brucks", "sched_recursive_doubling", "tsp_ring",
                      "tsp_brucks", "tsp_recexch_doubling", "tsp_recexch_halving"),
        "allgatherv": ("sched_brucks", "sched_recursive_doubling", "sched_ring",
                       "tsp_recexch_doubling", "tsp_recexch_halving", "tsp_ring", "tsp_brucks"),
        "alltoall": ("sched_brucks", "sched_pairwise", "sched_permuted_sendrecv", "tsp_ring",
                     "tsp_brucks", "tsp_scattered"),
        "alltoallv": ("sched_blocked", "tsp_scattered", "tsp_blocked"),
        "alltoallw": ("sched_blocked", "tsp_blocked"),
        "reduce": ("sched_binomial", "sched_reduce_scatter_gather", "tsp_tree", "tsp_ring"),
        "allreduce": ("sched_naive", "sched_recursive_doubling", "sched_reduce_scatter_allgather",
                      "tsp_recexch_single_buffer", "tsp_recexch_multiple_buffer", "tsp_tree",
                      "tsp_ring", "tsp_recexch_reduce_scatter_recexch_allgatherv"),
        "reduce_scatter": ("sched_recursive_doubling", "sched_pairwise", "sched_recursive_halving",
                           "tsp_recexch"),
        "reduce_scatter_block": ("sched_recursive_doubling", "sched_pairwise",
                                 "sched_recursive_halving", "tsp_recexch"),
        "scan": ("sched_recursive_doubling", "tsp_recursive_doubling"),
        "exscan": ("sched_recursive_doubling",),
        "neighbor_allgather": ("sched_linear", "tsp_linear"),
        "neighbor_allgatherv": ("sched_linear", "tsp_linear"),
        "neighbor_alltoall": ("sched_linear", "tsp_linear"),
        "neighbor_alltoallv": ("sched_linear", "tsp_linear"),
        "neighbor_alltoallw": ("sched_linear", "tsp_linear"),
    },
}

# Intel MPI: I_MPI_ADJUST_<COLL>=<id> (impi_info -a; Developer Reference), fixed per launch.
# Ids without the topology-aware presets that need several nodes to differ.
LIBRARY_ALGORITHMS["intel"] = {
    "allreduce": ("1", "2", "3", "5", "7", "8", "9"),
    "bcast": ("1", "2", "3", "7", "8"),
    "allgather": ("1", "2", "3", "5"),
    "alltoall": ("1", "2", "3", "4"),
    "gather": ("1", "3"),
    "reduce": ("1", "2", "5", "7"),
    "reduce_scatter": ("1", "2", "3", "4"),
    "reduce_scatter_block": ("1", "2", "3", "4"),
    "scan": ("1",),
    "scatter": ("1", "3"),
    "allgatherv": ("1", "2", "3", "5"),
    "alltoallv": ("1", "2"),
    "alltoallw": ("1",),
    "barrier": ("1", "2", "5"),
    "exscan": ("1",),
    "gatherv": ("1", "3"),
    "scatterv": ("1",),
}

# Intel MPI's nonblocking form: I_MPI_ADJUST_I<COLL>=<id>, fixed per launch as the blocking ones.
# The library lists the ids through MPI_T (MPIR_CVAR_USE_I<COLL>, alias I_MPI_ADJUST_I<COLL>,
# "range: 0-N"; `impi_info -a`); kept here: one id per algorithm that 2021.18 really runs on one
# node, read from which of its functions serve the call (gdb on its libmpi, 4 ranks,
# benchmarks/intel_nonblocking): iallreduce 1 recursive_doubling, 2 rabenseifner, 3 naive
# (ireduce + ibcast), 4 ring, 5 knomial, 7 reduce_scatter_allgather, 8 nreduce (6 and 10-13 run
# knomial, 14-16 nreduce too; 9, 17, 18 the library's own choice); ibcast 1 binomial,
# 2 scatter_recursive_doubling_allgather, 3 scatter_ring_allgather, 4 knomial; ireduce
# 1 reduce_scatter_gather, 2 binomial, 3 knomial; igather and iscatter 1 binomial, 2 knomial;
# iallgather 1 recursive_doubling, 2 brucks, 3 ring, 4 knomial; iallgatherv the same and
# 4 linear; ialltoall 1 brucks, 2 permuted_sendrecv, 3 pairwise (4-7 as 2); ialltoallv and
# ialltoallw 1 blocked; igatherv and iscatterv 1 linear; ibarrier, iexscan and iscan
# 1 recursive_doubling; ireduce_scatter(_block) 1 recursive_halving, 2 pairwise,
# 3 recursive_doubling. MPI_<Coll>_init follows neither I_MPI_ADJUST_I<COLL> nor
# I_MPI_ADJUST_<COLL> (its schedule is the library's own choice under every id): Intel MPI
# has no algorithm of the persistent form (LAUNCH_FORMS).
NONBLOCKING_ALGORITHMS["intel"] = {
    "allreduce": ("1", "2", "3", "4", "5", "7", "8"),
    "bcast": ("1", "2", "3", "4"),
    "reduce": ("1", "2", "3"),
    "gather": ("1", "2"),
    "scatter": ("1", "2"),
    "allgather": ("1", "2", "3", "4"),
    "allgatherv": ("1", "2", "3", "4"),
    "alltoall": ("1", "2", "3"),
    "alltoallv": ("1",),
    "alltoallw": ("1",),
    "gatherv": ("1",),
    "scatterv": ("1",),
    "barrier": ("1",),
    "exscan": ("1",),
    "scan": ("1",),
    "reduce_scatter": ("1", "2", "3"),
    "reduce_scatter_block": ("1", "2", "3"),
}

# Intel MPI lists its algorithm settings through MPI_T as MPIR_CVAR_USE_<COLL> (blocking) and
# MPIR_CVAR_USE_I<COLL> (nonblocking), each described with "range: 0-N" and "@Alias:#
# I_MPI_ADJUST_[I]<COLL>" (2021.18; tests/programs/intel_mpit_ranges.c prints them): the tables
# above must name only ids it lists (tests/test_intel_mpit.py catches a renumbering).
_INTEL_RANGE = re.compile(r"range:\s*0-(\d+)")
_INTEL_ALIAS = re.compile(r"@Alias:#\s*(I_MPI_ADJUST_\w+)")


def intel_cvar(collective: str, form: str = "blocking") -> str:
    """The MPI_T name of Intel MPI's setting of `collective` in `form` (blocking, nonblocking)."""
    return f"MPIR_CVAR_USE_{'I' if form == 'nonblocking' else ''}{collective.upper()}"


def intel_ranges(listing: str) -> dict[str, tuple[int, str]]:
    """`name<TAB>description` lines of MPI_T control variables -> name: (N of "range: 0-N", the
    alias), for those whose description gives both."""
    out: dict[str, tuple[int, str]] = {}
    for line in listing.splitlines():
        name, _, desc = line.partition("\t")
        top, alias = _INTEL_RANGE.search(desc), _INTEL_ALIAS.search(desc)
        if top and alias:
            out[name] = (int(top.group(1)), alias.group(1))
    return out


def intel_ids_unlisted(ranges: dict[str, tuple[int, str]]) -> list[str]:
    """The ids of colltune's Intel tables that the library's listing (intel_ranges) does not
    hold, each with why: no such setting, an alias other than the one colltune sets
    (launch_setting), or an id outside 1-N (0 is the library's own choice, no algorithm)."""
    wrong = []
    for form, table in (("blocking", LIBRARY_ALGORITHMS["intel"]), ("nonblocking", NONBLOCKING_ALGORITHMS["intel"])):
        for collective, ids in table.items():
            name = intel_cvar(collective, form)
            suffix = "#nonblocking" if form == "nonblocking" else ""
            [setting] = launch_setting("intel", collective, "0" + suffix)
            if name not in ranges:
                wrong.append(f"{collective}{suffix}: the library lists no {name}")
                continue
            top, alias = ranges[name]
            if alias != setting:
                wrong.append(f"{collective}{suffix}: {name} is {alias}, colltune sets {setting}")
            wrong += [f"{collective}{suffix}: id {i} outside {name}'s range 1-{top}"
                      for i in ids if not 1 <= int(i) <= top]
    return wrong


# SimGrid SMPI: `--cfg=smpi/<coll>:<name>`, fixed per launch (read once when the simulation
# starts: SimGrid's src/smpi/colls/smpi_coll.cpp lists them; `smpirun --help-coll`). Without the
# family selectors (default, ompi, mpich, mvapich2, impi: whole decision functions, chosen with
# `smpi/coll-selector`, mpi/smpi.py) and `automatic` (runs every algorithm to time them).
# Algorithms with process-count or topology preconditions that abort instead of falling back
# (2dmesh/3dmesh, the SMP_* and smp_* ones that need ranks-per-node set) are left out.
LIBRARY_ALGORITHMS["smpi"] = {
    "allreduce": ("lr", "rab1", "rab2", "rab_rdb", "rdb", "redbcast", "ompi_ring_segmented",
                  "mvapich2_rs", "rab"),
    "bcast": ("arrival_pattern_aware", "binomial_tree", "flattree", "flattree_pipeline", "NTSB",
              "NTSL", "NTSL_Isend", "scatter_LR_allgather", "scatter_rdb_allgather",
              "ompi_split_bintree", "ompi_pipeline"),
    "allgather": ("bruck", "GB", "loosely_lr", "NTSLR", "NTSLR_NB", "pair", "rdb", "rhv", "ring",
                  "spreading_simple", "ompi_neighborexchange"),
    "alltoall": ("basic_linear", "bruck", "pair", "pair_light_barrier", "pair_mpi_barrier",
                 "pair_one_barrier", "rdb", "ring", "ring_light_barrier", "ring_mpi_barrier",
                 "ring_one_barrier", "mvapich2_scatter_dest"),
    "reduce": ("arrival_pattern_aware", "binomial", "flat_tree", "NTSL", "scatter_gather",
               "ompi_chain", "ompi_pipeline", "ompi_basic_linear", "ompi_in_order_binary",
               "ompi_binary", "ompi_binomial", "rab"),
    "gather": ("ompi_basic_linear", "ompi_binomial", "ompi_linear_sync"),
    "scatter": ("ompi_basic_linear", "ompi_linear_nb", "ompi_binomial"),
    "reduce_scatter": ("ompi_basic_recursivehalving", "ompi_ring", "ompi_butterfly", "mpich_pair",
                       "mpich_rdb", "mpich_noncomm"),
}

# Algorithms that refuse other process counts with an error instead of falling back:
# (library, algorithm) -> the only process count they serve.
ALGORITHM_NPROCS = {("openmpi", "two_proc"): 2}

# Collectives a library cannot run from some process count on: (library, collective) -> (the
# smallest failing count, why). Measured, never guessed; the bench leaves them out and says why.
COLLECTIVE_NPROCS_LIMITS = {
    ("smpi", coll): (128, "SimGrid 3.32 aborts in its max-min solver from 128 ranks on (\"Cannot "
                     "saturate more a constraint that has no active element\", maxmin.cpp:217; "
                     "plain SMPI, no colltune; any maxmin/precision; fattree-64x16)")
    for coll in ("scan", "exscan")
}

# Variants a library cannot run from some process count on: (library, collective, variant) ->
# (the smallest failing count, why). Measured with the library alone; the bench leaves them out
# and says why, as COLLECTIVE_NPROCS_LIMITS for whole collectives.
VARIANT_NPROCS_LIMITS = {
    ("intel", "scatter", "default#persistent"): (
        3, "Intel MPI 2021.18.1 fails an MPI_Scatter_init request started a second time (the "
           "root's MPI_Wait: \"Invalid communicator\", MPIDU_Sched_progress_state; the other ranks "
           "hang) from 3 ranks on, with no colltune (benchmarks/intel_nonblocking/scatter_init.c)"),
    ("intel", "allgather", "default#persistent"): (
        2, "Intel MPI 2021.18.1 crashes (SIGSEGV) in a started MPI_Allgather_init request after a "
           "few starts (2 ranks: the 15th start of 4 KiB, the 2nd of 32 KiB; 4 ranks: the 20th of "
           "1 KiB), with no colltune (benchmarks/intel_nonblocking/allgather_init.c)"),
}

# Libraries whose algorithms are fixed for a whole launch (one launch per algorithm).
ALGORITHMS_AT_LAUNCH = frozenset({"intel", "smpi"})
# The forms whose algorithms such a library can fix at launch: Intel MPI's nonblocking ones
# (I_MPI_ADJUST_I<COLL>), not its persistent ones; SMPI the blocking calls only.
LAUNCH_FORMS = {"intel": ("blocking", "nonblocking"), "smpi": ("blocking",)}


def algorithm_forms(library: str) -> tuple[str, ...]:
    """The forms of which `library` (a LIBRARY_ALGORITHMS key) has algorithms to choose from:
    every form where it chooses per call (through MPI_T), LAUNCH_FORMS where per launch."""
    return LAUNCH_FORMS.get(library, ("blocking", "nonblocking", "persistent"))


def started_algorithms(library: str, collective: str, form: str) -> tuple[str, ...]:
    """The library's algorithms of `collective` in `form` (nonblocking or persistent), where it
    has any of that form (NONBLOCKING_ALGORITHMS; algorithm_forms)."""
    if form not in algorithm_forms(library):
        return ()
    return NONBLOCKING_ALGORITHMS.get(library, {}).get(collective, ())


def launch_setting(library: str, collective: str, algorithm: str) -> dict[str, str]:
    """The environment of a launch whose `collective` runs `algorithm` (ALGORITHMS_AT_LAUNCH;
    `<id>#nonblocking`: the nonblocking form's, Intel's I_MPI_ADJUST_I<COLL>); SMPI's launcher
    also turns it into `--cfg=smpi/<collective>:<algorithm>` (mpi/smpi.py)."""
    algorithm, _, form = algorithm.partition("#")
    if form and form not in LAUNCH_FORMS.get(library, ()):
        raise ValueError(f"{library} fixes no algorithm of the {form} form at launch")
    prefix = "COLLTUNE_SMPI_" if library == "smpi" else "I_MPI_ADJUST_" + ("I" if form else "")
    return {f"{prefix}{collective.upper()}": algorithm}


def algorithm_key(lib: MpiLibrary) -> str:
    """Which LIBRARY_ALGORITHMS table a library uses (Intel MPI is of the MPICH family)."""
    return lib.name if lib.name in LIBRARY_ALGORITHMS else lib.family



def openmpi_algorithm_id(collective: str, name: str) -> int:
    """Open MPI's coll_tuned id of an algorithm name (1-based position, 0 is "let tuned decide")."""
    return LIBRARY_ALGORITHMS["openmpi"][collective].index(name) + 1
