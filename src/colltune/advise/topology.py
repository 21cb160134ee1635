"""Environment facts from the node's topology (NUMA nodes, device locality, isolated cores, as
libcolltune's profiling mode read them from /sys, native/runtime/topo.c) and the mapping findings
they support: ranks packed on some NUMA nodes while others idle, uneven spread, ranks bound
across NUMA nodes. Rank 0's placement is reported as a fact: its NUMA node, the devices local to
it, and whether it shares its cores with OS work, which is knowable only where the node keeps
some cores isolated (isolcpus / nohz_full); otherwise "unknown".

The 1-minute load average at MPI_Finalize says whether other work competed for the cores: then
predicted collective savings carry a warning (measured: benchmarks/advise/README.md).

Where /sys said nothing (no NUMA lines) or a rank is unbound, the NUMA facts are "unknown" and no
NUMA finding is made: a guess would be advice without evidence.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from colltune.advise.findings import Finding
from colltune.advise.profile_run import ProfileRun, RankProfile

SPREAD = {
    "openmpi": "mpiexec --map-by numa --bind-to core ...",
    "mpich": "mpiexec -map-by numa -bind-to core ...",
    "intel": "export I_MPI_PIN_ORDER=scatter I_MPI_PIN_DOMAIN=core",
}
BIND_NUMA = {
    "openmpi": "mpiexec --bind-to numa ... (or --bind-to core)",
    "mpich": "mpiexec -bind-to numa ... (or -bind-to core)",
    "intel": "export I_MPI_PIN_DOMAIN=numa",
}
# Under srun Slurm places and binds the ranks, whatever the library (advise/mapping.py): its
# sockets stand for the NUMA nodes (one per socket on most nodes; sub-NUMA clustering aside).
SRUN = {"spread": "srun --distribution=block:cyclic --cpu-bind=cores ...",
        "bind_numa": "srun --cpu-bind=ldoms ... (or --cpu-bind=cores)"}


def _change(kind: str, family: str, launcher: str) -> str:
    if launcher == "srun":
        return SRUN[kind]
    return (SPREAD if kind == "spread" else BIND_NUMA)[family]


def nodes_of(rank: RankProfile) -> tuple[int, ...]:
    """The NUMA nodes the rank's CPU binding touches (empty when unknown)."""
    cpus = set(rank.affinity)
    return tuple(sorted(n for n, node_cpus in rank.numa.items() if cpus & set(node_cpus)))


def _bound(rank: RankProfile) -> bool:
    return 0 < len(rank.affinity) < rank.cores_online


def host_facts(ranks: list[RankProfile]) -> dict[str, Any]:
    """What the topology says about one host's ranks; None for what is unknown."""
    first = ranks[0]
    numa = first.numa
    known = bool(numa) and all(_bound(r) and len(nodes_of(r)) == 1 for r in ranks)
    per_node = Counter(nodes_of(r)[0] for r in ranks) if known else None
    return {
        "host": first.host,
        "numa_nodes": {str(n): cpulist_text(c) for n, c in sorted(numa.items())} if numa else None,
        "ranks_per_numa": ({str(n): per_node.get(n, 0) for n in sorted(numa)} if per_node is not None
                           else None),
        "spanning": [r.rank for r in ranks if numa and _bound(r) and len(nodes_of(r)) > 1],
        "devices": {name: (node if node >= 0 else None) for name, node in sorted(first.devices.items())},
        "isolated": cpulist_text(first.isolated) if first.isolated is not None else None,
        "cores": first.cores_online,
        "loadavg": first.loadavg,
        # Runnable work beyond the application's own ranks x threads, and more of it than cores:
        # other users' processes take time slices from the ranks, inside collectives too.
        "busy": (first.loadavg is not None and first.loadavg > first.cores_online + 0.5
                 and first.loadavg - sum(r.omp_num_threads or 1 for r in ranks) >= 1),
    }


def rank0(run: ProfileRun) -> dict[str, Any]:
    """Rank 0's placement: NUMA node(s), local devices, OS noise on its cores (or unknown)."""
    r = next(x for x in run.ranks if x.rank == 0)
    nodes = nodes_of(r) if r.numa and _bound(r) else ()
    local = sorted(d for d, n in r.devices.items() if n >= 0 and n in nodes)
    quiet = set(r.isolated or ()) | set(r.nohz_full or ())
    if r.isolated is None and r.nohz_full is None:
        noise = "unknown (the kernel does not say which cores are kept free of OS work)"
    elif not quiet:
        noise = "unknown (no core is isolated: every core takes OS work)"
    elif not _bound(r):
        noise = "yes: rank 0 is not bound, it may run on the cores doing OS work"
    elif set(r.affinity) <= quiet:
        noise = "no: rank 0 is bound to isolated cores"
    else:
        noise = (f"yes: rank 0's cores {cpulist_text(tuple(sorted(set(r.affinity) - quiet)))} do OS work "
                 f"(isolated: {cpulist_text(tuple(sorted(quiet)))})")
    return {"host": r.host, "cpus": cpulist_text(r.affinity) if _bound(r) else "unbound",
            "numa": list(nodes) if nodes else None, "local_devices": local, "os_noise": noise}


def facts(run: ProfileRun) -> dict[str, Any]:
    by_host: dict[str, list[RankProfile]] = defaultdict(list)
    for r in run.ranks:
        by_host[r.host].append(r)
    return {"hosts": [host_facts(rs) for _, rs in sorted(by_host.items())], "rank0": rank0(run)}


def describe(env: dict[str, Any]) -> list[str]:
    """One line per host and one for rank 0, for the terminal and the findings' evidence."""
    out = []
    for h in env["hosts"]:
        numa = (f"{len(h['numa_nodes'])} NUMA node(s) ({'; '.join(f'{n}: cpus {c}' for n, c in h['numa_nodes'].items())})"
                if h["numa_nodes"] else "NUMA unknown")
        spread = (", ranks per NUMA node " + ", ".join(f"{n}: {k}" for n, k in h["ranks_per_numa"].items())
                  if h["ranks_per_numa"] else ", ranks per NUMA node unknown (unbound or spanning ranks)")
        devices = ", ".join(f"{d} on node {n if n is not None else '?'}" for d, n in h["devices"].items())
        load = (f"; load average {h['loadavg']:.1f} on {h['cores']} cores"
                + (": busy with other work" if h["busy"] else "") if h["loadavg"] is not None else "")
        out.append(f"host {h['host']}: {numa}{spread}" + (f"; devices: {devices}" if devices else "") + load)
    r0 = env["rank0"]
    out.append(f"rank 0 on {r0['host']}: cpus {r0['cpus']}, NUMA "
               f"{','.join(map(str, r0['numa'])) if r0['numa'] else 'unknown'}"
               + (f", local devices {', '.join(r0['local_devices'])}" if r0["local_devices"] else "")
               + f"; OS noise on its cores: {r0['os_noise']}")
    return out


def _fit_parts(head: str, parts: list[str], width: int) -> str:
    """`head` and as many of `parts` (most important first) as fit in `width` columns, "; "
    between them: a part that does not fit is left out whole, never cut (advise.json has all)."""
    out = head
    for part in parts:
        if part and len(out) + 2 + len(part) <= width:
            out += (" " if out.endswith(":") else "; ") + part
    return out


def _noise_point(noise: str) -> str:
    """The OS-noise fact in a few words: `unknown (no core is isolated: ...)` -> its reason's
    first words."""
    verdict, _, why = noise.partition(" (")
    if verdict == "unknown":
        return "OS noise unknown (" + ("no isolated core)" if "no core is isolated" in why
                                       else "the kernel names no isolated core)")
    return "no OS noise (isolated cores)" if noise.startswith("no") else "its cores take OS work"


def screen_lines(env: dict[str, Any], width: int = 80) -> list[str]:
    """describe()'s facts for the terminal, each line at most `width` columns: per host whether
    it was busy (the point: savings are uncertain), its cores, NUMA nodes and ranks per node;
    rank 0's binding, NUMA node and OS noise. Parts that do not fit are left out, never cut."""
    out = []
    for h in env["hosts"]:
        load = (f"busy with other work (load {h['loadavg']:.1f} on {h['cores']} cores)" if h["busy"] else
                f"load {h['loadavg']:.1f} on {h['cores']} cores" if h["loadavg"] is not None else
                f"{h['cores']} cores")
        nodes = h["numa_nodes"]
        numa = (f"{len(nodes)} NUMA node{'s' if len(nodes) != 1 else ''}" + (f" (cpus {next(iter(nodes.values()))})"
                                                                          if len(nodes) == 1 else "")
                if nodes else "NUMA unknown")
        spread = ("ranks per NUMA node " + ", ".join(f"{n}: {k}" for n, k in h["ranks_per_numa"].items())
                  if h["ranks_per_numa"] else "")
        devices = ", ".join(f"{d} on node {n if n is not None else '?'}" for d, n in h["devices"].items())
        out.append(_fit_parts(f"host {h['host']}:", [load, numa, spread, devices and f"devices: {devices}"], width))
    r0 = env["rank0"]
    numa = f"NUMA {','.join(map(str, r0['numa']))}" if r0["numa"] else "NUMA unknown"
    cpus = "not bound" if r0["cpus"] == "unbound" else f"cpus {r0['cpus']}"
    local = f"local devices {', '.join(r0['local_devices'])}" if r0["local_devices"] else ""
    out.append(_fit_parts(f"rank 0 on {r0['host']}:", [f"{cpus}, {numa}", _noise_point(r0["os_noise"]), local],
                          width))
    return out


def busy_warning(env: dict[str, Any]) -> str:
    """The caveat for predicted savings when a host was busy with other work ("" if none was)."""
    busy = [h for h in env["hosts"] if h["busy"]]
    if not busy:
        return ""
    h = busy[0]
    return (f"{h['host']} was busy with other work (load average {h['loadavg']:.1f} on {h['cores']} "
            "cores): ranks are descheduled inside collectives, the in-situ cost is dominated by that "
            "and the database's medians do not predict it (benchmarks/advise/README.md); verify on "
            "an idle node")


def findings(run: ProfileRun, family: str, launcher: str = "mpiexec") -> list[Finding]:
    env = facts(run)
    evidence = describe(env)
    out = []
    for h in env["hosts"]:
        counts = h["ranks_per_numa"]
        if h["spanning"]:
            out.append(Finding(
                "mapping", f"ranks {_list(h['spanning'])} on {h['host']} are bound across NUMA nodes",
                evidence + ["a rank's memory is placed on one node at first touch: its threads or "
                            "migrations on the other node access it remotely"],
                {family: _change("bind_numa", family, launcher)}, data={"host": h["host"], "spanning": h["spanning"]}))
        if counts is None or len(counts) < 2:
            continue
        used = [n for n, k in counts.items() if k]
        if len(used) < len(counts):
            out.append(Finding(
                "mapping", f"ranks packed on NUMA node(s) {','.join(used)} of {h['host']}, "
                           f"{len(counts) - len(used)} node(s) idle",
                evidence + ["the idle nodes' memory bandwidth and caches go unused"],
                {family: _change("spread", family, launcher)},
                warning="a code bound by communication between neighbours may prefer them packed "
                        "(shared caches): compare with --verify",
                data={"host": h["host"], "ranks_per_numa": counts, "kind": "packed"}))
        elif max(counts.values()) - min(counts.values()) > 1:
            out.append(Finding(
                "mapping", f"ranks spread unevenly over the NUMA nodes of {h['host']}: "
                           + ", ".join(f"node {n}: {k}" for n, k in counts.items()),
                evidence + ["the fuller node's ranks share its memory bandwidth among more ranks"],
                {family: _change("spread", family, launcher)},
                data={"host": h["host"], "ranks_per_numa": counts, "kind": "uneven"}))
    return out


def _list(ranks: list[int]) -> str:
    return ",".join(map(str, ranks[:8])) + ("..." if len(ranks) > 8 else "")


def cpulist_text(cpus: tuple[int, ...]) -> str:
    """A cpulist: 0-3,8."""
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out) or "-"
