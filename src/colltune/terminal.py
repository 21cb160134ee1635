"""Output for terminals of any width: paths shortened to fit, tables that never wrap a path.

A path folded over several lines of a table cell cannot be read or copied. Cells holding
paths therefore never wrap: a table is shown with whole paths when the terminal is wide enough,
with paths shortened in the middle (`~` for the home folder, `…` for the folders left out, the
file name kept) when that keeps them readable, and otherwise a list with one path per line.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console, RenderableType
from rich.measure import Measurement

ELLIPSIS = "…"


def _tilde(path: str) -> str:
    home = str(Path.home())
    if home not in ("/", "") and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def shorten_path(path: str | Path, width: int) -> str:
    """`path` in at most `width` characters, keeping what tells installations apart (the end:
    install folder, bin/, the file name): whole if it fits; else with the home folder as `~`;
    else the first folder, `…` and the last three or more components
    (/work/…/mpich/bin/mpicc); else the last two components whole and the folders before them
    cut in the middle (/opt/site/…mpi-5.0.11-gcc/bin/mpicc); at worst the text cut in the middle."""
    text = str(path)
    if len(text) <= width:
        return text
    text = _tilde(text)
    if len(text) <= width:
        return text
    parts = text.split("/")
    first, rest = ("/" + parts[1], parts[2:]) if parts[0] == "" and len(parts) > 2 else (parts[0], parts[1:])
    for keep in range(len(rest) - 1, 2, -1):
        candidate = f"{first}/{ELLIPSIS}/{'/'.join(rest[-keep:])}"
        if len(candidate) <= width:
            return candidate
    tail = "/".join(parts[-2:])
    prefix = text[:len(text) - len(tail)]
    budget = width - len(tail) - len(ELLIPSIS)
    if len(parts) > 2 and budget >= 6:
        head = budget // 3  # the end of the folder names says more (versions, install names)
        return prefix[:head] + ELLIPSIS + prefix[len(prefix) - (budget - head):] + tail
    if width <= 1:
        return ELLIPSIS[:width]
    head = (width - 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (width - 1 - head):]


def natural_width(console: Console, renderable: RenderableType) -> int:
    """Columns `renderable` takes when nothing wraps."""
    return Measurement.get(console, console.options.update(width=10_000), renderable).maximum


def fits(console: Console, renderable: RenderableType) -> bool:
    """Whether `renderable` (a table of no_wrap columns) fits the console without folding."""
    return natural_width(console, renderable) <= console.width
