#!/usr/bin/env python3
"""How often a symbol lookup that passes a library must look past its GNU hash table's Bloom
filter (benchmarks/advise/pass_cost.sh): the library's .gnu.hash read from the file, the names
one per line (e.g. from LD_DEBUG=bindings); prints the filter's size, its bits set and the share
of the names it lets through (false positives: each costs a bucket read and a chain walk).

    python3 benchmarks/advise/bloom.py LIB.so NAMES.txt
"""

from __future__ import annotations

import struct
import subprocess
import sys


def gnu_hash(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def section(lib: str, name: str) -> tuple[int, int]:
    """(file offset, size) of a section, from readelf -S -W."""
    for line in subprocess.run(["readelf", "-S", "-W", lib], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 6 and parts[1] == name:
            return int(parts[4], 16), int(parts[5], 16)
    raise SystemExit(f"{lib}: no {name}")


def main() -> None:
    lib, names = sys.argv[1], sys.argv[2]
    off, _ = section(lib, ".gnu.hash")
    data = open(lib, "rb").read()
    nbuckets, symoffset, bloom_size, shift = struct.unpack_from("<4I", data, off)
    bloom = struct.unpack_from(f"<{bloom_size}Q", data, off + 16)
    bits = sum(bin(w).count("1") for w in bloom)
    looked = [n.strip().encode() for n in open(names) if n.strip()]
    passed = 0
    for n in looked:
        h = gnu_hash(n)
        word = bloom[(h // 64) % bloom_size]
        if (word >> (h % 64)) & (word >> ((h >> shift) % 64)) & 1:
            passed += 1
    print(f"{lib}: {nbuckets} buckets, Bloom filter {bloom_size} words ({bloom_size * 64} bits), "
          f"{bits} set ({100 * bits / (bloom_size * 64):.1f}%), shift {shift}")
    print(f"names {len(looked)}: {passed} pass the filter ({100 * passed / len(looked):.2f}%)")


if __name__ == "__main__":
    main()
