"""Call sites in the application's own code: each recorded call chain (native/runtime/profchain.c:
the return address into the caller of MPI_* and up to 7 frames above it) cut where the
application's code starts.

A frame is skipped (it is not the application's) when it is
- in the MPI library or a language binding of it (libmpi*, mpi4py's MPI module, libcolltune);
- in a known communication layer (LAYER_LIBRARIES: OpenFOAM's libPstream, PETSc, Boost.MPI,
  hypre, Trilinos' Teuchos), or in a layer the user names (`--layer libPstream.so`,
  `--layer 'MPIU_*'`: a glob matched against the frame's binary name and its function);
- a layer by the data: a function through which at least LAYER_CALLERS distinct functions
  reach MPI (on any rank) is a wrapper, not the place to change (a `reduce()` template, a
  `comm.sum()` helper). Functions by their short name: a template's instances and its copies
  inlined into several callers are one function. Distinct functions, not call lines: a function
  that calls its own helper from two lines is still one caller.
The first frame left is the site (`Foam::PCG::solve (PCG.C:142)`), shown with the frames below it
(`<- Foam::gSum <- Foam::reduce`): the application line, then the path it takes to MPI.

Frames of the Python interpreter are not the application's line: the C chain of an mpi4py call
ends in the interpreter's evaluation loop, and the Python file and line are not recorded (reading
the interpreter's frame would take the GIL inside the MPI call). Such a site says so.

Names: C++ demangled with template arguments and parameter lists dropped (`Foam::reduce`), gfortran
module procedures as `module::procedure`; without debug info `function (library+0xoffset)`,
without symbols `library+0xoffset`.
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from colltune.advise import symbols
from colltune.advise.profile_run import ProfileRun, RankProfile

# Binaries of MPI itself and of its bindings: never the application.
MPI_LIBRARIES = ("libmpi*", "libmpich*", "libmpi_*", "libopen-pal*", "libopen-rte*", "libpmix*",
                 "libprrte*", "libfabric*", "libucp*", "libucs*", "libcolltune*", "MPI.*.so",
                 "MPI.cpython*", "libboost_mpi_python*")
# Communication layers of well-known codes: their frames are wrappers, the caller is the site.
LAYER_LIBRARIES = ("libPstream*", "libpetsc*", "libboost_mpi*", "libHYPRE*", "libteuchos*",
                   "libtrilinos_teuchos*")
# The Python interpreter: its frames are the evaluation loop, not a Python line.
PYTHON = ("libpython*", "python3*", "python")
LAYER_CALLERS = 2
PYTHON_NOTE = "Python code (the Python file and line are not recorded)"
ANON = "(anonymous namespace)"


@dataclass(frozen=True)
class CallSite:
    """One recorded chain, cut where the application's code starts."""

    label: str                  # the site with the layers below it, as tables show it
    line: str                   # the application's frame: `function (file:line)`
    below: tuple[str, ...]      # the layer frames from it down to MPI (short names)
    frames: tuple[str, ...]     # every recorded frame, from MPI's caller up (labels)
    note: str = ""              # why the line is not the application's (Python, chain too short)


def short_function(name: str) -> str:
    """`Foam::reduce<double, Foam::sumOp<double> >(double&, ...) const` -> `Foam::reduce`;
    `__solver_MOD_step` -> `solver::step`; C names unchanged."""
    name = name.split(" [clone")[0]
    if m := re.fullmatch(r"__(\w+?)_MOD_(\w+)", name):
        return f"{m[1]}::{m[2]}"
    out, depth, i = [], 0, 0
    while i < len(name):
        c = name[i]
        if name.startswith("operator", i):   # operator<, operator(), operator<<: keep as written
            m = re.match(r"operator\s*(\(\)|<<=?|>>=?|<=>|<=|>=|->\*?|\[\]|[^\s(]+)?", name[i:])
            assert m is not None
            if depth == 0:
                out.append(m[0])
            i += len(m[0])
            continue
        if c == "<":
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif c == "(" and depth == 0:
            if name.startswith(ANON, i):
                out.append(ANON)
                i += len(ANON)
                continue
            break
        elif depth == 0:
            out.append(c)
        i += 1
    short = "".join(out).strip()
    # a template's demangled name starts with its return type: `void mini::reduce`
    head, _, last = short.replace(ANON, "\0").rpartition(" ")
    if head and not head.endswith("operator"):
        short = last.replace("\0", ANON)
    return short or name


def _frame_label(site: symbols.Site) -> str:
    """`function (file:line)`, `function (lib+0xoff)` or `lib+0xoff`."""
    if site.function == "??":
        return site.label
    return f"{short_function(site.function)} ({site.location or Path(site.binary).name})"


def _short(site: symbols.Site) -> str:
    return short_function(site.function) if site.function != "??" else site.label


def _matches(patterns: tuple[str, ...], site: symbols.Site) -> bool:
    binary = Path(site.binary).name
    function = short_function(site.function) if site.function != "??" else ""
    return any(fnmatch.fnmatchcase(binary, p) or (function and (fnmatch.fnmatchcase(function, p)
                                                                 or fnmatch.fnmatchcase(site.function, p)))
               for p in patterns)


def _chains(rank: RankProfile) -> dict[int, tuple[int, ...]]:
    """Every site id of the rank (points, patterns, requests) -> its chain of addresses (a site without
    a `chain` line, as in format 3, is its own one-frame chain)."""
    ids = {p.site for p in rank.points} | {a for p in rank.patterns for a in (p.first, p.second)} \
        | {r.site for r in rank.requests}
    return {i: rank.chains.get(i, (i,)) for i in ids}


def _logical(site: symbols.Site) -> list[symbols.Site]:
    """A recorded frame as the functions it runs: the innermost inlined one first, then those it
    is inlined into (each at its line of the inlined call)."""
    return [site, *(symbols.Site(site.address, site.binary, f, loc) for f, loc in site.inlined_into)]


Frames = list[symbols.Site]


def _resolved(run: ProfileRun) -> list[dict[int, Frames]]:
    """Per rank: site id -> its chain's frames, functions inlined into others included."""
    out = []
    for rank in run.ranks:
        chains = _chains(rank)
        sites = symbols.resolve({a for c in chains.values() for a in c}, rank.maps)
        out.append({i: [f for a in c for f in _logical(sites[a])] for i, c in chains.items()})
    return out


def _frame_key(site: symbols.Site) -> str:
    """A frame's identity across ranks (addresses differ from rank to rank): its function, short
    (a template's instances, and its copies inlined into several callers, are one layer), else
    its place."""
    return short_function(site.function) if site.function != "??" else site.label


def data_layers(resolved: list[dict[int, Frames]]) -> set[str]:
    """Functions (frame keys) through which LAYER_CALLERS or more distinct functions reach MPI."""
    callers: dict[str, set[str]] = defaultdict(set)
    for chains in resolved:
        for frames in chains.values():
            for below, above in zip(frames, frames[1:]):
                callers[_frame_key(below)].add(_frame_key(above))
    return {k for k, who in callers.items() if len(who) >= LAYER_CALLERS}


def _cut(frames: Frames, layers: set[str], user: tuple[str, ...]) -> CallSite:
    skipped: list[symbols.Site] = []
    for f in frames:
        if _matches(MPI_LIBRARIES, f):
            continue   # the binding's own frames are not worth naming
        if _matches(PYTHON, f):
            below = tuple(_short(s) for s in reversed(skipped))
            label = PYTHON_NOTE + "".join(f" <- {b}" for b in below)
            return CallSite(label, PYTHON_NOTE, below, tuple(_frame_label(s) for s in frames),
                            "the call comes from the Python interpreter")
        if _matches(LAYER_LIBRARIES, f) or _matches(user, f) or _frame_key(f) in layers:
            skipped.append(f)
            continue
        below = tuple(_short(s) for s in reversed(skipped))
        line = _frame_label(f)
        return CallSite(line + "".join(f" <- {b}" for b in below), line, below,
                        tuple(_frame_label(s) for s in frames))
    # every recorded frame is MPI or a layer: the outermost recorded one, said so
    last = frames[-1]
    below = tuple(_short(s) for s in reversed(skipped) if s is not last)
    line = _frame_label(last)
    return CallSite(line + "".join(f" <- {b}" for b in below), line, below,
                    tuple(_frame_label(s) for s in frames),
                    f"every one of the {len(frames)} recorded frames is MPI or a layer")


def resolve(run: ProfileRun) -> list[dict[int, CallSite]]:
    """Per rank (in run.ranks' order): site id -> its call site. Cached on the run."""
    key = tuple(run.layers)
    cached = run.site_cache.get(key)
    if cached is not None:
        return cached
    resolved = _resolved(run)
    layers = data_layers(resolved)
    out = [{i: _cut(frames, layers, key) for i, frames in chains.items()} for chains in resolved]
    run.site_cache[key] = out
    return out


def of(run: ProfileRun, rank: RankProfile) -> dict[int, CallSite]:
    """The call sites of one rank of the run."""
    return resolve(run)[next(i for i, r in enumerate(run.ranks) if r is rank)]
