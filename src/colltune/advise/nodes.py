"""A run across several nodes (docs/cluster.md, "advise on two nodes"): the facts a multi-node run
adds to the advice. Facts, not changes: what to change follows from them in the other findings
(the eager finding already compares sizes with the inter-node threshold on several hosts).

- **Layout**: the hosts, which ranks each holds (block, round-robin or other), nodes x ppn or an
  uneven spread.
- **Eager thresholds of both transports**: a rank reaches the ranks of its own node through
  shared memory and the others through the network, each with its own eager limit (Open MPI
  `btl_sm_eager_limit` and `btl_tcp_eager_limit`; MPICH its POSIX shared memory and its netmod's,
  OFI or UCX), as MPI_T reported them in the run; and the send sites whose median size goes
  eagerly over one and by rendezvous over the other.
- **Time on one node and across nodes**: the profiling run records each collective's
  communicator size, not its nodes. A communicator of more processes than any host holds spans
  nodes; one of one process, or any in a run on one host, stays on a node; the rest could be
  either and are reported as such, not guessed. Point-to-point time is given per host only: the
  peers of point-to-point calls are not recorded.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from colltune.advise import eager
from colltune.advise.where import fmt_s
from colltune.advise.findings import Finding
from colltune.advise.profile_run import ProfileRun
from colltune.units import human_bytes

CLASSES = ("across", "on_node", "either")
# MPICH's eager variables per transport (the names eager.threshold looks for). MPICH 5.0.2 here
# reports MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD = -1 (unset: the OFI provider's limit applies) and
# MPIR_CVAR_CH4_SHM_POSIX_EAGER (a module name, no size): no byte value, so they are shown as is.
MPICH_KEYS = {"on_node": ("POSIX", "SHM"), "across": ("OFI", "UCX", "NETMOD")}


def hosts(run: ProfileRun) -> dict[str, list[int]]:
    """Host -> its ranks (sorted), hosts in the order of their lowest rank."""
    by_host: dict[str, list[int]] = defaultdict(list)
    for r in sorted(run.ranks, key=lambda r: r.rank):
        by_host[r.host].append(r.rank)
    return dict(by_host)


def mapping_kind(by_host: dict[str, list[int]]) -> str:
    """`block` (consecutive ranks per host), `round-robin` (rank r on host r mod n) or `other`."""
    groups = list(by_host.values())
    if all(g == list(range(g[0], g[0] + len(g))) for g in groups):
        return "block"
    n = len(groups)
    if all(r % n == i for i, g in enumerate(groups) for r in g):
        return "round-robin"
    return "other"


def layout(run: ProfileRun) -> dict[str, Any]:
    by_host = hosts(run)
    counts = [len(v) for v in by_host.values()]
    uniform = len(set(counts)) == 1
    return {"hosts": by_host, "nodes": len(by_host), "ppn": counts, "uniform": uniform,
            "mapping": mapping_kind(by_host),
            "text": (f"{len(by_host)} nodes x {counts[0]}" if uniform
                     else f"{len(by_host)} nodes, uneven: {'+'.join(map(str, counts))} ranks")}


def thresholds(run: ProfileRun, family: str) -> dict[str, eager.Threshold | None]:
    """The eager threshold on a node and across nodes, as eager.threshold reads each: a view of
    the run with its first rank alone is a one-host run (the shared-memory transport's)."""
    one_host = ProfileRun(run.directory, run.ranks[:1], run.layers)
    return {"on_node": eager.threshold(one_host, family), "across": eager.threshold(run, family)}


def raw_limits(run: ProfileRun, family: str) -> dict[str, dict[str, str]]:
    """MPICH's eager variables of each transport as MPI_T gave them, byte values or not."""
    cvars = run.ranks[0].cvars if family == "mpich" else {}
    if any("CH4" in n for n in cvars):   # a ch4 build still lists ch3's (nemesis) variables
        cvars = {n: v for n, v in cvars.items() if "NEMESIS" not in n and "CH3" not in n}
    return {where: {n: v for n, v in sorted(cvars.items())
                    if "EAGER" in n.upper() and any(k in n.upper() for k in keys)}
            for where, keys in MPICH_KEYS.items()}


def protocol_splits(run: ProfileRun, limits: dict[str, eager.Threshold | None]) -> list[str]:
    """Send sites whose median size is sent eagerly by one transport and by rendezvous by the other."""
    on, across = limits["on_node"], limits["across"]
    if on is None or across is None or on.bytes == across.bytes:
        return []
    out = []
    for site, size in sorted(eager.site_medians(run).items()):
        if (size <= on.bytes) != (size <= across.bytes):
            eager_on = "eagerly on a node" if size <= on.bytes else "by rendezvous on a node"
            eager_x = "eagerly across nodes" if size <= across.bytes else "by rendezvous across nodes"
            out.append(f"{site}: median {human_bytes(size)} goes {eager_on}, {eager_x}")
    return out


def where_class(nprocs: int, max_ppn: int, one_host: bool) -> str:
    if one_host or nprocs <= 1:
        return "on_node"
    return "across" if nprocs > max_ppn else "either"


def time_split(run: ProfileRun) -> dict[str, Any]:
    """Seconds per rank (mean over ranks) in collectives by where their communicators lie, and
    each host's mean point-to-point seconds per rank."""
    by_host = hosts(run)
    max_ppn = max(len(v) for v in by_host.values())
    coll = dict.fromkeys(CLASSES, 0.0)
    p2p_host = dict.fromkeys(by_host, 0.0)
    for r in run.ranks:
        for p in r.points:
            if p.kind == "coll":
                coll[where_class(p.nprocs, max_ppn, len(by_host) == 1)] += p.total_ns / 1e9 / len(run.ranks)
            else:
                p2p_host[r.host] += p.total_ns / 1e9 / len(by_host[r.host])
    return {"collective_s": coll, "p2p_s_per_host": dict(p2p_host)}


def facts(run: ProfileRun, family: str) -> dict[str, Any]:
    limits = thresholds(run, family)
    return {"layout": layout(run), "time": time_split(run),
            "eager": {k: (None if t is None else {"variable": t.variable, "bytes": t.bytes})
                      for k, t in limits.items()},
            "eager_variables": raw_limits(run, family),
            "protocol_splits": protocol_splits(run, limits)}


def _limit(t: eager.Threshold | None, raw: dict[str, str]) -> str:
    if t is not None:
        return f"{t.variable} = {t.bytes} bytes"
    if raw:
        return (", ".join(f"{n} = {v}" for n, v in raw.items())
                + " (no byte value: the transport's own default applies, which MPI_T does not report)")
    return "not reported by MPI_T"


def findings(run: ProfileRun, family: str) -> list[Finding]:
    """One fact finding for a run on several hosts; none on one host."""
    if len({r.host for r in run.ranks}) < 2:
        return []
    f = facts(run, family)
    lay, split, wall = f["layout"], f["time"], run.wall_ns / 1e9
    coll = split["collective_s"]

    def pct(s: float) -> str:
        return f"{100 * s / wall:.1f}%" if wall else "-"

    limits = thresholds(run, family)
    evidence = [
        "ranks per host (" + lay["mapping"] + "): "
        + "; ".join(f"{h}: {_ranks(rs)}" for h, rs in lay["hosts"].items()),
        f"eager threshold on a node: {_limit(limits['on_node'], f['eager_variables']['on_node'])}; "
        f"across nodes: {_limit(limits['across'], f['eager_variables']['across'])}",
        *f["protocol_splits"],
        f"collectives, mean per rank: {fmt_s(coll['across'])} ({pct(coll['across'])}) on communicators "
        f"spanning nodes (more processes than a host holds), {fmt_s(coll['on_node'])} ({pct(coll['on_node'])}) "
        f"on one node, {fmt_s(coll['either'])} ({pct(coll['either'])}) on communicators that may be either "
        "(the profile records a communicator's size, not its nodes)",
        "point-to-point, mean per rank of each host: "
        + "; ".join(f"{h} {fmt_s(s)}" for h, s in split["p2p_s_per_host"].items())
        + " (peers are not recorded: not split into on-node and across)",
    ]
    title = (f"{lay['text']}: collectives {pct(coll['across'])} of the run across nodes, "
             f"{pct(coll['on_node'])} on one node, {pct(coll['either'])} either")
    return [Finding("nodes", title, evidence, {}, None, data=f)]


def _ranks(ranks: list[int]) -> str:
    if ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"ranks {ranks[0]}-{ranks[-1]}"
    return "ranks " + ",".join(map(str, ranks[:16])) + ("..." if len(ranks) > 16 else "")
