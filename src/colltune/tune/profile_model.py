"""The tuning profile's validated model (docs/profile.md): what the interposer applies, and the
lookup and content hash the C core computes the same way (native/core/profile_rules.c).
Text in and out: colltune.tune.profile; PGMPITuneLib `.prf` files: colltune.tune.prf.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

from colltune import catalog, textformat
from colltune.errors import ColltuneError

MAX_RULES = 65536
MAX_BLOCKS = 4096
MAX_PROCS = 2**31 - 1
MAX_BYTES = 2**63 - 1

# Order is the order in which the writer emits them.
PROVENANCE_KEYS: tuple[str, ...] = (
    "generator",
    "source",
    "mpi",
    "mpi-version",
    "machine",
    "nprocs",
    "layout",
    "date",
    "check-run",
    "min-gain",
    "scratch-cap",
    "extension",
)


class ProfileError(ColltuneError, ValueError):
    """A profile is unusable; str() is "FILE:LINE: what is wrong; how to fix it"."""


class Rule(BaseModel):
    """Message sizes lo..hi (inclusive, bytes) use `variant`."""

    model_config = ConfigDict(frozen=True)
    lo: int = Field(ge=0, le=MAX_BYTES)
    hi: int = Field(ge=0, le=MAX_BYTES)
    variant: str

    @model_validator(mode="after")
    def _ordered(self) -> Rule:
        if self.lo > self.hi:
            raise ValueError(f"bytes {self.lo}..{self.hi}: lo > hi")
        return self


class Block(BaseModel):
    """Communicator sizes procs_lo..procs_hi (inclusive) and their sorted, disjoint rules; a layout
    block (`nodes N ppn P`) is for communicators of exactly N nodes x P processes per node, and
    its procs_lo == procs_hi == N * P (filled in when only nodes and ppn are given)."""

    model_config = ConfigDict(frozen=True)
    procs_lo: int = Field(ge=1, le=MAX_PROCS)
    procs_hi: int = Field(ge=1, le=MAX_PROCS)
    rules: tuple[Rule, ...] = Field(min_length=1)
    nodes: int | None = Field(None, ge=1, le=MAX_PROCS)
    ppn: int | None = Field(None, ge=1, le=MAX_PROCS)

    @model_validator(mode="before")
    @classmethod
    def _layout_size(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("nodes") and data.get("ppn") and "procs_lo" not in data:
            size = int(data["nodes"]) * int(data["ppn"])
            return {**data, "procs_lo": size, "procs_hi": size}
        return data

    @property
    def layout(self) -> tuple[int, int] | None:
        """(nodes, ppn) of a layout block, None for a layout-free one."""
        return None if self.nodes is None or self.ppn is None else (self.nodes, self.ppn)

    def name(self) -> str:
        """The block as messages name it: `procs 2..4` or `nodes 2 ppn 4`."""
        if self.layout is not None:
            return f"nodes {self.nodes} ppn {self.ppn}"
        return f"procs {self.procs_lo}..{self.procs_hi}"

    @model_validator(mode="after")
    def _sorted(self) -> Block:
        if (self.nodes is None) != (self.ppn is None):
            raise ValueError("a layout block needs both nodes and ppn")
        if self.layout is not None and not self.procs_lo == self.procs_hi == self.nodes * self.ppn:  # type: ignore[operator]
            raise ValueError(f"nodes {self.nodes} ppn {self.ppn}: procs must be {self.nodes} x {self.ppn}")
        if self.procs_lo > self.procs_hi:
            raise ValueError(f"procs {self.procs_lo}..{self.procs_hi}: lo > hi")
        for prev, cur in zip(self.rules, self.rules[1:]):
            if cur.lo <= prev.hi:
                raise ValueError(f"bytes {cur.lo}..{cur.hi} not after {prev.lo}..{prev.hi} ({self.name()})")
        return self


# The suffix of a section of a started form: `collective allreduce#nonblocking`.
FORM_SUFFIX = {form: f"#{form}" for form in catalog.FORMS[1:]}
NAME_LIMIT = 96   # a started form's member name, as native/core/ct_profile_impl.h CT_PROFILE_NAME


def split_section(name: str) -> tuple[str, str]:
    """(collective, form) of a section name: `allreduce` -> (allreduce, blocking),
    `allreduce#persistent` -> (allreduce, persistent); ValueError for an unknown suffix."""
    base, sep, form = name.partition("#")
    if not sep:
        return name, catalog.FORMS[0]
    if form not in FORM_SUFFIX:
        raise ValueError(f"unknown form {form!r} of {name!r}")
    return base, form


def started_member(collective: str, form: str, name: str) -> bool:
    """Whether `name` is a library algorithm of `collective` in `form` by its shape,
    `lib:<collective>:<algorithm>#<form>` (the C parser's ct_started_member)."""
    head, suffix = f"lib:{collective}:", FORM_SUFFIX[form]
    alg = name[len(head):len(name) - len(suffix)]
    return (len(name.encode()) < NAME_LIMIT and name.startswith(head) and name.endswith(suffix)
            and len(name) > len(head) + len(suffix) and ":" not in alg and "#" not in alg)


class Section(BaseModel):
    """The rules of one collective in one form: `allreduce` (its blocking calls, served by
    mock-ups), `allreduce#nonblocking` and `allreduce#persistent` (MPI_Iallreduce and
    MPI_Allreduce_init, served by the library's algorithms of that form,
    `lib:allreduce:<algorithm>#nonblocking`, which only MPI_Init can resolve)."""

    model_config = ConfigDict(frozen=True)
    collective: str
    blocks: tuple[Block, ...] = Field(min_length=1)

    @property
    def base(self) -> str:
        return split_section(self.collective)[0]

    @property
    def form(self) -> str:
        return split_section(self.collective)[1]

    @model_validator(mode="after")
    def _valid(self) -> Section:
        cat = catalog.load()
        base, form = split_section(self.collective)
        if base not in cat.collective_names():
            raise ValueError(f"unknown collective {self.collective!r}")
        if form != catalog.FORMS[0]:
            for block in self.blocks:
                if block.layout is not None:
                    raise ValueError(f"{self.collective}: layout block {block.name()} (a started call cannot "
                                     "learn its layout without blocking)")
                for rule in block.rules:
                    if not started_member(base, form, rule.variant):
                        raise ValueError(f"{rule.variant!r} is not lib:{base}:<algorithm>{FORM_SUFFIX[form]}")
        own = {v.name for v in cat.variants_of(base)} if form == catalog.FORMS[0] else set()
        for prev, cur in zip(self.blocks, self.blocks[1:]):
            if prev.layout is not None and cur.layout is None:
                raise ValueError(f"{self.collective}: {cur.name()} after a layout block (layout-free blocks first)")
            if prev.layout is not None and cur.layout is not None and cur.layout <= prev.layout:
                raise ValueError(f"{self.collective}: {cur.name()} not after {prev.name()}")
            if prev.layout is None and cur.layout is None and cur.procs_lo <= prev.procs_hi:
                raise ValueError(f"{self.collective}: {cur.name()} not after {prev.name()}")
        for block in self.blocks:
            for rule in block.rules:
                if form == catalog.FORMS[0] and rule.variant not in own:
                    raise ValueError(f"variant {rule.variant!r} is not a variant of {self.collective}")
        return self


class Profile(BaseModel):
    """A tuning profile: provenance (informative) and rules (what the interposer applies)."""

    model_config = ConfigDict(frozen=True)
    provenance: dict[str, str] = Field(default_factory=dict)
    sections: tuple[Section, ...] = ()

    @model_validator(mode="after")
    def _valid(self) -> Profile:
        for key, value in self.provenance.items():
            if key not in PROVENANCE_KEYS:
                raise ValueError(f"unknown provenance key {key!r}; known: {', '.join(PROVENANCE_KEYS)}")
            if not clean_value(value):
                raise ValueError(f"provenance {key!r} has no value")
        names = [s.collective for s in self.sections]
        if len(names) != len(set(names)):
            raise ValueError("a collective appears in two sections")
        if sum(len(s.blocks) for s in self.sections) > MAX_BLOCKS:
            raise ValueError(f"more than {MAX_BLOCKS} procs blocks")
        if self.rule_count() > MAX_RULES:
            raise ValueError(f"more than {MAX_RULES} bytes rules")
        return self

    def rule_count(self) -> int:
        return sum(len(b.rules) for s in self.sections for b in s.blocks)

    def section(self, collective: str) -> Section | None:
        return next((s for s in self.sections if s.collective == collective), None)

    def has_layouts(self) -> bool:
        """Whether some collective has layout blocks (`nodes N ppn P`)."""
        return any(b.layout is not None for s in self.sections for b in s.blocks)

    def lookup(self, collective: str, nprocs: int, msg_bytes: int,
               layout: tuple[int, int] | None = None) -> str | None:
        """The variant for a call on a communicator of `nprocs` processes, `layout` (nodes, ppn)
        when they are spread uniformly (None: unknown or not uniform), or None for "the library".
        Same answer as ct_profile_lookup_layout: a layout block of exactly that layout decides
        alone; otherwise the layout-free blocks."""
        section = self.section(collective)
        if section is None or msg_bytes < 0:
            return None
        exact = None
        if layout is not None and layout[0] > 0 and layout[1] > 0 and layout[0] * layout[1] == nprocs:
            exact = next((b for b in section.blocks if b.layout == layout), None)
        candidates = [exact] if exact is not None else [b for b in section.blocks if b.layout is None]
        for block in candidates:
            if block.procs_lo <= nprocs <= block.procs_hi:
                for rule in block.rules:
                    if rule.lo <= msg_bytes <= rule.hi:
                        return rule.variant
        return None

    def canonical_lines(self) -> list[str]:
        """The rules as hashed by ct_profile_hash (sections in byte order of their names, a started
        form's with its suffix); a layout block's lines end in its layout, `NODESxPPN`."""
        lines = []
        for section in sorted(self.sections, key=lambda s: s.collective.encode()):
            for b in section.blocks:
                tail = f" {b.nodes}x{b.ppn}" if b.layout is not None else ""
                for r in b.rules:
                    lines.append(f"{section.collective} {b.procs_lo} {b.procs_hi} {r.lo} {r.hi} {r.variant}{tail}\n")
        return lines

    def content_hash(self) -> int:
        """FNV-1a 64 over the canonical rules: equal to the C core's ct_profile_hash."""
        return textformat.fnv1a64("".join(self.canonical_lines()).encode())


def clean_value(value: str) -> str:
    """A provenance value as one line of text the parser accepts."""
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", value).strip(" \t")
    return text
