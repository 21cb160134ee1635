"""advise's address -> function resolution on binaries without debug info: a frame is named only
by a function symbol that contains it (addr2line alone names it after the nearest symbol before
it, whatever that symbol's size)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from colltune.advise import symbols
from colltune.advise.profile_run import Mapping

PROGRAM = r"""
#include <stdio.h>
int exported(int x) { return x * 3 + 1; }
static int __attribute__((noinline)) hidden(int x)
{ volatile int y = x; for (int i = 0; i < 4; i++) y += i * x; return y; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", hidden(argc) + exported(argc)); return 0; }
"""


def _symbol(binary: Path, name: str) -> tuple[int, int]:
    out = subprocess.run(["nm", "-S", str(binary)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name:
            return int(parts[0], 16), int(parts[1], 16)
    raise AssertionError(f"{name} not in {binary}")


@pytest.fixture(scope="module")
def binaries(tmp_path_factory) -> tuple[Path, Path]:
    if not all(shutil.which(t) for t in ("gcc", "nm", "addr2line", "strip")):
        pytest.skip("needs gcc and binutils (nm, addr2line, strip)")
    d = tmp_path_factory.mktemp("symbols")
    (d / "p.c").write_text(PROGRAM)
    # position-dependent: the ELF address is the run-time address, no mapping arithmetic needed
    subprocess.run(["gcc", "-O0", "-no-pie", "-rdynamic", "-o", str(d / "full"), str(d / "p.c")], check=True)
    shutil.copy(d / "full", d / "stripped")
    subprocess.run(["strip", str(d / "stripped")], check=True)
    return d / "full", d / "stripped"


def test_a_frame_outside_every_symbol_is_binary_plus_offset(binaries):
    full, stripped = binaries
    hidden, hidden_size = _symbol(full, "hidden")
    exported, exported_size = _symbol(full, "exported")
    assert exported + exported_size <= hidden  # the static function lies after the exported one
    inside_hidden = hidden + hidden_size // 2 + 1      # a return address: resolve looks at -1
    inside_exported = exported + exported_size // 2 + 1
    maps = [Mapping(0x400000, 0x800000, 0, str(stripped))]
    sites = symbols.resolve({inside_hidden, inside_exported}, maps)
    assert sites[inside_hidden] == symbols.Site(inside_hidden, str(stripped), "??",
                                                f"stripped+{hex(inside_hidden)}")
    assert sites[inside_hidden].label == f"stripped+{hex(inside_hidden)}"
    assert sites[inside_exported] == symbols.Site(inside_exported, str(stripped), "exported",
                                                  f"stripped+{hex(inside_exported)}")


def test_the_static_symbol_table_still_names_static_functions(binaries):
    full, _ = binaries
    hidden, hidden_size = _symbol(full, "hidden")
    address = hidden + hidden_size // 2 + 1
    sites = symbols.resolve({address}, [Mapping(0x400000, 0x800000, 0, str(full))])
    assert sites[address].function == "hidden"
    # the static table's FILE symbol gives the source file, without a line
    assert sites[address].location == "p.c:?"
