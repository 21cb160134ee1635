"""Tuning profiles as text (docs/profile.md): our format's reader and writer; the model they read
into is colltune.tune.profile_model (re-exported here), PGMPITuneLib `.prf` files are read by
colltune.tune.prf, profiles shown by colltune.tune.profile_view.

The reader accepts exactly what the C core's parser (native/core/profile.c) accepts and reports
the same message for the same file; tests hold both to the same accept/reject files. Keep the two
in step: a rule added here is a rule added there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from colltune import catalog, textformat
from colltune.paths import writable_file
from colltune.textformat import MAX_LINE, NUMBER
from colltune.textformat import show as _show
from colltune.tune.profile_model import (
    FORM_SUFFIX,
    MAX_BLOCKS,
    MAX_BYTES,
    MAX_PROCS,
    MAX_RULES,
    PROVENANCE_KEYS,
    Block,
    Profile,
    ProfileError,
    Rule,
    Section,
    clean_value,
    split_section,
    started_member,
)

# The text syntax (the model does not depend on it).
FORMAT_VERSION = 1
HEADER_WORD = "colltune-profile"
MAX_FIELDS = 8

__all__ = [
    "FORMAT_VERSION", "HEADER_WORD", "MAX_BLOCKS", "MAX_BYTES", "MAX_FIELDS", "MAX_PROCS", "MAX_RULES",
    "PROVENANCE_KEYS", "Block", "Profile", "ProfileError", "Rule", "Section", "clean_value",
    "format_profile", "parse_profile", "read_profile", "write_profile", "FORM_SUFFIX", "split_section",
    "started_member",
]

# The lexical rules of native/core/profile.c (colltune.textformat has the ones both formats share).
_DIALECT = textformat.Dialect(
    too_large_line=1, too_large="a profile is never that big (wrong file?)",
    control=lambda byte: f"control character 0x{byte:02x}; remove it (a profile is text)", cr_on_last_line=False)


# --------------------------------------------------------------------------------------------
# Writer


def format_profile(profile: Profile) -> str:
    """The profile as text in format version 1 (parses back to an equal profile)."""
    out = [f"{HEADER_WORD} {FORMAT_VERSION}", "# colltune tuning profile: docs/profile.md"]
    for key in PROVENANCE_KEYS:
        if key in profile.provenance:
            value = clean_value(profile.provenance[key])
            room = MAX_LINE - len(key) - 1
            encoded = value.encode()
            if len(encoded) > room:
                value = encoded[:room].decode(errors="ignore").rstrip(" \t")
            out.append(f"{key} {value}")
    for section in profile.sections:
        out.append(f"collective {section.collective}")
        for block in section.blocks:
            if block.layout is not None:
                out.append(f"  nodes {block.nodes} ppn {block.ppn}")
            else:
                out.append(f"  procs {block.procs_lo} {block.procs_hi}")
            for rule in block.rules:
                out.append(f"    bytes {rule.lo} {rule.hi} {rule.variant}")
    out.append("end")
    return "\n".join(out) + "\n"


def write_profile(profile: Profile, path: str | Path) -> Path:
    """Write atomically (a reader never sees a half-written profile)."""
    path = writable_file(path, "profile")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(format_profile(profile), encoding="utf-8")
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------------------------
# Reader (mirror of native/core/profile.c; same states, same checks in the same order)


class _Parser:
    def __init__(self, name: str) -> None:
        self.name = name
        self.line = 0
        self.state = "header"  # header, provenance, coll, block, rules, end
        self.provenance: dict[str, str] = {}
        # per collective its blocks: (procs lo, procs hi, rules, (nodes, ppn) or None)
        self.sections: list[tuple[str, list[tuple[int, int, list[Rule], tuple[int, int] | None]]]] = []
        self.coll_line = 0
        self.block_line = 0
        self.nblocks = 0
        self.nrules = 0

    def fail(self, line: int, message: str) -> ProfileError:
        return ProfileError(f"{self.name}:{line}: {message}")

    @property
    def coll(self) -> str:
        return self.sections[-1][0]

    def block_name(self) -> str:
        """The open block as messages name it (the C parser's ct_block_name)."""
        lo, hi, _, layout = self.sections[-1][1][-1]
        return f"nodes {layout[0]} ppn {layout[1]}" if layout is not None else f"procs {lo}..{hi}"

    def close_open(self, whole: bool) -> None:
        if whole and self.state == "coll":
            raise self.fail(
                self.coll_line,
                f"collective {self.coll} has no 'procs' or 'nodes' block; add 'procs LO HI' (or "
                "'nodes N ppn P') with rules or remove it",
            )
        if self.state == "block":
            raise self.fail(
                self.block_line,
                f"{self.block_name()} of {self.coll} has no 'bytes' rules; add 'bytes LO HI VARIANT' "
                "lines or remove the block",
            )

    def numbers(self, words: Sequence[bytes]) -> tuple[int, int]:
        for w in words:
            if not NUMBER.fullmatch(w):
                raise self.fail(self.line, f"'{_show(w)}' is not a number (1 to 19 decimal digits)")
        return int(words[0]), int(words[1])

    def header(self, words: list[bytes], nw: int) -> None:
        v = str(FORMAT_VERSION)
        if words[0] != HEADER_WORD.encode():
            raise self.fail(
                self.line,
                f"not a colltune profile (the first line must be '{HEADER_WORD} {v}'); write one "
                "with colltune tune or convert a .prf with colltune profile import",
            )
        if nw != 2:
            raise self.fail(self.line, f"the header takes one version: '{HEADER_WORD} {v}'")
        if words[1] != v.encode():
            raise self.fail(
                self.line,
                f"unsupported profile version '{_show(words[1])}' (this colltune reads version {v}); "
                "regenerate the profile with this colltune",
            )
        self.state = "provenance"

    def provenance_line(self, key: str, nw: int, text: bytes) -> None:
        if self.state != "provenance":
            raise self.fail(
                self.line,
                f"provenance '{key}' after the first collective; move it above the first 'collective' line",
            )
        if key in self.provenance:
            raise self.fail(self.line, f"duplicate '{key}' line; keep one")
        if nw < 2:
            raise self.fail(self.line, f"'{key}' needs a value: '{key} VALUE'")
        value = text.strip(b" \t")[len(key) :].strip(b" \t")
        self.provenance[key] = value.decode("utf-8", errors="replace")

    def collective(self, words: list[bytes], nw: int) -> None:
        self.close_open(True)
        if nw != 2:
            raise self.fail(self.line, "'collective' takes one name: 'collective NAME'")
        name = words[1].decode("utf-8", errors="replace")
        try:
            base, _ = split_section(name)
        except ValueError:
            base = ""
        if len(words[1]) > textformat.SHOW or base not in catalog.load().collective_names():
            raise self.fail(
                self.line,
                f"unknown collective '{_show(words[1])}'; use a collective of collectives.toml, or "
                "<collective>#nonblocking (#persistent) for its nonblocking calls (persistent requests) "
                "(colltune profile show --variants)",
            )
        if any(s[0] == name for s in self.sections):
            raise self.fail(self.line, f"collective {name} appears twice; merge its sections")
        self.sections.append((name, []))
        self.coll_line = self.line
        self.state = "coll"

    def block_start(self, keyword: str) -> None:
        if self.state not in ("coll", "block", "rules"):
            raise self.fail(self.line, f"'{keyword}' before any 'collective'; start a section with 'collective NAME'")
        self.close_open(False)

    def block_add(self, lo: int, hi: int, layout: tuple[int, int] | None) -> None:
        if self.nblocks >= MAX_BLOCKS:
            raise self.fail(self.line, f"more than {MAX_BLOCKS} blocks ('procs' and 'nodes'); merge "
                            "communicator-size ranges")
        self.nblocks += 1
        self.sections[-1][1].append((lo, hi, [], layout))
        self.block_line = self.line
        self.state = "block"

    def procs(self, words: list[bytes], nw: int) -> None:
        self.block_start("procs")
        if nw != 3:
            raise self.fail(self.line, "'procs' takes two numbers: 'procs LO HI'")
        lo, hi = self.numbers(words[1:3])
        if lo < 1 or lo > hi or hi > MAX_PROCS:
            raise self.fail(
                self.line,
                f"procs {_show(words[1])}..{_show(words[2])} invalid: need 1 <= LO <= HI <= {MAX_PROCS}",
            )
        blocks = self.sections[-1][1]
        if blocks and blocks[-1][3] is not None:
            raise self.fail(
                self.line,
                f"procs {lo}..{hi} of {self.coll} comes after a 'nodes' block; put the layout-free "
                "'procs' blocks first",
            )
        if blocks:
            plo, phi, _, _ = blocks[-1]
            if lo < plo:
                raise self.fail(
                    self.line,
                    f"procs {lo}..{hi} of {self.coll} comes after procs {plo}..{phi}; sort the "
                    "blocks by communicator size",
                )
            if lo <= phi:
                raise self.fail(
                    self.line,
                    f"procs {lo}..{hi} overlaps the previous block {plo}..{phi} of {self.coll}; "
                    "make the blocks disjoint",
                )
        self.block_add(lo, hi, None)

    def nodes(self, words: list[bytes], nw: int) -> None:
        self.block_start("nodes")
        if nw != 4 or words[2] != b"ppn":
            raise self.fail(self.line, "'nodes' takes a layout: 'nodes NODES ppn PPN' (e.g. 'nodes 2 ppn 4')")
        nodes, ppn = self.numbers([words[1], words[3]])
        if nodes < 1 or ppn < 1 or nodes > MAX_PROCS or ppn > MAX_PROCS or nodes * ppn > MAX_PROCS:
            raise self.fail(
                self.line,
                f"nodes {_show(words[1])} ppn {_show(words[3])} invalid: need NODES >= 1, PPN >= 1 and "
                f"NODES x PPN <= {MAX_PROCS}",
            )
        if split_section(self.coll)[1] != catalog.FORMS[0]:
            raise self.fail(
                self.line,
                f"'nodes' block in {self.coll}: a started call cannot learn its communicator's layout "
                "without blocking; use 'procs LO HI' blocks in this section",
            )
        blocks = self.sections[-1][1]
        if blocks and blocks[-1][3] is not None:
            was = blocks[-1][3]
            if (nodes, ppn) == was:
                raise self.fail(self.line, f"nodes {nodes} ppn {ppn} of {self.coll} appears twice; merge the two blocks")
            if (nodes, ppn) < was:
                raise self.fail(
                    self.line,
                    f"nodes {nodes} ppn {ppn} of {self.coll} comes after nodes {was[0]} ppn {was[1]}; sort "
                    "the layout blocks by nodes, then ppn",
                )
        self.block_add(nodes * ppn, nodes * ppn, (nodes, ppn))

    def variant(self, word: bytes) -> str:
        name = word.decode("utf-8", errors="replace")
        if word == b"default":
            raise self.fail(
                self.line, "'default' cannot be a rule (sizes without a rule use the library); remove the line"
            )
        base, form = split_section(self.coll)
        if form != catalog.FORMS[0]:
            if not started_member(base, form, name) or name.encode() != word:
                raise self.fail(
                    self.line,
                    f"'{_show(word)}' cannot serve {self.coll}: its rules name the library's algorithms of "
                    f"that form, lib:{base}:<algorithm>{FORM_SUFFIX[form]} (the started forms have no mock-ups)",
                )
            return name
        if word.startswith(b"lib:"):
            raise self.fail(
                self.line,
                f"library algorithm '{_show(word)}' cannot be applied by the interposer; remove the "
                "line and use colltune export --native for library algorithms",
            )
        cat = catalog.load()
        owner = next((v.collective for v in cat.variants if v.name.encode() == word), None)
        if owner is None:
            raise self.fail(
                self.line,
                f"unknown variant '{_show(word)}'; use a variant of {self.coll} (colltune profile show --variants)",
            )
        if owner != self.coll:
            raise self.fail(
                self.line,
                f"variant '{name}' belongs to collective {owner}, not {self.coll}; use a variant of {self.coll}",
            )
        return name

    def bytes_rule(self, words: list[bytes], nw: int) -> None:
        if self.state not in ("block", "rules"):
            raise self.fail(self.line, "'bytes' outside a block; put it after 'procs LO HI' or 'nodes N ppn P'")
        if nw != 4:
            raise self.fail(self.line, "'bytes' takes LO HI VARIANT: 'bytes 0 1024 NAME'")
        lo, hi = self.numbers(words[1:3])
        if lo > hi or hi > MAX_BYTES:
            raise self.fail(
                self.line,
                f"bytes {_show(words[1])}..{_show(words[2])} invalid: need LO <= HI <= {MAX_BYTES}",
            )
        rules = self.sections[-1][1][-1][2]
        if rules:
            prev = rules[-1]
            if lo < prev.lo:
                raise self.fail(
                    self.line,
                    f"bytes {lo}..{hi} of {self.coll} {self.block_name()} comes after bytes "
                    f"{prev.lo}..{prev.hi}; sort the rules by size",
                )
            if lo <= prev.hi:
                raise self.fail(
                    self.line,
                    f"bytes {lo}..{hi} overlaps the previous rule {prev.lo}..{prev.hi} of {self.coll} "
                    f"{self.block_name()}; make the ranges disjoint",
                )
        variant = self.variant(words[3])
        if self.nrules >= MAX_RULES:
            raise self.fail(self.line, f"more than {MAX_RULES} bytes rules; merge message-size ranges")
        self.nrules += 1
        rules.append(Rule(lo=lo, hi=hi, variant=variant))
        self.state = "rules"

    def end(self, nw: int) -> None:
        self.close_open(True)
        if nw != 1:
            raise self.fail(self.line, "'end' takes no arguments")
        self.state = "end"

    def statement(self, words: list[bytes], nw: int, text: bytes) -> None:
        if self.state == "header":
            return self.header(words, nw)
        if self.state == "end":
            raise self.fail(self.line, f"'{_show(words[0])}' after 'end'; remove it or move it before 'end'")
        keyword = words[0]
        if keyword == b"collective":
            return self.collective(words, nw)
        if keyword == b"procs":
            return self.procs(words, nw)
        if keyword == b"nodes":
            return self.nodes(words, nw)
        if keyword == b"bytes":
            return self.bytes_rule(words, nw)
        if keyword == b"end":
            return self.end(nw)
        for key in PROVENANCE_KEYS:
            if keyword == key.encode():
                return self.provenance_line(key, nw, text)
        raise self.fail(
            self.line,
            f"unknown keyword '{_show(keyword)}'; expected collective, procs, nodes, bytes, end or a "
            "provenance key (docs/profile.md)",
        )

    def run(self, data: bytes) -> Profile:
        try:
            for line in textformat.lines(data, _DIALECT):
                self.line = line.number
                if line.words:
                    self.statement(line.words, min(len(line.words), MAX_FIELDS + 1), line.text)
        except textformat.LexError as exc:
            raise self.fail(exc.line, exc.message) from None
        if self.state == "header":
            raise self.fail(
                max(self.line, 1),
                f"no '{HEADER_WORD} {FORMAT_VERSION}' header (empty file?); write a profile with colltune tune",
            )
        if self.state != "end":
            raise self.fail(
                self.line,
                "file ends without the 'end' line (truncated?); regenerate it with colltune tune or add 'end'",
            )
        sections = tuple(
            Section(
                collective=name,
                blocks=tuple(Block(procs_lo=lo, procs_hi=hi, rules=tuple(rules),
                                   nodes=layout[0] if layout else None, ppn=layout[1] if layout else None)
                             for lo, hi, rules, layout in blocks),
            )
            for name, blocks in self.sections
        )
        return Profile(provenance=self.provenance, sections=sections)


def parse_profile(data: bytes | str, name: str = "<profile>") -> Profile:
    """Parse profile text; raises ProfileError("name:line: ...") exactly where the C parser fails."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _Parser(name).run(data)


def read_profile(path: str | Path) -> Profile:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ProfileError(
            f"{path}:0: cannot open: {exc.strerror}; point COLLTUNE_PROFILE to a readable profile"
        ) from exc
    return parse_profile(data, str(path))


# --------------------------------------------------------------------------------------------
