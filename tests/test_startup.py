"""Open MPI start-up without the OFI components that select nothing (colltune.measure.startup):
the probe's reading of the selection, when nothing is changed, and the real thing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from colltune.measure import startup
from colltune.mpi import build, launch
from colltune.mpi import libraries as mpi

DATA = Path(__file__).parent / "data"
# `mpiexec -n 2 --mca {pml,mtl,btl}_base_verbose 100 colltune-bench run <no jobs>` of the pip
# Open MPI 5.0.11 on the 2-core test machine, without and with mtl=^ofi btl=^ofi ("select:" lines)
DEFAULT = (DATA / "ompi5-select-verbose.txt").read_text()
NO_OFI = (DATA / "ompi5-select-verbose-no-ofi.txt").read_text()
# the same without and with mtl=^ofi btl=^ofi,uct,tcp pml=^ucx, with ob1's BML lines ("Using sm btl
# for send to [[job,1],peer]"): session 11 of issue 36
SENDS = (DATA / "ompi5-select-verbose-sends.txt").read_text()
UNUSED = (DATA / "ompi5-select-verbose-unused.txt").read_text()


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("COLLTUNE_LAUNCHER", "COLLTUNE_MPIEXEC_FLAGS", *startup._ALLOCATIONS, *startup._USER_CHOICES,
                *startup.FAST_START):
        monkeypatch.delenv(var, raising=False)


def test_selection_reads_every_rank() -> None:
    sel = startup.selection(DEFAULT)
    assert sorted(sel) == ["node1:05360", "node1:05362"]
    for r in sel.values():
        assert (r.pml, r.mtl_ofi_failed, r.btl_ofi_failed, r.pml_ucx_failed, sorted(r.btls)) == (
            "ob1", True, True, True, ["self", "sm", "tcp", "uct"])
    assert {r.pml for r in startup.selection(NO_OFI).values()} == {"ob1"}


def test_same_path_only_when_ofi_failed_everywhere_and_nothing_else_changes() -> None:
    assert startup.same_path(DEFAULT, NO_OFI, 2)
    assert not startup.same_path(DEFAULT, NO_OFI, 4)  # a rank missing from the output
    # OFI serving this host (the MTL initialized, cm selected): leaving it out would change the path
    served = "\n".join(line for line in DEFAULT.splitlines()
                       if "init returned failure for component ofi" not in line).replace("component ob1 selected",
                                                                                           "component cm selected")
    assert not startup.same_path(served, NO_OFI, 2)
    # without OFI, a BTL disappears (say, sm needed OFI's memory registration): not the same path
    fewer = "\n".join(line for line in NO_OFI.splitlines() if "init of component sm returned success" not in line)
    assert not startup.same_path(DEFAULT, fewer, 2)
    # UCX's PML initializing (a network device it can use): it is left in
    ucx = DEFAULT.replace("[node1:05362] select: init returned failure for component ucx\n", "")
    assert not startup.same_path(ucx, NO_OFI, 2)


def test_selection_reads_each_ranks_btl_per_peer() -> None:
    sel = startup.selection(SENDS)
    assert sorted(sel) == ["vm:29452", "vm:29454"]
    assert [sorted(r.sends) for r in sel.values()] == [[("self", 0), ("sm", 1)], [("self", 1), ("sm", 0)]]
    assert [sorted(r.btls) for r in startup.selection(UNUSED).values()] == [["self", "sm"], ["self", "sm"]]


def test_unused_btls_left_out_only_when_every_send_keeps_its_btl() -> None:
    assert startup.same_sends(SENDS, UNUSED, 2)
    assert not startup.same_sends(SENDS, UNUSED, 3)  # a rank missing from the output
    # uct reaching a peer (a memory domain of its list on the host): leaving it out changes the path
    uct = SENDS.replace("Using sm btl for send to [[10590,1],1]", "Using uct btl for send to [[10590,1],1]")
    assert not startup.same_sends(uct, UNUSED.replace("Using sm btl for send to [[32371,1],1]",
                                                      "Using uct btl for send to [[32371,1],1]"), 2)
    # a peer reached through another BTL once they are left out
    other = UNUSED.replace("Using sm btl for send to [[32371,1],0]", "Using tcp btl for send to [[32371,1],0]")
    assert not startup.same_sends(SENDS, other, 2)
    # no BML lines (another version's wording): not shown, so not left out
    silent = "\n".join(line for line in UNUSED.splitlines() if "bml:" not in line)
    assert not startup.same_sends(SENDS, silent, 2)
    # the older rule still holds for OFI alone (its data have no BML lines)
    assert not startup.same_sends(DEFAULT, NO_OFI, 2) and startup.same_path(DEFAULT, NO_OFI, 2)


def test_the_probe_runs_the_start_up_settings_it_accepts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The second probe launch carries FAST_START to the ranks (and PMIx's to the launcher), so the
    selection compared is the one the launches get; accepted, they go with LEAVE_OUT_UNUSED."""
    calls: list[tuple[dict[str, str], list[str]]] = []

    def run(lib: mpi.MpiLibrary, nprocs: int, argv: list[str], rank_env: dict[str, str] | None = None, *,
            extra_flags: list[str], timeout: float) -> object:
        calls.append((dict(rank_env or {}), list(extra_flags)))
        out = SENDS if len(calls) == 1 else UNUSED
        return type("Done", (), {"returncode": 0, "stdout": out, "stderr": ""})()

    monkeypatch.setattr(launch, "run", run)
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "mpiexec")
    lib = mpi.MpiLibrary(name="openmpi", family="openmpi", version="Open MPI v5.0.11",
                         mpicc=Path("/o/bin/mpicc"), mpiexec=Path("/o/bin/mpiexec"))
    art = build.Artifacts(tmp_path, tmp_path / "lib.so", tmp_path / "bench", tmp_path / "selftest", "openmpi")
    assert startup.rank_env(lib, art) == {"OMPI_MCA_mtl": "^ofi", "OMPI_MCA_btl": "^ofi,uct,tcp",
                                          "OMPI_MCA_pml": "^ucx", "UCX_MEM_MMAP_HOOK_MODE": "none",
                                          "PMIX_MCA_gds": "hash"}
    assert [c[0] for c in calls] == [{}, {"UCX_MEM_MMAP_HOOK_MODE": "none", "PMIX_MCA_gds": "hash"}]
    assert calls[1][1][9:] == ["--mca", "mtl", "^ofi", "--mca", "btl", "^ofi,uct,tcp", "--mca", "pml", "^ucx"]
    # a user's own PMIx or UCX setting is left to reach the ranks as it is (the cached answer, no new probe)
    monkeypatch.setenv("PMIX_MCA_gds", "shmem2")
    assert startup.rank_env(lib, art) == {"OMPI_MCA_mtl": "^ofi", "OMPI_MCA_btl": "^ofi,uct,tcp",
                                          "OMPI_MCA_pml": "^ucx", "UCX_MEM_MMAP_HOOK_MODE": "none"}
    assert len(calls) == 2


@pytest.mark.parametrize("var, value", [("OMPI_MCA_btl", "self,sm,tcp"), ("COLLTUNE_MPIEXEC_FLAGS", "--host a,b"),
                                        ("PBS_NODEFILE", "/var/spool/nodes"), ("SLURM_JOB_ID", "7")])
def test_nothing_changed_when_not_ours_to_decide(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, var: str,
                                                 value: str) -> None:
    monkeypatch.setenv(var, value)
    monkeypatch.setenv("COLLTUNE_LAUNCHER", "mpiexec")
    lib = mpi.MpiLibrary(name="openmpi", family="openmpi", version="Open MPI v5.0.11",
                         mpicc=Path("/o/bin/mpicc"), mpiexec=Path("/o/bin/mpiexec"))
    art = build.Artifacts(tmp_path, tmp_path / "lib.so", tmp_path / "bench", tmp_path / "selftest", "openmpi")
    assert startup.rank_env(lib, art) == {}  # and no probe was launched: /o/bin/mpiexec does not exist
    assert not (tmp_path / "startup-probe.json").exists()


def test_probe_on_the_embedded_open_mpi() -> None:
    """On the machine itself: the probe's answer is cached, and a launch with it comes up faster
    with the same world."""
    lib = mpi.resolve(None)
    art = build.ensure_built(lib)
    env = startup.rank_env(lib, art)
    cached = json.loads((art.dir / "startup-probe.json").read_text())
    assert cached[startup.probe_key(lib)] == env
    assert env in ({}, startup.LEAVE_OUT, {**startup.LEAVE_OUT_UNUSED, **startup.FAST_START})
    if not env:
        pytest.skip("OFI serves this host: nothing to leave out")
    argv = [str(art.bench), "run", "/dev/null", "--out", "/dev/null", "--expect-procs", "4"]
    times = {}
    for name, rank_env in (("default", {}), ("without OFI", env)):
        t0 = time.monotonic()
        proc = launch.run(lib, 4, argv, rank_env, timeout=120)
        times[name] = time.monotonic() - t0
        assert proc.returncode == 0, proc.stderr
    # ~1.3 s against ~0.2 s on the quiet 2-core machine; loaded, both grow
    assert times["without OFI"] < times["default"]
