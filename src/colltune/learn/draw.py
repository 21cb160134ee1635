"""The runtime's draw (docs/select.md, "Draws are the same on every rank"), bit-exact with the C
side: the same 64-bit integers, the same doubles in the same order of operations, so a test can
hold both to the same vectors (tests/test_learn_table.py, docs/select.md "Test vectors").
"""

from __future__ import annotations

from collections.abc import Sequence

MASK64 = 0xFFFFFFFFFFFFFFFF
GOLDEN = 0x9E3779B97F4A7C15
DEFAULT_CAPS = (0.03, 0.50)


def splitmix64(x: int) -> int:
    """One step of splitmix64 (Steele, Lea, Flood 2014) as a pure function of its state."""
    z = (x + GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def draw_bits(seed: int, comm_id: int, call_index: int) -> int:
    """The 64 random bits of one call: splitmix64(seed ^ (comm_id * GOLDEN) ^ call_index)."""
    return splitmix64((seed & MASK64) ^ ((comm_id * GOLDEN) & MASK64) ^ (call_index & MASK64))


def uniform(seed: int, comm_id: int, call_index: int) -> float:
    """The call's random number in [0, 1): the top 53 bits, exactly representable."""
    return (draw_bits(seed, comm_id, call_index) >> 11) * 2.0**-53


def probabilities(weights: Sequence[float], caps: tuple[float, float] = DEFAULT_CAPS) -> list[float]:
    """Explore probabilities: weights normalised, clamped to [lo, hi], normalised again.

    Sums run left to right and each value is divided by the sum (not multiplied by its inverse),
    which is what the C code does, so both get the same doubles."""
    lo, hi = caps
    total = 0.0
    for w in weights:
        total += w
    if not total > 0.0:
        raise ValueError("weights are all 0")
    clamped = [min(max(w / total, lo), hi) for w in weights]
    total = 0.0
    for c in clamped:
        total += c
    return [c / total for c in clamped]


def pick_explore(weights: Sequence[float], u: float, caps: tuple[float, float] = DEFAULT_CAPS) -> int:
    """The member of an explore cell for random number u: the first whose prefix sum exceeds u
    (IOTA Table 4.2); the last member if rounding leaves the final prefix sum below u."""
    acc = 0.0
    probs = probabilities(weights, caps)
    for i, p in enumerate(probs):
        acc += p
        if u < acc:
            return i
    return len(probs) - 1


def pick_exploit(weights: Sequence[float]) -> int:
    """The member of an exploit cell: the largest weight, the first on ties."""
    best = 0
    for i, w in enumerate(weights):
        if w > weights[best]:
            best = i
    return best


def pick(mode: str, weights: Sequence[float], seed: int, comm_id: int, call_index: int,
         caps: tuple[float, float] = DEFAULT_CAPS) -> int:
    """The member index a call gets in a cell of this mode (`explore` or `exploit`)."""
    if mode == "exploit":
        return pick_exploit(weights)
    return pick_explore(weights, uniform(seed, comm_id, call_index), caps)
