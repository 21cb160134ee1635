"""Per-layout rules of tuning profiles in the interposer (docs/profile.md, "Layouts"): each
communicator is served by the rules of its own node layout, computed once per communicator. On
one node every communicator is 1 x its size; tests/test_cluster.py runs the same program across
2 nodes, where the world, a node's ranks and one rank per node have three different layouts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from interposer_support import PROGRAMS, Run, run_mpi

from colltune.mpi import build, runenv
from colltune.mpi import libraries as mpi

RS_AGV = "allreduce_as_reducescatter_allgatherv"
RSB_AG = "allreduce_as_reducescatterblock_allgather"
R_B = "allreduce_as_reduce_bcast"

# 4000-byte allreduces (tests/programs/cluster_layouts.c). Every layout of the cluster tests has
# its own answer: 1 x 4 and 2 x 1 reduce+bcast, 1 x 2 reduce_scatter_block+allgather, 2 x 2 the
# library (its block decides alone and has no rule at 4000 bytes, although the layout-free block
# has one), anything else of 2 to 4 processes (1 x 3, 2 + 1) the layout-free reduce_scatter+allgatherv.
PROFILE = f"""colltune-profile 1
collective allreduce
  procs 2 4
    bytes 0 1048576 {RS_AGV}
  nodes 1 ppn 2
    bytes 0 1048576 {RSB_AG}
  nodes 1 ppn 4
    bytes 0 1048576 {R_B}
  nodes 2 ppn 1
    bytes 0 1048576 {R_B}
  nodes 2 ppn 2
    bytes 8 8 {R_B}
end
"""


def write_profile(tmp_path: Path) -> Path:
    path = tmp_path / "layouts.prof"
    path.write_text(PROFILE)
    return path


def layout_program(lib: mpi.MpiLibrary, tmp_path: Path) -> Path:
    return build.compile_program(lib, [PROGRAMS / "cluster_layouts.c"], tmp_path / "cluster_layouts", ["-Wextra"])


def counts(run: Run) -> Counter[tuple[str, str]]:
    """(variant, outcome) -> calls of rank 0's allreduces under the profile."""
    return Counter({(v, o): n for (c, m, v, o), n in run.counts.items() if c == "allreduce" and m == "profile"})


def test_one_node_communicators_take_their_own_layouts_rules(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                             tmp_path: Path) -> None:
    """4 ranks on one node: the world, its dup and the node's communicator are 1 x 4 (its block),
    ranks 0-2 are 1 x 3 (no block: the layout-free rule), one rank per node is a communicator of
    1 (no rule for 1 process: the library)."""
    env = runenv.rank_environment(openmpi, openmpi_build, profile=write_profile(tmp_path), verbose=True)
    run = run_mpi(openmpi, 4, [layout_program(openmpi, tmp_path)], env)
    assert run.returncode == 0 and run.stdout.split() == ["ok", "15"], run.describe()
    assert counts(run) == Counter({(R_B, "applied"): 10, (RS_AGV, "applied"): 2, ("library", "library"): 3}), \
        run.describe()


@pytest.mark.mpich
def test_one_node_layouts_mpich(mpich: mpi.MpiLibrary, mpich_build: build.Artifacts, tmp_path: Path) -> None:
    """2 ranks: world, dup, node and ranks 0-2 are all 1 x 2; one rank per node is alone."""
    env = runenv.rank_environment(mpich, mpich_build, profile=write_profile(tmp_path), verbose=True)
    run = run_mpi(mpich, 2, [layout_program(mpich, tmp_path)], env)
    assert run.returncode == 0 and run.stdout.split() == ["ok", "15"], run.describe()
    assert counts(run) == Counter({(RSB_AG, "applied"): 12, ("library", "library"): 3}), run.describe()


def test_a_profile_without_layouts_keeps_deciding_by_size(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                          tmp_path: Path) -> None:
    """The same program under the layout-free block alone: every communicator of 2 to 4 processes
    takes it, as before layouts existed."""
    path = tmp_path / "free.prof"
    path.write_text(f"colltune-profile 1\ncollective allreduce\n  procs 2 4\n    bytes 0 1048576 {RS_AGV}\nend\n")
    env = runenv.rank_environment(openmpi, openmpi_build, profile=path, verbose=True)
    run = run_mpi(openmpi, 4, [layout_program(openmpi, tmp_path)], env)
    assert run.returncode == 0 and run.stdout.split() == ["ok", "15"], run.describe()
    assert counts(run) == Counter({(RS_AGV, "applied"): 12, ("library", "library"): 3}), run.describe()


def test_threads_find_their_communicators_layouts_concurrently(openmpi: mpi.MpiLibrary,
                                                               openmpi_build: build.Artifacts,
                                                               tmp_path: Path) -> None:
    """MPI_THREAD_MULTIPLE (tests/programs/ct_threads.c): two threads, each on its own dup of the
    world, compute their communicator's layout at its first call at the same time, then every
    call takes the 1 x 2 rules; every result is checked by the program."""
    path = tmp_path / "threads.prof"
    path.write_text("colltune-profile 1\n"
                    "collective allgather\n  nodes 1 ppn 2\n    bytes 0 1048576 allgather_as_allreduce\n"
                    "collective allreduce\n  nodes 1 ppn 2\n    bytes 0 1048576 allreduce_as_reducescatterblock_allgather\n"
                    "collective bcast\n  procs 2 2\n    bytes 0 1048576 bcast_as_allgatherv\n"
                    "  nodes 1 ppn 2\n    bytes 0 1048576 bcast_as_scatter_allgather\nend\n")
    prog = build.compile_program(openmpi, [PROGRAMS / "ct_threads.c"], tmp_path / "ct_threads", ["-Wextra", "-pthread"])
    env = runenv.rank_environment(openmpi, openmpi_build, profile=path, verbose=True)
    run = run_mpi(openmpi, 2, [prog, "60"], env)
    assert run.returncode == 0 and "threads calls allreduce=120 bcast=120 allgather=120" in run.stdout, run.describe()
    assert run.counts == Counter({
        ("allreduce", "profile", "allreduce_as_reducescatterblock_allgather", "applied"): 120,
        ("bcast", "profile", "bcast_as_scatter_allgather", "applied"): 120,
        ("allgather", "profile", "allgather_as_allreduce", "applied"): 120,
    }), run.describe()
