"""NUMA and device locality in `colltune advise`: exact facts and mapping findings on a synthetic
two-socket node (tests/data/advise-2numa), and the facts libcolltune reads from this machine's
/sys (checked against hwloc where its tools are installed)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from colltune.advise import profile_run, topology
from colltune.advise.profile_run import ProfileRun
from colltune.commands.advise import command as advise_cmd

DATA = Path(__file__).resolve().parent / "data" / "advise-2numa"


def two_socket(affinity: list[tuple[int, ...]], **kw) -> ProfileRun:
    run = profile_run.read(DATA)
    return ProfileRun(run.directory, [dataclasses.replace(r, affinity=a, **kw)
                                      for r, a in zip(run.ranks, affinity)])


def titles(run: ProfileRun) -> list[str]:
    return [f.title for f in topology.findings(run, "openmpi")]


def test_reads_the_topology_lines():
    r = profile_run.read(DATA).ranks[0]
    assert r.numa == {0: tuple(range(8)), 1: tuple(range(8, 16))}
    assert r.devices == {"net/eth0": 0, "net/ib0": 1, "infiniband/mlx5_0": 1}
    assert r.isolated == () and r.nohz_full is None and r.loadavg == 6.5
    assert profile_run.cpulist("0-2,5,7-8") == (0, 1, 2, 5, 7, 8) and profile_run.cpulist("-") == ()


def test_packed_on_one_numa_node():
    run = profile_run.read(DATA)
    [f] = topology.findings(run, "openmpi")
    assert f.title == "ranks packed on NUMA node(s) 0 of node-a, 1 node(s) idle"
    assert f.data == {"host": "node-a", "ranks_per_numa": {"0": 4, "1": 0}, "kind": "packed"}
    assert f.changes == {"openmpi": "mpiexec --map-by numa --bind-to core ..."}
    assert f.evidence[:2] == [
        "host node-a: 2 NUMA node(s) (0: cpus 0-7; 1: cpus 8-15), ranks per NUMA node 0: 4, 1: 0; "
        "devices: infiniband/mlx5_0 on node 1, net/eth0 on node 0, net/ib0 on node 1; load average 6.5 "
        "on 16 cores",
        "rank 0 on node-a: cpus 0, NUMA 0, local devices net/eth0; OS noise on its cores: unknown "
        "(no core is isolated: every core takes OS work)"]


def test_spread_evenly_is_not_advised():
    assert titles(two_socket([(0,), (8,), (1,), (9,)])) == []


def test_uneven_spread():
    assert titles(two_socket([(0,), (1,), (2,), (8,)])) == [
        "ranks spread unevenly over the NUMA nodes of node-a: node 0: 3, node 1: 1"]


def test_bound_across_numa_nodes():
    run = two_socket([(6, 7, 8, 9), (0,), (1,), (10,)])
    assert titles(run) == ["ranks 0 on node-a are bound across NUMA nodes"]
    assert topology.facts(run)["hosts"][0]["ranks_per_numa"] is None
    assert topology.rank0(run)["numa"] == [0, 1]


def test_unbound_ranks_leave_numa_unknown():
    run = two_socket([tuple(range(16))] * 4)
    assert titles(run) == []
    assert topology.describe(topology.facts(run))[0].startswith(
        "host node-a: 2 NUMA node(s) (0: cpus 0-7; 1: cpus 8-15), ranks per NUMA node unknown")
    assert topology.rank0(run)["cpus"] == "unbound" and topology.rank0(run)["numa"] is None


@pytest.mark.parametrize("isolated, affinity, noise", [
    (None, (0,), "unknown (the kernel does not say which cores are kept free of OS work)"),
    ((), (0,), "unknown (no core is isolated: every core takes OS work)"),
    (tuple(range(1, 16)), (0,), "yes: rank 0's cores 0 do OS work (isolated: 1-15)"),
    (tuple(range(1, 16)), (3,), "no: rank 0 is bound to isolated cores"),
    (tuple(range(1, 16)), tuple(range(16)), "yes: rank 0 is not bound, it may run on the cores doing OS work"),
])
def test_rank0_os_noise(isolated, affinity, noise):
    run = two_socket([affinity, (1,), (2,), (3,)], isolated=isolated)
    assert topology.rank0(run)["os_noise"] == noise


def test_this_machine(openmpi, openmpi_build, tmp_path):
    # The runtime's NUMA lines are this machine's /sys; hwloc, where installed, counts the same.
    from advise_support import compile_advise_programs

    prog = compile_advise_programs(openmpi, tmp_path)["advise_none"]
    res = CliRunner().invoke(advise_cmd, ["--db", str(tmp_path / "x.duckdb"), "--out", str(tmp_path / "o"),
                                          "--", str(openmpi.mpiexec), "-n", "2", "--bind-to", "core", str(prog)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    env = json.loads((tmp_path / "o" / "advise.json").read_text())["environment"]
    nodes = sorted(Path("/sys/devices/system/node").glob("node[0-9]*"))
    want = {p.name[4:]: topology.cpulist_text(profile_run.cpulist(p.joinpath("cpulist").read_text())) for p in nodes}
    [host] = env["hosts"]
    assert host["numa_nodes"] == (want or None)   # None: this kernel shows no NUMA nodes
    assert host["loadavg"] is not None and host["loadavg"] >= 0 and host["cores"] == os.cpu_count()
    if want:
        assert sum(host["ranks_per_numa"].values()) == 2
    if shutil.which("hwloc-calc"):
        count = subprocess.run(["hwloc-calc", "--number-of", "numanode", "all"], capture_output=True,
                               text=True, check=True).stdout.strip()
        assert int(count) == len(want)


@pytest.mark.parametrize("loadavg, busy", [(6.5, False), (16.4, False), (16.6, True), (None, False)])
def test_busy_host(loadavg, busy):
    # 4 ranks x 1 thread on 16 cores: busy when the load exceeds the cores by more than half a
    # core's worth of runnable work (and at least one beyond the application's own 4 threads).
    run = two_socket([(0,), (1,), (2,), (3,)], loadavg=loadavg)
    env = topology.facts(run)
    assert env["hosts"][0]["busy"] is busy
    assert topology.busy_warning(env) == ("" if not busy else
        "node-a was busy with other work (load average 16.6 on 16 cores): ranks are descheduled inside "
        "collectives, the in-situ cost is dominated by that and the database's medians do not predict "
        "it (benchmarks/advise/README.md); verify on an idle node")


def test_srun_launches_get_slurm_placement_flags():
    """Under srun, Slurm places and binds the ranks: the advice names srun's options, not mpiexec's."""
    from colltune.advise import mapping

    run = profile_run.read(DATA)
    [f] = topology.findings(run, "openmpi", "srun")
    assert f.changes == {"openmpi": "srun --distribution=block:cyclic --cpu-bind=cores ..."}
    [g] = topology.findings(two_socket([(6, 7, 8, 9), (0,), (1,), (10,)]), "mpich", "srun")
    assert g.changes == {"mpich": "srun --cpu-bind=ldoms ... (or --cpu-bind=cores)"}
    unbound = two_socket([tuple(range(16))] * 4)
    [h] = mapping.findings(unbound, "intel", "srun")
    assert h.changes == {"intel": "srun --ntasks-per-node=<ranks per node <= cores> --cpu-bind=cores ... "
                                  "(hybrid: --cpus-per-task=<threads> --cpu-bind=cores)"}
    assert mapping.findings(unbound, "intel")[0].changes == {
        "intel": "export I_MPI_PIN=1 I_MPI_PIN_DOMAIN=core (hybrid: I_MPI_PIN_DOMAIN=omp)"}
    assert [mapping.launcher_of(c) for c in (["/usr/bin/srun", "-n", "4", "a"], ["mpiexec", "a"], [])] == [
        "srun", "mpiexec", "mpiexec"]
