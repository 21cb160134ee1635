"""benchmarks/scale/sed_inprocess.c (percall.py --in-process-sed): SimGrid's per-rank `sed -i -e
's/OLD/NEW/g' FILE`, done in the simulator's process, must leave every file exactly as GNU sed
does, and hand every other command to the C library's system()."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).parents[1] / "benchmarks" / "scale" / "sed_inprocess.c"

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("sed") is None,
                                reason="needs a C compiler and sed")


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shim") / "sed_inprocess.so"
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(out), str(SOURCE), "-ldl"],
                   check=True)
    return out


def system_with(shim: Path, command: str) -> int:
    """system(command) in a process with the shim preloaded: its return value."""
    code = f"import ctypes; print(ctypes.CDLL(None).system({command.encode()!r}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"LD_PRELOAD": str(shim), "PATH": "/usr/bin:/bin"})
    return int(proc.stdout.split()[-1])


# one unit: the name, '.' matching another byte, a newline it does not match, two names in a
# row, and a cut-off name that the next unit's first byte does not complete
CONTENT = (b"\x7fELF\x00libcolltune.so\x00libcolltuneXso\x00libcolltune\nso\x00"
           b"xlibcolltune.solibcolltune.so\x00libcolltune.s")


@pytest.mark.parametrize("old,new", [("libcolltune.so", "0000123tune.so"), ("libcolltune.so", "4095000tune.so")])
def test_the_file_is_what_gnu_sed_makes(shim: Path, tmp_path: Path, old: str, new: str) -> None:
    data = CONTENT * 3 + bytes(range(128))
    by_sed, by_shim = tmp_path / "by_sed.so", tmp_path / "by_shim.so"
    by_sed.write_bytes(data)
    by_shim.write_bytes(data)
    command = f"sed -i -e 's/{old}/{new}/g' "
    subprocess.run(command + str(by_sed), shell=True, check=True)
    assert system_with(shim, command + str(by_shim)) == 0
    assert by_shim.read_bytes() == by_sed.read_bytes()
    # '.' matched X and the dots, not the newline; the cut-off name at the end stays
    assert by_shim.read_bytes().count(new.encode()) == 3 * 4
    assert b"libcolltune\nso" in by_shim.read_bytes() and by_shim.read_bytes().endswith(bytes(range(128)))


def test_other_commands_go_to_the_c_library(shim: Path, tmp_path: Path) -> None:
    assert system_with(shim, "exit 3") == 3 << 8
    target = tmp_path / "f"
    target.write_bytes(b"aXb a.b")
    # a special character other than '.' in OLD: the real sed runs (and reads [X] as a class)
    assert system_with(shim, f"sed -i -e 's/a[X]b/ccc/g' {target}") == 0
    assert target.read_bytes() == b"ccc a.b"
    # lengths differ: the real sed too
    assert system_with(shim, f"sed -i -e 's/ccc/dd/g' {target}") == 0
    assert target.read_bytes() == b"dd a.b"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (`make setup-valgrind`)")
def test_a_program_without_section_headers_runs_and_valgrind_reads_no_symbols_of_it(tmp_path: Path) -> None:
    """percall.py --compact drops the program's section headers (drop_section_headers): the
    program still runs, and valgrind makes no debug-information object of it, so the objects it
    walks for each new block under callgrind are libcolltune's copies only."""
    sys.path.insert(0, str(SOURCE.parent))
    import percall  # benchmarks/scale/percall.py

    source = tmp_path / "p.c"
    source.write_text('#include <stdio.h>\nint main(void) { printf("ran %d\\n", 6 * 7); return 0; }\n')
    program, headless = tmp_path / "p", tmp_path / "p-headless"
    subprocess.run(["cc", "-O1", "-o", str(program), str(source)], check=True)
    shutil.copy(program, headless)
    percall.drop_section_headers(headless)
    assert headless.read_bytes()[0x28:0x40] != program.read_bytes()[0x28:0x40]
    assert subprocess.run([str(headless)], capture_output=True, text=True, check=True).stdout == "ran 42\n"
    for exe, read in ((program, True), (headless, False)):
        run = subprocess.run(["valgrind", "--tool=none", "-v", str(exe)], capture_output=True, text=True,
                             check=True)
        assert run.stdout == "ran 42\n"
        assert (f"Reading syms from {exe}\n" in run.stderr) is read, run.stderr[-2000:]
    text = tmp_path / "not-elf"
    text.write_bytes(b"#!/bin/sh\n")
    with pytest.raises(SystemExit, match="not a 64-bit ELF file"):
        percall.drop_section_headers(text)
