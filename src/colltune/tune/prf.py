"""PGMPITuneLib profiles (`.prf`, PGMPITuneLib Listing 1): reader and conversion into our format."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from colltune import catalog
from colltune.tune.profile_model import MAX_BYTES, MAX_PROCS, Block, Profile, ProfileError, Rule, Section


def _prf_lines(text: str) -> Iterable[tuple[int, list[str]]]:
    """Non-empty lines without comments; PGMPITuneLib reads values with sscanf, so anything after
    the expected fields (typically "# nb. of processes") is a comment."""
    for number, raw in enumerate(text.splitlines(), start=1):
        content = raw.split("#", 1)[0].split()
        if content:
            yield number, content


def read_prf(text: str, name: str = "<prf>") -> tuple[str, int, list[Rule]]:
    """One PGMPITuneLib profile -> (collective, nprocs, sorted rules). Ranges that select the
    mock-up `default` (PGMPITuneLib's id 0) are the library: they produce no rule."""
    cat = catalog.load()
    # a .prf names mock-ups only, so a collective without one cannot appear in it
    by_mpi = {c.mpi.lower(): c.name for c in cat.collectives if cat.variants_of(c.name)}
    lines = iter(_prf_lines(text))

    def take(what: str) -> tuple[int, list[str]]:
        try:
            return next(lines)
        except StopIteration:
            raise ProfileError(f"{name}: ends before {what} (truncated?); check the file") from None

    def integer(line: int, word: str, what: str, minimum: int) -> int:
        if not re.fullmatch(r"[0-9]{1,19}", word) or int(word) < minimum:
            raise ProfileError(f"{name}:{line}: {what} must be an integer >= {minimum}, not {word!r}")
        return int(word)

    line, words = take("the MPI function name")
    collective = by_mpi.get(words[0].lower())
    if collective is None:
        raise ProfileError(
            f"{name}:{line}: {words[0]!r} is not a collective colltune can tune; expected one of "
            + ", ".join(c.mpi for c in cat.collectives if c.name in by_mpi.values())
        )
    line, words = take("the number of processes")
    nprocs = integer(line, words[0], "the number of processes", 1)
    if nprocs > MAX_PROCS:
        raise ProfileError(f"{name}:{line}: number of processes {nprocs} is too large")
    line, words = take("the number of mock-ups")
    nalgs = integer(line, words[0], "the number of mock-ups", 0)
    own = {v.name for v in cat.variants_of(collective)}
    algs: dict[int, str | None] = {}
    for _ in range(nalgs):
        line, words = take("a mock-up line 'id name'")
        if len(words) < 2:
            raise ProfileError(f"{name}:{line}: a mock-up line is 'ID NAME', got {' '.join(words)!r}")
        alg_id = integer(line, words[0], "a mock-up id", 0)
        if words[1] == "default":
            algs[alg_id] = None
        elif words[1] in own:
            algs[alg_id] = words[1]
        else:
            raise ProfileError(
                f"{name}:{line}: mock-up {words[1]!r} is not a colltune variant of {collective}; "
                f"known: {', '.join(sorted(own))}; remove its ranges from the .prf"
            )
    line, words = take("the number of ranges")
    nranges = integer(line, words[0], "the number of ranges", 0)
    rules: list[tuple[int, Rule]] = []
    for _ in range(nranges):
        line, words = take("a range line 'start end id'")
        if len(words) < 3:
            raise ProfileError(f"{name}:{line}: a range line is 'START END ID', got {' '.join(words)!r}")
        lo = integer(line, words[0], "a range start", 0)
        hi = integer(line, words[1], "a range end", lo)
        alg_id = integer(line, words[2], "an algorithm id", 0)
        if hi > MAX_BYTES:
            raise ProfileError(f"{name}:{line}: range end {hi} is too large")
        if alg_id not in algs:
            raise ProfileError(
                f"{name}:{line}: algorithm id {alg_id} is not among the mock-ups listed above "
                f"({', '.join(map(str, sorted(algs))) or 'none'}); add it or fix the id"
            )
        variant = algs[alg_id]
        # PGMPITuneLib sizes Reduce_scatter_block by one block (recvcount * type size); our
        # `bytes` is the whole vector, p blocks. Its Alltoall sizes are send counts in elements,
        # equal to bytes for the MPI_BYTE/MPI_CHAR buffers ReproMPI measures with.
        scale = nprocs if collective == "reduce_scatter_block" else 1
        if hi * scale > MAX_BYTES:
            raise ProfileError(f"{name}:{line}: range end {hi} is too large")
        if variant is not None:
            rules.append((line, Rule(lo=lo * scale, hi=hi * scale, variant=variant)))
    rest = next(lines, None)
    if rest is not None:
        raise ProfileError(f"{name}:{rest[0]}: unexpected content after the {nranges} ranges; remove it")
    # PGMPITuneLib sorts ranges when it loads them; we sort too but refuse overlaps, which it
    # would resolve by whichever range its binary search meets first.
    rules.sort(key=lambda lr: lr[1].lo)
    for (_, prev), (line, cur) in zip(rules, rules[1:]):
        if cur.lo <= prev.hi:
            raise ProfileError(
                f"{name}:{line}: range {cur.lo}..{cur.hi} overlaps {prev.lo}..{prev.hi}; make the ranges disjoint"
            )
    return collective, nprocs, [r for _, r in rules]


def import_prf(paths: Sequence[str | Path], provenance: dict[str, str] | None = None) -> Profile:
    """Several `.prf` files (one collective and process count each) -> one profile."""
    found: dict[str, dict[int, tuple[Path, list[Rule]]]] = {}
    for p in paths:
        path = Path(p)
        collective, nprocs, rules = read_prf(path.read_text(encoding="utf-8", errors="replace"), str(path))
        per = found.setdefault(collective, {})
        if nprocs in per:
            raise ProfileError(
                f"{path}: {collective} for {nprocs} processes also comes from {per[nprocs][0]}; import one of them"
            )
        per[nprocs] = (path, rules)
    sections = []
    for collective in catalog.load().collective_names():
        blocks = tuple(
            Block(procs_lo=n, procs_hi=n, rules=tuple(rules))
            for n, (_, rules) in sorted(found.get(collective, {}).items())
            if rules
        )
        if blocks:
            sections.append(Section(collective=collective, blocks=blocks))
    prov = {"source": "pgmpitunelib " + " ".join(Path(p).name for p in paths)}
    prov.update(provenance or {})
    return Profile(provenance=prov, sections=tuple(sections))


# --------------------------------------------------------------------------------------------
