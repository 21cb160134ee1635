"""The lexical rules of colltune's two text formats: tuning profiles (docs/profile.md, read by
colltune.tune.profile) and selection tables (docs/select.md, colltune.learn.table).

Both are lines of blank-separated words, '#' comments and blank lines, with the same limits,
because the C core reads them in every rank (native/core/profile.c and select.c apply the same
rules; each format's grammar, what its words mean, stays with its reader). Where the two C parsers
still differ (the line of an oversized file, the wording of a control character, a CR ending an
unterminated last line) each format's Dialect says so, so that both readers keep reporting
exactly what their C parser reports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from colltune import formats

MAX_LINE = formats.TEXT_MAX_LINE  # bytes of a line, its newline (and a CR before it) not counted
MAX_FILE_BYTES = formats.TEXT_MAX_FILE_BYTES
SHOW = formats.TEXT_SHOW  # bytes of an offending word quoted in a message
NUMBER = re.compile(rb"[0-9]{1,19}")  # a whole number: 1 to 19 decimal digits, no sign
_BLANKS = re.compile(rb"[ \t]+")
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


class LexError(ValueError):
    """A file that breaks the lexical rules: the line (0 or 1 for the whole file) and why."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Dialect:
    """What one format's C parser does differently from the other's."""

    too_large_line: int  # the line number an oversized file is reported at
    too_large: str  # the message, after "larger than MAX_FILE_BYTES bytes; "
    control: Callable[[int], str]  # the message for a control character (its byte)
    cr_on_last_line: bool  # a CR that ends the last line, with no newline after it, is dropped too


@dataclass(frozen=True)
class Line:
    """One line of a file: its number (from 1), its text without the blanks around it, and its
    words (none for a blank line or a comment)."""

    number: int
    text: bytes
    words: list[bytes]


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64, the hash the C core gives a profile's rules and a selection table's bytes."""
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def show(word: bytes) -> str:
    """A word as the C parsers quote it: its first SHOW bytes, printable ASCII as is, others as \\xNN."""
    return "".join(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}" for b in word[:SHOW])


def lines(data: bytes, dialect: Dialect) -> Iterator[Line]:
    """Every line of `data`, checked against the limits; raises LexError at the first breach."""
    if len(data) > MAX_FILE_BYTES:
        raise LexError(dialect.too_large_line, f"larger than {MAX_FILE_BYTES} bytes; {dialect.too_large}")
    pieces = data.split(b"\n")
    unterminated = pieces.pop()  # after the last newline: empty when the file ends with one
    numbered = [(piece, True) for piece in pieces] + ([(unterminated, False)] if unterminated else [])
    for number, (piece, terminated) in enumerate(numbered, 1):
        if piece.endswith(b"\r") and (terminated or dialect.cr_on_last_line):
            piece = piece[:-1]
        if len(piece) > MAX_LINE:
            raise LexError(number, f"line longer than {MAX_LINE} bytes; shorten it")
        if bad := _CONTROL.search(piece):
            raise LexError(number, dialect.control(bad.group()[0]))
        text = piece.strip(b" \t")
        yield Line(number, text, [] if not text or text.startswith(b"#") else _BLANKS.split(text))
