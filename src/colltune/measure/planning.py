"""The plan of a run: which launches, and which jobs each launch measures (job-file lines).

Also the checks that need no launch (process counts against cores or the Slurm allocation,
something left to measure), so a bad run fails before anything starts. A tuning profile given
for the `tuned` variant is read by the command that takes it (commands/bench_options.py): the
measurement does not depend on tune/.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from colltune import catalog
from colltune.catalog import variant_kind
from colltune.measure.settings import DATATYPE_SIZES, BenchError, BenchSettings
from colltune.mpi import launch
from colltune.mpi import libraries as mpi
from colltune.mpi.algorithms import (
    ALGORITHM_NPROCS,
    ALGORITHMS_AT_LAUNCH,
    COLLECTIVE_NPROCS_LIMITS,
    LAUNCH_FORMS,
    VARIANT_NPROCS_LIMITS,
    algorithm_key,
    launch_setting,
)


@dataclass(frozen=True)
class Job:
    collective: str
    msg_bytes: int
    datatype: str
    op: str
    root: int
    variants: tuple[str, ...]

    def line(self) -> str:
        cat = catalog.load()
        reduction, rooted = cat.is_reduction(self.collective), cat.is_rooted(self.collective)
        return (f"{self.collective} {self.msg_bytes} {self.datatype} {self.op if reduction else '-'} "
                f"{self.root if rooted else '-'} {','.join(self.variants)}")


@dataclass
class Plan:
    """The jobs of one process count, and what was left out before launching (and why)."""

    nprocs: int
    jobs: list[Job]
    left_out: list[str] = field(default_factory=list)


Selection = frozenset[tuple[str, int, str]]  # (collective, msg_bytes, variant)


def plan_jobs(settings: BenchSettings, nprocs: int, library: str,
              adjust: tuple[str, str] | None = None, only: Selection | None = None) -> Plan:
    """The jobs of one launch. `library` keys LIBRARY_ALGORITHMS. Where algorithms are fixed at
    launch (Intel MPI), the ordinary launches leave library variants out and `adjust` =
    (collective, algorithm) plans the launch measuring just `lib:<collective>:<algorithm>`
    (the algorithm of another form with its `#<form>`, as in the variant's name).
    `only` (adaptive rounds of `colltune check`) keeps just these (collective, size, variant)
    and leaves the barrier out."""
    plan = Plan(nprocs, [])
    at_launch = library in ALGORITHMS_AT_LAUNCH
    for coll in settings.collectives:
        if adjust is not None and coll != adjust[0]:
            continue
        limit = COLLECTIVE_NPROCS_LIMITS.get((library, coll))
        if limit is not None and nprocs >= limit[0]:
            plan.left_out.append(f"{coll}: {limit[1]}")
            continue
        names = settings.variants_for(coll, library)
        if at_launch:
            unfixed = [v for v in names if v.startswith("lib:") and catalog.form_of(v) not in LAUNCH_FORMS[library]]
            plan.left_out += [f"{v}: {library} fixes no algorithm of the {catalog.form_of(v)} form at launch "
                              f"(only of the {' and '.join(LAUNCH_FORMS[library])} calls)"
                              for v in unfixed if adjust is None]
            names = [v for v in names if v not in unfixed]
        if adjust is not None:
            variants: tuple[str, ...] = (f"lib:{adjust[0]}:{adjust[1]}",)
        else:
            variants = tuple(v for v in names if not (at_launch and v.startswith("lib:")))
        for v in variants:
            bound = ALGORITHM_NPROCS.get((library, v.split(":")[-1])) if v.startswith("lib:") else None
            if bound is not None and bound != nprocs:
                plan.left_out.append(f"{v}: {library} runs it on {bound} processes only")
        variants = tuple(v for v in variants if not (
            v.startswith("lib:") and ALGORITHM_NPROCS.get((library, v.split(":")[-1]), nprocs) != nprocs))
        broken = [v for v in variants if nprocs >= VARIANT_NPROCS_LIMITS.get((library, coll, v), (nprocs + 1,))[0]]
        plan.left_out += [f"{coll} {v}: {VARIANT_NPROCS_LIMITS[(library, coll, v)][1]}" for v in broken]
        variants = tuple(v for v in variants if v not in broken)
        if not variants:
            plan.left_out.append(f"{coll}: none of the requested variants belongs to it")
            continue
        dtype = settings.datatype_for(coll)
        unit = DATATYPE_SIZES[dtype] * (nprocs if coll == "reduce_scatter_block" else 1)
        for size in settings.sizes_for(coll):
            if size % unit:
                plan.left_out.append(f"{coll} {size} B: not a multiple of {unit} B "
                                     f"({dtype}{' x p' if coll == 'reduce_scatter_block' else ''})")
                continue
            chosen = variants if only is None else tuple(v for v in variants if (coll, size, v) in only)
            if chosen:
                plan.jobs.append(Job(coll, size, dtype, settings.op, settings.root, chosen))
    if settings.barrier and adjust is None and only is None and "barrier" not in settings.collectives:
        plan.jobs.append(Job("barrier", 0, "byte", "-", 0,
                             ("default", "default#aa") if settings.aa else ("default",)))
    return plan


def all_variants(settings: BenchSettings, library: str) -> list[tuple[str, str, str, str | None]]:
    """(collective, variant, kind, guideline) rows of the run's variants table."""
    cat = catalog.load()
    guideline = {v.name: v.guideline for v in cat.variants}
    rows = []
    for coll in settings.collectives:
        for name in settings.variants_for(coll, library):
            rows.append((coll, name, variant_kind(name), guideline.get(name)))
    if settings.barrier and "barrier" not in settings.collectives:
        rows.append(("barrier", "default", "default", None))
        if settings.aa:
            rows.append(("barrier", "default#aa", "aa", None))
    return rows


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def check_nprocs(settings: BenchSettings, lib: mpi.MpiLibrary) -> None:
    """Too many ranks for the place we run: a clear error before anything starts."""
    if launch.use_srun():
        slots = int(os.environ.get("SLURM_NTASKS", "0") or 0)
        if slots and max(settings.nprocs) > slots:
            raise BenchError(f"{max(settings.nprocs)} processes requested but the Slurm allocation "
                             f"has {slots} tasks: ask for more (-n) or measure fewer processes")
        return
    cores = _cores()
    biggest = max(settings.nprocs)
    # MPICH polls; Open MPI and Intel MPI yield the core when they wait (MPI-NOTES.md)
    if lib.family == "smpi":
        return  # simulated ranks: all in one process, as many as the platform has cores
    if lib.family == "mpich" and lib.name != "intel" and biggest > cores and not settings.allow_oversubscribe:
        raise BenchError(f"{lib.name} busy-polls: {biggest} ranks on {cores} cores make every "
                         f"collective take milliseconds; use at most -n {cores} here, or pass "
                         "--allow-oversubscribe to measure anyway")
    if biggest > 16 * cores:
        raise BenchError(f"{biggest} processes on {cores} cores is not a measurement; "
                         "run on a cluster (srun) or use fewer processes")


def validate(settings: BenchSettings) -> mpi.MpiLibrary:
    """Everything that can be checked without launching; returns the MPI library to use."""
    lib = mpi.resolve(settings.mpi)
    check_nprocs(settings, lib)
    key = algorithm_key(lib)
    if key == "intel":
        bad = [v for c in settings.collectives for v in settings.variants_for(c, key)
               if v.startswith("lib:") and not v.split(":")[2].split("#")[0].isdigit()]
        if bad:
            raise BenchError(f"{', '.join(bad)}: Intel MPI algorithms are numbers, e.g. lib:allreduce:3 "
                             "(I_MPI_ADJUST_ALLREDUCE=3; lib:allreduce:3#nonblocking: I_MPI_ADJUST_IALLREDUCE=3; "
                             "`impi_info -a` lists them)")
    for n in settings.nprocs:
        if not plan_jobs(settings, n, key).jobs:
            raise BenchError(f"nothing to measure at {n} processes: every size was left out")
    return lib


def launch_seed(settings: BenchSettings, launch_idx: int) -> int:
    """Different interleaving per launch, identical on all ranks of one launch."""
    return (settings.seed * 1_000_003 + launch_idx * 7_919 + 1) % (2**63)


@dataclass(frozen=True)
class LaunchSpec:
    """One mpiexec of a run."""

    idx: int
    nprocs: int
    repetition: int  # 0..R-1 for its process count
    adjust: tuple[str, str] | None = None  # (collective, algorithm) fixed for this launch (Intel, SMPI)
    only: Selection | None = None  # adaptive round: just these (collective, size, variant)
    round: int = 0  # adaptive round of `colltune check` (0: the first R launches)
    library: str = "intel"  # the LIBRARY_ALGORITHMS key whose launch setting `adjust` is

    def rank_env(self) -> dict[str, str]:
        if self.adjust is None:
            return {}
        return launch_setting(self.library, *self.adjust)


def launch_plan(settings: BenchSettings, library: str = "openmpi") -> list[LaunchSpec]:
    """Process counts alternate, so that an interrupted run has launches of every process
    count. Where algorithms are fixed at launch, each repetition adds one launch per
    (collective, algorithm) right after the ordinary one."""
    adjusts: list[tuple[str, str]] = []
    if library in ALGORITHMS_AT_LAUNCH:   # (collective, "<alg>" or "<alg>#nonblocking")
        adjusts = [(c, v.split(":")[2]) for c in settings.collectives
                   for v in settings.variants_for(c, library)
                   if v.startswith("lib:") and catalog.form_of(v) in LAUNCH_FORMS[library]]
    specs: list[LaunchSpec] = []
    for r in range(settings.launches):
        for n in settings.nprocs:
            for adjust in (None, *adjusts):
                specs.append(LaunchSpec(len(specs), n, r, adjust, library=library))
    return specs


def adaptive_plan(settings: BenchSettings, library: str, only: dict[int, Selection], launches: int,
                  first_idx: int, first_repetition: int, round_: int) -> list[LaunchSpec]:
    """The launches of one adaptive round: `launches` per process count, each measuring only the
    selection; where algorithms are fixed at launch, selected library variants get their own."""
    specs: list[LaunchSpec] = []
    for r in range(launches):
        for n, sel in sorted(only.items()):
            adjusts = sorted({(c, v.split(":")[2]) for c, _, v in sel if v.startswith("lib:")}) \
                if library in ALGORITHMS_AT_LAUNCH else []
            ordinary = any(not (v.startswith("lib:") and adjusts) for _, _, v in sel)
            for adjust in ((None,) if ordinary else ()) + tuple(adjusts):
                specs.append(LaunchSpec(first_idx + len(specs), n, first_repetition + r, adjust, sel, round_, library))
    return specs
