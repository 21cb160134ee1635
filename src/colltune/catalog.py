"""The one table of collectives and variants (native/spec/collectives.toml), for Python."""

from __future__ import annotations

import tomllib
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from colltune.paths import native_dir


class Arg(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    ctype: str
    role: str


# The forms a row may have (native/gen/table.py FORMS), the blocking one first.
FORMS = ("blocking", "nonblocking", "persistent")


class Collective(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    mpi: str
    args: tuple[Arg, ...]
    uniform: tuple[str, ...]
    in_place: str | None = None
    bytes: str
    forms: tuple[str, ...] = FORMS
    large_count: bool = True
    dispatch: bool = True        # false: watched only (counted, profiled), never served
    serve_large: bool = True     # false: the blocking _c binding is watched only
    family: str = "collective"   # or "neighborhood"
    counted: str | None = None   # the counting mode's bytes where they differ from `bytes`

    def function(self, form: str) -> str:
        """Its MPI function in `form`, as native/gen/table.py names it (MPI_Iallreduce, ..._init)."""
        if form == "nonblocking":
            return "MPI_I" + self.mpi[len("MPI_"):].lower()
        return self.mpi + ("_init" if form == "persistent" else "")

    def functions(self) -> list[str]:
        """Its MPI functions, every form in its int and (large_count) _c binding."""
        return [name for form in self.forms
                for name in (self.function(form), *((self.function(form) + "_c",) if self.large_count else ()))]

    @property
    def is_reduction(self) -> bool:
        """Takes an MPI_Op (the `op` role of the table)."""
        return any(a.role == "op" for a in self.args)

    @property
    def is_rooted(self) -> bool:
        """Takes a root (the `root` role of the table)."""
        return any(a.role == "root" for a in self.args)


class Variant(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    collective: str
    guideline: str
    rhs: str
    needs: tuple[str, ...]
    scratch: str


class Catalog(BaseModel):
    model_config = ConfigDict(frozen=True)
    collectives: tuple[Collective, ...]   # served by the decision point (dispatch = true)
    variants: tuple[Variant, ...]
    rows: tuple[Collective, ...] = ()     # every row, the watched-only ones too

    def function_row(self, mpi_name: str) -> Collective | None:
        """The row an MPI function belongs to (MPI_Ineighbor_alltoall_c -> neighbor_alltoall)."""
        for row in self.rows:
            if mpi_name in row.functions():
                return row
        return None

    def collective_names(self) -> list[str]:
        return [c.name for c in self.collectives]

    def measured_names(self) -> list[str]:
        """What `colltune bench` measures: the served rows and the neighborhood collectives,
        which it runs on a torus of the job's processes (docs/guidelines.md)."""
        return [c.name for c in self.rows if c.dispatch or c.family == "neighborhood"]

    def row(self, name: str) -> Collective:
        """Any row of the table, the watched-only ones too."""
        for c in self.rows:
            if c.name == name:
                return c
        raise KeyError(f"unknown collective {name!r}; known: {', '.join(c.name for c in self.rows)}")

    def collective(self, name: str) -> Collective:
        for c in self.collectives:
            if c.name == name:
                return c
        raise KeyError(f"unknown collective {name!r}; known: {', '.join(self.collective_names())}")

    def is_reduction(self, name: str) -> bool:
        return self.row(name).is_reduction

    def is_rooted(self, name: str) -> bool:
        return self.row(name).is_rooted

    def variants_of(self, collective: str) -> list[Variant]:
        return [v for v in self.variants if v.collective == collective]

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(v.name for v in self.variants)}")


@lru_cache(maxsize=1)
def load() -> Catalog:
    with open(native_dir() / "spec" / "collectives.toml", "rb") as f:
        raw = tomllib.load(f)
    rows = tuple(Collective(**c) for c in raw["collective"])
    return Catalog(collectives=tuple(r for r in rows if r.dispatch), variants=tuple(raw["variant"]),
                   rows=rows)


# Names of the pseudo variants and prefixes every stage shares (docs/architecture.md).
DEFAULT = "default"
AA = "default#aa"
TUNED = "tuned"
LIB_PREFIX = "lib:"
# The library's own collective in another form of its row, timed from its start to the MPI_Wait
# that completes it (native/bench/bench_variant.c; docs/guidelines.md, "Forms"): one name per
# form beyond the blocking one, the same rule for every row.
NONBLOCKING = f"{DEFAULT}#nonblocking"
PERSISTENT = f"{DEFAULT}#persistent"
FORM_VARIANTS = {f"{DEFAULT}#{form}": form for form in FORMS[1:]}
# The sides a neighborhood collective's guidelines put against its call on a torus, each measured
# as a variant of its job (native/bench/bench_neighbor.c; docs/guidelines.md, "Neighborhood
# collectives"): name -> (what it calls, the rows that have it).
NEIGHBOR_VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    f"{DEFAULT}#graph": ("{fn} on a distributed graph of the torus's neighbours",
                         ("neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall",
                          "neighbor_alltoallv", "neighbor_alltoallw")),
    f"{DEFAULT}#complete": ("{fn} on the complete graph", ("neighbor_allgather", "neighbor_alltoall")),
    f"{DEFAULT}#dense": ("{dense}", ("neighbor_allgather", "neighbor_alltoall")),
    f"{DEFAULT}#alltoallv": ("MPI_Alltoallv with the torus neighbours' counts", ("neighbor_alltoall",)),
    f"{DEFAULT}#alltoall": ("MPI_Neighbor_alltoall, one block per neighbour", ("neighbor_allgather",)),
}


def library_variant(name: str) -> tuple[str, str, str]:
    """(collective, algorithm, form) of a library algorithm variant: `lib:<coll>:<alg>` runs the
    blocking call, `lib:<coll>:<alg>#<form>` the call of another form (MPI_I<coll> + MPI_Wait, or
    MPI_Start + MPI_Wait) with the library's own algorithm of that form forced (MPICH's
    MPIR_CVAR_I<COLL>_INTRA_ALGORITHM, Open MPI's coll_libnbc_i<coll>_algorithm). ValueError
    for any other name."""
    parts = name.split(":", 2)
    alg, _, form = parts[-1].partition("#")
    if len(parts) != 3 or parts[0] != LIB_PREFIX[:-1] or not parts[1] or not alg or (form and form not in FORMS[1:]):
        raise ValueError(f"{name!r} is not a library algorithm variant: write lib:<collective>:<algorithm>, "
                         f"optionally followed by {' or '.join('#' + f for f in FORMS[1:])}")
    return parts[1], alg, form or FORMS[0]


def form_of(name: str) -> str:
    """The form a variant calls: `default#<form>` and `lib:...#<form>` their form, all others the
    blocking one."""
    if name in FORM_VARIANTS:
        return FORM_VARIANTS[name]
    if name.startswith(LIB_PREFIX) and "#" in name:
        return name.rsplit("#", 1)[1]
    return FORMS[0]


def form_default(name: str) -> str:
    """The library's own call of the variant's form, which its library algorithms are compared
    with: `default` or `default#<form>`."""
    form = form_of(name)
    return DEFAULT if form == FORMS[0] else f"{DEFAULT}#{form}"


def variant_kind(name: str) -> str:
    """`kind` of a variant name: default, aa (A/A copy), tuned, form (default#nonblocking,
    default#persistent, a neighborhood collective's sides), library (lib:..., of any form) or
    mockup."""
    if name == DEFAULT:
        return "default"
    if name == AA:
        return "aa"
    if name == TUNED:
        return "tuned"
    if name in FORM_VARIANTS or name in NEIGHBOR_VARIANTS:
        return "form"
    if name.startswith(LIB_PREFIX):
        return "library"
    return "mockup"
