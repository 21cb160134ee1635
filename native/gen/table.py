"""Load native/spec/collectives.toml for the generators (stdlib only: generators run anywhere)."""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parent.parent / "spec"
GENERATED_DIR = Path(__file__).resolve().parent.parent / "generated"


# Argument role -> the field of struct ct_call (colltune.h) it fills. Bcast's `buffer` and the
# `count`/`datatype` of reductions share the receive-side fields so every collective fits one struct.
# A collective without a `comm` argument (Reduce_local) fills `comm` with MPI_COMM_SELF.
CALL_FIELD = {
    "sendbuf": "sendbuf",
    "recvbuf": "recvbuf",
    "buffer": "recvbuf",
    "sendcount": "sendcount",
    "recvcount": "recvcount",
    "count": "recvcount",
    "recvcounts": "recvcounts",
    "sendcounts": "sendcounts",
    "sdispls": "sdispls",
    "rdispls": "rdispls",
    "sdispls_aint": "sdispls_aint",
    "rdispls_aint": "rdispls_aint",
    "sendtypes": "sendtypes",
    "recvtypes": "recvtypes",
    "sendtype": "sendtype",
    "recvtype": "recvtype",
    "datatype": "recvtype",
    "op": "op",
    "root": "root",
    "comm": "comm",
}


@dataclass(frozen=True)
class Arg:
    name: str
    ctype: str
    role: str


# The forms a row may declare (`forms`), each also in its large-count binding (`_c`, MPI-4) where
# the row has `large_count = true`. The first is the row's own MPI name (MPI_Allreduce); the
# others are named from it (MPI_Iallreduce, MPI_Allreduce_init) and take these arguments after
# the blocking ones.
FORM_EXTRA_ARGS = {
    "blocking": (),
    "nonblocking": (("MPI_Request *", "request"),),
    "persistent": (("MPI_Info", "info"), ("MPI_Request *", "request")),
}
FORMS = tuple(FORM_EXTRA_ARGS)
FAMILIES = ("collective", "neighborhood")


@dataclass(frozen=True)
class Collective:
    name: str
    mpi: str
    args: tuple[Arg, ...]
    uniform: tuple[str, ...]
    in_place: str | None
    bytes: str
    forms: tuple[str, ...] = FORMS
    large_count: bool = True
    dispatch: bool = True
    family: str = "collective"
    serve_large: bool = True
    counted: str | None = None   # the counting mode's bytes where they differ from `bytes`


@dataclass(frozen=True)
class Function:
    """One MPI function of a row: a form, in its int or large-count (`_c`) binding."""

    coll: Collective
    form: str
    large: bool

    @property
    def mpi(self) -> str:
        base = self.coll.mpi
        if self.form == "nonblocking":
            base = "MPI_I" + base[len("MPI_"):].lower()
        elif self.form == "persistent":
            base += "_init"
        return base + ("_c" if self.large else "")

    @property
    def name(self) -> str:
        """Lower case without MPI_: iallreduce, allreduce_init_c (the runtime's names)."""
        return self.mpi[len("MPI_"):].lower()

    @property
    def enum(self) -> str:
        return f"CT_FN_{self.name.upper()}"

    @property
    def extra(self) -> tuple[tuple[str, str], ...]:
        return FORM_EXTRA_ARGS[self.form]


@dataclass(frozen=True)
class Variant:
    name: str
    collective: str
    guideline: str
    rhs: str
    needs: tuple[str, ...]
    scratch: str


@dataclass(frozen=True)
class Table:
    collectives: tuple[Collective, ...]   # the rows the decision point serves (CT_COLL_*)
    variants: tuple[Variant, ...]
    rows: tuple[Collective, ...] = ()     # every row, with those only watched (dispatch = false)

    def collective(self, name: str) -> Collective:
        return next(c for c in self.collectives if c.name == name)

    def functions(self) -> tuple[Function, ...]:
        """Every MPI function of every row: per row its forms in order, each int then _c."""
        return tuple(Function(row, form, large) for row in self.rows for form in row.forms
                     for large in ((False, True) if row.large_count else (False,)))


def load(path: Path = SPEC_DIR / "collectives.toml") -> Table:
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    rows = tuple(
        Collective(
            name=c["name"],
            mpi=c["mpi"],
            args=tuple(Arg(**a) for a in c["args"]),
            uniform=tuple(c["uniform"]),
            in_place=c.get("in_place"),
            bytes=c["bytes"],
            forms=tuple(c.get("forms", FORMS)),
            large_count=c.get("large_count", True),
            dispatch=c.get("dispatch", True),
            family=c.get("family", "collective"),
            serve_large=c.get("serve_large", True),
            counted=c.get("counted"),
        )
        for c in raw["collective"]
    )
    for row in rows:
        if not row.forms or row.forms[0] != "blocking" or set(row.forms) - set(FORMS):
            raise ValueError(f"{path}: {row.name}: forms must start with \"blocking\" and be "
                             f"among {', '.join(FORMS)}")
        if row.family not in FAMILIES:
            raise ValueError(f"{path}: {row.name}: family must be one of {', '.join(FAMILIES)}")
    collectives = tuple(r for r in rows if r.dispatch)
    variants = tuple(
        Variant(
            name=v["name"],
            collective=v["collective"],
            guideline=v["guideline"],
            rhs=v["rhs"],
            needs=tuple(v["needs"]),
            scratch=v["scratch"],
        )
        for v in raw["variant"]
    )
    return Table(collectives, variants, rows)


def banner(
    generator: str, comment: str = "/*", end: str = " */", source: str = "native/spec/*.toml"
) -> str:
    """First lines of every generated file: who made it and how to remake it.

    Pass `source` naming the file (C files: "*.toml" would open a nested comment, -Wcomment)."""
    return (
        f"{comment} Generated by native/gen/{generator} from {source}.{end}\n"
        f"{comment} Do not edit: change the table and run `make generate`.{end}\n"
    )


def run(argv: list[str] | None, doc: str, generator: str, outputs: Callable[[], dict[Path, str]]) -> int:
    """The command line of every generator: write `outputs()` (path -> content), or with --check
    write nothing and exit 1, naming each stale file (`make generate` and the staleness tests)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if an output is stale")
    args = ap.parse_args(argv)
    stale = []
    for path, content in outputs().items():
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
        if not write_or_check(path, content, args.check):
            stale.append(path)
    root = Path(__file__).resolve().parent.parent.parent
    for path in stale:
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        print(f"{generator}: {shown} is stale: run `make generate`", file=sys.stderr)
    return 1 if stale else 0


def write_or_check(path: Path, content: str, check: bool) -> bool:
    """Write `content` to `path`, or with check=True only report whether it is current."""
    current = path.read_text() if path.exists() else None
    if check:
        return current == content
    if current != content:
        path.write_text(content)
    return True
