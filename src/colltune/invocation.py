"""How the user started colltune, so that every command line colltune prints for them starts the
same program: `colltune` when that name on PATH is this program, else the path they typed
(`.venv/bin/colltune` after `make demo`, whose venv is not on PATH)."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path


def colltune_word() -> str:
    """The word that starts colltune again (relative paths stay relative: a printed next step
    runs from the directory colltune was started in)."""
    started = Path(sys.argv[0]) if sys.argv and Path(sys.argv[0]).name == "colltune" else None
    if started is None:  # python -m, or a test runner: the console script next to the interpreter
        beside = Path(sys.executable).parent / "colltune"
        started = beside if beside.exists() else None
    if started is None:
        return "colltune"
    on_path = shutil.which("colltune")
    if on_path is not None and _same_file(on_path, started):
        return "colltune"
    return shlex.quote(str(started))


def as_started(text: str) -> str:
    """`text` with every quoted command line `` `colltune ...` `` starting colltune as started."""
    word = colltune_word()
    return text if word == "colltune" else text.replace("`colltune ", f"`{word} ")


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False
