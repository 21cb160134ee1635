"""Selection tables (docs/select.md, format version 1): model, reader, writer, cell lookup.

The reader accepts what the runtime's parser accepts and names the line of the first problem
(`FILE:LINE: what is wrong; how to fix it`), with the profile's lexical rules (docs/profile.md).
Member names are checked against the catalog here; whether the running library offers a `lib:`
member is the runtime's check (`check_members` does it for a known list). No heavy imports at
module level (the catalog's pydantic only when a block is parsed): `colltune run` may read a
table before every launch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from colltune import textformat
from colltune.errors import ColltuneError
from colltune.learn import draw
from colltune.textformat import MAX_LINE, NUMBER
from colltune.textformat import show as _show

if TYPE_CHECKING:
    from colltune.mpi.libraries import MpiLibrary
from colltune.paths import writable_file

FORMAT_VERSION = 1
HEADER_WORD = "colltune-select"
MAX_MEMBERS = 64
MAX_BINS = 64
MAX_COUNT = 2**63 - 1
DEFAULT_BINS = (24, 4, 8)
MODES = ("explore", "exploit")
UNLISTED = ("explore", "library", "exploit")
_DECIMAL = re.compile(rb"[0-9]{1,19}(\.[0-9]{1,19})?")
# The lexical rules of native/core/select.c (colltune.textformat has the ones both formats share).
_DIALECT = textformat.Dialect(
    too_large_line=0, too_large="not a selection table",
    control=lambda byte: "control character in the line; the file must be text", cr_on_last_line=True)

Bins = tuple[int, int, int]


class TableError(ColltuneError, ValueError):
    """A selection table is unusable; str() is "FILE:LINE: what is wrong; how to fix it"."""


# -------------------------------------------------------------------------------------------
# Bins (docs/select.md, "Binned cube")


def size_bin(msg_bytes: int, nbins: int = DEFAULT_BINS[0]) -> int:
    return min(int(msg_bytes).bit_length(), nbins - 1)


def count_bin(value: int, nbins: int) -> int:
    """Nodes and processes-per-node bins: bitlen(value) - 1, capped (values below 1 count as 1)."""
    return min(max(int(value), 1).bit_length() - 1, nbins - 1)


def bin_centre(axis: str, b: int) -> float:
    """Geometric centre of a bin: size bin b >= 1 covers [2^(b-1), 2^b - 1] bytes (bin 0: 0 bytes);
    nodes/ppn bin b covers [2^b, 2^(b+1) - 1]."""
    if axis == "size":
        return 0.0 if b == 0 else 2.0 ** (b - 1) * math.sqrt(2.0)
    return 2.0**b * math.sqrt(2.0) if b > 0 else 1.0


def bin_range(axis: str, b: int, nbins: int) -> tuple[int, int | None]:
    """Inclusive value range of a bin; None as upper end for the open last bin."""
    lo = (0 if b == 0 else 2 ** (b - 1)) if axis == "size" else 2**b
    if b == nbins - 1:
        return lo, None
    return lo, (2**b - 1 if axis == "size" else 2 ** (b + 1) - 1)


# -------------------------------------------------------------------------------------------
# Model


@dataclass(frozen=True)
class Cell:
    mode: str  # explore | exploit
    weights: tuple[float, ...]


@dataclass(frozen=True)
class CollectiveTable:
    name: str
    members: tuple[str, ...]
    cells: dict[Bins, Cell] = field(default_factory=dict)


@dataclass(frozen=True)
class SelectionTable:
    collectives: dict[str, CollectiveTable] = field(default_factory=dict)
    bins: Bins = DEFAULT_BINS
    caps: tuple[float, float] = draw.DEFAULT_CAPS
    unlisted: str = "explore"
    budget: int = 1000
    cell_budget: int = 100  # `cellbudget`: explored calls per communicator, collective and size bin
    generator: str = ""
    mpi: str = ""
    comments: tuple[str, ...] = ()

    def bins_of(self, msg_bytes: int, nodes: int, ppn: int) -> Bins:
        s, n, p = self.bins
        return size_bin(msg_bytes, s), count_bin(nodes, n), count_bin(ppn, p)

    def cell(self, collective: str, bins: Bins) -> tuple[tuple[str, ...], Cell] | None:
        """The members and cell the table lists for a call's bins, or None (unlisted)."""
        block = self.collectives.get(collective)
        if block is None or bins not in block.cells:
            return None
        return block.members, block.cells[bins]

    def choose(self, collective: str, bins: Bins, portfolio: Sequence[str], seed: int, comm_id: int,
               call_index: int) -> tuple[str | None, str]:
        """(member, outcome) the runtime picks for a call: outcome explore/exploit, member None
        for "the library" (an unlisted cell under `unlisted library`)."""
        found = self.cell(collective, bins)
        if found is not None:
            members, cell = found
            idx = draw.pick(cell.mode, cell.weights, seed, comm_id, call_index, self.caps)
            return members[idx], cell.mode
        if self.unlisted == "library":
            return None, "exploit"
        uniform = [1.0] * len(portfolio)
        if self.unlisted == "exploit":
            return portfolio[draw.pick_exploit(uniform)], "exploit"
        return portfolio[draw.pick("explore", uniform, seed, comm_id, call_index, self.caps)], "explore"

    def frozen(self) -> SelectionTable:
        """Every cell exploit, unlisted cells to the library: draws nothing (docs/select.md)."""
        colls = {name: replace(c, cells={k: Cell("exploit", v.weights) for k, v in c.cells.items()})
                 for name, c in self.collectives.items()}
        return replace(self, collectives=colls, unlisted="library")


NONBLOCKING = "nonblocking"  # the call forms a table block may name besides the blocking one
PERSISTENT = "persistent"


def portfolio_form(block: str) -> tuple[str, str]:
    """(collective, form) of a block name: `allreduce` decides MPI_Allreduce, `allreduce#nonblocking`
    MPI_Iallreduce, `allreduce#persistent` MPI_Allreduce_init (docs/select.md, "Nonblocking calls",
    "Persistent calls"). The form is returned unchecked."""
    coll, _, form = block.partition("#")
    return coll, form or "blocking"


def check_members(table: SelectionTable, available: dict[str, Iterable[str]]) -> None:
    """Refuse members the running library does not offer (the runtime's rule, docs/select.md)."""
    for name, block in table.collectives.items():
        have = set(available.get(name, ()))
        for m in block.members:
            if m not in have:
                raise TableError(f"member {m!r} of {name} is not offered by this MPI library; "
                                 f"offered: {', '.join(sorted(have)) or 'none'}")


def refuse_members_fixed_per_launch(table: SelectionTable, lib: MpiLibrary, name: str) -> None:
    """Refuse before the launch a table naming library members (`lib:`) for a library that fixes
    its algorithms per launch (Intel MPI): the runtime would turn learning off in every rank."""
    from colltune.mpi.algorithms import ALGORITHMS_AT_LAUNCH, algorithm_key
    from colltune.mpi.libraries import MpiError

    if algorithm_key(lib) not in ALGORITHMS_AT_LAUNCH:
        return
    named = [m for block in table.collectives.values() for m in block.members if m.startswith("lib:")]
    if named:
        raise MpiError(f"--learn: {name} names library algorithms ({', '.join(named[:3])}"
                       f"{', ...' if len(named) > 3 else ''}), but {lib.name} fixes its algorithms per launch "
                       "(I_MPI_ADJUST_*), not per call: remove them, or write the table from this library's "
                       "traces with colltune learn table (docs/select.md)")


# -------------------------------------------------------------------------------------------
# Writer


def _weight(w: float) -> str:
    text = f"{w:.6f}"
    return text


def format_table(table: SelectionTable) -> str:
    out = [f"{HEADER_WORD} {FORMAT_VERSION}"]
    out += [f"# {c}"[:MAX_LINE] for c in table.comments]
    if table.generator:
        out.append(f"generator {table.generator}")
    if table.mpi:
        out.append(f"mpi {table.mpi}")
    out.append("bins {} {} {}".format(*table.bins))
    out.append(f"caps {table.caps[0]:.6f} {table.caps[1]:.6f}")
    out.append(f"unlisted {table.unlisted}")
    out.append(f"budget {table.budget}")
    out.append(f"cellbudget {table.cell_budget}")
    for block in table.collectives.values():
        out.append(f"collective {block.name}")
        out.append("  members " + " ".join(block.members))
        for (s, n, p), cell in sorted(block.cells.items()):
            out.append(f"  cell {s} {n} {p} {cell.mode} " + " ".join(_weight(w) for w in cell.weights))
    out.append("end")
    return "\n".join(out) + "\n"


def write_table(table: SelectionTable, path: str | Path) -> Path:
    """Atomically (a launch never reads half a table); the result parses back to `table` up to
    the 6 decimals of the weights."""
    text = format_table(table)
    parse_table(text.encode(), str(path))  # never write what the runtime would refuse
    path = writable_file(path, "selection table")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def content_hash(data: bytes) -> int:
    """FNV-1a 64 of the table's bytes (what the runtime checks across ranks and traces record)."""
    return textformat.fnv1a64(data)


# -------------------------------------------------------------------------------------------
# Reader


class _Parser:
    def __init__(self, name: str) -> None:
        self.name = name
        self.line = 0
        self.state = "header"  # header, keys, coll (needs members), cells, end
        self.keys: dict[str, object] = {}
        self.blocks: list[tuple[str, list[str], dict[Bins, Cell]]] = []
        self.coll_line = 0

    def fail(self, message: str, line: int | None = None) -> TableError:
        return TableError(f"{self.name}:{self.line if line is None else line}: {message}")

    def count(self, word: bytes, what: str, lo: int, hi: int) -> int:
        if not NUMBER.fullmatch(word) or not lo <= int(word) <= hi:
            raise self.fail(f"{what} '{_show(word)}' is not a whole number in {lo}..{hi}")
        return int(word)

    def decimal(self, word: bytes, what: str) -> float:
        if not _DECIMAL.fullmatch(word):
            raise self.fail(f"{what} '{_show(word)}' is not a decimal number (digits, optionally "
                            "'.' and digits; no sign or exponent)")
        return float(word)

    def header(self, w: list[bytes]) -> None:
        if w[0] != HEADER_WORD.encode():
            raise self.fail(f"not a selection table (the first line must be '{HEADER_WORD} "
                            f"{FORMAT_VERSION}'); write one with colltune learn table")
        if len(w) != 2 or w[1] != str(FORMAT_VERSION).encode():
            raise self.fail(f"unsupported selection table version '{_show(b' '.join(w[1:]))}' (this "
                            f"colltune reads version {FORMAT_VERSION}); rewrite it with this colltune")
        self.state = "keys"

    def key(self, key: str, w: list[bytes], text: bytes) -> None:
        if self.state != "keys":
            raise self.fail(f"'{key}' after the first collective; move it above the first 'collective' line")
        if key in self.keys:
            raise self.fail(f"duplicate '{key}' line; keep one")
        if key in ("generator", "mpi"):
            if len(w) < 2:
                raise self.fail(f"'{key}' needs a value: '{key} TEXT'")
            self.keys[key] = text.strip(b" \t")[len(key):].strip(b" \t").decode("utf-8", "replace")
        elif key == "bins":
            if len(w) != 4:
                raise self.fail("'bins' takes three numbers: 'bins SIZE NODES PPN'")
            self.keys[key] = tuple(self.count(x, "bins", 1, MAX_BINS) for x in w[1:])
        elif key == "caps":
            if len(w) != 3:
                raise self.fail("'caps' takes two decimals: 'caps LO HI'")
            lo, hi = (self.decimal(x, "cap") for x in w[1:])
            if not 0.0 <= lo <= hi <= 1.0:
                raise self.fail(f"caps {lo:g} {hi:g} invalid: need 0 <= LO <= HI <= 1")
            self.keys[key] = (lo, hi)
        elif key == "unlisted":
            if len(w) != 2 or w[1].decode("utf-8", "replace") not in UNLISTED:
                raise self.fail(f"'unlisted' takes one of {', '.join(UNLISTED)}")
            self.keys[key] = w[1].decode()
        else:  # budget, cellbudget
            if len(w) != 2:
                raise self.fail(f"'{key}' takes one number: '{key} N'")
            self.keys[key] = self.count(w[1], key, 0, MAX_COUNT)

    def close_block(self) -> None:
        if self.state == "coll":
            raise self.fail(f"collective {self.blocks[-1][0]} has no 'members' line; add "
                            "'members M1 M2 ...' right after it", self.coll_line)

    def collective(self, w: list[bytes]) -> None:
        if self.state == "header":
            raise self.fail("'collective' before the header line")
        self.close_block()
        if len(w) != 2:
            raise self.fail("'collective' takes one name: 'collective NAME'")
        from colltune import catalog

        name = w[1].decode("utf-8", "replace")
        base, form = portfolio_form(name)
        if base not in catalog.load().collective_names() or ("#" in name and form not in (NONBLOCKING, PERSISTENT)):
            raise self.fail(f"unknown collective '{_show(w[1])}'; use a collective of collectives.toml, "
                            f"or <collective>#{NONBLOCKING} (#{PERSISTENT}) for its nonblocking calls "
                            "(persistent requests)")
        if any(b[0] == name for b in self.blocks):
            raise self.fail(f"collective {name} appears twice; merge its blocks")
        self.blocks.append((name, [], {}))
        self.coll_line = self.line
        self.state = "coll"

    def members(self, w: list[bytes]) -> None:
        if self.state != "coll":
            where = "twice in one block" if self.state == "cells" else "outside a collective block"
            raise self.fail(f"'members' {where}; give it once, right after 'collective NAME'")
        from colltune import catalog

        block, members, _ = self.blocks[-1]
        coll, form = portfolio_form(block)
        suffix = "" if form == catalog.FORMS[0] else f"#{form}"
        if not 1 <= len(w) - 1 <= MAX_MEMBERS:
            raise self.fail(f"'members' takes 1 to {MAX_MEMBERS} member names")
        own = {v.name for v in catalog.load().variants_of(coll)} if not suffix else set()
        for word in w[1:]:
            m = word.decode("utf-8", "replace")
            if m in members:
                raise self.fail(f"member {m} is listed twice; list each once")
            lib = m.split(":")
            if m.startswith(catalog.LIB_PREFIX):
                if len(lib) != 3 or lib[1] != coll or not lib[2].partition("#")[0]:
                    raise self.fail(f"library member '{_show(word)}' is not lib:{coll}:<algorithm>{suffix}")
                if catalog.form_of(m) != form:
                    raise self.fail(f"library member '{_show(word)}' is an algorithm of another form; "
                                    f"members of {block} serve its {form} calls: lib:{coll}:<algorithm>{suffix}")
            elif m != catalog.DEFAULT and m not in own:
                raise self.fail(f"unknown member '{_show(word)}' of {block}; use default, "
                                + (f"a mock-up of {coll} or " if not suffix else "")
                                + f"lib:{coll}:<algorithm>{suffix}")
            members.append(m)
        self.state = "cells"

    def cell(self, w: list[bytes]) -> None:
        if self.state != "cells":
            raise self.fail("'cell' before the block's 'members' line" if self.state == "coll"
                            else "'cell' outside a collective block; start one with 'collective NAME'")
        coll, members, cells = self.blocks[-1]
        if len(w) != 5 + len(members):
            raise self.fail(f"'cell' takes S N P MODE and {len(members)} weights (one per member), "
                            f"got {len(w) - 1} fields")
        nbins = self.keys.get("bins", DEFAULT_BINS)
        assert isinstance(nbins, tuple)
        key = tuple(self.count(x, f"{axis} bin", 0, nb - 1)
                    for x, axis, nb in zip(w[1:4], ("size", "nodes", "ppn"), nbins))
        mode = w[4].decode("utf-8", "replace")
        if mode not in MODES:
            raise self.fail(f"cell mode '{_show(w[4])}' is neither explore nor exploit")
        weights = tuple(self.decimal(x, "weight") for x in w[5:])
        if not any(x > 0 for x in weights):
            raise self.fail("the weights of a cell are all 0; give at least one positive weight")
        if key in cells:
            raise self.fail(f"cell {key[0]} {key[1]} {key[2]} of {coll} appears twice; keep one")
        cells[key] = Cell(mode, weights)  # type: ignore[index]

    def end(self, w: list[bytes]) -> None:
        if self.state == "header":
            raise self.fail("'end' before the header line")
        if len(w) != 1:
            raise self.fail("'end' takes nothing after it")
        self.close_block()
        self.state = "end"

    def feed(self, w: list[bytes], text: bytes) -> None:
        if self.state == "end":
            raise self.fail("text after 'end'; remove it (only comments may follow)")
        if self.state == "header":
            return self.header(w)
        word = w[0].decode("utf-8", "replace")
        if word in ("generator", "mpi", "bins", "caps", "unlisted", "budget", "cellbudget"):
            return self.key(word, w, text)
        handler = {"collective": self.collective, "members": self.members, "cell": self.cell,
                   "end": self.end}.get(word)
        if handler is None:
            raise self.fail(f"unknown keyword '{_show(w[0])}'; lines start with generator, mpi, bins, "
                            "caps, unlisted, budget, cellbudget, collective, members, cell or end")
        handler(w)

    def finish(self) -> SelectionTable:
        if self.state == "header":
            raise self.fail("empty file: not a selection table; write one with colltune learn table")
        if self.state != "end":
            raise self.fail("file ends without the 'end' line (truncated?); rewrite it or add 'end'")
        k = self.keys
        colls = {n: CollectiveTable(n, tuple(m), c) for n, m, c in self.blocks}
        return SelectionTable(collectives=colls, bins=k.get("bins", DEFAULT_BINS),  # type: ignore[arg-type]
                              caps=k.get("caps", draw.DEFAULT_CAPS), unlisted=k.get("unlisted", "explore"),  # type: ignore[arg-type]
                              budget=k.get("budget", 1000), cell_budget=k.get("cellbudget", 100),  # type: ignore[arg-type]
                              generator=k.get("generator", ""),  # type: ignore[arg-type]
                              mpi=k.get("mpi", ""))  # type: ignore[arg-type]


def parse_table(data: bytes, name: str = "<table>") -> SelectionTable:
    parser = _Parser(name)
    try:
        for line in textformat.lines(data, _DIALECT):
            parser.line = line.number
            if line.words:
                parser.feed(line.words, line.text)
    except textformat.LexError as exc:
        raise parser.fail(exc.message, exc.line) from None
    return parser.finish()


def read_table(path: str | Path) -> SelectionTable:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise TableError(f"{p}:0: cannot read the selection table: {exc.strerror}") from exc
    return parse_table(data, str(p))
