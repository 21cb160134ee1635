"""The generated catalog and static rules of the variant sources (no MPI needed)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from colltune import catalog
from colltune.paths import native_dir

GEN = ("gen", "spec", "generated", "include")


def _gen(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(root / "gen" / "gen_catalog.py"), *args],
                          capture_output=True, text=True, check=False)


@pytest.fixture()
def native_copy(tmp_path: Path) -> Path:
    for sub in GEN:
        shutil.copytree(native_dir() / sub, tmp_path / sub)
    return tmp_path


def test_generated_files_are_current() -> None:
    proc = _gen(native_dir(), "--check")
    assert proc.returncode == 0, proc.stderr


def test_check_detects_a_stale_catalog(native_copy: Path) -> None:
    toml = native_copy / "spec" / "collectives.toml"
    toml.write_text(toml.read_text().replace('scratch = "p * I + n / p"', 'scratch = "2 * p * I"'))
    proc = _gen(native_copy, "--check")
    assert proc.returncode == 1
    assert "ct_catalog.c is stale" in proc.stderr
    assert _gen(native_copy).returncode == 0
    assert '"2 * p * I", ct_scratch_reducescatterblock_as_reducescatter' in (
        native_copy / "generated" / "ct_catalog.c").read_text()
    assert _gen(native_copy, "--check").returncode == 0


def test_unknown_scratch_variable_is_rejected(native_copy: Path) -> None:
    toml = native_copy / "spec" / "collectives.toml"
    toml.write_text(toml.read_text().replace('scratch = "p * I + n / p"', 'scratch = "q * I"'))
    proc = _gen(native_copy, "--check")
    assert proc.returncode == 2
    assert "reducescatterblock_as_reducescatter: scratch uses unknown variable 'q'" in proc.stderr


def test_generated_enums_follow_the_table() -> None:
    header = (native_dir() / "generated" / "ct_catalog.h").read_text()
    cat = catalog.load()
    enums = re.findall(r"^\s+CT_VAR_(\w+) = (\d+),", header, re.M)
    assert [(name.lower(), int(i)) for name, i in enums] == [
        (v.name, i) for i, v in enumerate(cat.variants)]
    assert f"CT_NUM_VARIANTS = {len(cat.variants)}" in header
    assert len(cat.variants) == 28


def test_every_variant_is_implemented_with_the_mpi_signature() -> None:
    cat = catalog.load()
    header = (native_dir() / "include" / "ct_variants.h").read_text()
    for v in cat.variants:
        source = (native_dir() / "variants" / f"{v.collective}.c").read_text()
        assert re.search(rf"^int colltune_{v.name}\(", source, re.M), v.name
        coll = next(c for c in cat.collectives if c.name == v.collective)
        params = ", ".join(f"{a.ctype}{'' if a.ctype.endswith('*') else ' '}{a.name}"
                           for a in coll.args)
        assert f"int colltune_{v.name}({params});" in header, v.name


def test_variants_call_the_library_only_through_pmpi() -> None:
    call = re.compile(r"(?<![\w])MPI_[A-Z][a-z][a-z0-9_]*\s*\(")
    for directory in ("variants", "core"):
        for path in sorted((native_dir() / directory).glob("*.c")):
            text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
            assert not call.findall(text), f"{path.name}: {call.findall(text)}"


def test_only_reductions_need_contiguous_datatypes() -> None:
    # Data movement must not depend on rank-local layouts (docs/variants.md, "Datatypes").
    cat = catalog.load()
    with_op = {c.name for c in cat.collectives if any(a.role == "op" for a in c.args)}
    for v in cat.variants:
        if "contiguous" in v.needs:
            assert v.collective in with_op, v.name


def test_no_variant_claims_to_reorder_a_reduction() -> None:
    # docs/variants.md: every variant keeps rank order; the selftest runs a non-commutative op.
    assert all("commutative" not in v.needs for v in catalog.load().variants)
