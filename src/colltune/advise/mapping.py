"""Finding 3: mapping and oversubscription from each rank's host, CPU binding and threads.

Per host: ranks x threads per rank (OMP_NUM_THREADS, 1 when unset) against the cores online;
bindings that are absent (a rank may run on every core while others share the node) or overlap
between ranks; threads per rank against the cores in the rank's binding.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from pathlib import Path

from colltune.advise.findings import Finding
from colltune.advise.profile_run import ProfileRun, RankProfile

CHANGE = {
    "openmpi": "mpiexec -n <ranks per node <= cores> --map-by core --bind-to core ... "
               "(hybrid: --map-by slot:PE=<threads> --bind-to core)",
    "mpich": "mpiexec -n <ranks per node <= cores> -bind-to core ... (hybrid: -bind-to core:<threads>)",
    "intel": "export I_MPI_PIN=1 I_MPI_PIN_DOMAIN=core (hybrid: I_MPI_PIN_DOMAIN=omp)",
}
# Under srun, Slurm places and binds the ranks whatever the library: the mpiexec flags above
# would not apply (nor would Intel's pinning variables, which srun's binding overrides).
SRUN_CHANGE = ("srun --ntasks-per-node=<ranks per node <= cores> --cpu-bind=cores ... "
               "(hybrid: --cpus-per-task=<threads> --cpu-bind=cores)")


def launcher_of(command: tuple[str, ...] | list[str]) -> str:
    """"srun" when the application was started by Slurm's srun, else "mpiexec"."""
    return "srun" if command and Path(command[0]).name == "srun" else "mpiexec"


def _change(family: str, launcher: str) -> str:
    return SRUN_CHANGE if launcher == "srun" else CHANGE[family]


def _threads(r: RankProfile) -> int:
    return r.omp_num_threads or 1


def findings(run: ProfileRun, family: str, launcher: str = "mpiexec") -> list[Finding]:
    by_host: dict[str, list[RankProfile]] = defaultdict(list)
    for r in run.ranks:
        by_host[r.host].append(r)
    out = []
    for host, ranks in sorted(by_host.items()):
        cores = ranks[0].cores_online
        threads = sum(_threads(r) for r in ranks)
        facts = [f"host {host}: {len(ranks)} ranks x {_threads(ranks[0])} threads, {cores} cores online",
                 "bindings: " + "; ".join(f"rank {r.rank}: {_cpus(r.affinity)}" for r in ranks[:8])]
        if threads > cores:
            out.append(Finding(
                "mapping", f"oversubscribed: {threads} threads on {cores} cores of {host}",
                facts + ["each core is shared, so every rank waits for the others' time slices"],
                {family: "run at most one thread per core: fewer ranks or OMP_NUM_THREADS, or more "
                         "nodes; " + _change(family, launcher)},
                data={"host": host, "threads": threads, "cores": cores}))
            continue
        unbound = [r.rank for r in ranks if len(ranks) > 1 and len(r.affinity) >= cores]
        overlap = sorted({(a.rank, b.rank) for a, b in combinations(ranks, 2)
                          if a.rank not in unbound and b.rank not in unbound
                          and set(a.affinity) & set(b.affinity)})
        starved = [r.rank for r in ranks if _threads(r) > len(r.affinity)]
        if unbound or overlap or starved:
            what, brief = [], []
            brief += [f"ranks {_list(unbound)} not bound"] if unbound else []
            brief += ["bindings overlap"] if overlap else []
            brief += [f"ranks {_list(starved)} short of cores"] if starved else []
            if unbound:
                what.append(f"ranks {_list(unbound)} are not bound (they may migrate between cores)")
            if overlap:
                what.append("bindings overlap: " + ", ".join(f"{a}&{b}" for a, b in overlap[:6]))
            if starved:
                what.append(f"ranks {_list(starved)} run more threads than the cores they are bound to")
            out.append(Finding("mapping", f"placement on {host}: " + "; ".join(what), facts,
                               {family: _change(family, launcher)},
                               data={"host": host, "unbound": unbound, "overlap": overlap,
                                     "starved": starved},
                               brief=f"placement on {host}: {'; '.join(brief)}: bind each rank to its cores"))
    return out


def _list(ranks: list[int]) -> str:
    return ",".join(map(str, ranks[:8])) + ("..." if len(ranks) > 8 else "")


def _cpus(cpus: tuple[int, ...]) -> str:
    return ",".join(map(str, cpus)) if len(cpus) <= 8 else f"{len(cpus)} cpus"
