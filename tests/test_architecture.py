"""docs/architecture.md against the tree: every module of src/colltune has its row in the module
table (and every row a module), and Python imports run one way down the layers the page draws."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "colltune"
DOC = ROOT / "docs" / "architecture.md"

# The page's diagram, top to bottom: a module may import its own layer and the ones below it.
LAYERS = ("commands", "interposer", "compare", "report", "learn", "advise", "tune", "verify", "measure", "mpi",
          "store", "base")
TOP_LEVEL = {"cli.py": "commands", "interposer.py": "interposer"}  # other top-level modules: base


def _modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}


def _layer(module: str) -> str:
    head = module.split("/")[0]
    if head.endswith(".py"):
        return TOP_LEVEL.get(head, "base")
    return head


def _imported(path: Path) -> set[str]:
    """colltune modules or packages a file imports, at any depth (lazy imports count too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("colltune"):
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("colltune"))
    return names


def _module_of(name: str) -> str | None:
    """`colltune.verify.stats.Test` -> `verify/stats.py`; a package -> its first part + '/'."""
    parts = name.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if (PACKAGE / Path(*parts[:n])).with_suffix(".py").is_file():
            return "/".join(parts[:n]) + ".py"
        if (PACKAGE / Path(*parts[:n])).is_dir():
            return "/".join(parts[:n]) + "/"
    return None


def test_every_module_has_its_row_and_every_row_a_module() -> None:
    rows = set(re.findall(r"^\| `([\w/]+\.py)` \|", DOC.read_text(), flags=re.MULTILINE))
    tree = _modules()
    assert not tree - rows, f"modules missing from docs/architecture.md's table: {sorted(tree - rows)}"
    assert not rows - tree, f"rows of docs/architecture.md's table without a module: {sorted(rows - tree)}"


def test_imports_run_down_the_layers() -> None:
    upward = []
    for module in sorted(_modules()):
        mine = LAYERS.index(_layer(module))
        for name in sorted(_imported(PACKAGE / module)):
            target = _module_of(name)
            if target is not None and LAYERS.index(_layer(target)) < mine:
                upward.append(f"{module} imports {name} ({_layer(target)} is above {_layer(module)})")
    assert not upward, "\n".join(upward)


def test_only_the_store_engine_imports_duckdb() -> None:
    """DuckDB's errors leave the store as StoreError only if nothing else holds a connection."""
    importers = set()
    for module in _modules():
        for node in ast.walk(ast.parse((PACKAGE / module).read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "duckdb" or n.startswith("duckdb.") for n in names):
                importers.add(module)
    assert importers == {"store/engine.py"}
