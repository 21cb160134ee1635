"""colltune's Intel MPI ids against what Intel MPI itself lists through MPI_T.

Intel MPI 2021.18 lists each algorithm setting as an MPI_T control variable, MPIR_CVAR_USE_<COLL>
(blocking) and MPIR_CVAR_USE_I<COLL> (nonblocking), described with "range: 0-N" and its alias
I_MPI_ADJUST_[I]<COLL>. colltune's tables (mpi/algorithms.py) name ids of those ranges; a release
that renumbers or drops a setting fails here instead of silently running the library's own
choice under an id colltune believes is an algorithm. Without Intel MPI only the check itself is
tested (CI does not install it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from colltune.mpi import algorithms, build, launch
from colltune.mpi import libraries as mpi
from colltune.mpi.algorithms import LIBRARY_ALGORITHMS, NONBLOCKING_ALGORITHMS

PROGRAM = Path(__file__).resolve().parent / "programs" / "intel_mpit_ranges.c"


def _listing_of(ranges: dict[str, tuple[int, str]]) -> str:
    return "".join(f"{name}\tControl selection.$ Arguments$ range: 0-{top} @Alias:# {alias} @Default:# -1\n"
                   for name, (top, alias) in ranges.items())


def _table_ranges() -> dict[str, tuple[int, str]]:
    """A listing that holds exactly the tables' largest ids."""
    out = {}
    for form, table in (("blocking", LIBRARY_ALGORITHMS["intel"]), ("nonblocking", NONBLOCKING_ALGORITHMS["intel"])):
        for coll, ids in table.items():
            name = algorithms.intel_cvar(coll, form)
            out[name] = (max(map(int, ids)), name.replace("MPIR_CVAR_USE_", "I_MPI_ADJUST_"))
    return out


def test_the_check_finds_every_id_intel_does_not_list() -> None:
    ranges = algorithms.intel_ranges(_listing_of(_table_ranges()))
    assert ranges == _table_ranges()
    assert algorithms.intel_ids_unlisted(ranges) == []
    shrunk = dict(ranges, MPIR_CVAR_USE_IALLREDUCE=(7, "I_MPI_ADJUST_IALLREDUCE"))
    assert algorithms.intel_ids_unlisted(shrunk) == [
        "allreduce#nonblocking: id 8 outside MPIR_CVAR_USE_IALLREDUCE's range 1-7"]
    renamed = {k: v for k, v in ranges.items() if k != "MPIR_CVAR_USE_BARRIER"}
    renamed["MPIR_CVAR_USE_SCAN"] = (1, "I_MPI_ADJUST_SCAN_NEW")
    assert algorithms.intel_ids_unlisted(renamed) == [
        "scan: MPIR_CVAR_USE_SCAN is I_MPI_ADJUST_SCAN_NEW, colltune sets I_MPI_ADJUST_SCAN",
        "barrier: the library lists no MPIR_CVAR_USE_BARRIER"]
    # a description without a range (Intel's _LIST and _OFFLOAD settings) is no setting of ids
    assert algorithms.intel_ranges("MPIR_CVAR_USE_ALLTOALL_OFFLOAD\t@Verbosity:# hidden "
                                   "@Alias:# I_MPI_ADJUST_ALLTOALL_OFFLOAD\n") == {}



def test_every_table_id_is_in_the_range_intel_lists_through_mpi_t(intel: mpi.MpiLibrary,
                                                                   tmp_path: Path) -> None:
    exe = build.compile_program(intel, [PROGRAM], tmp_path / "intel_mpit_ranges")
    out = launch.run(intel, 1, [str(exe)], timeout=120)
    assert out.returncode == 0, out.stderr
    ranges = algorithms.intel_ranges(out.stdout)
    assert algorithms.intel_ids_unlisted(ranges) == []
    # what 2021.18.1 lists (benchmarks/intel_nonblocking/README.md): the nonblocking ranges
    if "2021.18" in intel.version:
        assert {k: v[0] for k, v in ranges.items() if k.startswith("MPIR_CVAR_USE_I")} == {
            "MPIR_CVAR_USE_IALLREDUCE": 18, "MPIR_CVAR_USE_IBCAST": 5, "MPIR_CVAR_USE_IREDUCE": 4,
            "MPIR_CVAR_USE_IGATHER": 2, "MPIR_CVAR_USE_IALLGATHER": 5, "MPIR_CVAR_USE_IALLTOALL": 7,
            "MPIR_CVAR_USE_IALLTOALLV": 6, "MPIR_CVAR_USE_IALLTOALLW": 1, "MPIR_CVAR_USE_IGATHERV": 3,
            "MPIR_CVAR_USE_ISCATTERV": 1, "MPIR_CVAR_USE_IBARRIER": 2, "MPIR_CVAR_USE_ISCATTER": 2,
            "MPIR_CVAR_USE_IALLGATHERV": 5, "MPIR_CVAR_USE_IEXSCAN": 1, "MPIR_CVAR_USE_ISCAN": 1,
            "MPIR_CVAR_USE_IREDUCE_SCATTER": 3, "MPIR_CVAR_USE_IREDUCE_SCATTER_BLOCK": 3}
