"""Where colltune finds its native sources and keeps its build cache."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def native_dir() -> Path:
    """The C core's sources: the repository's `native/` (editable install) or the copy shipped
    inside the wheel (`colltune/_native`)."""
    shipped = _PACKAGE_DIR / "_native"
    if shipped.is_dir():
        return shipped
    repo = _PACKAGE_DIR.parent.parent / "native"
    if repo.is_dir():
        return repo
    raise FileNotFoundError(
        "colltune's C sources are missing (neither colltune/_native nor ../../native exists); "
        "reinstall colltune with `pip install .` from the repository"
    )


def repo_root() -> Path | None:
    """The source checkout when running from one (used to find project-local MPI installs)."""
    root = _PACKAGE_DIR.parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def cache_dir() -> Path:
    """Build cache: $COLLTUNE_CACHE, else $XDG_CACHE_HOME/colltune, else ~/.cache/colltune."""
    if env := os.environ.get("COLLTUNE_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "colltune"
