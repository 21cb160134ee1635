"""Every launch confirms its ranks: the world it got is the world that was asked for.

A launcher without the library's process manager (srun with the wrong or no PMI plugin,
another library's mpiexec) starts N programs of one rank each and exits 0; measured, that is
not a collective (allreduce 8 B at 50 ns "on 2 processes"). The driver is told the size it
must find (`--expect-procs`) and refuses to measure otherwise, printing
`colltune-bench: world size S, expected N (host H[, launcher VAR=V])` on stderr; its launch
record also carries MPI_Comm_size and the host of every rank. `refusal` turns either into
the message the user gets, naming the likely cause and the fix; `layout` is the node layout
a launch really got, which must stay the same for all launches of one process count (the
launch is the statistical unit: launches on different layouts are not repetitions).
"""

from __future__ import annotations

import os
import re
from collections import Counter

import pandas as pd

from colltune.measure.protocol import DriverOutput
from colltune.mpi import launch
from colltune.mpi import libraries as mpi

_WORLD = re.compile(r"colltune-bench: world size (\d+), expected (\d+) \(([^)]*)\)")

Layout = tuple[tuple[str, int], ...]  # (host, ranks on it), hosts sorted


def layout(out: DriverOutput) -> Layout:
    return tuple(sorted(Counter(str(h) for h in out.launch.get("hosts", [])).items()))


def describe_layout(lay: Layout) -> str:
    return ", ".join(f"{n} on {h}" for h, n in lay) or "no hosts reported"


def describe_nodes(hostnames: str, ranks_per_node: str) -> str:
    """A launch's layout for people, from its environment facts `hostnames` and
    `ranks_per_node` (comma lists, hosts sorted): "2 nodes x 2 ranks (n1, n2)", or with unequal
    nodes "2 nodes, 3+1 ranks (n1, n2)"."""
    hosts = [h for h in hostnames.split(",") if h]
    counts = [c for c in ranks_per_node.split(",") if c]
    if not hosts or len(hosts) != len(counts):
        return "layout not recorded"
    nodes = f"{len(hosts)} node{'s' if len(hosts) > 1 else ''}"
    ranks = (f" x {counts[0]} rank{'s' if counts[0] != '1' else ''}" if len(set(counts)) == 1
             else ", " + "+".join(counts) + " ranks")
    return f"{nodes}{ranks} ({', '.join(hosts)})"


def run_layouts(environment: pd.DataFrame, launches: pd.DataFrame) -> dict[int, list[str]]:
    """Process count -> the layouts its launches ran on (described, in launch order): one
    layout each unless the run predates the per-process-count check of `refusal`."""
    if environment.empty or launches.empty:
        return {}
    facts = environment[environment["key"].isin(["hostnames", "ranks_per_node"])]
    wide = facts.pivot_table(index="launch_idx", columns="key", values="value", aggfunc="first")
    out: dict[int, list[str]] = {}
    for idx, nprocs in launches.sort_values("launch_idx")[["launch_idx", "nprocs"]].itertuples(index=False):
        if idx not in wide.index:
            continue
        row = wide.loc[idx]
        said = describe_nodes(str(row.get("hostnames", "") or ""), str(row.get("ranks_per_node", "") or ""))
        seen = out.setdefault(int(nprocs), [])
        if said not in seen:
            seen.append(said)
    return out


def world_size(out: DriverOutput, stderr: str) -> tuple[int | None, str]:
    """MPI_Comm_size the ranks saw (from the refusal line, else the launch record) and what the
    driver said about the launcher."""
    hit = _WORLD.search(stderr)
    if hit:
        return int(hit.group(1)), hit.group(3)
    size = out.launch.get("nprocs")
    return (int(size) if size is not None else None), ""


def _cause(lib: mpi.MpiLibrary, nprocs: int, size: int) -> str:
    if launch.use_srun():
        chosen = os.environ.get("SLURM_MPI_TYPE") or next(
            (f for f in os.environ.get("COLLTUNE_MPIEXEC_FLAGS", "").split() if f.startswith("--mpi")), "")
        plugin = launch.srun_plugin(lib)
        if size == 1:
            return (f"srun started {nprocs} separate programs of one rank each: its PMI plugin "
                    + (f"({chosen}) " if chosen else "")
                    + f"does not match {lib.name}, which needs `srun --mpi={plugin}` (colltune passes it "
                    f"unless COLLTUNE_MPIEXEC_FLAGS or SLURM_MPI_TYPE choose another; `srun --mpi=list` "
                    f"shows the plugins this Slurm has)")
        return (f"srun gave {size} tasks: an srun option in COLLTUNE_MPIEXEC_FLAGS or SLURM_* settings "
                f"(--ntasks-per-node, --distribution) overrides -n {nprocs}; drop it")
    if size == 1:
        return (f"{lib.mpiexec} started {nprocs} separate programs of one rank each: it is not the "
                f"launcher of {lib.name}, the library colltune-bench was built with (another MPI's mpiexec "
                f"first in PATH, or a wrapper); use {lib.name}'s own mpiexec or pick the library with --mpi")
    return (f"the launcher gave {size} processes for -n {nprocs}: a host file or an option in "
            f"COLLTUNE_MPIEXEC_FLAGS overrides -n; drop it")


def refusal(lib: mpi.MpiLibrary, nprocs: int, out: DriverOutput, stderr: str,
            expected_layout: Layout | None) -> str | None:
    """Why this launch must not be stored, or None when it ran on the ranks asked for."""
    size, said = world_size(out, stderr)
    if size is not None and size != nprocs:
        return (f"the ranks ran as MPI_COMM_WORLD of size {size}, not one job of {nprocs}"
                + (f" ({said})" if said else "") + f": {_cause(lib, nprocs, size)}")
    if size is None:
        return None  # no launch record: an ordinary failure, told by the exit code and stderr
    hosts = out.launch.get("hosts", [])
    if len(hosts) != nprocs:
        return (f"the driver reported {len(hosts)} hosts for {nprocs} ranks: the output of two launches "
                "was mixed (a launcher started the driver more than once?)")
    got = layout(out)
    if expected_layout is not None and got != expected_layout:
        return (f"this launch ran on {describe_layout(got)}, the run's earlier launches of {nprocs} processes "
                f"on {describe_layout(expected_layout)}: the allocation or host file changed between launches; "
                "launches on different node layouts are not repetitions of one measurement. Resume inside the "
                "same allocation, or start a new run")
    return None


# ---- layouts of profiles (provenance `layout NPROCS:NODESxPPN ...`, docs/profile.md) -------------

Shape = tuple[int, int]  # (nodes, ppn): ppn is the most ranks on one node, as in docs/select.md


def run_shapes(environment: pd.DataFrame, launches: pd.DataFrame) -> dict[int, list[Shape]]:
    """Process count -> the (nodes, ppn) its launches ran on, in launch order."""
    out: dict[int, list[Shape]] = {}
    if environment.empty or launches.empty:
        return out
    facts = environment[environment["key"] == "ranks_per_node"].set_index("launch_idx")["value"]
    for idx, nprocs in launches.sort_values("launch_idx")[["launch_idx", "nprocs"]].itertuples(index=False):
        counts = [int(c) for c in str(facts.get(idx, "")).split(",") if c.strip().isdigit()]
        if counts:
            shape = (len(counts), max(counts))
            seen = out.setdefault(int(nprocs), [])
            if shape not in seen:
                seen.append(shape)
    return out


def format_layouts(shapes: dict[int, list[Shape]]) -> str:
    """`4:2x2 8:1x8`; a process count measured on several layouts lists each."""
    return " ".join(f"{n}:{nodes}x{ppn}" for n in sorted(shapes) for nodes, ppn in shapes[n])


_LAYOUT = re.compile(r"(\d+):(\d+)x(\d+)")


def parse_layouts(text: str) -> dict[int, list[Shape]]:
    out: dict[int, list[Shape]] = {}
    for word in text.split():
        hit = _LAYOUT.fullmatch(word)
        if hit is None:
            raise ValueError(f"layout {word!r} is not NPROCS:NODESxPPN (like 4:2x2)")
        out.setdefault(int(hit.group(1)), []).append((int(hit.group(2)), int(hit.group(3))))
    return out


def describe_shape(shape: Shape) -> str:
    nodes, ppn = shape
    return f"{nodes} node{'s' if nodes > 1 else ''} x {ppn}"


def profile_layout_warning(name: str, layout_text: str | None, planned: tuple[int, Shape] | None) -> str | None:
    """Why a profile may not fit a launch: it was measured on another node layout for the
    launch's process count. None when it fits, or when either side is not known (a profile
    without `layout`, a launch line whose layout colltune cannot read)."""
    if not layout_text or planned is None:
        return None
    try:
        measured = parse_layouts(layout_text)
    except ValueError as exc:
        return f"{name}: {exc}; its layout cannot be compared with this launch's"
    nprocs, shape = planned
    if nprocs not in measured or shape in measured[nprocs]:
        return None
    was = " and ".join(describe_shape(s) for s in measured[nprocs])
    nodes, ppn = shape
    return (f"{name} was measured on {was} for {nprocs} processes; this launch runs {describe_shape(shape)}. "
            "Which variant is fastest changes with the node layout (docs/cluster.md), so its rules may not "
            f"hold here: measure with `colltune check -n {nprocs}` inside `salloc -N {nodes} "
            f"--ntasks-per-node {ppn}` and tune again")
