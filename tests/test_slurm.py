"""colltune on a real Slurm (issue 14, "a real launcher"): a one-host cluster brought up by
scripts/slurm-up.sh (Debian's Slurm 22.05, munge), `colltune check` inside an allocation and
`colltune run -- srun ...`, with Open MPI (srun --mpi=pmix) and MPICH (srun --mpi=pmi2).

`make test` runs the script first; the fixture runs it again (idempotent: a no-op when the
cluster is up). Skipped only when Slurm cannot be installed here (not root, not installed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from interposer_support import Run, compile_programs

from colltune.mpi import libraries as mpi
from colltune.store import Store

REPO = Path(__file__).resolve().parent.parent
COLLTUNE = str(Path(sys.executable).parent / "colltune")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slurm_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SALLOC_", "SRUN_"))}
    env.pop("COLLTUNE_LAUNCHER", None)
    env.pop("COLLTUNE_MPIEXEC_FLAGS", None)
    proc = subprocess.run(["bash", str(REPO / "scripts" / "slurm-up.sh")], capture_output=True, text=True,
                          timeout=600, env=env, check=False)
    if proc.returncode == 3:
        pytest.skip(f"Slurm cannot run here: {' '.join(proc.stderr.split())}")
    assert proc.returncode == 0, f"scripts/slurm-up.sh failed:\n{proc.stderr[-3000:]}"
    env["SLURM_CONF"] = os.environ.get("COLLTUNE_SLURM_DIR", "/tmp/colltune-slurm") + "/slurm.conf"
    return env


def _run(argv: list[str], env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    # `timeout` on every Slurm command: with a daemon gone, clients retry for minutes. It ends well
    # before pytest's own timeout so that a hang fails with the command's output and the cluster's
    # state (a CI run once hung in `srun` for 600 s and told nothing).
    proc = subprocess.run(["timeout", "-k", "10", str(int(timeout)), *argv], capture_output=True, text=True,
                          env=env, timeout=timeout + 30, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode in (124, 137):
        proc.stderr += f"\n[timed out after {timeout:.0f} s]\n" + _cluster_state(env)
    return proc


def _cluster_state(env: dict[str, str]) -> str:
    said = []
    for argv in (["squeue", "-a", "-o", "%i %T %R %M %C"], ["sinfo", "-N", "-o", "%N %T %C %E"]):
        try:
            got = subprocess.run(["timeout", "20", *argv], capture_output=True, text=True, env=env, check=False,
                                 stdin=subprocess.DEVNULL)
            said.append(f"$ {' '.join(argv)}\n{got.stdout}{got.stderr}")
        except OSError as error:
            said.append(f"$ {' '.join(argv)}: {error}")
    log = Path(os.environ.get("COLLTUNE_SLURM_DIR", "/tmp/colltune-slurm")) / "slurmd.log"
    if log.exists():
        said.append("slurmd.log, last lines:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-30:]))
    return "\n".join(said)


def _check_in_allocation(lib: mpi.MpiLibrary, env: dict[str, str], tmp_path: Path) -> None:
    # --max-reps bounds the measuring; the time budget only binds on a loaded machine, where 0.1 s
    # per job once left MPICH's allreduce jobs without measured repetitions (a CI run at load 6).
    db = tmp_path / "slurm.duckdb"
    proc = _run(["salloc", "-n", "2", COLLTUNE, "check", "--mpi", lib.name, "-n", "2", "-c", "allreduce,bcast",
                 "-s", "8,4KiB", "-R", "3", "--rounds", "0", "--max-reps", "40", "--time-budget", "1",
                 "--db", str(db), "--out", str(tmp_path / "out")], env)
    assert proc.returncode in (0, 1, 3), proc.stderr[-3000:]  # 1: violations, 3: some undecided
    with Store(db, read_only=True) as store:
        run_id = store.latest_run_id()
        assert run_id is not None and store.run_info(run_id)["status"] == "complete"
        launches = store.launches(run_id)
        env_rows = store.environment(run_id)
        verdicts = store.derived("verdicts", run_id)
    assert launches.nprocs.tolist() == [2, 2, 2] and set(launches.status) == {"ok"}
    per_launch = env_rows.pivot(index="launch_idx", columns="key", values="value")
    # srun started one job of 2 ranks on this node in each launch, not two singletons
    assert per_launch["launcher"].tolist() == ["srun"] * 3
    assert per_launch["ranks_per_node"].tolist() == ["2"] * 3
    assert per_launch["nodes"].tolist() == ["1"] * 3
    assert per_launch["env:SLURM_JOB_ID"].nunique() == 1
    assert per_launch["mpi_name"].tolist() == [lib.name] * 3
    assert set(verdicts.collective) == {"allreduce", "bcast"} and set(verdicts.nprocs) == {2}
    assert set(zip(verdicts.nodes, verdicts.ppn, strict=True)) == {(1, 2)}  # the layout, per verdict


def test_check_inside_an_allocation_openmpi(slurm_env: dict[str, str], openmpi: mpi.MpiLibrary,
                                            tmp_path: Path) -> None:
    _check_in_allocation(openmpi, slurm_env, tmp_path)


@pytest.mark.mpich
def test_check_inside_an_allocation_mpich(slurm_env: dict[str, str], mpich: mpi.MpiLibrary,
                                          tmp_path: Path) -> None:
    _check_in_allocation(mpich, slurm_env, tmp_path)


def test_singletons_are_refused(slurm_env: dict[str, str], openmpi: mpi.MpiLibrary, tmp_path: Path) -> None:
    """The wrong PMI plugin starts 2 programs of world size 1 and exits 0: a launch must say so."""
    db = tmp_path / "s.duckdb"
    proc = _run(["salloc", "-n", "2", COLLTUNE, "bench", "-n", "2", "-c", "allreduce", "-s", "8", "-R", "1",
                 "--max-reps", "20", "--db", str(db), "--quiet"],
                {**slurm_env, "COLLTUNE_MPIEXEC_FLAGS": "--mpi=none"})
    assert proc.returncode == 1
    said = " ".join(proc.stderr.split())
    assert "launch 0 (2 processes) refused, the ranks ran as MPI_COMM_WORLD of size 1, not one job of 2" in said
    assert "its PMI plugin (--mpi=none) does not match openmpi, which needs `srun --mpi=pmix`" in said
    with Store(db, read_only=True) as store:  # nothing of the refused launch, nor its empty run
        assert store.runs().empty and store.launches().empty and store.measurements().empty


@pytest.mark.parametrize("name", ["openmpi", pytest.param("mpich", marks=pytest.mark.mpich)])
def test_colltune_run_with_srun(slurm_env: dict[str, str], name: str, request: pytest.FixtureRequest,
                                tmp_path: Path) -> None:
    lib: mpi.MpiLibrary = request.getfixturevalue(name)
    request.getfixturevalue(f"{name}_build")
    prog = str(compile_programs(lib, tmp_path)["ct_collectives"])
    plugin = {"openmpi": "pmix", "mpich": "pmi2"}[name]
    dry = _run([COLLTUNE, "run", "--mpi", name, "--dry-run", "--", "srun", "-n", "2", prog, "bcast"], slurm_env)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.split()[2:] == [f"--mpi={plugin}", "-n", "2", prog, "bcast"]
    proc = _run([COLLTUNE, "run", "--mpi", name, "--force", "bcast=bcast_as_allgatherv", "--verbose", "--",
                 "srun", "-n", "2", prog, "bcast"], slurm_env)
    run = Run(proc.returncode, proc.stdout, proc.stderr)
    assert proc.returncode == 0, run.describe()
    assert "colltune: libcolltune active on 2 ranks" in proc.stderr, run.describe()
    assert "ok 2 ranks" in proc.stdout, run.describe()
    assert run.program_calls["bcast"] == {"plain": 6, "inplace": 0, "noncontig": 6, "noncommutative": 0}
    assert run.counts == Counter({("bcast", "force", "bcast_as_allgatherv", "applied"): 12}), run.describe()
