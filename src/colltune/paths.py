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


def writable_file(path: str | Path, what: str) -> Path:
    """Make `path` writable as a file: create its missing parent folders, or raise an error that
    names the cause (a parent that is a file, a read-only folder) instead of a guess."""
    from colltune.errors import ColltuneError

    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ColltuneError(f"cannot write the {what} {path}: {parent} exists and is not a folder") from None
    except PermissionError:
        raise ColltuneError(f"cannot write the {what} {path}: no permission to create {parent}; "
                            "choose a path in a folder you can write") from None
    if path.is_dir():
        raise ColltuneError(f"cannot write the {what} {path}: it is a folder; give a file name")
    target = path if path.exists() else parent
    if not os.access(target, os.W_OK):
        raise ColltuneError(f"cannot write the {what} {path}: {target} is read-only for this user; "
                            "choose another path")
    return path


def writable_dir(path: str | Path, what: str) -> Path:
    """Create the output folder `path` (and its parents), or raise an error naming the cause."""
    from colltune.errors import ColltuneError

    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ColltuneError(f"cannot write the {what} into {path}: it exists and is not a folder") from None
    except PermissionError:
        raise ColltuneError(f"cannot create the {what} folder {path}: permission denied") from None
    if not os.access(path, os.W_OK):
        raise ColltuneError(f"cannot write the {what} into {path}: the folder is read-only for this user")
    return path
