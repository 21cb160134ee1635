"""Open MPI's start-up on one host, without the components that select nothing there (OFI, UCX's PML).

MPI_Init of the embedded Open MPI 5.0 takes ~1.3 s on this machine, ~1.1 s of it in libfabric
probing its providers for the `ofi` MTL and BTL, which then fail to initialize: ob1 over self/sm
carries every message. A check is dozens of launches, so that probing was most of its wall time.
Leaving out components that failed to initialize cannot change what the library selects, so
with `mtl=^ofi` and `btl=^ofi` a launch of 4 ranks starts in ~0.16 s and measures the same
path. The UCX PML fails to initialize here too (no network device; its BTL `uct` initializes and
stays): `pml=^ucx` saves another ~0.02 of ~0.14 CPU s per 4-rank launch (issue 36, session 8:
benchmarks/reproducibility/launch_cost.sh). Whether that holds is not assumed: a probe launch
with the selection's verbose output must show, on every rank, both OFI components and the UCX
PML failing and ob1 selected, and a second probe without them the same PML and the same BTLs;
the answer is cached per (mpiexec, version, host, components left out). Since session 11 the probe
first tries leaving out the `uct` and `tcp` BTLs as well, which initialize here but carry no
message (LEAVE_OUT_UNUSED): accepted only when ob1's BML shows every rank sending to every peer
through the same BTL with and without them (`self` and `sm` on one host), else the OFI/UCX set
alone is probed as before. With those left out, no UCX component is left to use UCX's memory hooks,
and the start skips installing them and builds no PMIx shared-memory store (FAST_START, session 12).

Nothing is changed when it could matter or is not ours to decide: other MPI families, srun or a
batch allocation (ranks may land on other hosts, where OFI may be the network), flags of the
user's own (COLLTUNE_MPIEXEC_FLAGS), or components chosen in OMPI_MCA_pml/mtl/btl. The
settings reach the ranks as rank environment, so every launch stores them (environment table,
`env:OMPI_MCA_mtl`).
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from colltune.mpi import build, launch
from colltune.mpi import libraries as mpi

LEAVE_OUT = {"OMPI_MCA_mtl": "^ofi", "OMPI_MCA_btl": "^ofi", "OMPI_MCA_pml": "^ucx"}
# And the BTLs that initialize here but carry no message between ranks on one host: UCX's `uct`
# (no memory domain of its list, mlx5/mlx4, on this host) and `tcp` (sm's exclusivity is higher).
# Their initialization is ~10 of the ~135 ms of CPU a 4-rank launch spends starting and ending
# (perf stat, session 11 of issue 36). Left out only where the probe shows every rank sending to
# every peer through the same BTL without them (ob1's BML says which: "Using sm btl for send to").
LEAVE_OUT_UNUSED = {**LEAVE_OUT, "OMPI_MCA_btl": "^ofi,uct,tcp"}
# Start-up settings that go with LEAVE_OUT_UNUSED, where no UCX component carries a message (issue 36,
# session 12; benchmarks/reproducibility/launch_cost.sh, docs/measurement.md "Wall time"):
# - UCX_MEM_MMAP_HOOK_MODE=none: libucs/libucm are linked into Open MPI and, as each rank loads them,
#   patch libc's mmap family for UCX's registration cache, then spin in sched_yield for ~48 ms per
#   rank (strace); only UCX's own transports use those hooks, and they are left out.
# - PMIX_MCA_gds=hash: the PMIx job data reach each rank over its launcher socket instead of a
#   shared-memory segment built per job; only MPI_Init reads them (~20 ms CPU a 4-rank launch).
# Together ~0.07 s wall and ~0.03 s CPU less per 4-rank start (0.21 -> 0.14 s, 0.11 -> 0.08 s).
# The probe runs with them, so the selection it compares is the one the launches get.
FAST_START = {"UCX_MEM_MMAP_HOOK_MODE": "none", "PMIX_MCA_gds": "hash"}
# Allocations whose mpiexec may place ranks on other hosts (Open MPI reads them itself).
_ALLOCATIONS = ("SLURM_JOB_ID", "PBS_NODEFILE", "PBS_JOBID", "LSB_JOBID", "PE_HOSTFILE", "OAR_NODEFILE",
                "FLUX_URI")
_USER_CHOICES = ("OMPI_MCA_pml", "OMPI_MCA_mtl", "OMPI_MCA_btl")
_VERBOSE = ["--mca", "pml_base_verbose", "100", "--mca", "mtl_base_verbose", "100",
            "--mca", "btl_base_verbose", "100"]
_PROBE_PROCS = 2


def rank_env(lib: mpi.MpiLibrary, artifacts: build.Artifacts) -> dict[str, str]:
    """LEAVE_OUT_UNUSED with FAST_START where the probe shows them sending every message through the
    same components, else LEAVE_OUT where it selects the same components, else nothing."""
    if lib.family != "openmpi" or lib.name == "intel" or launch.use_srun():
        return {}
    if os.environ.get("COLLTUNE_MPIEXEC_FLAGS", "").strip():
        return {}
    if any(os.environ.get(k) for k in (*_ALLOCATIONS, *_USER_CHOICES)):
        return {}
    cache = artifacts.dir / "startup-probe.json"
    key = probe_key(lib)
    known: dict[str, object] = {}
    try:
        known = json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    if not isinstance(known.get(key), dict):
        known[key] = _probe(lib, artifacts)
        try:
            cache.write_text(json.dumps(known, indent=1) + "\n")
        except OSError:
            pass  # a read-only cache: probe again next time
    env = known[key]
    if not isinstance(env, dict):
        return {}
    # the user's own UCX or PMIx setting stays theirs (it reaches the ranks from the environment)
    return {str(k): str(v) for k, v in env.items() if not (k in FAST_START and k in os.environ)}


def probe_key(lib: mpi.MpiLibrary) -> str:
    """The probe's cache key (its answer: the settings it proved, a dict): an answer about other
    components left out is not this one's."""
    left_out = ",".join(f"{k.removeprefix('OMPI_MCA_')}={v}" for k, v in sorted({**LEAVE_OUT_UNUSED,
                                                                                  **FAST_START}.items()))
    return f"{lib.mpiexec}|{lib.version}|{platform.node()}|{left_out}"


@dataclass
class RankSelection:
    pml: str | None = None
    mtl_ofi_failed: bool = False
    btl_ofi_failed: bool = False
    pml_ucx_failed: bool = False
    btls: set[str] = field(default_factory=set)
    sends: set[tuple[str, int]] = field(default_factory=set)  # (BTL, peer's rank) ob1's BML sends through


def selection(verbose: str) -> dict[str, RankSelection]:
    """What a probe's verbose output says, per rank ("[host:pid]"): the PML selected, the OFI
    components that failed to initialize, the BTLs that initialized."""
    ranks: dict[str, RankSelection] = {}
    for line in verbose.splitlines():
        m = re.match(r"\[([^\]]+)\]\s*(select: .*)$", line)
        if not m:
            continue
        r = ranks.setdefault(m.group(1), RankSelection())
        text = m.group(2)
        if (hit := re.fullmatch(r"select: component (\w+) selected", text)) is not None:
            r.pml = hit.group(1)
        elif text == "select: init returned failure for component ofi":
            r.mtl_ofi_failed = True
        elif text == "select: init returned failure for component ucx":
            r.pml_ucx_failed = True
        elif text == "select: init of component ofi returned failure":
            r.btl_ofi_failed = True
        elif (hit := re.fullmatch(r"select: init of component (\w+) returned success", text)) is not None:
            r.btls.add(hit.group(1))
    for line in verbose.splitlines():
        m = re.match(r"\[([^\]]+)\]\s*mca: bml: Using (\w+) btl for send to \[\[\d+,\d+\],(\d+)\]", line)
        if m:
            ranks.setdefault(m.group(1), RankSelection()).sends.add((m.group(2), int(m.group(3))))
    return ranks


def same_path(default: str, left_out: str, nprocs: int) -> bool:
    """Both OFI components and the UCX PML failed on every rank and ob1 was selected, and leaving
    them out selects ob1 with the same BTLs."""
    a, b = selection(default), selection(left_out)
    if len(a) != nprocs or len(b) != nprocs:
        return False
    btls = {frozenset(r.btls) for r in a.values()}
    return (len(btls) == 1 and all(r.pml == "ob1" and r.mtl_ofi_failed and r.btl_ofi_failed and r.pml_ucx_failed
                                   for r in a.values())
            and all(r.pml == "ob1" for r in b.values()) and {frozenset(r.btls) for r in b.values()} == btls)


def same_sends(default: str, left_out: str, nprocs: int) -> bool:
    """`same_path`'s failures in the default run, ob1 selected without the components left out,
    and every rank sending to every peer through the same BTL in both runs (each rank known by
    the peer it reaches through `self`: its own rank), none through a BTL left out."""
    a, b = selection(default), selection(left_out)
    if len(a) != nprocs or len(b) != nprocs:
        return False
    if not all(r.pml == "ob1" and r.mtl_ofi_failed and r.btl_ofi_failed and r.pml_ucx_failed for r in a.values()) \
            or not all(r.pml == "ob1" for r in b.values()):
        return False

    def by_rank(ranks: dict[str, RankSelection]) -> dict[int, frozenset[tuple[str, int]]]:
        out = {}
        for r in ranks.values():
            own = [peer for btl, peer in r.sends if btl == "self"]
            if len(own) != 1 or len({peer for _, peer in r.sends}) != nprocs:
                return {}  # a rank whose sends the output does not show, each peer once
            out[own[0]] = frozenset(r.sends)
        return out

    sends = by_rank(a)
    left = set(LEAVE_OUT_UNUSED["OMPI_MCA_btl"].removeprefix("^").split(","))
    return len(sends) == nprocs and sends == by_rank(b) and \
        not any(btl in left for s in sends.values() for btl, _ in s)


def _probe(lib: mpi.MpiLibrary, artifacts: build.Artifacts) -> dict[str, str]:
    """The settings proved to measure the same path: LEAVE_OUT_UNUSED with FAST_START, LEAVE_OUT or none."""
    with tempfile.TemporaryDirectory(prefix="colltune-probe-") as tmp:
        jobs = Path(tmp) / "jobs.txt"
        jobs.write_text("")  # no job: MPI_Init, the world check, MPI_Finalize
        argv = [str(artifacts.bench), "run", str(jobs), "--out", str(Path(tmp) / "out.txt")]

        def verbose(env: dict[str, str]) -> str | None:
            flags = list(_VERBOSE)
            for k, v in env.items():
                if k.startswith("OMPI_MCA_"):
                    flags += ["--mca", k.removeprefix("OMPI_MCA_"), v]
            others = {k: v for k, v in env.items() if not k.startswith("OMPI_MCA_")}
            try:
                proc = launch.run(lib, _PROBE_PROCS, argv, others, extra_flags=flags, timeout=120)
            except (OSError, subprocess.TimeoutExpired):
                return None
            return proc.stdout + proc.stderr if proc.returncode == 0 else None

        default = verbose({})
        if default is None:
            return {}
        unused = verbose({**LEAVE_OUT_UNUSED, **FAST_START})
        if unused is not None and same_sends(default, unused, _PROBE_PROCS):
            return {**LEAVE_OUT_UNUSED, **FAST_START}
        ofi = verbose(LEAVE_OUT)
        return dict(LEAVE_OUT) if ofi is not None and same_path(default, ofi, _PROBE_PROCS) else {}
