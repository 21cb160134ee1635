"""Call sites: return addresses recorded at run time -> function and file:line.

libcolltune records each call's return address and, at MPI_Init, the executable mappings of the
process (/proc/self/maps). An address is turned into a file and an address inside that file's
ELF image (PT_LOAD segments: vaddr = p_vaddr + file offset - p_offset; position-dependent
executables are loaded at their link address), which `addr2line` resolves from the symbols and
debug info. Without debug info the function name is still found where the symbol table has it.
"""

from __future__ import annotations

import bisect
import functools
import re
import shutil
import struct
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from colltune.advise.profile_run import Mapping

ADDRESS_LINE = re.compile(r"0x[0-9a-f]+")
ET_EXEC = 2
PT_LOAD = 1


@dataclass(frozen=True)
class Site:
    address: int
    binary: str          # file the address is in, "" if unknown
    function: str        # "??" when unknown; the innermost inlined function
    location: str        # "file.c:42", or "binary+0xoff" without debug info
    # the functions the innermost one is inlined into, inside out: (function, its line of the call)
    inlined_into: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        where = self.location if self.location else Path(self.binary).name
        return f"{self.function} ({where})" if self.function != "??" else where or hex(self.address)


def _load_segments(path: str) -> tuple[int, list[tuple[int, int, int]]] | None:
    """(e_type, [(p_offset, p_vaddr, p_filesz)]) of a 64-bit little-endian ELF file."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            e_type = struct.unpack_from("<H", head, 16)[0]
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return None
    segs = []
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", table, i * phentsize)
        if p_type == PT_LOAD:
            segs.append((p_offset, p_vaddr, p_filesz))
    return e_type, segs


def elf_address(address: int, maps: list[Mapping]) -> tuple[str, int] | None:
    """The file holding `address` and the address inside its ELF image."""
    for m in maps:
        if m.start <= address < m.end:
            elf = _load_segments(m.path)
            if elf is None:
                return None
            e_type, segs = elf
            if e_type == ET_EXEC:
                return m.path, address
            off = address - m.start + m.offset
            for p_offset, p_vaddr, p_filesz in segs:
                if p_offset <= off < p_offset + p_filesz:
                    return m.path, p_vaddr + off - p_offset
            return m.path, off
    return None


def _location(loc: str, binary: str, address: int) -> str:
    loc = loc.split(" (discriminator")[0]
    if loc.startswith("??"):
        return f"{Path(binary).name}+{hex(address)}"
    return f"{Path(loc.split(':')[0]).name}:{loc.split(':')[1]}"


def _addr2line(binary: str, addresses: list[int]) -> list[list[tuple[str, str]]]:
    """Per address its (function, location) frames, the innermost inlined one first."""
    tool = shutil.which("addr2line")
    unknown: list[list[tuple[str, str]]] = [[("??", "")] for _ in addresses]
    if tool is None or not addresses:
        return unknown
    # A return address is the instruction after the call: look up the call itself (-1). -a
    # prints each address before its frames (-i: one pair per inlined function).
    proc = subprocess.run([tool, "-a", "-f", "-i", "-C", "-e", binary, *(hex(a - 1) for a in addresses)],
                          capture_output=True, text=True, check=False)
    lines = proc.stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if ADDRESS_LINE.fullmatch(line)]
    if proc.returncode != 0 or len(starts) != len(addresses):
        return unknown
    out = []
    for k, (a, begin) in enumerate(zip(addresses, starts)):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        body = lines[begin + 1:end]
        frames = [(body[j], _location(body[j + 1], binary, a)) for j in range(0, len(body) - 1, 2)]
        out.append(frames or [("??", "")])
    return out


def _function_extents(binary: str) -> tuple[list[int], list[int]]:
    """The sized function symbols of `binary` (static and dynamic tables) as their starts, sorted,
    and for each the furthest end of any symbol starting at or before it."""
    tool = shutil.which("nm")
    extents: list[tuple[int, int]] = []
    if tool is None:
        return [], []
    for table in ([], ["-D"]):
        proc = subprocess.run([tool, *table, "--defined-only", "-S", binary],
                              capture_output=True, text=True, check=False)
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[2] in ("T", "t", "W", "w", "i"):
                start, size = int(parts[0], 16), int(parts[1], 16)
                extents.append((start, start + size))
    extents.sort()
    starts, reach, furthest = [], [], 0
    for start, end in extents:
        furthest = max(furthest, end)
        starts.append(start)
        reach.append(furthest)
    return starts, reach


def _outside_symbols(binary: str, frames: list[list[tuple[str, str]]],
                     addresses: list[int]) -> list[list[tuple[str, str]]]:
    """Frames without a line whose address lies in no function symbol lose their name.

    Without debug info addr2line names an address by the nearest symbol before it, whatever that
    symbol's size: in a stripped binary every static function after an exported one would carry
    the exported one's name (Quantum ESPRESSO's pw.x: "fftw_print_plan" for most of its frames).
    Such a frame is only `binary+offset`."""
    if not any(f != "??" and "+0x" in loc for fs in frames for f, loc in fs[:1]):
        return frames
    starts, reach = _function_extents(binary)
    if not starts:
        return frames
    out = []
    for fs, a in zip(frames, addresses):
        (func, loc), *outer = fs
        if func != "??" and "+0x" in loc:
            k = bisect.bisect_right(starts, a - 1)
            if k == 0 or reach[k - 1] <= a - 1:
                fs = [("??", loc), *outer]
        out.append(fs)
    return out


def resolve(addresses: set[int], maps: list[Mapping]) -> dict[int, Site]:
    """Every address resolved (unknown ones to '??' with their hex value)."""
    by_file: dict[str, list[tuple[int, int]]] = defaultdict(list)
    sites: dict[int, Site] = {}
    for a in addresses:
        hit = elf_address(a, maps) if a else None
        if hit is None:
            sites[a] = Site(a, "", "??", hex(a) if a else "unknown")
        else:
            by_file[hit[0]].append((a, hit[1]))
    for binary, pairs in by_file.items():
        elf = [p[1] for p in pairs]
        for (a, _), frames in zip(pairs, _outside_symbols(binary, _addr2line(binary, elf), elf)):
            (func, loc), *outer = frames
            sites[a] = Site(a, binary, func, loc, tuple(outer))
    return sites


@dataclass(frozen=True)
class ObjectInfo:
    """What an ELF file holds to name its addresses (its section headers)."""

    symbols: bool        # a full symbol table (.symtab): static functions too; stripped: none
    lines: bool          # DWARF line tables (.debug_line): file:line
    debuglink: bool      # .gnu_debuglink: its debug info is packaged apart (Debian's -dbgsym)


def object_info(path: str) -> ObjectInfo | None:
    """The sections of a 64-bit little-endian ELF file that decide how its addresses resolve
    (None: not readable as one). addr2line also reads a separate debug file when it is installed:
    `lines` is this file's own."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            shoff, = struct.unpack_from("<Q", head, 40)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 58)
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            if shstrndx >= shnum:
                return None
            str_off, str_size = struct.unpack_from("<QQ", table, shstrndx * shentsize + 24)
            f.seek(str_off)
            strings = f.read(str_size)
    except (OSError, struct.error):
        return None
    names = set()
    for i in range(shnum):
        name_off, = struct.unpack_from("<I", table, i * shentsize)
        names.add(strings[name_off:strings.find(b"\0", name_off)].decode(errors="replace"))
    return ObjectInfo(".symtab" in names, ".debug_line" in names or ".zdebug_line" in names,
                      ".gnu_debuglink" in names)


@functools.lru_cache(maxsize=None)
def debian_package(path: str) -> str | None:
    """The Debian package that installed `path` (dpkg's database), None where none did or dpkg is
    absent: its debug info is then the package `NAME-dbgsym` of Debian's debug archive, which
    installs it under /usr/lib/debug/.build-id/, where addr2line looks. A merged /usr lists a file
    as dpkg installed it (/bin/ls for /usr/bin/ls): the path without /usr is asked too."""
    tool = shutil.which("dpkg-query")
    if tool is None:
        return None
    for candidate in dict.fromkeys([path, path.removeprefix("/usr") if path.startswith("/usr/") else path]):
        proc = subprocess.run([tool, "-S", candidate], capture_output=True, text=True, check=False)
        if proc.returncode == 0 and ": " in proc.stdout:
            # `liblammps0:amd64: /usr/lib/...`: the first package, without its architecture
            return proc.stdout.split(": ", 1)[0].split(", ")[0].split(":")[0]
    return None
