"""Every collective function of MPI-4.1 reaches the counting mode (issue 33).

tests/programs/ct_every.c calls each function once (blocking, nonblocking completed by each of
the Wait/Test family in turn, persistent with MPI_Start/MPI_Startall, the large-count bindings
where the library is MPI-4) and checks every result against its closed form. Pass-through and
counting must give the plain run's output; the counting table's "functions" section must list
every function of native/spec/collectives.toml's rows with exactly one call, one operation
started and one completed, and the bytes of its row's rule.
"""

from __future__ import annotations

import re

import pytest
from interposer_support import PROGRAMS, run_mpi

from colltune import catalog
from colltune.interposer import counted_functions
from colltune.mpi import build, runenv
from colltune.mpi import libraries as mpi

# the counting table's functions section, read as the benchmarks read it
functions_section = counted_functions


# The v/w rows whose decision size is 0 (collectives.toml) or none: every function of theirs, in
# every form and binding, records its counts' bytes (native/runtime/watch.c ct_watch_vw_bytes).
COUNTED_V = ("gatherv", "scatterv", "alltoallv", "alltoallw")
COUNTED_NEIGHBOR = ("neighbor_alltoallv", "neighbor_alltoallw")


def expected_bytes(row: str, p: int, fn: str = "") -> int | None:
    """Rank 0's bytes of ct_every.c's call of `row` (one int per block): by its `bytes` rule, or
    for the v/w rows by their counts: rank 0 is the root, so Gatherv and Scatterv count p ints,
    as Alltoallv and Alltoallw do; the neighborhood v/w rows what rank 0 sends its two
    neighbours on the ring (MPI_Cart_create, one dimension), one int each."""
    if row in COUNTED_V:
        return 4 * p
    if row in COUNTED_NEIGHBOR:
        return 2 * 4
    # 0: no size that every rank holds (the barrier)
    return {"bcast": 8, "reduce_scatter": 4 * p, "reduce_scatter_block": 4 * p, "reduce_local": 8,
            "barrier": 0}.get(row, 4)


def expected(lib: mpi.MpiLibrary, p: int) -> dict[str, tuple[int, int | None, int, int]]:
    """Every function of the table that the library declares: the large-count bindings where it
    is MPI-4 (MPICH 5), the persistent forms from MPI-4 or Open MPI 5 on."""
    large = lib.family == "mpich"
    out = {}
    for row in catalog.load().rows:
        for fn in row.functions():
            if fn.endswith("_c") and not large:
                continue
            out[fn] = (1, expected_bytes(row.name, p, fn), 1, 1)
    return out


@pytest.fixture(scope="module")
def every(request, tmp_path_factory):
    name = request.param
    try:
        lib = mpi.resolve(name)
    except mpi.MpiError as exc:
        pytest.skip(f"{name} not installed: {exc}")
    from colltune.measure import proof
    proof.ensure_proven(lib)
    art = build.ensure_built(lib)
    exe = build.compile_program(lib, [PROGRAMS / "ct_every.c"], tmp_path_factory.mktemp(name) / "ct_every",
                                ["-Wextra"])
    return lib, art, exe


NPROCS = {"openmpi": 3, "mpich": 2}


@pytest.mark.parametrize("every", ["openmpi", "mpich"], indirect=True)
def test_every_function_counted_exactly(every):
    lib, art, exe = every
    p = NPROCS[lib.name if lib.name in NPROCS else lib.family]
    plain = run_mpi(lib, p, [exe], {})
    assert plain.returncode == 0, plain.describe()
    total = re.search(r"every: (\d+) functions", plain.stdout)
    assert total is not None, plain.describe()
    passthrough = run_mpi(lib, p, [exe], runenv.rank_environment(lib, art))
    counting = run_mpi(lib, p, [exe], runenv.rank_environment(lib, art, verbose=True))
    for run in (passthrough, counting):
        assert run.returncode == 0 and run.stdout == plain.stdout, run.describe()
    seen = functions_section(counting.stderr)
    assert seen == expected(lib, p), counting.describe()


def profiled_rows(lib: mpi.MpiLibrary) -> dict[str, tuple[int, int]]:
    """MPI function -> (calls, requests completed) the profiling mode must show for ct_every.c:
    a served collective's _c binding is recorded with its int binding (one row, two calls)."""
    rows: dict[str, tuple[int, int]] = {}
    for fn, (calls, _, _, _) in expected(lib, 1).items():
        row = catalog.load().function_row(fn)
        assert row is not None
        if row.dispatch and (fn == row.mpi or (row.serve_large and fn == row.mpi + "_c")):
            c, _ = rows.get(row.mpi, (0, 0))
            rows[row.mpi] = (c + calls, 0)
        else:
            rows[fn] = (calls, 0 if fn == row.mpi or fn == row.mpi + "_c" else 1)
    return rows


@pytest.mark.parametrize("every", ["openmpi", "mpich"], indirect=True)
def test_every_function_profiled(every, tmp_path):
    """advise's table (where.rows) has a row per function with its calls; the nonblocking and
    persistent ones with their request completed in Wait/Test, waiting and overlap measured."""
    from colltune.advise import profile_run, where
    lib, art, exe = every
    p = NPROCS[lib.name if lib.name in NPROCS else lib.family]
    run = run_mpi(lib, p, [exe], runenv.rank_environment(
        lib, art, extra={"COLLTUNE_PROFILE_RUN": str(tmp_path)}))
    assert run.returncode == 0 and "every:" in run.stdout, run.describe()
    prof = profile_run.read(tmp_path)
    table = where.rows(prof)
    seen = {r.name: (r.calls, r.completed) for r in table if r.kind == "coll"}
    assert seen == profiled_rows(lib)
    for r in table:
        if r.completed:
            assert r.wait_s is not None and r.wait_s >= 0 and r.overlap_s is not None and r.overlap_s >= 0
    # Tunable on this library and form (where.Tunability, the catalog's members: no proof given):
    # Open MPI has no member for Gatherv, Scatterv or Ibarrier (libnbc's variables cover six
    # collectives); MPICH has; Alltoallw and the neighborhood collectives have members on MPICH
    # only (Open MPI has no control for them); the v forms' _c bindings are watched only.
    tunable = {r.name: r.tunable for r in table if r.kind == "coll"}
    ompi = lib.family == "openmpi"
    assert {fn: tunable[fn] for fn in ("MPI_Allreduce", "MPI_Iallreduce", "MPI_Allreduce_init", "MPI_Gatherv",
                                       "MPI_Scatterv", "MPI_Ibarrier", "MPI_Igatherv", "MPI_Alltoallw",
                                       "MPI_Neighbor_allgather", "MPI_Ineighbor_alltoall")} == {
        "MPI_Allreduce": True, "MPI_Iallreduce": True, "MPI_Allreduce_init": True, "MPI_Gatherv": not ompi,
        "MPI_Scatterv": not ompi, "MPI_Ibarrier": not ompi, "MPI_Igatherv": not ompi, "MPI_Alltoallw": not ompi,
        "MPI_Neighbor_allgather": not ompi, "MPI_Ineighbor_alltoall": not ompi}
    if not ompi:
        assert not tunable["MPI_Gatherv_c"]
    # The v/w forms' bytes, every form and binding: each rank's counts (rank 0 is the root: p
    # ints in, p ints out; the other ranks one int each in Gatherv and Scatterv); the
    # neighborhood v/w rows what each rank sends its two neighbours on the ring
    by_name = {r.name: r for r in table if r.kind == "coll"}
    vw = {fn: (r.bytes_min, r.bytes_max, r.bytes_mean) for fn, r in by_name.items()
          if (row := catalog.load().function_row(fn)) is not None
          and row.name in COUNTED_V + COUNTED_NEIGHBOR}
    per_row = {"gatherv": (4, 4 * p, pytest.approx((4 * p + 4 * (p - 1)) / p)),
               "scatterv": (4, 4 * p, pytest.approx((4 * p + 4 * (p - 1)) / p)),
               "alltoallv": (4 * p, 4 * p, 4 * p), "alltoallw": (4 * p, 4 * p, 4 * p),
               "neighbor_alltoallv": (8, 8, 8), "neighbor_alltoallw": (8, 8, 8)}
    want_vw = {fn: per_row[catalog.load().function_row(fn).name] for fn in vw}
    assert len(vw) == 3 * 6 * (1 if ompi else 2) and vw == want_vw
    cov = where.coverage_of(table)
    on_rank = [r.rank_s.get(cov.rank, 0.0) for r in table if r.kind == "coll"]
    tunable_s = sum(r.rank_s.get(cov.rank, 0.0) for r in table if r.kind == "coll" and r.tunable)
    assert cov.seen_s == pytest.approx(sum(on_rank)) and cov.seen_s <= prof.wall_ns / 1e9
    assert cov.seen_s > 0 and cov.tunable_share == pytest.approx(tunable_s / cov.seen_s)


@pytest.mark.parametrize("every", ["openmpi", "mpich"], indirect=True)
def test_every_function_under_the_serving_modes(every, tmp_path):
    """Force (every collective's first variant), a profile and the learning mode with every call
    exploring (`-`, traced) serve the blocking calls of ct_every.c: its results stay exact, and
    the watched functions are untouched (the counting table still has each once)."""
    from interposer_support import force_rounds, force_spec
    lib, art, exe = every
    p = NPROCS[lib.name if lib.name in NPROCS else lib.family]
    plain = run_mpi(lib, p, [exe], {})
    assert plain.returncode == 0, plain.describe()
    profile = tmp_path / "every.prf"
    profile.write_text("colltune-profile 1\ngenerator tests/test_every.py\n"
                       "collective allreduce\n  procs 1 64\n    bytes 0 1000000 allreduce_as_reduce_bcast\n"
                       "collective gather\n  procs 1 64\n    bytes 0 1000000 gather_as_gatherv\nend\n")
    envs = {"force": runenv.rank_environment(lib, art, force=force_spec(force_rounds()[0]), verbose=True),
            "profile": runenv.rank_environment(lib, art, profile=profile, verbose=True),
            "learning": runenv.rank_environment(lib, art, learn="-", trace_dir=tmp_path / "traces",
                                                 verbose=True)}
    for mode, env in envs.items():
        run = run_mpi(lib, p, [exe], env)
        assert run.returncode == 0 and run.stdout == plain.stdout, (mode, run.describe())
        seen = functions_section(run.stderr)
        assert {fn: (c, s, d) for fn, (c, _, s, d) in seen.items()} == \
            {fn: (c, s, d) for fn, (c, _, s, d) in expected(lib, p).items()}, (mode, run.describe())


def test_counted_functions_reads_only_the_functions_section() -> None:
    stderr = "\n".join([
        "colltune:   MPI_Bcast        9   72   0   0",          # before the section: not a row of it
        "colltune: functions:",
        "colltune:   MPI_Allreduce   12   96   0   0",
        "colltune:   MPI_Ibarrier     1    -   1   1",
        "colltune:   not a row",
        "colltune: end of functions",
        "colltune:   MPI_Gather       3   24   0   0",
    ])
    assert counted_functions(stderr) == {"MPI_Allreduce": (12, 96, 0, 0), "MPI_Ibarrier": (1, None, 1, 1)}
