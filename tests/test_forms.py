"""A collective's nonblocking and persistent forms measured as variants of its row
(`default#nonblocking`, `default#persistent`: native/bench/bench_variant.c) and judged against its
blocking form (NB1-NB3, docs/guidelines.md "Forms")."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_synth import Truth, simulate, write_db
from test_bench_driver import FIXED, drive

from colltune import catalog
from colltune.measure.protocol import DriverOutput
from colltune.mpi import build
from colltune.mpi import libraries as mpi
from colltune.mpi.algorithms import NONBLOCKING_ALGORITHMS
from colltune.verify import check

FORMS = "default,default#nonblocking,default#persistent"


def row_jobs(rows: tuple[str, ...]) -> str:
    """One 96-byte job of each row with every form (int sums: every algorithm gives the same)."""
    cat = catalog.load()
    lines = []
    for name in rows:
        row = cat.collective(name)
        size = 0 if name == "barrier" else 96
        dtype, op = ("int", "sum") if row.is_reduction else ("byte" if size else "-", "-")
        lines.append(f"{name} {size} {dtype} {op} {1 if row.is_rooted else '-'} {FORMS}\n")
    return "".join(lines)


def test_nonblocking_preset_has_every_row_with_the_forms() -> None:
    from colltune.measure.planning import plan_jobs
    from colltune.measure.settings import BenchSettings
    # the neighborhood rows (served since their MPICH members) have a preset of their own: they
    # run on a torus (test_neighborhood_bench.py)
    rows = [c.name for c in catalog.load().collectives
            if "nonblocking" in c.forms and c.family != "neighborhood"]
    settings = BenchSettings.from_preset("nonblocking")
    assert sorted(settings.collectives) == sorted(rows)
    jobs = {(j.collective, j.msg_bytes): j.variants for j in plan_jobs(settings, 4, "openmpi").jobs}
    assert jobs[("barrier", 0)] == ("default", "default#aa", "default#nonblocking", "default#persistent")
    assert jobs[("alltoallw", 32768)] == jobs[("barrier", 0)]
    assert len(jobs) == (len(rows) - 1) * 3 + 1
    # a row without the forms is measured blocking only
    local = BenchSettings(collectives=["reduce_local"], variants=["default", "default#persistent"])
    assert local.variants_for("reduce_local", "openmpi") == ["default"]


def test_every_row_runs_each_form_exactly_on_open_mpi(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                    tmp_path: Path) -> None:
    # the neighborhood rows run on a torus with sides of their own (test_neighborhood_bench.py)
    rows = tuple(c.name for c in catalog.load().collectives if c.family != "neighborhood")
    out = drive(openmpi, openmpi_build, tmp_path, 3, row_jobs(rows), "--probe")
    hashes: dict[str, dict[str, str]] = {}
    for p in out.probes:
        hashes.setdefault(out.jobs[p["job"]]["collective"], {})[p["variant"]] = p["hash"]
    with_forms = {c.name for c in catalog.load().collectives if "persistent" in c.forms}
    assert set(hashes) == set(rows)
    for name, h in hashes.items():
        assert list(h) == (FORMS.split(",") if name in with_forms else ["default"]), name
        assert len(set(h.values())) == 1, (name, h)   # the same result by every form
    assert sorted((s["variant"], s["reason"]) for s in out.skips) == [
        ("default#nonblocking", "MPI_Ireduce_local: the standard defines no such form (collectives.toml `forms`)"),
        ("default#persistent", "MPI_Reduce_local_init: the standard defines no such form (collectives.toml `forms`)"),
    ]


def test_forms_are_timed_like_the_blocking_call(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                tmp_path: Path) -> None:
    out = drive(openmpi, openmpi_build, tmp_path, 2, f"allreduce 1024 int sum - {FORMS}\n", *FIXED)
    assert out.jobs[0]["variants"] == FORMS.split(",")
    counts = out.records.groupby(["variant_idx", "warmup"]).size().to_dict()
    assert counts == {(v, w): n for v in range(3) for w, n in ((0, 20), (1, 3))}   # as every variant
    assert (out.records.runtime_s > 0).all()


def test_every_row_runs_each_form_exactly_on_mpich(mpich: mpi.MpiLibrary, mpich_build: build.Artifacts,
                                                 tmp_path: Path) -> None:
    rows = ("allreduce", "bcast", "alltoallv", "barrier", "exscan", "reduce_scatter_block")
    out = drive(mpich, mpich_build, tmp_path, 2, row_jobs(rows), "--probe")
    got: dict[str, set[str]] = {}
    for p in out.probes:
        got.setdefault(out.jobs[p["job"]]["collective"], set()).add(p["hash"])
    assert {k: len(v) for k, v in got.items()} == dict.fromkeys(rows, 1)
    assert len(out.probes) == 3 * len(rows) and out.skips == []


def test_persistent_form_is_skipped_where_the_library_has_none(tmp_path: Path) -> None:
    """Debian's Open MPI 4.1.4 (MPI 3.1) has the nonblocking forms but no MPI_<Coll>_init."""
    try:
        debian = mpi.resolve("/usr/bin/mpicc")
    except mpi.MpiError as exc:
        pytest.skip(f"Debian's Open MPI not available: {exc}")
    if not debian.version.startswith("Open MPI v4"):
        pytest.skip(f"/usr/bin/mpicc is {debian.version}, not Open MPI 4")
    out = drive(debian, build.ensure_built(debian), tmp_path, 2, row_jobs(("allreduce", "barrier")), "--probe")
    assert [p["variant"] for p in out.probes] == ["default", "default#nonblocking"] * 2
    assert [s["reason"] for s in out.skips] == [
        "MPI_Allreduce_init: this MPI library does not declare MPI-4's persistent collectives",
        "MPI_Barrier_init: this MPI library does not declare MPI-4's persistent collectives"]


def test_nb_guidelines_direction_and_identity(tmp_path: Path) -> None:
    """Known truth: Iallreduce + Wait twice as fast as Allreduce (NB1 violated), the persistent form
    as slow as the blocking one (NB2 violated, NB3 not); NB2 and NB3 are two verdicts under one
    variant."""
    truth = Truth(factors={("allreduce", "default#nonblocking"): 0.5})
    sizes = [8, 1024]
    meas = simulate(truth, {"allreduce": ["default", "default#nonblocking", "default#persistent"]}, sizes)
    res = check.check_db(write_db(tmp_path / "forms.duckdb", meas))
    v = res.verdicts[res.verdicts["guideline"].isin(["NB1", "NB2", "NB3"])]
    assert sorted(zip(v["guideline"], v["variant"], v["msg_bytes"], v["verdict"], strict=True)) == [
        ("NB1", "default#nonblocking", 8, "violation"), ("NB1", "default#nonblocking", 1024, "violation"),
        ("NB2", "default#persistent", 8, "violation"), ("NB2", "default#persistent", 1024, "violation"),
        ("NB3", "default#persistent", 8, "no violation"), ("NB3", "default#persistent", 1024, "no violation")]
    assert set(v["kind"]) == {"pattern"}
    nb2 = v[(v["guideline"] == "NB2") & (v["msg_bytes"] == 8)].iloc[0]
    assert (nb2["lhs"], nb2["rhs"]) == ("MPI_Start + MPI_Wait of MPI_Allreduce_init(8 B)",
                                        "MPI_Iallreduce + MPI_Wait(8 B)")
    assert nb2["slowdown"] == pytest.approx(2.0, rel=0.05)
    # the forms are not judged as mock-ups of the default as well
    assert not res.verdicts[(res.verdicts["variant"] == "default#persistent")
                            & ~res.verdicts["guideline"].isin(["NB2", "NB3"])].shape[0]


def test_adaptive_rounds_measure_both_sides_of_forms_and_collectives() -> None:
    """An open NB2 needs the persistent and the nonblocking form, an open GL4 (Allgather against
    Allgatherv, both called directly) Allgatherv's default, F3 the one-byte Allreduce."""
    import pandas as pd

    from colltune.verify import decide
    rows = [("NB2", "allreduce", "default#persistent", 8), ("GL4", "allgather", "allgatherv", 1024),
            ("F3", "barrier", "allreduce", 0), ("GL4", "allgather", "allgather_as_allgatherv", 64)]
    v = pd.DataFrame([{"nprocs": 4, "kind": "pattern", "guideline": g, "collective": c, "variant": var,
                       "msg_bytes": n, "ref_bytes": None, "verdict": "undecided"} for g, c, var, n in rows])
    # each side's job whole (verify/decide.selection): what else the first launches measured there too
    jobs = {("allreduce", 8): ["default", "default#persistent", "default#nonblocking", "default#aa"],
            ("allgather", 1024): ["default", "allgather_as_alltoall"], ("allgatherv", 1024): ["default"],
            ("barrier", 0): ["default"], ("allreduce", 1): ["default", "default#aa"],
            ("allgather", 64): ["default", "allgather_as_allgatherv"], ("scan", 8): ["default"]}
    measured = pd.DataFrame([(4, c, n, var, 0) for (c, n), variants in jobs.items() for var in variants],
                            columns=["nprocs", "collective", "msg_bytes", "variant", "launch_idx"])
    assert decide.selection(v, measured) == {4: frozenset(
        (c, n, var) for (c, n), variants in jobs.items() if c != "scan" for var in variants)}


# -- the libraries' own algorithms of the other forms: lib:<coll>:<alg>#nonblocking|#persistent --

def started_jobs(family: str, sizes: tuple[int, ...] = (96, 3072)) -> tuple[str, dict[str, list[str]]]:
    """Jobs with every listed algorithm of the nonblocking form, each also persistent, next to the
    forms' defaults (int sums: every algorithm gives the same bits)."""
    cat = catalog.load()
    lines, listed = [], {}
    for name, algs in NONBLOCKING_ALGORITHMS[family].items():
        row = cat.collective(name)
        if row.family == "neighborhood":   # a torus and sides of their own; their members'
            continue                       # exactness: tests/test_neighbor_members.py
        listed[name] = ["default", "default#nonblocking", "default#persistent",
                        *(f"lib:{name}:{a}#{form}" for a in algs for form in ("nonblocking", "persistent"))]
        dtype, op = ("int", "sum") if row.is_reduction else ("byte", "-")
        for size in (0,) if name == "barrier" else sizes:
            lines.append(f"{name} {size} {dtype if size else '-'} {op} {1 if row.is_rooted else '-'} "
                         f"{','.join(listed[name])}\n")
    return "".join(lines), listed


def assert_exact(out: DriverOutput, listed: dict[str, list[str]]) -> None:
    """Every listed variant ran in every job, with the default's exact result."""
    assert out.skips == []
    per_job: dict[int, dict[str, str]] = {}
    for p in out.probes:
        per_job.setdefault(p["job"], {})[p["variant"]] = p["hash"]
    assert len(per_job) == len(out.jobs)
    for job, hashes in per_job.items():
        coll = out.jobs[job]["collective"]
        assert list(hashes) == listed[coll], coll
        assert {v for v, h in hashes.items() if h != hashes["default"]} == set(), (coll, out.jobs[job]["msg_bytes"])


ORDER_SENSITIVE = "allreduce 8000 double sum - default,default#nonblocking,{0}#nonblocking,{0}#persistent\n"


def test_every_nonblocking_algorithm_of_open_mpi_runs_exactly(openmpi: mpi.MpiLibrary,
                                                             openmpi_build: build.Artifacts, tmp_path: Path) -> None:
    jobs, listed = started_jobs("openmpi")
    assert_exact(drive(openmpi, openmpi_build, tmp_path, 4, jobs, "--probe"), listed)
    # forced for real: a double sum whose bits depend on the order, libnbc's ring against the
    # binomial tree it chooses at 4 ranks below 64 KiB, in both forms
    out = drive(openmpi, openmpi_build, tmp_path, 4, ORDER_SENSITIVE.format("lib:allreduce:ring"), "--probe")
    h = [p["hash"] for p in out.probes]
    assert h[0] == h[1] != h[2] == h[3]


@pytest.mark.mpich
def test_every_nonblocking_algorithm_of_mpich_runs_exactly(mpich: mpi.MpiLibrary, mpich_build: build.Artifacts,
                                                           tmp_path: Path) -> None:
    jobs, listed = started_jobs("mpich")
    assert_exact(drive(mpich, mpich_build, tmp_path, 2, jobs, "--probe"), listed)
    out = drive(mpich, mpich_build, tmp_path, 3, ORDER_SENSITIVE.format("lib:allreduce:tsp_ring"), "--probe")
    h = [p["hash"] for p in out.probes]
    assert h[0] == h[1] != h[2] == h[3]


def test_an_unknown_nonblocking_algorithm_is_refused(openmpi: mpi.MpiLibrary, openmpi_build: build.Artifacts,
                                                    tmp_path: Path) -> None:
    job = ("allreduce 96 int sum - default#nonblocking,lib:allreduce:nope#nonblocking,lib:allreduce:ring#sometimes\n"
           "alltoall 96 byte - - default#nonblocking,lib:alltoall:linear#nonblocking\n")
    out = drive(openmpi, openmpi_build, tmp_path, 2, job, "--probe")
    assert [p["variant"] for p in out.probes] == ["default#nonblocking"] * 2
    assert [(s["variant"], s["reason"]) for s in out.skips] == [
        ("lib:allreduce:nope#nonblocking",
         "coll_libnbc_iallreduce_algorithm has no algorithm 'nope' (see `ompi_info --param coll libnbc --level 9`)"),
        ("lib:allreduce:ring#sometimes",
         "unknown form '#sometimes': library variants of the other forms end in #nonblocking or #persistent"),
        ("lib:alltoall:linear#nonblocking",
         "this MPI library offers no algorithm choice for the nonblocking alltoall (Open MPI's libnbc: "
         "iallgather, iallreduce, ibcast, iexscan, ireduce, iscan; MPICH: all, through MPI_T; Intel MPI: "
         "I_MPI_ADJUST_I<COLL> per launch)")]
    from colltune.measure.settings import BenchSettings
    with pytest.raises(ValueError, match="optionally followed by #nonblocking or #persistent"):
        BenchSettings(variants=["lib:allreduce:ring#sometimes"])
    with pytest.raises(ValueError, match="reduce_local has no nonblocking form"):
        BenchSettings(variants=["lib:reduce_local:x#nonblocking"])


def test_library_algorithms_of_a_form_add_that_forms_algorithms() -> None:
    from colltune.measure.settings import BenchSettings
    s = BenchSettings(collectives=["allreduce", "alltoall"], variants=["default#nonblocking"], library_algorithms=True)
    got = s.variants_for("allreduce", "openmpi")
    assert [v for v in got if "#" in v] == ["default#nonblocking", *(
        f"lib:allreduce:{a}#nonblocking" for a in ("ring", "binomial", "rabenseifner", "recursive_doubling"))]
    assert [v for v in s.variants_for("alltoall", "openmpi") if "#" in v] == ["default#nonblocking"]


def test_a_library_algorithm_of_a_form_is_judged_against_that_forms_default(tmp_path: Path) -> None:
    """Known truth: MPI_Iallreduce twice as slow as MPI_Allreduce, its ring algorithm as fast as
    the blocking call: a violation with slowdown 2 against default#nonblocking (against the
    blocking default it would be none)."""
    ring = "lib:allreduce:ring#nonblocking"
    truth = Truth(factors={("allreduce", "default#nonblocking"): 2.0})
    meas = simulate(truth, {"allreduce": ["default", "default#nonblocking", ring]}, [8, 1024])
    res = check.check_db(write_db(tmp_path / "libforms.duckdb", meas))
    v = res.verdicts[res.verdicts["variant"] == ring]
    assert sorted(zip(v["kind"], v["guideline"], v["msg_bytes"], v["verdict"], strict=True)) == [
        ("library", "library", 8, "violation"), ("library", "library", 1024, "violation")]
    row = v[v["msg_bytes"] == 8].iloc[0]
    assert (row["lhs"], row["rhs"]) == ("MPI_Iallreduce + MPI_Wait(8 B)", "MPI_Iallreduce + MPI_Wait algorithm ring")
    assert row["slowdown"] == pytest.approx(2.0, rel=0.05)
    from colltune.verify.advice import advice
    assert advice(row, "openmpi").endswith(
        "the library's ring algorithm: `mpiexec --mca coll_libnbc_iallreduce_algorithm ring ...`.")
    assert advice(row, "mpich").endswith(
        "`export MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM=ring MPIR_CVAR_DEVICE_COLLECTIVES=none`.")
    from colltune.verify import comparisons
    assert comparisons.measured_sides("allreduce", ring, "library", 8) == (
        ("allreduce", 8, "default#nonblocking"), ("allreduce", 8, ring))


def test_a_check_with_nothing_to_compare_prints_its_totals(tmp_path: Path) -> None:
    """Only MPI_Iallreduce measured: no comparison, and the totals print zeros (an empty verdict
    table once failed on its missing columns)."""
    from rich.console import Console

    from colltune.verify import tables
    meas = simulate(Truth(factors={}), {"allreduce": ["default#nonblocking"]}, [8])
    res = check.check_db(write_db(tmp_path / "empty.duckdb", meas))
    assert res.verdicts.empty
    console = Console(record=True, width=200)
    tables.print_check(res, console, "grouped")
    assert "Verdict: 0 violations, 0 no violation (equivalence shown)" in console.export_text()
