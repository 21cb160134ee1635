"""Shared fixtures: the MPI libraries under test and their builds of the C core.

Open MPI (embedded) is required. MPICH is installed by `make test` (`make setup-mpich`); tests
marked `mpich` are skipped only when it is absent, which CI never is.
"""

from __future__ import annotations

import os

import pytest

from colltune.measure import proof
from colltune.mpi import build
from colltune.mpi import libraries as mpi


# MPICH's warm-up (docs/select.md, "The library's warm-up") sends each communicator's first
# calls to the library whatever is forced, which would move every exact count of served calls
# that the interposer's tests assert. They test serving, so they run without it; the tests of the
# warm-up itself and of results under every-call exploration on MPICH set `auto` for their ranks.
os.environ["COLLTUNE_LIBRARY_WARMUP"] = "0"
WARMUP_AUTO = {"COLLTUNE_LIBRARY_WARMUP": "auto"}


def _library(name: str) -> mpi.MpiLibrary:
    try:
        return mpi.resolve(name)
    except mpi.MpiError as exc:
        pytest.skip(f"{name} not available (make setup-{name}): {exc}")


@pytest.fixture(scope="session")
def openmpi() -> mpi.MpiLibrary:
    return mpi.resolve("openmpi")


@pytest.fixture(scope="session")
def mpich() -> mpi.MpiLibrary:
    return _library("mpich")


@pytest.fixture(scope="session")
def intel() -> mpi.MpiLibrary:
    # Not installed by CI (305 MB): its tests skip there and run where `make setup-intel` ran.
    return _library("intel")


@pytest.fixture(scope="session")
def openmpi_build(openmpi: mpi.MpiLibrary) -> build.Artifacts:
    # The interposer serves nothing unproven: every test that loads it needs the proof.
    proof.ensure_proven(openmpi)
    return build.ensure_built(openmpi)


@pytest.fixture(scope="session")
def mpich_build(mpich: mpi.MpiLibrary) -> build.Artifacts:
    proof.ensure_proven(mpich)
    return build.ensure_built(mpich)
