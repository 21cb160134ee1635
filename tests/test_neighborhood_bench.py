"""The neighborhood collectives measured and judged (issue 33): each job runs its call on a
periodic 2-D torus of the job's processes, next to the sides its guidelines put against it
(native/bench/bench_neighbor.c; docs/guidelines.md, "Neighborhood collectives", NH1-NH7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_synth import Truth, simulate, write_db
from test_bench_driver import FIXED, drive

from colltune import catalog
from colltune.measure.planning import plan_jobs
from colltune.measure.settings import BenchSettings
from colltune.mpi import build
from colltune.mpi import libraries as mpi
from colltune.verify import check

NEIGHBORHOOD = ("neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
                "neighbor_alltoallw")
SIDES = {"neighbor_allgather": ["default#graph", "default#complete", "default#dense", "default#alltoall"],
         "neighbor_alltoall": ["default#graph", "default#complete", "default#dense", "default#alltoallv"]}


@pytest.fixture(scope="module")
def bench_build(openmpi: mpi.MpiLibrary) -> build.Artifacts:
    """The driver calls the library's collectives itself, never the interposer: no proof needed
    (conftest's openmpi_build makes one first, minutes on a loaded machine)."""
    return build.ensure_built(openmpi)


def sides(row: str) -> list[str]:
    return ["default", "default#aa", "default#nonblocking", *SIDES.get(row, ["default#graph"])]


def test_neighborhood_preset_plans_every_row_with_its_sides() -> None:
    settings = BenchSettings.from_preset("neighborhood")
    assert settings.collectives == list(NEIGHBORHOOD)
    assert [r.name for r in catalog.load().rows if r.family == "neighborhood"] == list(NEIGHBORHOOD)
    jobs = {(j.collective, j.msg_bytes): j for j in plan_jobs(settings, 4, "openmpi").jobs}
    assert sorted(jobs) == sorted([(c, n) for c in NEIGHBORHOOD for n in (8, 1024, 32768)] + [("barrier", 0)])
    for row in NEIGHBORHOOD:
        assert sorted(jobs[(row, 1024)].variants) == sorted(sides(row)), row
    assert jobs[("neighbor_alltoallw", 8)].line() == (
        "neighbor_alltoallw 8 byte - - default,default#aa,default#nonblocking,default#graph")
    # the quick preset measures what it did before: none of these rows
    assert not set(BenchSettings.from_preset("quick").collectives) & set(NEIGHBORHOOD)
    # a side belongs to the rows whose guidelines have it
    only = BenchSettings(collectives=["neighbor_alltoallv"], variants=["default", "default#dense", "default#graph"])
    assert only.variants_for("neighbor_alltoallv", "openmpi") == ["default", "default#graph"]


def test_neighborhood_jobs_run_every_side_exactly_on_open_mpi(openmpi: mpi.MpiLibrary,
                                                              bench_build: build.Artifacts,
                                                              tmp_path: Path) -> None:
    """Every side runs (3 processes: a 3 x 1 torus, each process its own neighbour twice in the
    second dimension); the complete graph gives the dense collective's result. Open MPI 5.0.11's
    MPI_Ineighbor_alltoall(v,w) on the torus places the blocks a process sends itself as the
    distributed graph of the same neighbours does (matched in order), its blocking call as the
    Cartesian rule says (the block sent in the negative direction arrives from the positive one,
    as MPICH's blocking and nonblocking calls both do): a library finding (docs/guidelines.md)."""
    jobs = "".join(f"{row} 96 byte - - {','.join(sides(row))}\n" for row in NEIGHBORHOOD)
    out = drive(openmpi, bench_build, tmp_path, 3, jobs, "--probe")
    assert out.skips == []
    got: dict[str, dict[str, str]] = {}
    for p in out.probes:
        got.setdefault(out.jobs[p["job"]]["collective"], {})[p["variant"]] = p["hash"]
    assert {row: sorted(h) for row, h in got.items()} == {row: sorted(sides(row)) for row in NEIGHBORHOOD}
    for row, h in got.items():
        assert h["default"] == h["default#aa"], row
        if "allgather" in row:   # one block to every neighbour: the order cannot show
            assert h["default"] == h["default#nonblocking"] == h["default#graph"], row
        else:
            assert h["default#nonblocking"] == h["default#graph"] != h["default"], row
    for row in SIDES:
        assert got[row]["default#complete"] == got[row]["default#dense"], row
    # the job line counts the elements of one block
    assert {j["collective"]: j["count"] for j in out.jobs.values()} == dict.fromkeys(NEIGHBORHOOD, 96)


def test_a_variant_outside_a_rows_guidelines_is_skipped_with_the_reason(openmpi: mpi.MpiLibrary,
                                                                        bench_build: build.Artifacts,
                                                                        tmp_path: Path) -> None:
    out = drive(openmpi, bench_build, tmp_path, 2,
                "neighbor_alltoallv 16 byte - - default,default#dense,default#persistent,allreduce_as_reduce_bcast\n",
                *FIXED)
    assert sorted((s["variant"], s["reason"]) for s in out.skips) == [
        ("allreduce_as_reduce_bcast", "not measured for the neighborhood collectives (their variants: "
                                      'docs/guidelines.md, "Neighborhood collectives")'),
        ("default#dense", "default#dense is not a side of neighbor_alltoallv's guidelines (docs/guidelines.md)"),
        ("default#persistent", "not measured for the neighborhood collectives (their variants: "
                               'docs/guidelines.md, "Neighborhood collectives")')]
    assert out.jobs[0]["variants"] == ["default"]
    assert len(out.records[out.records.warmup == 0]) == 20


def test_nh_guidelines_direction_and_sides(tmp_path: Path) -> None:
    """Known truth: Neighbor_alltoall on the torus twice as slow as on the graph (NH1 violated) and
    as the Alltoallv with its neighbours' counts (NH2 violated); the dense Alltoall as fast as the
    complete graph's call (NH3 not violated); Neighbor_alltoallv twice as slow as Neighbor_alltoallw
    (NH7 violated), Neighbor_alltoall as fast as Neighbor_alltoallv (NH6 not violated)."""
    truth = Truth(factors={("neighbor_alltoall", "default"): 2.0, ("neighbor_alltoall", "default#aa"): 2.0,
                           ("neighbor_alltoallv", "default"): 2.0})
    plan = {"neighbor_alltoall": ["default", "default#aa", "default#graph", "default#alltoallv",
                                  "default#dense", "default#complete"],
            "neighbor_alltoallv": ["default"], "neighbor_alltoallw": ["default"]}
    res = check.check_db(write_db(tmp_path / "nh.duckdb", simulate(truth, plan, [1024])))
    v = res.verdicts[res.verdicts["guideline"].str.startswith("NH")]
    assert sorted(zip(v["guideline"], v["collective"], v["variant"], v["verdict"], strict=True)) == [
        ("NH1", "neighbor_alltoall", "default#graph", "violation"),
        ("NH2", "neighbor_alltoall", "default#alltoallv", "violation"),
        ("NH3", "neighbor_alltoall", "default#complete", "no violation"),
        ("NH6", "neighbor_alltoall", "neighbor_alltoallv", "no violation"),
        ("NH7", "neighbor_alltoallv", "neighbor_alltoallw", "violation")]
    labels = {g: (lhs, rhs) for g, lhs, rhs in zip(v["guideline"], v["lhs"], v["rhs"], strict=True)}
    assert labels == {
        "NH1": ("MPI_Neighbor_alltoall(1 KiB)", "MPI_Neighbor_alltoall on a distributed graph of the torus's neighbours(1 KiB)"),
        "NH2": ("MPI_Neighbor_alltoall(1 KiB)", "MPI_Alltoallv with the torus neighbours' counts(1 KiB)"),
        "NH3": ("MPI_Alltoall(1 KiB)", "MPI_Neighbor_alltoall on the complete graph(1 KiB)"),
        "NH6": ("MPI_Neighbor_alltoall(1 KiB)", "MPI_Neighbor_alltoallv(1 KiB)"),
        "NH7": ("MPI_Neighbor_alltoallv(1 KiB)", "MPI_Neighbor_alltoallw(1 KiB)")}
    # the sides are not judged as mock-ups of the default as well
    assert set(res.verdicts[res.verdicts["variant"].isin(catalog.NEIGHBOR_VARIANTS)]["guideline"]) == {"NH1", "NH2", "NH3"}
    assert pytest.approx(2.0, rel=0.1) == float(v[v["guideline"] == "NH1"]["slowdown"].iloc[0])


@pytest.mark.mpich
def test_mpich_algorithms_of_both_forms_are_measured_exactly(mpich: mpi.MpiLibrary, tmp_path: Path) -> None:
    """MPICH 5.0.2's neighborhood algorithms, as `check --preset neighborhood --library-algorithms`
    plans them: `nb` (blocking) and `sched_linear`, `tsp_linear` of MPI_Ineighbor_<coll> + Wait
    each run on the torus with their algorithm set (until 463bf8e the driver refused the
    nonblocking ones and the check dropped them without a word); each gives the bits of the
    library's own call of its form. The bench has no persistent neighborhood call: skipped, said why."""
    art = build.ensure_built(mpich)
    def variants(row: str) -> list[str]:
        return ["default", "default#nonblocking", f"lib:{row}:nb", f"lib:{row}:sched_linear#nonblocking",
                f"lib:{row}:tsp_linear#nonblocking", f"lib:{row}:tsp_linear#persistent"]
    jobs = "".join(f"{row} 96 byte - - {','.join(variants(row))}\n" for row in NEIGHBORHOOD)
    out = drive(mpich, art, tmp_path, 2, jobs, "--probe")
    assert sorted((out.jobs[s["job"]]["collective"], s["variant"], s["reason"]) for s in out.skips) == [
        (row, f"lib:{row}:tsp_linear#persistent", "not measured for the neighborhood collectives (their variants: "
                                                   'docs/guidelines.md, "Neighborhood collectives")')
        for row in NEIGHBORHOOD]
    got: dict[str, dict[str, str]] = {}
    for p in out.probes:
        got.setdefault(out.jobs[p["job"]]["collective"], {})[p["variant"]] = p["hash"]
    assert {row: sorted(h) for row, h in got.items()} == {row: sorted(variants(row)[:5]) for row in NEIGHBORHOOD}
    for row, h in got.items():
        assert h[f"lib:{row}:nb"] == h["default"], row
        assert (h[f"lib:{row}:sched_linear#nonblocking"] == h[f"lib:{row}:tsp_linear#nonblocking"]
                == h["default#nonblocking"]), row
