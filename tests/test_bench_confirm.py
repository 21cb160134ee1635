"""Every launch confirms its ranks (issue 17): a launch whose world is not the one asked for
is refused with the cause and the fix, and nothing of it is stored.

The real case is `srun` without the library's PMI plugin (Slurm's MpiDefault=none): N programs
of one rank each, exit code 0. A stand-in `srun` on PATH does exactly that here (starts the
program N times, no process manager), so the test needs no Slurm.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from colltune.measure import confirm, runner
from colltune.measure.protocol import DriverOutput
from colltune.measure.settings import BenchError, BenchSettings
from colltune.mpi import build
from colltune.mpi import libraries as mpi
from colltune.store import Store

FAKE_SRUN = """#!/bin/sh
# srun without a PMI plugin: -n N starts N independent copies (singletons), options skipped
n=1
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2 ;;
    --*) shift ;;
    *) break ;;
  esac
done
i=0
while [ $i -lt $n ]; do "$@" & i=$((i + 1)); done
rc=0
for p in $(jobs -p); do wait $p || rc=$?; done
exit $rc
"""


def _dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    with Store(db, read_only=True) as store:
        return {t: sorted(map(tuple, store.con.execute(f"SELECT * FROM {t}").fetchall()), key=repr)
                for t in store.tables()}


@pytest.fixture
def singleton_srun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    srun = bindir / "srun"
    srun.write_text(FAKE_SRUN)
    srun.chmod(srun.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    for var in ("SLURM_MPI_TYPE", "COLLTUNE_MPIEXEC_FLAGS", "SLURM_JOB_ID", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)
    return srun


def test_singletons_are_refused_and_the_database_is_left_as_it_was(
        singleton_srun: Path, openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts, tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    with Store(db) as store:  # an earlier run that must survive untouched
        store.create_run(kind="bench", command="earlier", mpi_name="openmpi", mpi_version="5",
                         abi_family="openmpi", settings={}, variants=[("bcast", "default", "default", None)])
    before = _dump(db)
    settings = BenchSettings(collectives=["allreduce"], sizes=[8], nprocs=[2], launches=2,
                             stop={"methods": [], "max_reps": 10, "warmup": 1})
    with pytest.raises(BenchError) as err:
        runner.run(settings, db, progress=False)
    message = " ".join(str(err.value).split())
    assert message.startswith(
        "launch 0 (2 processes) refused, the ranks ran as MPI_COMM_WORLD of size 1, not one job of 2 (host ")
    assert ("srun started 2 separate programs of one rank each: its PMI plugin does not match openmpi, which "
            "needs `srun --mpi=pmix`") in message
    assert "nothing of it was stored" in message
    assert _dump(db) == before


def _out(hosts: list[str]) -> DriverOutput:
    return DriverOutput(launch={"nprocs": len(hosts), "hosts": hosts})


def test_refusals_name_cause_and_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLLTUNE_LAUNCHER", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("COLLTUNE_MPIEXEC_FLAGS", raising=False)
    lib = mpi.MpiLibrary(name="mpich", family="mpich", version="MPICH Version: 5.0.2",
                         mpicc=Path("/m/bin/mpicc"), mpiexec=Path("/m/bin/mpiexec"))
    assert confirm.refusal(lib, 2, _out(["a", "a"]), "", None) is None
    assert confirm.refusal(lib, 2, _out(["a", "a"]), "", (("a", 2),)) is None
    one = "colltune-bench: world size 1, expected 2 (host a, launcher PMI_SIZE=1)\n" * 2
    assert confirm.refusal(lib, 2, DriverOutput(), one, None) == (
        "the ranks ran as MPI_COMM_WORLD of size 1, not one job of 2 (host a, launcher PMI_SIZE=1): "
        "/m/bin/mpiexec started 2 separate programs of one rank each: it is not the launcher of mpich, the "
        "library colltune-bench was built with (another MPI's mpiexec first in PATH, or a wrapper); use "
        "mpich's own mpiexec or pick the library with --mpi")
    assert confirm.refusal(lib, 2, _out(["a", "a", "a"]), "", None) == (
        "the ranks ran as MPI_COMM_WORLD of size 3, not one job of 2: the launcher gave 3 processes for -n 2: "
        "a host file or an option in COLLTUNE_MPIEXEC_FLAGS overrides -n; drop it")
    assert confirm.refusal(lib, 4, _out(["a", "b", "a", "b"]), "", (("a", 4),)) == (
        "this launch ran on 2 on a, 2 on b, the run's earlier launches of 4 processes on 4 on a: the "
        "allocation or host file changed between launches; launches on different node layouts are not "
        "repetitions of one measurement. Resume inside the same allocation, or start a new run")
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    monkeypatch.setenv("SLURM_MPI_TYPE", "pmix")
    assert confirm.refusal(lib, 2, DriverOutput(), one, None) == (
        "the ranks ran as MPI_COMM_WORLD of size 1, not one job of 2 (host a, launcher PMI_SIZE=1): srun started "
        "2 separate programs of one rank each: its PMI plugin (pmix) does not match mpich, which needs "
        "`srun --mpi=pmi2` (colltune passes it unless COLLTUNE_MPIEXEC_FLAGS or SLURM_MPI_TYPE choose another; "
        "`srun --mpi=list` shows the plugins this Slurm has)")


def test_layouts_are_described_per_process_count() -> None:
    assert confirm.describe_nodes("ctnode1,ctnode2", "2,2") == "2 nodes x 2 ranks (ctnode1, ctnode2)"
    assert confirm.describe_nodes("vm", "4") == "1 node x 4 ranks (vm)"
    assert confirm.describe_nodes("a,b", "3,1") == "2 nodes, 3+1 ranks (a, b)"
    assert confirm.describe_nodes("a,b", "2") == "layout not recorded"  # torn facts: say so, guess nothing
    env = pd.DataFrame([(i, k, v) for i, h, r in [(0, "vm", "4"), (1, "n1,n2", "2,2"), (2, "n1,n2", "2,2"),
                                                   (3, "n1,n2", "1,1")]
                        for k, v in (("hostnames", h), ("ranks_per_node", r), ("nodes", "x"))],
                       columns=["launch_idx", "key", "value"])
    launches = pd.DataFrame({"launch_idx": [3, 2, 1, 0], "nprocs": [2, 4, 4, 4]})
    assert confirm.run_layouts(env, launches) == {
        2: ["2 nodes x 1 rank (n1, n2)"],
        4: ["1 node x 4 ranks (vm)", "2 nodes x 2 ranks (n1, n2)"]}
    assert confirm.run_layouts(env.iloc[:0], launches) == {}


def test_profile_layouts_and_the_mismatch_warning() -> None:
    env = pd.DataFrame([(0, "ranks_per_node", "2,2"), (1, "ranks_per_node", "2,2"), (2, "ranks_per_node", "8"),
                        (2, "hostnames", "vm")], columns=["launch_idx", "key", "value"])
    shapes = confirm.run_shapes(env, pd.DataFrame({"launch_idx": [0, 1, 2], "nprocs": [4, 4, 8]}))
    assert shapes == {4: [(2, 2)], 8: [(1, 8)]}
    assert confirm.format_layouts(shapes) == "4:2x2 8:1x8"
    assert confirm.parse_layouts("4:2x2 8:1x8") == shapes
    with pytest.raises(ValueError, match="layout '4:2' is not NPROCS:NODESxPPN"):
        confirm.parse_layouts("4:2")
    assert confirm.profile_layout_warning("p.prf", "4:2x2 8:1x8", (4, (2, 2))) is None
    assert confirm.profile_layout_warning("p.prf", "4:2x2", (8, (1, 8))) is None     # 8 was not measured
    assert confirm.profile_layout_warning("p.prf", None, (4, (1, 4))) is None        # an older profile
    assert confirm.profile_layout_warning("p.prf", "4:2x2", None) is None            # layout unknown
    assert confirm.profile_layout_warning("p.prf", "4:2x2", (4, (1, 4))) == (
        "p.prf was measured on 2 nodes x 2 for 4 processes; this launch runs 1 node x 4. Which variant is "
        "fastest changes with the node layout (docs/cluster.md), so its rules may not hold here: measure with "
        "`colltune check -n 4` inside `salloc -N 1 --ntasks-per-node 4` and tune again")
