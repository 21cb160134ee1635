"""Finding 2: predominant point-to-point sizes vs the library's eager threshold (read via MPI_T).

As in MPI Advisor (section 4.1): per send call site the median message size, the largest of those
medians compared with the threshold of the transport in use; advice to raise it above that size,
with the memory warning. Only raising is advised: lowering sends more messages by rendezvous.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from colltune.advise import callsites
from colltune.advise.findings import Finding
from colltune.advise.profile_run import ProfileRun
from colltune.units import human_bytes

SENDS = ("Send", "Isend", "Sendrecv")   # Ssend is synchronous whatever the threshold
INTEL_DEFAULT = 262144                  # I_MPI_EAGER_THRESHOLD's documented default (MPI Advisor)


@dataclass(frozen=True)
class Threshold:
    variable: str       # the library's name of the setting
    bytes: int
    how: str            # the exact change, with {value}
    cap: int | None = None   # largest useful value (Open MPI sm: btl_sm_max_send_size)


def threshold(run: ProfileRun, family: str) -> Threshold | None:
    """The eager threshold of the transport the ranks use to reach each other."""
    cvars = run.ranks[0].cvars
    one_node = len({r.host for r in run.ranks}) == 1
    if family == "openmpi":
        names = ["btl_sm_eager_limit", "btl_vader_eager_limit"] if one_node else ["btl_tcp_eager_limit"]
        for n in names:
            if n in cvars and cvars[n].lstrip("-").isdigit():
                # Shared memory: above the fragment size, rendezvous is a single copy (CMA/XPMEM)
                # and eager would copy twice through fragments (measured: HPCC 2x slower with
                # 1 MiB, benchmarks/advise/README.md); never advise beyond it.
                cap_name = n.replace("eager_limit", "max_send_size")
                cap = int(cvars[cap_name]) if one_node and cvars.get(cap_name, "").isdigit() else None
                return Threshold(n, int(cvars[n]), f"mpiexec --mca {n} {{value}} ... "
                                 f"(or export OMPI_MCA_{n}={{value}})", cap)
        return None
    if family == "intel":
        return Threshold("I_MPI_EAGER_THRESHOLD", INTEL_DEFAULT, "export I_MPI_EAGER_THRESHOLD={value}")
    local = ("POSIX", "SHM") if one_node else ("OFI", "UCX", "NETMOD")
    for n, v in sorted(cvars.items()):
        if "EAGER" in n.upper() and any(k in n.upper() for k in local) and v.isdigit():
            return Threshold(n, int(v), f"export {n}={{value}}")
    return None


def site_medians(run: ProfileRun) -> dict[str, int]:
    """Median message size of every send call site (all ranks), weighted by calls."""
    sizes: dict[str, list[tuple[int, int]]] = {}
    for rank in run.ranks:
        sends = [p for p in rank.points if p.kind == "p2p" and p.name in SENDS and p.calls]
        labels = callsites.of(run, rank)
        for p in sends:
            key = f"MPI_{p.name} at {labels[p.site].label}"
            sizes.setdefault(key, []).append((p.bytes // p.calls, p.calls))
    out = {}
    for site, pairs in sizes.items():
        values = np.repeat([s for s, _ in pairs], [c for _, c in pairs])
        out[site] = int(np.median(values))
    return out


def recommended(size: int) -> int:
    """A power of two above `size` plus the protocol header the limit includes (ob1: the
    fragment, header included, must fit)."""
    return 1 << (size + 256 - 1).bit_length()


def findings(run: ProfileRun, family: str) -> list[Finding]:
    medians = site_medians(run)
    if not medians:
        return []
    th = threshold(run, family)
    top_site, top = max(medians.items(), key=lambda kv: kv[1])
    if th is None or top <= th.bytes:
        return []
    value = recommended(top)
    if th.cap is not None and value > th.cap:
        return []   # large messages: the library's single-copy rendezvous is the better protocol
    n_sites = sum(1 for v in medians.values() if v > th.bytes)
    return [Finding(
        "eager",
        f"point-to-point messages of {human_bytes(top)} go by rendezvous: raise {th.variable} "
        f"from {th.bytes} to {value}",
        [f"largest median message size per send site: {top} bytes ({top_site})",
         f"{n_sites} of {len(medians)} send sites have a median above the threshold",
         f"{th.variable} = {th.bytes} bytes (MPI_T)"],
        {family: th.how.format(value=value)}, None,
        "raising the eager threshold makes the library buffer unexpected messages up to that "
        "size per peer: its memory footprint grows",
        data={"variable": th.variable, "threshold": th.bytes, "recommended": value,
              "max_median": top, "site": top_site})]
