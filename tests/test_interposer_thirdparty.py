"""Third-party proof: mpi4py's own collective tests, unmodified, under `colltune run --force`.

Every variant is forced at least once (the rounds of `force_rounds`: one variant per collective
per launch, all ten collectives at once), on Open MPI and on MPICH with 2 ranks, and the suite
must pass exactly as without the interposer, while the counting table proves the variants ran.
(It found the in-place Reduce_scatter(_block) bug of four variants, now fixed.)

Needs mpi4py (declare it in the test extras) and its test sources, which only the sdist ships:
they are fetched once with `pip download mpi4py==<installed version> --no-binary :all:` into the
colltune cache. Marked slow (about a minute per library).
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from interposer_support import Run, force_rounds, force_spec

from colltune import catalog
from colltune.paths import cache_dir

mpi4py = pytest.importorskip("mpi4py")
pytestmark = pytest.mark.slow

TESTS = ["test_cco_buf", "test_cco_obj", "test_cco_vec", "test_cco_buf_inter", "test_cco_obj_inter"]
@pytest.fixture(scope="session")
def mpi4py_tests() -> Path:
    version = mpi4py.__version__
    root = cache_dir() / "thirdparty" / f"mpi4py-{version}"
    if not (root / "test" / "main.py").exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", f"mpi4py=={version}",
                               "--no-binary", ":all:", "--no-deps", "-d",
                               str(root.parent)], capture_output=True, text=True, check=False)
        sdist = root.parent / f"mpi4py-{version}.tar.gz"
        if not sdist.exists():
            pytest.skip(f"cannot fetch mpi4py's test sources: {proc.stderr[-500:]}")
        with tarfile.open(sdist) as tar:
            tar.extractall(root.parent, filter="data")
    return root / "test"


def mpi4py_run(lib, tests_dir: Path, force: str | None, timeout: float = 300) -> Run:
    colltune = Path(sys.executable).parent / "colltune"
    argv = [str(colltune), "run", "--mpi", lib.name, "--verbose"]
    if force:
        argv += ["--force", force]
    argv += ["--", str(lib.mpiexec), "-n", "2", sys.executable, "main.py", "-f", *TESTS]
    proc = subprocess.run(argv, cwd=tests_dir, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def assert_suite_passed(run: Run) -> None:
    text = run.stdout + run.stderr
    assert run.returncode == 0, run.describe()
    # mpi4py's runner aborts the job when a test fails (rc != 0); both ranks' "OK" lines may
    # come out interleaved on one line.
    assert "FAILED" not in text and text.count("OK") >= 2, run.describe()


@pytest.mark.parametrize("library", ["openmpi", pytest.param("mpich", marks=pytest.mark.mpich)])
@pytest.mark.parametrize("round_", [None, *range(len(force_rounds()))])
def test_mpi4py_collective_suite_under_force(request, library, round_, mpi4py_tests):
    lib = request.getfixturevalue(library)
    request.getfixturevalue(f"{library}_build")
    choice = {} if round_ is None else force_rounds()[round_]
    run = mpi4py_run(lib, mpi4py_tests, force_spec(choice) if choice else None)
    assert_suite_passed(run)
    applied = {(c, v) for (c, mode, v, outcome) in run.counts if mode == "force" and outcome == "applied"}
    decided = {c for (c, _, _, _) in run.counts}
    cat = catalog.load()
    for coll, variant in choice.items():
        if coll not in decided and not cat.collective(coll).serve_large:
            # An MPI-4 library: mpi4py calls the v/w forms by their `_c` bindings, which are
            # watched only (their MPI_Count/MPI_Aint arrays are not converted): counted, never served.
            mpi_c = f"{cat.collective(coll).mpi}_c "
            assert mpi_c in run.stderr, f"{coll}: neither decided nor watched\n{run.describe()}"
            continue
        assert (coll, variant) in applied, f"{variant} never applied\n{run.describe()}"
