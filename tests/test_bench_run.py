"""`colltune bench` front end: settings and their errors, job plans, the launch command lines,
a real run into the database, a killed launch and its resume, MPICH."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import threading
import time
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from colltune.commands import bench_options
from colltune.commands.bench import command as bench_command
from colltune.measure import planning, protocol, runner
from colltune.measure.settings import BenchError, BenchSettings
from colltune.mpi import algorithms, launch
from colltune.mpi import libraries as mpi
from colltune.mpi.build import Artifacts
from colltune.store import Store

OMPI = mpi.MpiLibrary(name="openmpi", family="openmpi", version="Open MPI v5.0.11",
                      mpicc=Path("/o/bin/mpicc"), mpiexec=Path("/o/bin/mpiexec"))
MPICH = mpi.MpiLibrary(name="mpich", family="mpich", version="MPICH Version: 5.0.2",
                       mpicc=Path("/m/bin/mpicc"), mpiexec=Path("/m/bin/mpiexec"))
INTEL = mpi.MpiLibrary(name="intel", family="mpich", version="Intel(R) MPI Library 2021.18",
                       mpicc=Path("/i/bin/mpicc"), mpiexec=Path("/i/bin/mpiexec"))
ART = Artifacts(Path("/c"), Path("/c/libcolltune.so"), Path("/c/colltune-bench"), Path("/c/st"), "openmpi")


@pytest.fixture(autouse=True)
def _no_slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SLURM_JOB_ID", "COLLTUNE_LAUNCHER", "COLLTUNE_MPIEXEC_FLAGS", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)


# -- settings --------------------------------------------------------------------------------


def test_defaults_and_presets() -> None:
    s = BenchSettings()
    assert s.launches == 5 and s.nprocs == [4] and s.sync == "dissemination"
    assert s.sizes_for("allgather") == [1, 2, 4, 8, 32, 64, 512, 1024, 2048, 4096, 8192, 16384]
    assert s.sizes_for("bcast")[-3:] == [131072, 1048576, 8388608]
    q = BenchSettings.from_preset("quick", nprocs=[2])
    assert q.sizes == [8, 1024, 32768] and q.stop.max_reps == 100 and q.nprocs == [2]
    f = BenchSettings.from_preset("full", stop={"max_reps": 300})
    assert f.sizes is None and f.stop.max_reps == 300 and f.stop.time_budget_s == 3.0


@pytest.mark.parametrize(("values", "message"), [
    ({"collectives": ["allreduce", "bcst"]}, "unknown collective(s) bcst"),
    ({"sizes": [8, -1]}, "message sizes must be >= 0"),
    ({"sizes": []}, "empty size list"),
    ({"nprocs": [0]}, "process counts must be >= 1"),
    ({"variants": ["default", "bcast_as_everything"]}, "unknown variant 'bcast_as_everything'"),
    ({"variants": ["lib:allreduce"]}, "write lib:<collective>:<algorithm>"),
    ({"variants": ["tuned"]}, "variant `tuned` needs a profile"),
    ({"datatype": "quad"}, "unknown datatype 'quad'"),
    ({"stop": {"min_reps": 50, "max_reps": 10}}, "min_reps 50 > max_reps 10"),
    ({"launches": 0}, "greater than or equal to 1"),
])
def test_bad_settings_are_clear_errors(values: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        BenchSettings(**values)


def test_too_many_ranks_for_mpich_is_refused_before_launching(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planning, "_cores", lambda: 2)
    with pytest.raises(BenchError, match="busy-polls: 3 ranks on 2 cores.*-n 2"):
        planning.check_nprocs(BenchSettings(nprocs=[2, 3]), MPICH)
    planning.check_nprocs(BenchSettings(nprocs=[2, 3], allow_oversubscribe=True), MPICH)
    planning.check_nprocs(BenchSettings(nprocs=[8]), OMPI)
    with pytest.raises(BenchError, match="not a measurement"):
        planning.check_nprocs(BenchSettings(nprocs=[64]), OMPI)
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    monkeypatch.setenv("SLURM_NTASKS", "16")
    with pytest.raises(BenchError, match="allocation has 16 tasks"):
        planning.check_nprocs(BenchSettings(nprocs=[32]), OMPI)


def test_cli_option_errors_name_the_option() -> None:
    result = CliRunner().invoke(bench_command, ["-c", "allreduce,nope", "--db", "x.duckdb"])
    assert result.exit_code == 2
    assert "unknown collective(s) nope" in result.output
    result = CliRunner().invoke(bench_command, ["-s", "8,1Q"])
    assert result.exit_code == 2 and "expected integers like 8,1024,64KiB" in result.output


def test_options_become_settings() -> None:
    seen: dict[str, BenchSettings] = {}

    @click.command()
    @bench_options.bench_options
    def probe(**kwargs: object) -> None:
        seen["s"] = bench_options.settings_from_options(kwargs)  # type: ignore[arg-type]
        assert kwargs == {}

    result = CliRunner().invoke(probe, ["--preset", "quick", "-c", "allreduce", "-s", "8,1KiB", "-n", "2,4",
                                        "-R", "3", "--sync", "window", "--stop", "rse,cov_median",
                                        "--max-reps", "50", "--no-aa", "--variants", "default,lib:allreduce:ring"])
    assert result.exit_code == 0, result.output
    s = seen["s"]
    assert s.collectives == ["allreduce"] and s.sizes == [8, 1024] and s.nprocs == [2, 4]
    assert s.launches == 3 and s.sync == "window" and s.stop.methods == ["rse", "cov_median"]
    assert s.stop.max_reps == 50 and s.stop.time_budget_s == 0.2  # the rest from the preset
    assert s.aa is False and s.variants == ["default", "lib:allreduce:ring"]


# -- plans and command lines -----------------------------------------------------------------


def test_plan_jobs() -> None:
    s = BenchSettings(collectives=["reduce_scatter_block", "bcast"], sizes=[2, 8], datatype=None)
    plan = planning.plan_jobs(s, 4, "openmpi")
    lines = [j.line() for j in plan.jobs]
    assert lines == [
        "reduce_scatter_block 8 unsigned_char sum - default,reducescatterblock_as_reduce_scatter,"
        "reducescatterblock_as_reducescatter,reducescatterblock_as_allreduce,default#aa",
        "bcast 2 byte - 0 default,bcast_as_allgatherv,bcast_as_scatter_allgather,default#aa",
        "bcast 8 byte - 0 default,bcast_as_allgatherv,bcast_as_scatter_allgather,default#aa",
        "barrier 0 byte - - default,default#aa",
    ]
    assert plan.left_out == ["reduce_scatter_block 2 B: not a multiple of 4 B (unsigned_char x p)"]
    lib_plan = planning.plan_jobs(BenchSettings(collectives=["scan"], sizes=[8], variants=["default"],
                                                   library_algorithms=True, barrier=False), 2, "mpich")
    assert [j.variants for j in lib_plan.jobs] == [("default", "lib:scan:recursive_doubling")]


def test_launch_plan_alternates_process_counts() -> None:
    s = BenchSettings(nprocs=[2, 4], launches=2)
    assert [(p.idx, p.nprocs, p.repetition, p.adjust) for p in planning.launch_plan(s)] == [
        (0, 2, 0, None), (1, 4, 0, None), (2, 2, 1, None), (3, 4, 1, None)]
    assert len({planning.launch_seed(s, i) for i in range(4)}) == 4


def test_intel_measures_each_algorithm_in_a_launch_of_its_own() -> None:
    s = BenchSettings(collectives=["allreduce", "bcast"], sizes=[8], nprocs=[4], launches=2,
                            variants=["default", "lib:allreduce:1", "lib:allreduce:8", "lib:bcast:3"])
    specs = planning.launch_plan(s, "intel")
    assert [(p.idx, p.repetition, p.adjust) for p in specs] == [
        (0, 0, None), (1, 0, ("allreduce", "1")), (2, 0, ("allreduce", "8")), (3, 0, ("bcast", "3")),
        (4, 1, None), (5, 1, ("allreduce", "1")), (6, 1, ("allreduce", "8")), (7, 1, ("bcast", "3"))]
    assert specs[2].rank_env() == {"I_MPI_ADJUST_ALLREDUCE": "8"}
    assert [j.line() for j in planning.plan_jobs(s, 4, "intel").jobs] == [
        "allreduce 8 unsigned_char sum - default", "bcast 8 byte - 0 default",
        "barrier 0 byte - - default,default#aa"]
    assert [j.line() for j in planning.plan_jobs(s, 4, "intel", ("allreduce", "8")).jobs] == [
        "allreduce 8 unsigned_char sum - lib:allreduce:8"]
    # elsewhere library algorithms are interleaved with everything else in every launch
    assert len(planning.launch_plan(s, "mpich")) == 2
    assert planning.plan_jobs(s, 4, "mpich").jobs[0].variants == ("default", "lib:allreduce:1", "lib:allreduce:8")


def test_intel_nonblocking_algorithms_get_launches_of_their_own() -> None:
    """I_MPI_ADJUST_I<COLL> is fixed per launch as the blocking settings are: each nonblocking
    algorithm gets a launch measuring only it; Intel has no algorithm of the persistent form."""
    s = BenchSettings(collectives=["allreduce"], sizes=[8], nprocs=[3], launches=1, barrier=False,
                      variants=["default#nonblocking", "default#persistent", "lib:allreduce:4#nonblocking",
                                "lib:allreduce:4#persistent"])
    specs = planning.launch_plan(s, "intel")
    assert [(p.idx, p.repetition, p.adjust) for p in specs] == [(0, 0, None), (1, 0, ("allreduce", "4#nonblocking"))]
    assert specs[1].rank_env() == {"I_MPI_ADJUST_IALLREDUCE": "4"}
    ordinary = planning.plan_jobs(s, 3, "intel")
    assert [j.line() for j in ordinary.jobs] == ["allreduce 8 unsigned_char sum - default#nonblocking,default#persistent"]
    assert ordinary.left_out == ["lib:allreduce:4#persistent: intel fixes no algorithm of the persistent form at "
                                 "launch (only of the blocking and nonblocking calls)"]
    assert [j.line() for j in planning.plan_jobs(s, 3, "intel", ("allreduce", "4#nonblocking")).jobs] == [
        "allreduce 8 unsigned_char sum - lib:allreduce:4#nonblocking"]
    # --library-algorithms: the nonblocking form's ids of the one table, none of the persistent form
    full = BenchSettings(collectives=["bcast"], variants=["default#nonblocking", "default#persistent"],
                         library_algorithms=True)
    assert full.variants_for("bcast", "intel") == [
        "default#nonblocking", "default#persistent", "lib:bcast:1", "lib:bcast:2", "lib:bcast:3", "lib:bcast:7",
        "lib:bcast:8", "lib:bcast:1#nonblocking", "lib:bcast:2#nonblocking", "lib:bcast:3#nonblocking",
        "lib:bcast:4#nonblocking"]
    with pytest.raises(ValueError, match="intel fixes no algorithm of the persistent form at launch"):
        algorithms.launch_setting("intel", "bcast", "1#persistent")
    assert algorithms.launch_setting("smpi", "bcast", "binomial_tree") == {"COLLTUNE_SMPI_BCAST": "binomial_tree"}


@pytest.mark.parametrize(("lib", "head"), [
    (OMPI, ["/o/bin/mpiexec", "-n", "4", "--oversubscribe", "--bind-to", "none"]),
    (MPICH, ["/m/bin/mpiexec", "-n", "4", "-bind-to", "none"]),
    (INTEL, ["/i/bin/mpiexec", "-n", "4"]),
])
def test_launch_command_lines(lib: mpi.MpiLibrary, head: list[str]) -> None:
    s = BenchSettings(sync="window", stop={"methods": ["rse", "cov_mean"], "max_reps": 50})
    argv = protocol.driver_argv(s, ART, Path("/t/jobs.txt"), Path("/t/out.txt"), 77)
    full = launch.mpiexec_argv(lib, 4, argv)
    assert full[:len(head)] == head
    assert full[len(head):len(head) + 11] == ["/c/colltune-bench", "run", "/t/jobs.txt", "--out", "/t/out.txt",
                                               "--sync", "window", "--metric", "max", "--seed", "77"]
    stop = full[full.index("--stop"):]
    assert stop[:2] == ["--stop", "rse,cov_mean"]
    assert stop[stop.index("--max-reps") + 1] == "50"
    assert "--ref-time" not in stop


def test_launches_are_handed_on_only_where_every_rank_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next launch starts while one ends only when the launcher puts all ranks on this host:
    the gate and the FIFO are local files."""
    argv = protocol.driver_argv(BenchSettings(), ART, Path("/t/j"), Path("/t/o"), 1)
    assert runner._ranks_on_this_host(OMPI, 4, argv, {}) and runner._ranks_on_this_host(MPICH, 2, argv, {})
    assert runner._here(4, ((platform.node(), 4),))
    smpi = mpi.MpiLibrary(name="smpi", family="smpi", version="SimGrid 3.32", mpicc=Path("/s/smpicc"),
                          mpiexec=Path("/s/smpirun"))
    assert not runner._ranks_on_this_host(smpi, 4, argv, {})
    assert not runner._here(4, ((platform.node(), 2), ("other", 2))) and not runner._here(4, None)
    monkeypatch.setenv("COLLTUNE_MPIEXEC_FLAGS", "--host a:2,b:2")
    assert not runner._ranks_on_this_host(OMPI, 4, argv, {})
    monkeypatch.delenv("COLLTUNE_MPIEXEC_FLAGS")
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    assert not runner._ranks_on_this_host(OMPI, 4, argv, {})
    monkeypatch.delenv("SLURM_JOB_ID")
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    assert not runner._ranks_on_this_host(OMPI, 4, argv, {})


def test_a_launch_started_ahead_for_another_is_stopped_at_its_gate(tmp_path: Path) -> None:
    """A check starts a round's likely first launch while the look before ends; when the round
    starts with another launch (or none), that one is stopped, never released."""
    with runner.Session() as session:
        predicted = planning.LaunchSpec(8, 4, 8, round=1)
        handoff = runner._Handoff(session.directory, 8, gated=True)
        proc = subprocess.Popen(["sleep", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        session.ahead = runner._Launch(predicted, None, tmp_path / "o", 1, ["x"], {}, handoff, proc)
        assert session.adopt(planning.LaunchSpec(8, 2, 8, round=1), {}) is None  # 2 processes first
        assert proc.poll() is not None and handoff.gate_fd is None and session.ahead is None
        session.ahead = runner._Launch(predicted, None, tmp_path / "o", 1, ["x"], {}, None)
        adopted = session.adopt(wanted := planning.LaunchSpec(8, 4, 8, only=frozenset({("bcast", 8, "default")}), round=1), {})
        assert adopted is not None and adopted.spec == wanted


def test_srun_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    argv = protocol.driver_argv(BenchSettings(), ART, Path("/t/j"), Path("/t/o"), 1)
    assert launch.mpiexec_argv(OMPI, 8, argv)[:4] == ["srun", "-n", "8", "--export=ALL"]


# -- real runs -------------------------------------------------------------------------------

SMALL = {"collectives": ["bcast", "allreduce"], "sizes": [64], "nprocs": [2], "launches": 3,
         "stop": {"methods": [], "max_reps": 12, "warmup": 2, "check_every": 4}}


def _expected_rows(db: Path, run_id: str) -> None:
    with Store(db, read_only=True) as store:
        m = store.measurements(run_id)
        jobs = store.jobs(run_id)
        launches = store.launches(run_id)
    assert sorted(launches.launch_idx) == [0, 1, 2] and set(launches.status) == {"ok"}
    # fixed stopping: 12 measured + 2 warm-up repetitions per variant, job and launch
    per = m.groupby(["launch_idx", "collective", "variant"]).size()
    assert set(per) == {14}
    assert len(per) == 3 * (4 + 5 + 2)  # bcast: 2 mock-ups, allreduce: 3, + default, aa; barrier
    assert set(m[m.warmup].rep) == {0, 1}
    assert set(jobs.nrep) == {12} and set(jobs.stop_reason) == {"max_reps"}


def test_run_stores_every_repetition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also: each launch after the first starts while the one before ends, and its measuring
    begins only after that launch has exited and its gate was opened (the front end reading the
    launch before is slowed down, so that ranks passing a closed gate would show)."""
    opened: dict[str, float] = {}
    real_open, real_to_launch_data = runner._Handoff.open_gate, runner.to_launch_data

    def recording_open(handoff: runner._Handoff) -> None:
        if handoff.gate_fd is not None:
            opened[str(handoff.gate)] = time.time()
        real_open(handoff)

    def slow_to_launch_data(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.2)
        return real_to_launch_data(*args, **kwargs)

    monkeypatch.setattr(runner._Handoff, "open_gate", recording_open)
    monkeypatch.setattr(runner, "to_launch_data", slow_to_launch_data)
    db = tmp_path / "b.duckdb"
    run_id = runner.run(BenchSettings(**SMALL), db, progress=False)  # type: ignore[arg-type]
    _expected_rows(db, run_id)
    with Store(db, read_only=True) as store:
        info = store.run_info(run_id)
        env = dict(store.environment(run_id).query("launch_idx == 0")[["key", "value"]].values)
        every = store.environment(run_id)
        launches = store.launches(run_id)
        variants = store.variants(run_id)
    fact = {(int(i), k): v for i, k, v in every[["launch_idx", "key", "value"]].itertuples(index=False)}
    epoch = {c: [(t - pd.Timestamp(0)).total_seconds() for t in launches[c]] for c in ("started", "finished")}
    assert [fact[i, "started_ahead"] for i in range(3)] == ["false", "true", "true"]
    assert [k.split("-")[-1] for k in sorted(opened)] == ["1", "2"]
    for k in (1, 2):
        before = float(fact[k - 1, "measuring_until"])
        assert epoch["started"][k] < epoch["finished"][k - 1]  # started while launch k-1 ended
        gate = next(t for g, t in opened.items() if g.endswith(f"gate-{k}"))
        assert before <= epoch["finished"][k - 1] <= gate <= float(fact[k, "measuring_from"])
        assert float(fact[k, "measuring_from"]) < float(fact[k, "measuring_until"])
    assert info["status"] == "complete" and info["mpi_name"] == "openmpi"
    assert env["nodes"] == "1" and env["ranks_per_node"] == "2" and env["mpi_name"] == "openmpi"
    assert "cvar:coll_tuned_use_dynamic_rules" in env
    assert set(variants.kind) == {"default", "aa", "mockup"}
    # Open MPI's ranks say through MPI_T whether they yielded: only when 2 ranks outnumber cores.
    cores = launch.cores_available()
    assert env["cores_available"] == str(cores)
    assert env["cvar:mpi_yield_when_idle"] == ("1" if cores < 2 else "0")
    assert env["idle_wait"] == ("yield" if cores < 2 else "busy-poll")


def test_ranks_outnumbering_cores_yield(tmp_path: Path) -> None:
    nprocs = launch.cores_available() + 1
    if nprocs > 9:
        pytest.skip(f"{nprocs} ranks is too many for a unit test")
    db = tmp_path / "b.duckdb"
    settings = {**SMALL, "collectives": ["bcast"], "nprocs": [nprocs], "launches": 1}
    run_id = runner.run(BenchSettings(**settings), db, progress=False)  # type: ignore[arg-type]
    with Store(db, read_only=True) as store:
        env = dict(store.environment(run_id)[["key", "value"]].values)
    assert env["env:OMPI_MCA_mpi_yield_when_idle"] == "1"
    assert env["cvar:mpi_yield_when_idle"] == "1" and env["idle_wait"] == "yield"


def test_killed_launch_then_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kill the second launch's processes while it runs: the run is interrupted with launch 0
    stored and launch 1 failed; --resume measures launches 1 and 2 and completes the run."""
    db = tmp_path / "b.duckdb"
    real_popen = launch.popen
    started: list[int] = []

    def popen_then_kill(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        proc = real_popen(*args, **kwargs)  # type: ignore[arg-type]
        started.append(proc.pid)
        if len(started) == 2:
            threading.Timer(0.3, runner._stop_process, [proc]).start()
        return proc

    monkeypatch.setattr(launch, "popen", popen_then_kill)
    settings = BenchSettings(**{**SMALL, "stop": {**SMALL["stop"], "max_reps": 100000,  # type: ignore[dict-item]
                                                         "time_budget_s": 0.4}})
    # launch 0 finishes (about 1.2 s of budgets); launch 1 dies 0.3 s in
    with pytest.raises(BenchError, match=r"(?s)launch 1 \(2 processes\) failed.*--resume"):
        runner.run(settings, db, progress=False)
    with Store(db, read_only=True) as store:
        run_id = store.latest_run_id()
        assert run_id is not None
        assert store.run_info(run_id)["status"] == "interrupted"
        assert store.finished_launches(run_id) == {0}
        launches = store.launches(run_id)
        assert launches.status.tolist() == ["ok", "failed"]
        assert set(store.measurements(run_id).launch_idx) == {0}
    monkeypatch.setattr(launch, "popen", real_popen)
    result = CliRunner().invoke(bench_command, ["--db", str(db), "--resume", "latest", "--quiet"])
    assert result.exit_code == 0, result.output
    with Store(db, read_only=True) as store:
        assert store.run_info(run_id)["status"] == "complete"
        assert store.finished_launches(run_id) == {0, 1, 2}
        assert store.launches(run_id).status.tolist() == ["ok", "ok", "ok"]
        assert set(store.measurements(run_id).launch_idx) == {0, 1, 2}


def test_ctrl_c_keeps_finished_launches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "b.duckdb"
    real = runner._run_launch
    calls: list[int] = []

    def interrupt_second(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "_run_launch", interrupt_second)
    with pytest.raises(KeyboardInterrupt):
        runner.run(BenchSettings(**SMALL), db, progress=False)  # type: ignore[arg-type]
    monkeypatch.setattr(runner, "_run_launch", real)
    with Store(db, read_only=True) as store:
        run_id = store.latest_run_id(status="interrupted")
        assert run_id is not None and store.finished_launches(run_id) == {0}
        assert store.launches(run_id).status.tolist() == ["ok", "interrupted"]
    assert runner.run(BenchSettings(), db, resume_run_id=run_id, progress=False) == run_id
    _expected_rows(db, run_id)


def test_sigterm_keeps_finished_launches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch system's time limit sends SIGTERM: the launches measured so far are stored (they
    wait in memory between writes) and the run is left `interrupted`, as after Ctrl-C."""
    db = tmp_path / "b.duckdb"
    real = runner._run_launch
    calls: list[int] = []

    def terminate_third(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "_run_launch", terminate_third)
    monkeypatch.setattr(runner, "FLUSH_AFTER_S", 3600.0)  # both finished launches still in memory
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        runner.run(BenchSettings(**SMALL), db, progress=False)  # type: ignore[arg-type]
    assert signal.getsignal(signal.SIGTERM) is previous
    with Store(db, read_only=True) as store:
        run_id = store.latest_run_id(status="interrupted")
        assert run_id is not None and store.finished_launches(run_id) == {0, 1}
        assert store.launches(run_id).status.tolist() == ["ok", "ok", "interrupted"]
        assert set(store.measurements(run_id).launch_idx) == {0, 1}


def test_launches_are_written_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database is opened once per batch of launches, not per launch (~0.1 s each)."""
    opened: list[bool] = []
    real_open = runner.open_when_free

    def counting_open(*args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(True)
        return real_open(*args, **kwargs)

    db = tmp_path / "b.duckdb"
    monkeypatch.setattr(runner, "open_when_free", counting_open)
    monkeypatch.setattr(runner, "FLUSH_AFTER_S", 3600.0)
    run_id = runner.run(BenchSettings(**SMALL), db, progress=False)  # type: ignore[arg-type]
    # look for a run to resume, create the run, write its 3 launches at once (was: one open
    # each), mark it complete
    assert len(opened) == 4
    _expected_rows(db, run_id)


def test_launcher_failing_before_the_ranks_start_is_started_again(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Open MPI's launcher sometimes dies before any rank runs ("The PMIx server's listener thread
    failed to start", exit 213, seen in CI): nothing was measured, so the same launch starts
    again; a launcher that keeps failing still fails the run after the last attempt."""
    db = tmp_path / "b.duckdb"
    real = runner._run_launch
    calls: list[int] = []

    def listener_fails_first(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:  # launch 1's first attempt
            return 213, "The PMIx server's listener thread failed to start. We cannot\ncontinue.\n"
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "_run_launch", listener_fails_first)
    monkeypatch.setattr(runner, "STARTUP_RETRY_PAUSE_S", 0.0)
    run_id = runner.run(BenchSettings(**SMALL), db, progress=False)  # type: ignore[arg-type]
    assert len(calls) == 4  # 3 launches, one started twice
    _expected_rows(db, run_id)

    def always_fails(*args, **kwargs):  # type: ignore[no-untyped-def]
        return 213, "The PMIx server's listener thread failed to start."

    monkeypatch.setattr(runner, "_run_launch", always_fails)
    with pytest.raises(BenchError, match="launch 0 \\(2 processes\\) failed, exit code 213: The PMIx server"):
        runner.run(BenchSettings(**SMALL), tmp_path / "c.duckdb", progress=False)  # type: ignore[arg-type]


def test_launch_hanging_before_mpi_init_returns_is_started_again(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch whose ranks never reach their launch record (an MPICH rank's garbled PMI-2
    request under Slurm left the others spinning in MPI_Init: CI, 2026-11-29) is stopped at the
    start timeout and started again, instead of waiting forever; the run's rows are complete."""
    db = tmp_path / "b.duckdb"
    real = launch.popen
    started: list[list[str]] = []

    def hangs_once(lib, nprocs, argv, rank_env=None, extra_flags=()):  # type: ignore[no-untyped-def]
        started.append(list(argv))
        if len(started) == 2:  # launch 1's first attempt: a launcher that never starts the ranks
            return subprocess.Popen(["sleep", "600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True)
        return real(lib, nprocs, argv, rank_env, extra_flags)

    monkeypatch.setattr(launch, "popen", hangs_once)
    monkeypatch.setattr(runner, "STARTUP_TIMEOUT_S", 2.0)
    monkeypatch.setattr(runner, "STARTUP_RETRY_PAUSE_S", 0.0)
    run_id = runner.run(BenchSettings(**SMALL), db, progress=False)  # type: ignore[arg-type]
    # the same launch started again, its command one `--seed` longer (docs/cluster.md: MPICH's
    # PMI-2 garble under Slurm depends on the command line's length)
    seed = int(started[1][started[1].index("--seed") + 1])
    assert len(started) == 4 and started[2] == [*started[1], "--seed", str(seed)]
    _expected_rows(db, run_id)


def test_launch_timeouts_follow_the_budgets() -> None:
    openmpi = mpi.resolve(None)
    quick = BenchSettings(preset="quick")
    whole, start = runner.launch_timeouts(quick, openmpi, 32)
    assert (whole, start) == (60.0 + 10.0 * quick.stop.time_budget_s * 32 + 60.0, 60.0)
    assert runner.launch_timeouts(BenchSettings(launch_timeout_s=30.0), openmpi, 32) == (30.0, 30.0)
    assert runner.launch_timeouts(BenchSettings(stop={"time_budget_s": 0.0}), openmpi, 32) == (None, 60.0)


@pytest.mark.mpich
def test_bench_on_mpich(tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    s = BenchSettings(mpi="mpich", collectives=["allreduce"], sizes=[1024], nprocs=[2], launches=2,
                            variants=["default", "lib:allreduce:ring", "lib:allreduce:nope"], barrier=False,
                            stop={"methods": [], "max_reps": 10, "warmup": 1, "check_every": 5})
    run_id = runner.run(s, db, progress=False)
    with Store(db, read_only=True) as store:
        m = store.measurements(run_id)
        jobs = store.jobs(run_id)
        env = dict(store.environment(run_id)[["key", "value"]].values)
    assert sorted(m.variant.unique()) == ["default", "lib:allreduce:ring"]
    assert len(m) == 2 * 2 * 11
    skipped = jobs[jobs.stop_reason == "skipped"]
    assert skipped.variant.tolist() == ["lib:allreduce:nope"] * 2
    assert "has no algorithm 'nope'" in skipped.skip_reason.iloc[0]
    assert env["mpi_name"] == "mpich" and "cvar:MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" in env


def test_bench_on_intel_one_launch_per_algorithm(tmp_path: Path) -> None:
    try:
        mpi.resolve("intel")
    except mpi.MpiError as exc:
        pytest.skip(f"Intel MPI not available: {exc}")
    db = tmp_path / "i.duckdb"
    s = BenchSettings(mpi="intel", collectives=["allreduce"], sizes=[1024], nprocs=[2], launches=2,
                            variants=["default", "lib:allreduce:1", "lib:allreduce:8"], barrier=False,
                            stop={"methods": [], "max_reps": 10, "warmup": 1, "check_every": 5})
    run_id = runner.run(s, db, progress=False)
    with Store(db, read_only=True) as store:
        m = store.measurements(run_id)
        launches = store.launches(run_id)
        env = store.environment(run_id)
    assert launches.repetition.tolist() == [0, 0, 0, 1, 1, 1]
    by_launch = m.groupby("launch_idx").variant.unique().map(list).to_dict()
    assert by_launch == {0: ["default"], 1: ["lib:allreduce:1"], 2: ["lib:allreduce:8"],
                         3: ["default"], 4: ["lib:allreduce:1"], 5: ["lib:allreduce:8"]}
    assert len(m) == 6 * 11
    adjust = env[env.key == "env:I_MPI_ADJUST_ALLREDUCE"].set_index("launch_idx").value.to_dict()
    assert adjust == {1: "1", 2: "8", 4: "1", 5: "8"}


def test_dry_run_prints_the_plan_and_launches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "popen", lambda *a, **k: pytest.fail("dry run launched"))  # type: ignore[arg-type]
    result = CliRunner().invoke(bench_command, ["--dry-run", "-c", "bcast", "-s", "8", "-n", "2", "-R", "3",
                                                "--no-aa", "--db", str(tmp_path / "d.duckdb")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == "3 launches: R=3 x process counts [2]"
    assert "  bcast 8 byte - 0 default,bcast_as_allgatherv,bcast_as_scatter_allgather" in lines
    assert "  barrier 0 byte - - default" in lines
    assert not (tmp_path / "d.duckdb").exists()


def test_algorithms_bound_to_a_process_count_are_left_out_elsewhere() -> None:
    s = BenchSettings(collectives=["alltoall"], sizes=[64], barrier=False,
                            variants=["default", "lib:alltoall:pairwise", "lib:alltoall:two_proc"])
    assert planning.plan_jobs(s, 2, "openmpi").jobs[0].variants == ("default", "lib:alltoall:pairwise",
                                                                   "lib:alltoall:two_proc")
    four = planning.plan_jobs(s, 4, "openmpi")
    assert four.jobs[0].variants == ("default", "lib:alltoall:pairwise")
    assert four.left_out == ["lib:alltoall:two_proc: openmpi runs it on 2 processes only"]


def test_overview_table_medians_of_launch_medians(tmp_path: Path) -> None:
    import io
    from datetime import datetime

    import pandas as pd
    from rich.console import Console

    from colltune.commands.bench import _print_overview
    from colltune.schema import MEASUREMENT_COLUMNS
    from colltune.store import LaunchData

    db = tmp_path / "o.duckdb"
    with Store(db) as store:
        run_id = store.create_run(kind="bench", command="t", mpi_name="openmpi", mpi_version="v", abi_family="openmpi",
                                  settings={}, variants=[])
        # launch medians: default 4, 6, 10 us -> 6 us; mock-up 2, 3, 9 us -> 3 us; aa is ignored
        for idx, (d, v) in enumerate([(4, 2), (6, 3), (10, 9)]):
            # the mock-up's one slow repetition per launch does not move its launch median
            rows = [("default", d * 1e-6), ("default", d * 1e-6), ("default#aa", 1e-9),
                    ("bcast_as_allgatherv", v * 1e-6), ("bcast_as_allgatherv", v * 1e-6),
                    ("bcast_as_allgatherv", 1.0)]
            meas = pd.DataFrame({"launch_idx": idx, "nprocs": 2, "collective": "bcast",
                                 "variant": [r[0] for r in rows], "msg_bytes": 8, "rep": range(len(rows)),
                                 "warmup": False, "valid": True, "runtime_s": [r[1] for r in rows],
                                 "makespan_s": None, "sync": "barrier", "start_s": None, "end_s": None})
            store.write_launch(run_id, LaunchData(launch_idx=idx, nprocs=2, repetition=idx, seed=0,
                                                  started=datetime(2026, 1, 1), finished=datetime(2026, 1, 1),
                                                  measurements=meas[MEASUREMENT_COLUMNS[1:]]))
        out = io.StringIO()
        _print_overview(store, run_id, Console(file=out, width=120))
    line = [x for x in out.getvalue().splitlines() if "bcast" in x][0].split()
    assert line == ["2", "bcast", "8", "6.00", "3", "bcast_as_allgatherv", "3.00", "2.00"]
