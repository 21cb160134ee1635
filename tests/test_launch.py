"""Launcher command lines per MPI library: settings reach the ranks only."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from colltune.mpi import launch
from colltune.mpi.libraries import MpiLibrary

OMPI = MpiLibrary(name="openmpi", family="openmpi", version="Open MPI v5.0.11",
                  mpicc=Path("/o/bin/mpicc"), mpiexec=Path("/o/bin/mpiexec"))
MPICH = MpiLibrary(name="mpich", family="mpich", version="MPICH Version: 5.0.2",
                   mpicc=Path("/m/bin/mpicc"), mpiexec=Path("/m/bin/mpiexec"))
INTEL = MpiLibrary(name="intel", family="mpich", version="Intel(R) MPI Library 2021.18",
                   mpicc=Path("/i/bin/mpicc"), mpiexec=Path("/i/bin/mpiexec"),
                   env={"I_MPI_ROOT": "/i"})


@pytest.fixture(autouse=True)
def _no_slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SLURM_JOB_ID", "SLURM_MPI_TYPE", "COLLTUNE_LAUNCHER", "COLLTUNE_MPIEXEC_FLAGS"):
        monkeypatch.delenv(var, raising=False)


def test_openmpi_command_line() -> None:
    argv = launch.mpiexec_argv(OMPI, 4, ["./app", "-x"], {"LD_PRELOAD": "/c/libcolltune.so", "COLLTUNE_VERBOSE": "1"})
    assert argv == ["/o/bin/mpiexec", "-n", "4", "--oversubscribe", "--bind-to", "none",
                    "-x", "LD_PRELOAD=/c/libcolltune.so", "-x", "COLLTUNE_VERBOSE=1", "./app", "-x"]


def test_mpich_command_line() -> None:
    argv = launch.mpiexec_argv(MPICH, 2, ["./app"], {"LD_PRELOAD": "/c/lib.so"})
    assert argv == ["/m/bin/mpiexec", "-n", "2", "-bind-to", "none", "-genv", "LD_PRELOAD", "/c/lib.so", "./app"]


def test_intel_command_line_uses_genv_without_binding_flags() -> None:
    argv = launch.mpiexec_argv(INTEL, 2, ["./app"], {"COLLTUNE_FORCE": "bcast=bcast_as_allgatherv"})
    assert argv == ["/i/bin/mpiexec", "-n", "2", "-genv", "COLLTUNE_FORCE", "bcast=bcast_as_allgatherv", "./app"]


def test_srun_inside_slurm_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    argv = launch.mpiexec_argv(OMPI, 8, ["./app"], {"LD_PRELOAD": "/c/l.so"})
    assert argv == ["srun", "-n", "8", "--export=ALL,LD_PRELOAD=/c/l.so", "--kill-on-bad-exit=1", "--mpi=pmix", "./app"]


@pytest.mark.parametrize(("lib", "plugin"), [(OMPI, "pmix"), (MPICH, "pmi2"), (INTEL, "pmi2")])
def test_srun_gets_the_pmi_plugin_of_the_library(monkeypatch: pytest.MonkeyPatch, lib: MpiLibrary,
                                                 plugin: str) -> None:
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    assert launch.mpiexec_argv(lib, 2, ["./app"]) == ["srun", "-n", "2", "--export=ALL", "--kill-on-bad-exit=1", f"--mpi={plugin}", "./app"]


def test_srun_plugin_chosen_by_the_user_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    monkeypatch.setenv("COLLTUNE_MPIEXEC_FLAGS", "--mpi=pmi2")
    assert launch.mpiexec_argv(OMPI, 2, ["./app"]) == ["srun", "-n", "2", "--export=ALL", "--kill-on-bad-exit=1", "--mpi=pmi2", "./app"]
    assert launch.srun_mpi_flags(MPICH, ["--mpi", "pmix", "-n", "2"]) == []
    monkeypatch.setenv("SLURM_MPI_TYPE", "pmix")
    assert launch.srun_mpi_flags(MPICH, ["-n", "2"]) == []


def test_user_flags_come_before_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLTUNE_MPIEXEC_FLAGS", "--map-by core")
    argv = launch.mpiexec_argv(MPICH, 2, ["./app"])
    assert argv == ["/m/bin/mpiexec", "-n", "2", "-bind-to", "none", "--map-by", "core", "./app"]


def test_launcher_never_gets_the_preload() -> None:
    env = launch.launcher_env(OMPI, {"LD_PRELOAD": "/c/l.so", "PATH": "/bin"})
    assert "LD_PRELOAD" not in env
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert launch.launcher_env(INTEL, {})["I_MPI_ROOT"] == "/i"


def test_pmix_settings_reach_the_launchers_pmix_server_too() -> None:
    """PMIx settings meant for the ranks are read by mpiexec's PMIx server as well (the start-up
    probe's PMIX_MCA_gds=hash): Open MPI's launcher gets them, the other settings stay the ranks'."""
    ranks = {"PMIX_MCA_gds": "hash", "UCX_MEM_MMAP_HOOK_MODE": "none", "OMPI_MCA_btl": "^ofi"}
    env = launch.launcher_env(OMPI, {"PATH": "/bin"}, nprocs=4, rank_env=ranks)
    assert {k: v for k, v in env.items() if k.startswith(("PMIX_", "UCX_", "OMPI_MCA_btl"))} == {"PMIX_MCA_gds": "hash"}
    assert "PMIX_MCA_gds" not in launch.launcher_env(MPICH, {"PATH": "/bin"}, nprocs=4, rank_env=ranks)
    assert launch.mpiexec_argv(OMPI, 4, ["./app"], ranks)[-7:] == [
        "-x", "PMIX_MCA_gds=hash", "-x", "UCX_MEM_MMAP_HOOK_MODE=none", "-x", "OMPI_MCA_btl=^ofi", "./app"]


# -- Open MPI's waiting: yield only when the ranks outnumber the cores ----------------------------

@pytest.mark.parametrize(("nprocs", "cores", "expected"), [
    (2, 2, "unset"), (1, 2, "unset"), (3, 2, "1"), (4, 2, "1"), (4, 4, "unset"), (2, 1, "1"), (None, 64, "1")])
def test_openmpi_yields_only_when_ranks_outnumber_cores(monkeypatch: pytest.MonkeyPatch, nprocs: int | None,
                                                         cores: int, expected: str) -> None:
    monkeypatch.setattr(launch, "cores_available", lambda: cores)
    env = launch.launcher_env(OMPI, {}, nprocs=nprocs)
    assert env.get("OMPI_MCA_mpi_yield_when_idle", "unset") == expected
    assert launch.idle_wait(OMPI, env) == ("yield" if expected == "1" else "busy-poll")
    # What the ranks report through MPI_T is what happened (Open MPI may yield by itself).
    assert launch.idle_wait(OMPI, env, reported="1") == "yield"


def test_the_users_yield_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "cores_available", lambda: 2)
    assert launch.launcher_env(OMPI, {"OMPI_MCA_mpi_yield_when_idle": "1"}, nprocs=2)[
        "OMPI_MCA_mpi_yield_when_idle"] == "1"
    assert launch.launcher_env(OMPI, {"OMPI_MCA_mpi_yield_when_idle": "0"}, nprocs=8)[
        "OMPI_MCA_mpi_yield_when_idle"] == "0"


def test_other_libraries_get_no_open_mpi_setting() -> None:
    for lib in (MPICH, INTEL):
        env = launch.launcher_env(lib, {}, nprocs=64)
        assert "OMPI_MCA_mpi_yield_when_idle" not in env
        assert launch.idle_wait(lib, env) == "library default"


def test_cores_available_follows_the_affinity_mask() -> None:
    """taskset narrows the mask the way a cpuset or a Slurm step does."""
    import subprocess
    import sys

    code = "from colltune.mpi import launch; print(launch.cores_available())"
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "1"


@pytest.mark.parametrize(("argv", "expected"), [
    (["mpiexec", "-n", "4", "./app"], 4),
    (["mpirun", "-np", "8", "--bind-to", "core", "./app", "x"], 8),
    (["mpiexec", "--np=3", "./app"], 3),
    (["srun", "--ntasks=6", "./app"], 6),
    (["srun", "-n4", "./app"], 4),
    (["mpiexec", "-n", "2", "./app", "-n", "1000"], 1000),  # the program's own -n: yield, never spin wrongly
    (["mpiexec", "--hostfile", "h", "./app"], None),
    (["mpiexec", "-n", "1", "./a", ":", "-n", "1", "./b"], None),
    (["mpiexec", "-n", "$N", "./app"], None),
    (["mpiexec", "-n"], None),
])
def test_process_count_of_a_users_command_line(argv: list[str], expected: int | None) -> None:
    assert launch.nprocs_of(argv) == expected


def test_the_ranks_receive_the_decision(openmpi: MpiLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end through Open MPI's launcher: every rank sees the value chosen for it."""
    for cores, expected in ((2, []), (1, ["OMPI_MCA_mpi_yield_when_idle=1"] * 2)):
        monkeypatch.setattr(launch, "cores_available", lambda cores=cores: cores)
        monkeypatch.delenv("OMPI_MCA_mpi_yield_when_idle", raising=False)
        proc = launch.run(openmpi, 2, ["env"], timeout=60)
        assert proc.returncode == 0, proc.stderr
        seen = [line for line in proc.stdout.splitlines() if line.startswith("OMPI_MCA_mpi_yield_when_idle=")]
        assert seen == expected


@pytest.mark.parametrize(("argv", "env", "expected"), [
    (["srun", "-N", "2", "-n", "4", "./app"], {}, (4, (2, 2))),
    (["srun", "--nodes=2", "--ntasks=6", "./app"], {}, (6, (2, 3))),         # block: 3 + 3
    (["srun", "-n", "4", "--ntasks-per-node", "2", "./app"], {}, (4, (2, 2))),
    (["srun", "-n", "4", "./app"], {"SLURM_NNODES": "2"}, (4, (2, 2))),     # the allocation's nodes
    (["srun", "./app"], {"SLURM_NNODES": "2", "SLURM_NTASKS": "4"}, (4, (2, 2))),
    (["srun", "-N", "1", "-n", "4", "./app"], {"SLURM_NNODES": "2"}, (4, (1, 4))),
    (["srun", "-N", "2-4", "-n", "8", "./app"], {}, None),                  # Slurm decides
    (["srun", "-n", "4", "./app"], {}, None),                               # no allocation known
    (["mpiexec", "-n", "4", "./app"], {}, (4, (1, 4))),
    (["mpiexec", "-n", "4", "--hostfile", "h", "./app"], {}, None),
    (["mpiexec", "-n", "4", "./app"], {"SLURM_JOB_ID": "7"}, None),          # mpiexec spans the allocation
])
def test_layout_a_launch_line_asks_for(argv: list[str], env: dict[str, str],
                                       expected: tuple[int, tuple[int, int]] | None) -> None:
    assert launch.planned_layout(argv, env) == expected


@pytest.mark.parametrize(("stderrs", "expected_calls", "expected_code"), [
    (["The PMIx server's listener thread failed to start. We cannot\ncontinue.", ""], 2, 0),
    (["The PMIx server's listener thread failed to start."] * 3, 3, 213),
    (["rank 1 aborted: MPI_ERR_COUNT"], 1, 213),  # the ranks' own failure is never launched again
])
def test_a_launcher_that_died_before_any_rank_is_started_again(
        monkeypatch: pytest.MonkeyPatch, stderrs: list[str], expected_calls: int, expected_code: int) -> None:
    import subprocess

    calls: list[list[str]] = []

    def fake_run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        stderr = stderrs[len(calls)]
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 213 if stderr else 0, "", stderr)

    monkeypatch.setattr(launch.subprocess, "run", fake_run)
    monkeypatch.setattr(launch, "LAUNCH_RETRY_PAUSE_S", 0.0)
    proc = launch.run(OMPI, 2, ["./app"])
    assert len(calls) == expected_calls and proc.returncode == expected_code
    assert all(argv == calls[0] for argv in calls)


@pytest.mark.skipif(not launch.die_with_parent_argv(), reason="needs util-linux setpriv (Linux)")
def test_launch_gets_sigterm_when_its_starter_is_killed(tmp_path: Path) -> None:
    """popen's guard (setpriv --pdeathsig, which lets subprocess vfork): a process started through
    it gets SIGTERM when the process that started it is SIGKILLed, so a killed front end leaves no
    launch behind."""
    got = tmp_path / "got"
    launched = ("import signal, sys, time\n"
                f"signal.signal(signal.SIGTERM, lambda *_: (open({str(got)!r}, 'w').write('TERM'), sys.exit(0)))\n"
                "print('ready', flush=True)\n"
                "time.sleep(30)\n")
    starter = ("import os, signal, subprocess, sys\n"
               "from colltune.mpi import launch\n"
               f"p = subprocess.Popen(launch.die_with_parent_argv() + [sys.executable, '-c', {launched!r}],\n"
               "                     stdout=subprocess.PIPE, text=True, start_new_session=True)\n"
               "assert p.stdout.readline() == 'ready\\n'\n"
               "os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", starter], timeout=20)
    assert done.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while not got.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert got.read_text() == "TERM"


@pytest.mark.parametrize(("outcomes", "expected_calls", "fails"), [
    ([(213, "The PMIx server's listener thread failed to start. We cannot\ncontinue."), (0, "")], 2, False),
    ([(213, "The PMIx server's listener thread failed to start.")] * 3, 3, True),
    ([(1, "rank 1 aborted: MPI_ERR_COUNT")], 1, True),   # the application's own failure: not again
])
def test_advise_starts_the_application_again_when_the_launcher_died_before_any_rank(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, outcomes: list[tuple[int, str]], expected_calls: int,
        fails: bool) -> None:
    from colltune.advise import launch as advise_launch
    from colltune.mpi import build, runenv

    calls: list[list[str]] = []

    def fake_launch_once(argv, env, quiet):   # each launch finds an empty run directory
        assert list((tmp_path / "run").iterdir()) == []
        (tmp_path / "run" / f"rank-{len(calls)}").write_text("")
        calls.append(list(argv))
        return outcomes[len(calls) - 1]

    monkeypatch.setattr(advise_launch, "_launch_once", fake_launch_once)
    monkeypatch.setattr(launch, "LAUNCH_RETRY_PAUSE_S", 0.0)
    monkeypatch.setattr(runenv, "rank_environment", lambda *a, **k: {})
    art = build.Artifacts(tmp_path, tmp_path / "libcolltune.so", tmp_path / "b", tmp_path / "s", "openmpi")
    command = ["mpiexec", "-n", "2", "./app"]
    if fails:
        with pytest.raises(advise_launch.AdviseError, match=f"exited with status {outcomes[-1][0]}"):
            advise_launch.run_app(OMPI, art, command, run_dir=tmp_path / "run")
    else:
        assert advise_launch.run_app(OMPI, art, command, run_dir=tmp_path / "run").returncode == 0
    assert len(calls) == expected_calls and all(argv == calls[0] for argv in calls)


def test_an_advised_launch_passes_its_stderr_on_and_keeps_its_end(capfd: pytest.CaptureFixture[str]) -> None:
    from colltune.advise import launch as advise_launch

    code, tail = advise_launch._launch_once(["sh", "-c", "echo to-err >&2; echo to-out; exit 3"], {}, False)
    assert (code, tail) == (3, "to-err\n")
    assert capfd.readouterr() == ("to-out\n", "to-err\n")


def test_advise_notes_a_rank_script_and_not_a_program(tmp_path: Path) -> None:
    from colltune.advise.launch import script_note
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nsource /usr/share/openfoam/etc/bashrc\nexec icoFoam -parallel\n")
    script.chmod(0o755)
    note = script_note(["mpirun", "-np", "2", str(script)])
    assert note == (f"colltune advise: note: the ranks start a script, {script}: its shell gets the profiling "
                    "library and the MPI library too, and so does each command or subshell it runs (~0.1 ms "
                    "each); for the cheapest profiling run put the application itself after the launcher, its "
                    "environment set in the launcher's")
    assert script_note(["mpirun", "-np", "2", "/bin/true"]) is None
    assert script_note(["mpirun", "-np", "2", str(tmp_path / "missing")]) is None
