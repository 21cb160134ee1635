"""Helpers of the interposer tests: build the test programs, launch them, parse the outputs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from colltune import catalog
from colltune.mpi import build, launch
from colltune.mpi.libraries import MpiLibrary

PROGRAMS = Path(__file__).resolve().parent / "programs"
COUNT_ROW = re.compile(r"^colltune:\s+(\S+)\s+(none|force|profile|explore|exploit)\s+(\S+)\s+(\S+)\s+(\d+)$")
CALLS_ROW = re.compile(r"^calls (\S+) (.*)$")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def counts(self) -> Counter[tuple[str, str, str, str]]:
        """The counting table: (collective, mode, variant, outcome) -> calls. Rows of draws that
        were drawn again (`redrawn:unproven`) are not calls: see `redraws`."""
        table: Counter[tuple[str, str, str, str]] = Counter()
        for line in self.stderr.splitlines():
            if (m := COUNT_ROW.match(line.rstrip())) and not m.group(4).startswith("redrawn"):
                table[m.group(1), m.group(2), m.group(3), m.group(4)] += int(m.group(5))
        return table

    @property
    def redraws(self) -> Counter[tuple[str, str]]:
        """(collective, member first drawn) -> explored draws drawn again (not proven there)."""
        table: Counter[tuple[str, str]] = Counter()
        for line in self.stderr.splitlines():
            if (m := COUNT_ROW.match(line.rstrip())) and m.group(4) == "redrawn:unproven":
                table[m.group(1), m.group(3)] += int(m.group(5))
        return table

    @property
    def program_calls(self) -> dict[str, dict[str, int]]:
        """ct_collectives' own report: collective -> {kind: calls}."""
        out: dict[str, dict[str, int]] = {}
        for line in self.stdout.splitlines():
            if m := CALLS_ROW.match(line.strip()):
                out[m.group(1)] = {k: int(v) for k, v in (f.split("=") for f in m.group(2).split())}
        return out

    def messages(self, needle: str) -> list[str]:
        return [line for line in self.stderr.splitlines() if needle in line]

    def describe(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"


def compile_programs(lib: MpiLibrary, outdir: Path) -> dict[str, Path]:
    """Every tests/programs/ct_*.c built with the library's mpicc."""
    return {
        src.stem: build.compile_program(lib, [src], outdir / lib.name / src.stem, ["-Wextra"])
        for src in sorted(PROGRAMS.glob("ct_*.c"))
    }


def run_argv(lib: MpiLibrary, argv: Sequence[str], timeout: float = 120) -> Run:
    """Run a full launcher command line (again, twice at most, when the launcher died before any
    rank ran: launch.launcher_died); on timeout kill the whole process group (ranks too)."""
    for _ in range(2):
        run = _run_once(lib, argv, timeout)
        if run.returncode == 0 or not launch.launcher_died(run.stderr):
            return run
    return _run_once(lib, argv, timeout)


def _run_once(lib: MpiLibrary, argv: Sequence[str], timeout: float) -> Run:
    proc = subprocess.Popen(list(argv), env=launch.launcher_env(lib, nprocs=launch.nprocs_of(argv)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return Run(proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Run(-9, out, err, timed_out=True)


def run_mpi(lib: MpiLibrary, nprocs: int, argv: Sequence[str], rank_env: Mapping[str, str],
            timeout: float = 120) -> Run:
    return run_argv(lib, launch.mpiexec_argv(lib, nprocs, [str(a) for a in argv], rank_env), timeout)


def mpmd_argv(lib: MpiLibrary, parts: Sequence[tuple[int, Sequence[str], Mapping[str, str]]]) -> list[str]:
    """One launch of several programs/environments (`mpiexec A : B`), ranks numbered in order."""
    argv = [str(lib.mpiexec), *launch.placement_flags(lib, sum(p[0] for p in parts))]
    for i, (n, prog, env) in enumerate(parts):
        if i:
            argv.append(":")
        argv += ["-n", str(n), *launch.rank_env_flags(lib, env), *map(str, prog)]
    return argv


def force_rounds() -> list[dict[str, str]]:
    """Every variant forced once, one variant per collective per round: round k forces the k-th
    variant of each collective (the last one again when a collective has fewer)."""
    cat = catalog.load()
    per = {c: [v.name for v in cat.variants_of(c)] for c in cat.collective_names()}
    rounds = max(len(v) for v in per.values())
    return [{c: names[min(k, len(names) - 1)] for c, names in per.items() if names} for k in range(rounds)]


def force_spec(choice: Mapping[str, str]) -> str:
    return ",".join(f"{c}={v}" for c, v in choice.items())


def expected_force_counts(collective: str, variant: str, kinds: Mapping[str, int]) -> Counter[tuple[str, str, str, str]]:
    """What the counting table must say for ct_collectives' calls of one collective when
    `variant` is forced: exact, from the variant's `needs` in the table."""
    needs = set(catalog.load().variant(variant).needs)
    want: Counter[tuple[str, str, str, str]] = Counter()
    applied = kinds["plain"] + kinds["inplace"]
    if "contiguous" in needs:
        if kinds["noncontig"]:
            want[collective, "force", variant, "not-applicable:datatype"] = kinds["noncontig"]
    else:
        applied += kinds["noncontig"]
    if "commutative" in needs or "predefined_op" in needs:  # the noncommutative kind is a user op
        reason = "noncommutative" if "commutative" in needs else "op"
        if kinds["noncommutative"]:
            want[collective, "force", variant, f"not-applicable:{reason}"] = kinds["noncommutative"]
    else:
        applied += kinds["noncommutative"]
    want[collective, "force", variant, "applied"] = applied
    return want


def nbmember_sums(stdout: str) -> dict[str, tuple[str, str]]:
    """tests/programs/ct_nbmember.c's lines: form -> (double hash, int sum). The double hash tells
    one reduction order from another; the int sum must never move."""
    out = {}
    for line in stdout.splitlines():
        form, _, rest = line.partition(": double hash ")
        if rest:
            digest, _, isum = rest.partition(", int sum ")
            out[form] = (digest, isum)
    return out
