"""How sizes are shown to people, the same in every table, report and profile listing."""

from __future__ import annotations


def human_bytes(n: int) -> str:
    """1024 -> '1 KiB', 1536 -> '1536 B': exact binary units only (bounds must read exactly)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"
