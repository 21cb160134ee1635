"""Several nodes (issue 24): a real multi-node Slurm on this machine, brought up by
scripts/cluster-up.sh (one network + UTS namespace per node on a bridge, Debian's slurmd in each,
slurmctld and munged on the host), and colltune across 2 nodes x 2 ranks with the embedded Open
MPI (srun --mpi=pmix) and MPICH (srun --mpi=pmi2).

The fixture starts the cluster (idempotent) and stops it afterwards only if it started it.
Skipped, with the script's reason, where Slurm cannot be installed (exit 3), this is not root
(4), the kernel or container has no namespaces (5) or the bridge network is taken (6).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from colltune.mpi import build
from colltune.mpi import libraries as mpi
from colltune.store import Store

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "cluster-up.sh"
PROGRAMS = REPO / "tests" / "programs"
PROGRAM = PROGRAMS / "cluster_nodes.c"
COLLTUNE = str(Path(sys.executable).parent / "colltune")
PLUGIN = {"openmpi": "pmix", "mpich": "pmi2"}
CANNOT = {3: "Slurm cannot be installed", 4: "not root", 5: "no namespaces here", 6: "bridge network taken"}

pytestmark = pytest.mark.slow


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SALLOC_", "SRUN_"))}
    for key in ("COLLTUNE_LAUNCHER", "COLLTUNE_MPIEXEC_FLAGS"):
        env.pop(key, None)
    return env


def _run(argv: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    # `timeout` on every Slurm command: with a daemon gone, clients retry for minutes.
    return subprocess.run(["timeout", str(int(timeout)), *argv], capture_output=True, text=True, env=env,
                          timeout=timeout + 30, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    env = _clean_env()
    proc = _run(["bash", str(SCRIPT), "--nodes", "2"], env, timeout=600)
    if proc.returncode in CANNOT:
        pytest.skip(f"{CANNOT[proc.returncode]}: {' '.join(proc.stderr.split())}")
    assert proc.returncode == 0, f"scripts/cluster-up.sh failed:\n{proc.stderr[-3000:]}"
    env["SLURM_CONF"] = os.environ.get("COLLTUNE_CLUSTER_DIR", "/tmp/colltune-cluster") + "/slurm.conf"
    yield env
    if "started" in proc.stderr:  # leave a cluster someone else brought up running
        _run(["bash", str(SCRIPT), "--stop"], env, timeout=120)


def test_nodes_have_their_own_names(cluster: dict[str, str]) -> None:
    listed = _run(["sinfo", "-h", "-N", "-o", "%N %T"], cluster)
    assert listed.stdout.split("\n")[:2] == ["ctnode1 idle", "ctnode2 idle"], listed.stdout + listed.stderr
    names = _run(["srun", "-N", "2", "-n", "4", "hostname"], cluster)
    assert names.returncode == 0, names.stderr
    assert Counter(names.stdout.split()) == {"ctnode1": 2, "ctnode2": 2}
    addrs = _run(["srun", "-N", "2", "-n", "2", "-l", "ip", "-4", "-o", "addr", "show", "dev", "eth0"], cluster)
    assert sorted(line.split()[4] for line in addrs.stdout.splitlines()) == ["10.77.0.11/24", "10.77.0.12/24"]


@pytest.mark.parametrize("name", ["openmpi", pytest.param("mpich", marks=pytest.mark.mpich)])
def test_mpi_sees_two_nodes(cluster: dict[str, str], name: str, request: pytest.FixtureRequest,
                            tmp_path: Path) -> None:
    """The library's own node detection (MPI_Comm_split_type shared) finds 2 nodes of 2 ranks, and
    a 1 MiB allreduce crosses the bridge exactly."""
    lib: mpi.MpiLibrary = request.getfixturevalue(name)
    prog = build.compile_program(lib, [PROGRAM], tmp_path / "cluster_nodes", [])
    proc = _run(["srun", f"--mpi={PLUGIN[name]}", "-N", "2", "-n", "4", str(prog)], cluster)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["world 4 nodes 2 ppn 2,2 hosts ctnode1,ctnode2", "sum ok 262144"]
    one = _run(["srun", f"--mpi={PLUGIN[name]}", "-N", "1", "-n", "2", str(prog)], cluster)
    assert one.stdout.splitlines()[0] in ("world 2 nodes 1 ppn 2 hosts ctnode1", "world 2 nodes 1 ppn 2 hosts ctnode2")


def test_script_refuses_bad_input(cluster: dict[str, str]) -> None:
    bad = _run(["bash", str(SCRIPT), "--nodes", "0"], cluster)
    assert bad.returncode == 2 and "--nodes takes 1 to 80" in bad.stderr
    taken = next((line.split()[0].rsplit(".", 1)[0] for line in
                  _run(["ip", "-4", "route", "show", "scope", "link"], cluster).stdout.splitlines()
                  if line.split()[0].endswith(".0/24") and "ctbr0" not in line), None)
    if taken is not None:  # a /24 of another interface: the script must not put the bridge there
        clash = _run(["bash", str(SCRIPT)], {**cluster, "COLLTUNE_CLUSTER_NET": taken})
        assert clash.returncode == 6 and f"the network {taken}.0/24 is already routed through" in clash.stderr
    nobody = _run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "bash", str(SCRIPT)],
                  {**cluster, "COLLTUNE_CLUSTER_DIR": "/tmp"})
    assert nobody.returncode == 4 and "need root" in nobody.stderr


def _netem_here(env: dict[str, str]) -> bool:
    """Whether this kernel has the netem qdisc, asked the same way but independently of the script."""
    probe = f"ctprobetest{os.getpid()}"
    _run(["ip", "netns", "add", probe], env)
    try:
        _run(["ip", "-n", probe, "link", "set", "lo", "up"], env)
        return _run(["tc", "-n", probe, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1us"], env).returncode == 0
    finally:
        _run(["ip", "netns", "del", probe], env)


def _qdisc(env: dict[str, str]) -> str:
    return _run(["tc", "-n", "ctnode1", "qdisc", "show", "dev", "eth0"], env).stdout


def test_delay_is_applied_or_refused_before_any_change(cluster: dict[str, str]) -> None:
    """`--delay-us` puts netem on both ends of every node's link where the kernel has netem, and
    where it has not (this machine's kernel) exits 7 saying so, leaving the running cluster as it
    was: no option that silently does nothing."""
    before = _qdisc(cluster)
    assert "netem" not in before
    delayed = _run(["bash", str(SCRIPT), "--delay-us", "200"], cluster, timeout=600)
    if not _netem_here(cluster):
        assert delayed.returncode == 7, delayed.stderr
        said = " ".join(delayed.stderr.split())
        assert "--delay-us needs the kernel's netem queueing discipline (sch_netem)" in said
        assert "Nothing was changed." in said
        assert _qdisc(cluster) == before
    else:
        try:
            assert delayed.returncode == 0, delayed.stderr
            assert "delay 200us" in _qdisc(cluster)
            assert "delay 200us" in _run(["tc", "qdisc", "show", "dev", "ctv1"], cluster).stdout
        finally:
            assert _run(["bash", str(SCRIPT)], cluster, timeout=600).returncode == 0
        assert "netem" not in _qdisc(cluster)
    listed = _run(["sinfo", "-h", "-N", "-o", "%N %T"], cluster)
    assert listed.stdout.split("\n")[:2] == ["ctnode1 idle", "ctnode2 idle"], listed.stdout + listed.stderr


def _check_across_nodes(lib: mpi.MpiLibrary, env: dict[str, str], tmp_path: Path, budget: str,
                        timeout: float = 600) -> None:
    db = tmp_path / "cluster.duckdb"
    proc = _run(["salloc", "-N", "2", "--ntasks-per-node", "2", COLLTUNE, "check", "--mpi", lib.name, "-n", "4",
                 "-c", "allreduce", "-s", "8,4KiB", "-R", "3", "--rounds", "0", "--max-reps", "40",
                 "--time-budget", budget, "--db", str(db), "--out", str(tmp_path / "out")], env, timeout=timeout)
    assert proc.returncode in (0, 1, 3), proc.stderr[-3000:]  # 1: violations, 3: some undecided
    assert "4 processes on 2 nodes x 2" in " ".join((proc.stdout + proc.stderr).split())
    with Store(db, read_only=True) as store:
        run_id = store.latest_run_id()
        assert run_id is not None and store.run_info(run_id)["status"] == "complete"
        launches = store.launches(run_id)
        per_launch = store.environment(run_id).pivot(index="launch_idx", columns="key", values="value")
        verdicts = store.derived("verdicts", run_id)
    assert launches.nprocs.tolist() == [4, 4, 4] and set(launches.status) == {"ok"}
    assert per_launch["launcher"].tolist() == ["srun"] * 3
    assert per_launch["hostnames"].tolist() == ["ctnode1,ctnode2"] * 3
    assert per_launch["nodes"].tolist() == ["2"] * 3
    assert per_launch["ranks_per_node"].tolist() == ["2,2"] * 3
    assert per_launch["env:SLURM_JOB_ID"].nunique() == 1
    assert set(verdicts.collective) == {"allreduce"} and set(verdicts.nprocs) == {4}
    assert set(zip(verdicts.nodes, verdicts.ppn, strict=True)) == {(2, 2)}  # verdicts say their layout
    page = (tmp_path / "out" / "report.html").read_text()
    assert "2 nodes x 2 ranks (ctnode1, ctnode2)" in page


def test_check_across_two_nodes_openmpi(cluster: dict[str, str], openmpi: mpi.MpiLibrary,
                                        openmpi_build: build.Artifacts, tmp_path: Path) -> None:
    """... and the profile tuned from it says its layout; `run --profile` on another layout warns."""
    _check_across_nodes(openmpi, cluster, tmp_path, "1")
    prf = tmp_path / "p.prf"
    tuned = _run([COLLTUNE, "tune", "--db", str(tmp_path / "cluster.duckdb"), "--out", str(prf)], cluster)
    assert tuned.returncode == 0, tuned.stderr[-2000:]
    assert "layout 4:2x2" in prf.read_text().splitlines() and "machine ctnode1,ctnode2" in prf.read_text()
    prog = ["/bin/true"]
    same = _run([COLLTUNE, "run", "--profile", str(prf), "--dry-run", "--", "srun", "-N", "2", "-n", "4", *prog],
                cluster)
    assert same.returncode == 0 and "warning" not in same.stderr, same.stderr
    other = _run([COLLTUNE, "run", "--profile", str(prf), "--dry-run", "--", "srun", "-N", "1", "-n", "4", *prog],
                 cluster)
    assert other.returncode == 0, other.stderr
    assert (f"colltune: warning: {prf} was measured on 2 nodes x 2 for 4 processes; this launch runs 1 node x 4."
            in " ".join(other.stderr.split()))
    # A check of the same process count on 1 node x 4 into the same database: tune combines both
    # layouts (docs/profile.md, "Layouts"), and the profile fits either launch.
    db = tmp_path / "cluster.duckdb"
    one = _run(["salloc", "-N", "1", "-n", "4", "-O", COLLTUNE, "check", "-n", "4", "-c", "allreduce",
                "-s", "8,4KiB", "-R", "3", "--rounds", "0", "--max-reps", "40", "--time-budget", "1", "--db",
                str(db), "--out", str(tmp_path / "out1")], cluster, timeout=600)
    assert one.returncode in (0, 1, 3), one.stderr[-3000:]
    assert "4 processes on 1 node x 4" in " ".join((one.stdout + one.stderr).split())
    both = tmp_path / "both.prof"
    tuned = _run([COLLTUNE, "tune", "--db", str(db), "--out", str(both), "--show-decisions"], cluster)
    assert tuned.returncode == 0, tuned.stderr[-2000:]
    text = both.read_text().splitlines()
    runs = next(line for line in text if line.startswith("check-run ")).split()[1:]
    with Store(db, read_only=True) as store:
        assert runs == [store.latest_run_id(table="verdicts"), store.runs()["run_id"].iloc[0]]
    assert "layout 4:1x4 4:2x2" in text
    said = " ".join(tuned.stdout.split())
    assert "1x4" in said and "2x2" in said  # a decision per layout
    assert all(not line.strip().startswith("procs ") for line in text)  # two layouts: no layout-free block
    for argv, warned in ((["-N", "1", "-n", "4"], False), (["-N", "2", "-n", "4"], False), (["-N", "4", "-n", "4"], True)):
        res = _run([COLLTUNE, "run", "--profile", str(both), "--dry-run", "--", "srun", *argv, *prog], cluster)
        assert res.returncode == 0 and ("warning" in res.stderr) == warned, (argv, res.stderr)


@pytest.mark.parametrize(("name", "nodes", "ranks"), [("openmpi", 2, 4), ("openmpi", 1, 4),
                                                    pytest.param("mpich", 2, 2, marks=pytest.mark.mpich)])
def test_profile_layout_rules_follow_each_communicators_layout(cluster: dict[str, str], name: str, nodes: int,
                                                               ranks: int, request: pytest.FixtureRequest,
                                                               tmp_path: Path) -> None:
    """`colltune run --profile P -- srun -N 2 -n 4 ./app` with rules for 1 x 2, 1 x 4, 2 x 1 and
    2 x 2 (tests/test_profile_layouts.py): on 2 x 2 the world and its dup take the 2 x 2 block
    (the library at this size, although the layout-free block has a rule), each node's
    communicator 1 x 2, one rank per node 2 x 1, ranks 0-2 (2 + 1, not uniform) the layout-free
    block; on 1 x 4 everything of 4 is 1 x 4. Every sum is checked exactly by the program."""
    from test_profile_layouts import R_B, RS_AGV, RSB_AG, counts, layout_program, write_profile

    lib: mpi.MpiLibrary = request.getfixturevalue(name)
    request.getfixturevalue(f"{name}_build")
    proc = _run([COLLTUNE, "run", "--mpi", name, "--profile", str(write_profile(tmp_path)), "--verbose", "--",
                 "srun", "-N", str(nodes), "-n", str(ranks), *(["-O"] if ranks > 2 * nodes else []),
                 str(layout_program(lib, tmp_path))], cluster)
    from interposer_support import Run

    run = Run(proc.returncode, proc.stdout, proc.stderr)
    assert proc.returncode == 0 and proc.stdout.split() == ["ok", "15"], run.describe()
    want = {
        ("openmpi", 2): {("library", "library"): 6, (RSB_AG, "applied"): 4, (R_B, "applied"): 3,
                         (RS_AGV, "applied"): 2},
        ("openmpi", 1): {(R_B, "applied"): 10, (RS_AGV, "applied"): 2, ("library", "library"): 3},
        ("mpich", 2): {(R_B, "applied"): 11, ("library", "library"): 4},  # 2 x 1; a node's communicator is 1
    }[(name, nodes)]
    assert counts(run) == Counter(want), run.describe()


@pytest.mark.parametrize(("name", "ranks"), [("openmpi", 4), pytest.param("mpich", 2, marks=pytest.mark.mpich)])
def test_advise_across_nodes_reports_layout_eager_limits_and_time_by_span(
        cluster: dict[str, str], name: str, ranks: int, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """`colltune advise -- srun -N 2 -n R ./cluster_layouts` (advise/nodes.py): the hosts and their
    ranks, both transports' eager variables from MPI_T, and the collectives' time by where their
    communicators lie: at 2 x 2 the world, its dup and ranks 0-2 span nodes, the node and
    one-per-node communicators of 2 may be either; at 2 x 1 every communicator of 2 spans nodes
    and the node communicators of 1 stay on one."""
    import json

    from test_profile_layouts import layout_program

    lib: mpi.MpiLibrary = request.getfixturevalue(name)
    request.getfixturevalue(f"{name}_build")
    out = tmp_path / "a.json"
    proc = _run([COLLTUNE, "advise", "--mpi", name, "--db", str(tmp_path / "a.duckdb"), "--out", str(tmp_path / "out"),
                 "--json", str(out), "--", "srun", "-N", "2", "-n", str(ranks), str(layout_program(lib, tmp_path))],
                cluster, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (found,) = [f for f in json.loads(out.read_text())["findings"] if f["strategy"] == "nodes"]
    data = found["data"]
    assert data["layout"]["hosts"] == ({"ctnode1": [0, 1], "ctnode2": [2, 3]} if ranks == 4
                                       else {"ctnode1": [0], "ctnode2": [1]})
    assert found["title"].startswith(f"2 nodes x {ranks // 2}: collectives ")
    time = data["time"]["collective_s"]
    if name == "openmpi":
        assert {k: v["variable"] for k, v in data["eager"].items()} == {"on_node": "btl_sm_eager_limit",
                                                                       "across": "btl_tcp_eager_limit"}
        assert data["eager"]["on_node"]["bytes"] > 0 and data["eager"]["across"]["bytes"] > 0
        assert time["on_node"] == 0 and time["across"] > 0 and time["either"] > 0
    else:
        assert "MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD" in data["eager_variables"]["across"]
        assert time["either"] == 0 and time["across"] > 0 and time["on_node"] > 0


# In 4 of 5 fresh-clone CI runs of 2026-11-29 every start of this check's launches failed in
# MPI_Init: both nodes' slurmd got a garbled PMI-2 request ("mpi/pmi2: value not properly terminated
# in client request ... 3333..."), a rank aborted or all spun. It depends on the length of the
# ranks' command line (the cache path is in it: /work/cache/le2 failed every time, /work/cache/lead,
# one byte longer, never; environment padding changed nothing), which is why it looked
# intermittent. The runner restarts such a launch with its command one `--seed S` longer
# (runner.restart_argv; docs/cluster.md); each of this check's launches may pay one failed start.
@pytest.mark.mpich
@pytest.mark.timeout(360)
def test_check_across_two_nodes_mpich(cluster: dict[str, str], mpich: mpi.MpiLibrary, tmp_path: Path) -> None:
    # 4 busy-polling MPICH ranks share this machine's 2 cores: give each measurement more time;
    # `timeout` ends a hung launch (salloc cancels the job) well before pytest's own timeout
    _check_across_nodes(mpich, cluster, tmp_path, "1", timeout=300)


def _sum_bits(stdout: str) -> dict[int, str]:
    return {int(w[1]): w[2] for w in (line.split() for line in stdout.splitlines()) if w and w[0] == "sum"}


def test_library_members_across_nodes_run_their_algorithm(cluster: dict[str, str], openmpi: mpi.MpiLibrary,
                                                          openmpi_build: build.Artifacts, tmp_path: Path) -> None:
    """Open MPI 5 serves a communicator spanning 2 nodes with coll/han, which ignores
    coll_tuned_<coll>_algorithm: forced through the library's own settings, every allreduce
    algorithm gives the default's bits there. A learning-mode member `lib:allreduce:X` must still
    run X (its communicator is made with han's priority at 0): each call's result bits are those
    of a plain run of X over the 4 ranks with han off, and the traces carry nodes=2, ppn=2."""
    from test_learn_runtime import SEED, learn_env, read_calls

    prog = [str(build.compile_program(openmpi, [PROGRAMS / "learn_libalg.c"], tmp_path / "learn_libalg", ["-lm"])),
            "sums"]
    launcher = ["srun", "--mpi=pmix", "-N", "2", "-n", "4"]

    def bits(extra: dict[str, str], calls: str = "1") -> dict[int, str]:
        proc = _run([*launcher, *prog, calls, "1000"], {**cluster, **extra})
        assert proc.returncode == 0, proc.stderr[-2000:]
        return _sum_bits(proc.stdout)

    def forced(alg: int) -> dict[str, str]:
        return {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_allreduce_algorithm": str(alg)}

    han = bits({})[0]
    assert bits(forced(4))[0] == han  # ring forced, han serves: the default's bits (the finding)
    ref = {"default": han, **{f"lib:allreduce:{name}": bits({**forced(alg), "OMPI_MCA_coll_han_priority": "0"})[0]
                              for name, alg in (("basic_linear", 1), ("ring", 4))}}
    assert len(set(ref.values())) == 3, ref  # three classes: the check below can fail
    table = tmp_path / "t.select"  # 8000 bytes: size bin 13; 2 nodes: bin 1; 2 per node: bin 1
    table.write_text("colltune-select 1\nunlisted library\ncollective allreduce\n"
                     f"  members {' '.join(ref)}\n  cell 13 1 1 explore 1 1 1\nend\n")
    trace = tmp_path / "trace"
    trace.mkdir()
    rank_env = learn_env(openmpi, openmpi_build, select=table, trace=trace)
    # The real proof refuses both for double sums (issue 37: their bits are not the default's,
    # which is what this test tells them apart by): a stand-in proof admits them at 4 ranks, so
    # the test is about which algorithm runs across nodes, as in test_learn_libalg.py.
    stand_in = tmp_path / "stand-in-proof.txt"
    stand_in.write_text("colltune-proof 2\nsizes 4\n" + "".join(
        f"member {m} passed separate/builtin/float\n" for m in ref if m.startswith("lib:")))
    rank_env["COLLTUNE_PROOF"] = str(stand_in)
    preload = rank_env.pop("LD_PRELOAD")  # the ranks only, never srun itself
    proc = _run(["srun", "--mpi=pmix", "-N", "2", "-n", "4", f"--export=ALL,LD_PRELOAD={preload}", *prog, "40",
                 "1000"], {**cluster, **rank_env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = _sum_bits(proc.stdout)
    calls, _ = read_calls(trace, 4)
    assert int(SEED) > 0 and len(calls) == 40 and set(calls["member"]) == set(ref)
    assert set(calls["outcome"]) == {"applied"} and set(calls["nodes"]) == {2} and set(calls["ppn"]) == {2}
    want = {int(i): ref[m] for i, m in zip(calls["call_index"], calls["member"], strict=True)}
    assert {int(i): got[int(i)] for i in calls["call_index"]} == want


@pytest.mark.parametrize(("name", "ranks"), [("openmpi", 4), pytest.param("mpich", 2, marks=pytest.mark.mpich)])
def test_learning_mode_exact_across_nodes(cluster: dict[str, str], name: str, ranks: int,
                                          request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Every collective colltune serves, each call drawn uniformly over the whole portfolio
    (mock-ups and the library's own algorithms), across 2 nodes: ct_collectives checks every
    result exactly (-t: in-place Reduce_scatter tails too) and the traces carry nodes=2. MPICH
    at 1 rank per node: 4 busy-polling ranks on this machine's 2 cores take seconds per call."""
    lib: mpi.MpiLibrary = request.getfixturevalue(name)
    request.getfixturevalue(f"{name}_build")
    prog = build.compile_program(lib, [PROGRAMS / "ct_collectives.c"], tmp_path / "ct_collectives", ["-Wextra"])
    trace = tmp_path / "trace"
    proc = _run([COLLTUNE, "run", "--mpi", name, "--learn", "-", "--trace-dir", str(trace), "--verbose", "--",
                 "srun", "-N", "2", "-n", str(ranks), str(prog), "-t"], cluster, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"ok {ranks} ranks" in proc.stdout and "FAIL" not in proc.stdout + proc.stderr
    ingest = _run([COLLTUNE, "traces", "ingest", str(trace), "--db", str(tmp_path / "t.duckdb"), "--mpi", name], cluster)
    assert ingest.returncode == 0, ingest.stderr[-2000:]
    with Store(tmp_path / "t.duckdb", read_only=True) as store:
        runs = store.con.execute("SELECT world_size, nodes, ppn FROM trace_runs").fetchall()
        members = store.con.execute("SELECT count(DISTINCT member), min(nodes), max(nodes) FROM trace_calls "
                                    "WHERE comm_size = ?", [ranks]).fetchone()
    assert runs == [(ranks, 2, ranks // 2)]
    assert members is not None and members[0] > 20 and members[1:] == (2, 2)


def test_selftest_across_nodes(cluster: dict[str, str], openmpi: mpi.MpiLibrary) -> None:
    """Every variant against the library's own collective, bit for bit, on 2 nodes: MPICH
    whole (2 x 1), Open MPI at 2 x 2 for the collectives without reductions (its op/avx 8-bit
    sums saturate, a library finding that fails the reductions' plain selftest on any layout;
    the proof, which handles it, gave the same 71 member lines at 2 x 2 as at 1 x 4, measured
    by hand: docs/cluster.md)."""
    runs = [["-N", "2", "--ntasks-per-node", "2", COLLTUNE, "selftest", "-n", "4", "-c", coll]
            for coll in ("bcast", "allgather", "alltoall", "gather", "scatter")]
    try:
        mpi.resolve("mpich")
        runs.append(["-N", "2", "--ntasks-per-node", "1", COLLTUNE, "selftest", "--mpi", "mpich", "-n", "2",
                     "--no-prove"])
    except mpi.MpiError:
        pass
    for argv in runs:
        proc = _run(["salloc", *argv], cluster)
        said = " ".join(proc.stdout.split())
        assert proc.returncode == 0 and "OK:" in said and "every not-applicable as the rules say" in said, \
            f"{argv}: {said[-2000:]} {proc.stderr[-1000:]}"
