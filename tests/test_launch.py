"""Launcher command lines per MPI library: settings reach the ranks only."""

from __future__ import annotations

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
    assert argv == ["srun", "-n", "8", "--export=ALL,LD_PRELOAD=/c/l.so", "--mpi=pmix", "./app"]


@pytest.mark.parametrize(("lib", "plugin"), [(OMPI, "pmix"), (MPICH, "pmi2"), (INTEL, "pmi2")])
def test_srun_gets_the_pmi_plugin_of_the_library(monkeypatch: pytest.MonkeyPatch, lib: MpiLibrary,
                                                 plugin: str) -> None:
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    assert launch.mpiexec_argv(lib, 2, ["./app"]) == ["srun", "-n", "2", "--export=ALL", f"--mpi={plugin}", "./app"]


def test_srun_plugin_chosen_by_the_user_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "srun")
    monkeypatch.setenv("COLLTUNE_MPIEXEC_FLAGS", "--mpi=pmi2")
    assert launch.mpiexec_argv(OMPI, 2, ["./app"]) == ["srun", "-n", "2", "--export=ALL", "--mpi=pmi2", "./app"]
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
