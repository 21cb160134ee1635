"""`colltune advise`'s where-the-time-goes table: exact calls, sizes and call sites on a program
of known calls (tests/programs/advise_where.c), the figures' definitions on a synthetic run,
80 columns, --top, and the same table in the JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from advise_support import compile_advise_programs
from click.testing import CliRunner

from colltune.advise import callsites, profile_run, where
from colltune.commands.advise import command as advise_cmd

IMBALANCE = Path(__file__).resolve().parent / "data" / "advise-imbalance"


@pytest.fixture(scope="module")
def programs(openmpi, tmp_path_factory):
    return compile_advise_programs(openmpi, tmp_path_factory.mktemp("advise"))


def run_advise(openmpi, tmp_path: Path, program: Path, *extra: str) -> tuple[dict, str]:
    out = tmp_path / "out"
    args = ["--db", str(tmp_path / "none.duckdb"), "--out", str(out), "--json", str(tmp_path / "a.json"),
            *extra, "--", str(openmpi.mpiexec), "-n", "2", "--bind-to", "core", str(program)]
    res = CliRunner().invoke(advise_cmd, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads((tmp_path / "a.json").read_text()), res.output


def test_where_the_time_goes(openmpi, openmpi_build, programs, tmp_path):
    report, output = run_advise(openmpi, tmp_path, programs["advise_where"])
    table = report["where"]
    assert table["nprocs"] == 2 and table["wall_s"] == report["wall_s"]
    coll = {r["name"]: r for r in table["collectives"]}
    p2p = {r["name"]: r for r in table["p2p"]}
    assert sorted(coll) == ["MPI_Bcast", "MPI_Reduce"] and sorted(p2p) == ["MPI_Recv", "MPI_Send"]
    bcast, reduce = coll["MPI_Bcast"], coll["MPI_Reduce"]
    # 10 x 100 + 10 x 120 + 5 x 4000 bytes over 25 calls, on both ranks alike.
    assert (bcast["calls"], bcast["bytes_mean"], bcast["bytes_min"], bcast["bytes_max"]) == (25, 888, 100, 4000)
    assert {s["site"]: s["calls"] for s in bcast["sites"]} == {
        "bcast_small (advise_where.c:11)": 10, "bcast_small (advise_where.c:12)": 10,
        "bcast_large (advise_where.c:19)": 5}
    assert (reduce["calls"], reduce["bytes_mean"], reduce["bytes_min"], reduce["bytes_max"]) == (7, 8, 8, 8)
    assert [(s["site"], s["calls"]) for s in reduce["sites"]] == [("reduce_small (advise_where.c:26)", 7)]
    for row in (bcast, reduce):
        assert {row["slowest_rank"], row["fastest_rank"]} <= {0, 1}
        assert row["time_s"] == row["slowest_s"] >= row["fastest_s"] > 0
        assert row["time_s"] == pytest.approx(row["own_s"] + row["wait_s"])
        assert row["share"] == pytest.approx(row["time_s"] / report["wall_s"])
        assert max(s["time_s"] for s in row["sites"]) <= row["time_s"]
    # Only rank 0 sends and only rank 1 receives: each is its own slowest and fastest rank.
    send, recv = p2p["MPI_Send"], p2p["MPI_Recv"]
    assert (send["calls"], send["bytes_mean"], send["slowest_rank"], send["fastest_rank"]) == (3, 64, 0, 0)
    assert (recv["calls"], recv["bytes_mean"], recv["slowest_rank"], recv["fastest_rank"]) == (3, 64, 1, 1)
    assert send["wait_s"] is None and send["own_s"] == send["time_s"]
    assert [s["site"] for s in send["sites"]] == ["main (advise_where.c:40)"]
    # Collectives by own cost, in the JSON as in the terminal.
    assert [r["own_s"] for r in table["collectives"]] == sorted((r["own_s"] for r in table["collectives"]),
                                                               reverse=True)
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Where the time goes: 2 ranks"))
    # The collective time seen (the rank with the most, summed over its collectives) and its
    # tunable share (advise_where.c calls served collectives only; tests/test_every.py has the
    # watched ones).
    per_rank = {rank: sum(r["rank_s"].get(rank, 0.0) for r in table["collectives"]) for rank in ("0", "1")}
    rank = max(per_rank, key=lambda k: per_rank[k])
    seen = per_rank[rank]
    assert [r["name"] for r in table["collectives"] if not r["tunable"]] == []
    assert table["tunable_share"] == 1.0 and table["collective_s"] == pytest.approx(seen)
    assert table["collective_rank"] == int(rank) and seen <= table["wall_s"]
    assert lines[start + 1] == (f"collective time {where.fmt_s(seen)} (rank {rank}), 100.0% of it "
                                "tunable (the rest only seen)")
    # the rule: this build's proof where a selftest made one (the test session may have), else the catalog
    assert lines[start + 2] in ("  tunable on openmpi: a member of its form (no proof of this build known)",
                                "  tunable on openmpi: a member of its form proven here (the build's proof.txt)")
    assert table["tunable_library"] == "openmpi" and lines[start + 2] == "  " + table["tunable_rule"]
    assert lines[start + 3].split() == ["call", "calls/rank", "bytes", "(range)", "own", "waiting", "share"]
    [bline] = [line for line in lines if line.startswith("MPI_Bcast ")]
    assert bline.split()[:3] == ["MPI_Bcast", "25", "888"] and bline.split()[3] == "(100-3.9K)"
    assert all(len(line) <= 80 for line in lines[start:start + 20]), lines[start:start + 20]
    assert lines.index(bline) < lines.index("point-to-point (own = time in the call, waiting for the "
                                            "partner included)")


def test_measure_order_follows_the_profile(openmpi, openmpi_build, programs, tmp_path):
    # --measure benchmarks the points the database lacks, the most own cost first.
    report, _ = run_advise(openmpi, tmp_path, programs["advise_where"])
    # The 7 Reduce back to back are a small_reductions pattern: the Reduce of 8 bytes and the fused
    # one of 16 are missing too, timed back to back, ranked by the own cost of the calls in their
    # size bin (none at 16 bytes: 0).
    missing = report["missing_points"]
    assert sorted((m["collective"], m["bin"], m["back_to_back"]) for m in missing) == [
        ("bcast", 6, False), ("bcast", 11, False), ("reduce", 3, False), ("reduce", 3, True), ("reduce", 4, True)]
    own = {(p["collective"], p["bin"]): p["own_s"] for p in report["points"]}
    assert [m["own_s"] for m in missing] == [own.get((m["collective"], m["bin"]), 0.0) for m in missing]
    assert [m["own_s"] for m in missing] == sorted((m["own_s"] for m in missing), reverse=True)


def test_top(openmpi, openmpi_build, programs, tmp_path):
    report, output = run_advise(openmpi, tmp_path, programs["advise_where"], "--top", "1")
    first = report["where"]["collectives"][0]["name"]
    shown = [line.split()[0] for line in output.splitlines() if line.startswith("MPI_")]
    assert shown == [first, report["where"]["p2p"][0]["name"]]
    assert "... 1 more collectives (--top N shows more)" in output.splitlines()
    assert len(report["where"]["collectives"]) == 2   # the JSON has every row


def test_figures_on_a_synthetic_run():
    # tests/data/advise-imbalance: rank 0 waits 1.28 s in 64 sampled Allreduce, rank 1 arrives late.
    # A format-1 file has no exact size range: the bounds of the 8-byte calls' log2 bin.
    run = profile_run.read(IMBALANCE)
    [row] = where.rows(run)
    assert row.as_dict() == {
        "kind": "coll", "name": "MPI_Allreduce", "calls": 64, "bytes_mean": 8.0, "bytes_min": 8,
        "bytes_max": 15, "time_s": 1.28064, "own_s": 0.00064, "wait_s": 1.28,
        "share": pytest.approx(1.28064 / 1.32), "slowest_rank": 0, "slowest_s": 1.28064, "fastest_rank": 1,
        "fastest_s": 0.000704,
        "sites": [{"site": "unknown", "calls": 64, "time_s": 1.28064, "calls_estimated": False}],
        "completed": 0, "overlap_s": None, "tunable": True,
        "tunable_rule": "9 members of the blocking form on openmpi (not proven yet: no proof of this build known)",
        "time_interval_s": [pytest.approx(1.28064), pytest.approx(1.28064)],   # every call timed
        "rank_s": {"0": 1.28064, "1": 0.000704}}
    assert where.text(run, [row]) == [
        "Where the time goes: 2 ranks, wall 1.32 s, each row on its slowest rank",
        "collective time 1.28 s (rank 0), 100.0% of it tunable (the rest only seen)",
        "  tunable on openmpi: a member of its form (no proof of this build known)",
        where.HEAD,
        "MPI_Allreduce                 64         8 (8-15)  640.0 us    1.28 s  97.0%",
        "    slowest rank 0 (1.28 s), fastest rank 1 (704.0 us)",
        "             64    1.28 s  unknown"]


def _point(name: str, calls: int, total_ns: int) -> profile_run.Point:
    """Calls of `name` at one site, every one timed."""
    return profile_run.Point("coll", name, 0x1000, 2, 3, calls, total_ns, total_ns // calls, 8 * calls,
                             0, 0, 0, 0, 8, 8, calls, total_ns, total_ns)


def test_collective_time_is_one_ranks_and_never_exceeds_the_run():
    # ExaML's Reduce+Bcast pairs on two ranks: the root (rank 0) waits in MPI_Reduce for rank 1's
    # contribution, rank 1 waits in MPI_Bcast for the root's result. Each rank's collectives take
    # 9 of its 10 s; each function's slowest rank has 8 s of it: summed, 16 s, 160% of the run.
    ranks = [profile_run.RankProfile(rank, 2, 10_000_000_000, "h", "lib", 2, None, 0, (),
                                     points=[_point("reduce", 1000, reduce_ns), _point("bcast", 1000, bcast_ns)])
             for rank, reduce_ns, bcast_ns in ((0, 8_000_000_000, 1_000_000_000),
                                               (1, 1_000_000_000, 8_000_000_000))]
    run = profile_run.ProfileRun(Path("synthetic"), ranks)
    table = where.rows(run)
    assert [(r.name, r.time_s, r.slowest_rank) for r in table] == [("MPI_Bcast", 8.0, 1),
                                                                     ("MPI_Reduce", 8.0, 0)]
    assert sum(r.time_s for r in table) == 16.0   # the old figure: 160% of the 10 s run
    assert where.coverage_of(table) == where.Coverage(9.0, 0, 1.0)   # a tie: the lower rank
    assert where.coverage(table) == (9.0, 1.0)
    doc = where.as_json(run, table)
    assert (doc["collective_s"], doc["collective_rank"], doc["wall_s"]) == (9.0, 0, 10.0)
    assert where.text(run, table)[1] == ("collective time 9.00 s (rank 0), 100.0% of it tunable (the rest "
                                         "only seen)")
    # rank 1 a little slower in its Bcast: its 9.5 s is the run's collective time
    ranks[1].points[1] = _point("bcast", 1000, 8_500_000_000)
    assert where.coverage_of(where.rows(run)) == where.Coverage(9.5, 1, 1.0)


def _run_of(library: str, times_s: dict[str, float]) -> profile_run.ProfileRun:
    """One rank of `library` spending times_s[name] in each collective (runtime names)."""
    points = [_point(name, 10, int(t * 1e9)) for name, t in times_s.items()]
    return profile_run.ProfileRun(Path("synthetic"), [profile_run.RankProfile(0, 2, 20_000_000_000, "h", library, 2,
                                                                              None, 0, (), points=points)])


TIMES = {"allreduce": 2.0, "gatherv": 1.0, "iallreduce": 3.0, "ibarrier": 4.0, "alltoallw": 0.5,
         "neighbor_alltoall": 0.25, "gatherv_c": 0.125}


def test_neighborhood_rows_tunable_on_mpich_only_and_not_in_their_c_binding():
    # MPICH 5.0.2 has MPIR_CVAR_NEIGHBOR_<COLL>_INTRA_ALGORITHM (`nb`) and the I* ones for the
    # nonblocking and persistent forms, Neighbor_alltoallw too; Open MPI 5.0.11 has no
    # neighborhood algorithm variable. A _c binding is watched only: a regular row's counts need
    # not fit an int alike on every rank, a v/w row's are MPI_Count arrays.
    times = {"neighbor_allgather": 1.0, "ineighbor_alltoallw": 1.0, "neighbor_alltoallw_init": 1.0,
             "neighbor_allgather_c": 1.0, "neighbor_alltoallv_c": 1.0}
    mpich = {r.name: (r.tunable, r.tunable_rule) for r in where.rows(_run_of("MPICH Version:      5.0.2", times))}
    ompi = {r.name: (r.tunable, r.tunable_rule) for r in where.rows(_run_of("Open MPI v5.0.11", times))}
    unproven = "(not proven yet: no proof of this build known)"
    assert mpich == {
        "MPI_Neighbor_allgather": (True, f"1 members of the blocking form on mpich {unproven}"),
        "MPI_Ineighbor_alltoallw": (True, f"2 members of the nonblocking form on mpich {unproven}"),
        "MPI_Neighbor_alltoallw_init": (True, f"2 members of the persistent form on mpich {unproven}"),
        "MPI_Neighbor_allgather_c": (False, "watched only: its _c binding is not served "
                                            "(its counts need not fit an int alike on every rank)"),
        "MPI_Neighbor_alltoallv_c": (False, "watched only: its _c binding is not served (MPI_Count arrays)")}
    assert ompi == {**mpich,
                    "MPI_Neighbor_allgather": (False, "no member of the blocking form on openmpi"),
                    "MPI_Ineighbor_alltoallw": (False, "no member of the nonblocking form on openmpi"),
                    "MPI_Neighbor_alltoallw_init": (False, "no member of the persistent form on openmpi")}


def test_tunable_follows_the_library_and_the_form():
    # Open MPI has no member for Gatherv (no coll_tuned variable, no mock-up) nor for Ibarrier
    # (libnbc has no ibarrier variable); MPICH has both. Iallreduce has libnbc's / MPICH's
    # nonblocking algorithms. Alltoallw has MPICH's two algorithms (the selftest proves them:
    # st_case.c's Alltoallw geometry), none on Open MPI; so have the neighborhood collectives
    # (MPICH's `nb`); a v form's _c binding is watched only.
    ompi = where.rows(_run_of("Open MPI v5.0.11, package: Open MPI", TIMES))
    mpich = where.rows(_run_of("MPICH Version:      5.0.2", TIMES))
    assert {r.name: r.tunable for r in ompi} == {
        "MPI_Allreduce": True, "MPI_Gatherv": False, "MPI_Iallreduce": True, "MPI_Ibarrier": False,
        "MPI_Alltoallw": False, "MPI_Neighbor_alltoall": False, "MPI_Gatherv_c": False}
    assert {r.name: r.tunable for r in mpich} == {**{r.name: r.tunable for r in ompi}, "MPI_Gatherv": True,
                                                   "MPI_Ibarrier": True, "MPI_Alltoallw": True,
                                                   "MPI_Neighbor_alltoall": True}
    rules = {r.name: r.tunable_rule for r in ompi}
    assert rules == {
        "MPI_Allreduce": "9 members of the blocking form on openmpi (not proven yet: no proof of this build known)",
        "MPI_Gatherv": "no member of the blocking form on openmpi",
        "MPI_Iallreduce": "4 members of the nonblocking form on openmpi (not proven yet: no proof of this build known)",
        "MPI_Ibarrier": "no member of the nonblocking form on openmpi",
        "MPI_Alltoallw": "no member of the blocking form on openmpi",
        "MPI_Neighbor_alltoall": "no member of the blocking form on openmpi",
        "MPI_Gatherv_c": "watched only: its _c binding is not served (MPI_Count arrays)"}
    assert {r.name: r.tunable_rule for r in mpich}["MPI_Alltoallw"] == (
        "2 members of the blocking form on mpich (not proven yet: no proof of this build known)")
    total = sum(TIMES.values())
    assert where.coverage_of(ompi) == where.Coverage(total, 0, 5.0 / total)
    assert where.coverage_of(mpich) == where.Coverage(total, 0, 10.75 / total)
    lines = where.text(_run_of("Open MPI v5.0.11", TIMES), ompi)
    assert lines[1:7] == [
        "collective time 10.88 s (rank 0), 46.0% of it tunable (the rest only seen)",
        "  tunable on openmpi: a member of its form (no proof of this build known)",
        "  not tunable: MPI_Ibarrier 4.00 s: no member of the nonblocking form on openmpi",
        "  not tunable: MPI_Gatherv 1.00 s: no member of the blocking form on openmpi",
        "  not tunable: MPI_Alltoallw 500.0 ms: no member of the blocking form on openmpi",
        "  ... 2 more not tunable (all in the JSON)"]


def test_tunable_follows_the_proof(tmp_path):
    # A proof of this build that passed one blocking Allreduce member and no member of the
    # nonblocking form: MPI_Iallreduce is not served (the runtime serves nothing unproven).
    proof = tmp_path / "proof.txt"
    proof.write_text("colltune-proof 2\nsizes 2,3\nmember lib:allreduce:ring passed int_sum\n"
                     "member allreduce_as_reduce_bcast passed -\nmember lib:bcast:ring#nonblocking passed int\n")
    run = _run_of("Open MPI v5.0.11", TIMES)
    tunability = where.Tunability.of_run(run, proof)
    assert tunability == where.Tunability("openmpi", {"lib:allreduce:ring": frozenset({"int_sum"}),
                                                      "allreduce_as_reduce_bcast": frozenset(),
                                                      "lib:bcast:ring#nonblocking": frozenset({"int"})}, str(proof))
    table = {r.name: (r.tunable, r.tunable_rule) for r in where.rows(run, tunability)}
    assert table["MPI_Allreduce"] == (True, "1 of 9 members proven (blocking form, openmpi)")
    assert table["MPI_Iallreduce"] == (False, "none of its 4 members of the nonblocking form is in this build's "
                                              "proof (the library offers none at run time, or colltune selftest "
                                              "--nonblocking has not run)")
    # a member in the proof that passed no class
    failed = where.Tunability("openmpi", {"lib:bcast:chain": frozenset()}, "p")
    assert failed.decide("MPI_Barrier") == (False, "none of its 7 members of the blocking form is in this build's "
                                                   "proof (the library offers none at run time, or colltune "
                                                   "selftest has not run)")
    assert failed.decide("MPI_Bcast") == (False, "none of its 11 members of the blocking form passed this build's proof")
    assert where.Tunability.of_run(run, tmp_path / "none.txt") == where.Tunability("openmpi")
    doc = where.as_json(run, where.rows(run, tunability), tunability)
    assert (doc["tunable_library"], doc["tunable_proof"]) == ("openmpi", str(proof))
    assert doc["tunable_share"] == pytest.approx(2.0 / sum(TIMES.values()))
    # Intel MPI: library algorithms are set per launch (I_MPI_ADJUST_*, I_MPI_ADJUST_I* for the
    # nonblocking form); its MPI_<Coll>_init follows neither: no member of the persistent form
    intel = where.Tunability("intel", {}, "p")
    assert intel.decide("MPI_Gatherv") == (True, "0 of 0 members proven, 2 library algorithms set per launch "
                                                 "(blocking form, intel)")
    assert intel.decide("MPI_Iallreduce") == (True, "0 of 0 members proven, 7 library algorithms set per launch "
                                                    "(nonblocking form, intel)")
    assert intel.decide("MPI_Ibarrier") == (True, "0 of 0 members proven, 1 library algorithms set per launch "
                                                  "(nonblocking form, intel)")
    assert intel.decide("MPI_Allreduce_init") == (False, "no member of the persistent form on intel")


def test_long_names_and_sites_stay_in_80_columns():
    row = where.TimeRow("coll", "MPI_Reduce_scatter_block", calls=1234567, bytes_mean=3 << 20,
                        bytes_min=1 << 20, bytes_max=5 << 20, time_s=12.5, own_s=10.25, wait_s=2.25,
                        share=0.5, sites=[where.SiteTime("a_very_long_fortran_subroutine_name_" * 3 + " (x.f90:1)",
                                                         1234567, 12.5)])
    lines = where._row_lines(row, 3)
    assert lines[0] == "MPI_Reduce_scatter_block"
    assert lines[1].split() == ["1,234,567", "3.0M", "(1.0M-5.0M)", "10.25", "s", "2.25", "s", "50.0%"]
    # the site is cut in the middle of its function's name: its file:line stays
    assert all(len(line) <= 80 for line in lines) and lines[-1].endswith("a_very_long_fortran_...ran_subroutine_name_ (x.f90:1)")
    # a layered site drops its layer frames first, then cuts the function's name
    label = "solver::PCG::solve (layers_app.cpp:19) <- mini::gSum <- mini::reduce"
    assert where.fit_site(label, 80) == label
    assert where.fit_site(label, 59) == "solver::PCG::solve (layers_app.cpp:19) <- mini::gSum <- ..."
    assert where.fit_site(label, 45) == "solver::PCG::solve (layers_app.cpp:19) <- ..."
    assert where.fit_site(label, 40) == "solver::PCG::solve (layers_app.cpp:19)"
    # then its namespaces (Class::method stays), and only then is its name cut (its end stays)
    assert where.fit_site(label, 30) == "PCG::solve (layers_app.cpp:19)"
    assert where.fit_site("solver::ConjugateGradients::solve (cg.cpp:19)", 30) == "Conjugat...::solve (cg.cpp:19)"


def test_report_section_has_the_table(openmpi, openmpi_build, programs, tmp_path):
    from colltune.report.html import ReportContext
    from colltune.report.sections import advise as section

    report, _ = run_advise(openmpi, tmp_path, programs["advise_where"])
    ctx = ReportContext(tmp_path / "none.duckdb", None, stored=False)   # advise recorded it there
    page = section.render(ctx)
    ctx.close()
    assert page is not None and "<h3>Where the time goes</h3>" in page
    rows = page.split("<h3>Where the time goes</h3>")[1].split("</table>")[0].split("<tr>")[2:]
    assert [r.split("<td>")[1].split("</td>")[0] for r in rows] == [
        r["name"] for r in report["where"]["collectives"] + report["where"]["p2p"]]
    bcast = next(r for r in rows if "MPI_Bcast" in r)
    assert "<td>25</td><td>888 (100-3.9K)</td>" in bcast
    assert "<code>bcast_large (advise_where.c:19)</code> 5, " in bcast


DEBIAN_MPICC = Path("/usr/bin/mpicc.openmpi")


@pytest.fixture(scope="module")
def debian_fortran(tmp_path_factory):
    """Debian's Open MPI 4.1 with its mpifort: the advise_fortran program and libcolltune for it."""
    import shutil
    import subprocess

    from colltune.measure import proof
    from colltune.mpi import build
    from colltune.mpi import libraries as mpi

    fort = Path("/usr/bin/mpifort.openmpi")
    if not DEBIAN_MPICC.exists() or not fort.exists() or shutil.which("gfortran") is None:
        pytest.skip("Debian's Open MPI with mpifort and gfortran are missing (make setup-fortran)")
    lib = mpi.identify(DEBIAN_MPICC)
    art = build.ensure_built(lib)
    proof.ensure_proven(lib)
    exe = tmp_path_factory.mktemp("fortran") / "advise_fortran"
    subprocess.run([str(fort), "-g", "-O1", "-o", str(exe),
                    str(Path(__file__).resolve().parent / "programs" / "advise_fortran.f90")], check=True)
    return lib, art, exe


def test_fortran_call_sites_are_the_programs_lines(debian_fortran, tmp_path):
    # Open MPI's Fortran bindings call PMPI_* directly, so colltune wraps the Fortran symbols
    # (ct_fortran_wrappers.c), which call its C wrappers: without passing the application's
    # return address down, every site read `ct_f_reduce (ct_fortran_wrappers.c:...)`.
    from advise_support import profiled

    lib, art, exe = debian_fortran
    run = profiled(lib, art, 2, [exe], tmp_path / "p")
    assert "sum    1.0" in run.stdout, run.describe()
    table = {r.name: r for r in where.rows(profile_run.read(tmp_path / "p"))}
    assert {name: [(s.label, s.calls) for s in r.sites] for name, r in table.items()} == {
        "MPI_Reduce": [("step_ (advise_fortran.f90:28)", 6)],
        "MPI_Bcast": [("step_ (advise_fortran.f90:29)", 6)],
        "MPI_Allreduce": [("MAIN__ (advise_fortran.f90:17)", 4)]}
    assert {name: (r.bytes_min, r.bytes_max) for name, r in table.items()} == {
        "MPI_Reduce": (32, 32), "MPI_Bcast": (32, 32), "MPI_Allreduce": (32, 32)}
    # The Reduce + Bcast of the reduce's result, found in Fortran too (same buffer `b` at root 0).
    from colltune.advise import patterns

    # The 4 MPI_Allreduce of the main program, back to back and independent, are one too.
    assert [(p.name, p.first, p.second, p.pairs) for p in patterns.find(profile_run.read(tmp_path / "p"))] == [
        ("reduce_bcast", "step_ (advise_fortran.f90:28)", "step_ (advise_fortran.f90:29)", 6),
        ("small_reductions", "MAIN__ (advise_fortran.f90:17)", "MAIN__ (advise_fortran.f90:17)", 3)]


def test_fortran_barrier_and_point_to_point_are_profiled(debian_fortran, tmp_path):
    # Fortran's MPI_Barrier and point-to-point calls (Open MPI's bindings call PMPI_* directly)
    # reach the profiling mode through colltune's Fortran symbols, at the program's own lines.
    import subprocess

    from advise_support import profiled
    from colltune.advise import patterns

    lib, art, _ = debian_fortran
    exe = tmp_path / "advise_fortran_p2p"
    subprocess.run(["/usr/bin/mpifort.openmpi", "-g", "-O0", "-o", str(exe),   # -O0: every call at its line
                    str(Path(__file__).resolve().parent / "programs" / "advise_fortran_p2p.f90")], check=True)
    run = profiled(lib, art, 2, [exe], tmp_path / "p")
    assert sorted(line for line in run.stdout.splitlines() if line.startswith(("ok", "FAIL"))) == ["ok 0", "ok 1"], \
        run.describe()
    prof = profile_run.read(tmp_path / "p")
    per_rank = []
    for r in prof.ranks:
        labels = callsites.of(prof, r)
        per_rank.append(sorted((p.name, labels[p.site].label, p.calls, p.bytes_min, p.bytes_max) for p in r.points))
    at = "MAIN__ (advise_fortran_p2p.f90:{})".format
    both = [("Irecv", at(28), 2, 800, 800), ("Isend", at(29), 2, 800, 800), ("Isend", at(33), 1, 8, 8),
            ("Recv", at(35), 1, 8, 8), ("Sendrecv", at(32), 1, 80, 80),
            ("Wait", "wait_one_ (advise_fortran_p2p.f90:47)", 1, None, None),   # see the program
            ("Waitall", at(30), 2, None, None), ("allreduce", at(18), 3, 8, 8), ("barrier", at(17), 3, None, None)]
    assert per_rank[0] == sorted(both + [("Send", at(22), 5, 8000, 8000)])
    assert per_rank[1] == sorted(both + [("Recv", at(24), 5, 8000, 8000)])
    assert [(p.name, p.first, p.second, p.pairs) for p in patterns.find(prof)] == [
        ("barrier_before_sync", at(17), at(18), 3)]


def test_durations_keep_their_digits():
    # A pattern's saving per pair is tens of nanoseconds on one node: "0.0 us" would hide it.
    assert [where.fmt_s(s) for s in (None, 0.0, 4.2e-8, 1.19e-7, 2.5e-6, 0.0123, 3.456)] == [
        "-", "0", "42 ns", "119 ns", "2.5 us", "12.3 ms", "3.46 s"]


def test_sampled_polls_are_estimates_with_their_interval(tmp_path):
    # A rank's MPI_Test polls that completed nothing: 4,001 in all (the `polls` line, exact), of
    # which the countdown sampled 40: 30 at one site, 10 at another (`polled` lines); the second
    # site also counted 1 poll that completed a request (exactly). The sites get 3,000.75 and
    # 1,000.25 rounded to sum to 4,001, each with the exact binomial interval times 4,001.
    from scipy import stats

    from colltune.report.sections.advise import _site_calls

    f = tmp_path / "rank-0"
    f.write_text("colltune-profile-run 4\nrank 0\nnprocs 1\nwall_ns 10000000000\nhost h\nlibrary L\n"
                 "cores_online 2\nomp_num_threads -\nsample_every 16\n"
                 "p2p Test 0x401000 0 -1 30 30 30000 2000 0 0 0 0 0 0 0\npolled Test 0x401000 30\n"
                 "p2p Test 0x401020 0 -1 11 11 11000 1000 0 0 0 0 0 0 0\npolled Test 0x401020 10\n"
                 "polls Test 4001 40\nend\n")
    rank = profile_run.read_rank(f)
    a, b = rank.points
    assert (a.calls, b.calls) == (3001, 1001)   # 3,000.75 and 1,000.25 + 1: the largest remainder up
    for p, s, exact in ((a, 30, 0), (b, 10, 1)):
        ci = stats.binomtest(s, 40).proportion_ci(0.95, method="exact")
        assert p.calls_interval == (exact + max(s, math.floor(ci.low * 4001)), exact + math.ceil(ci.high * 4001))
        assert p.total_ns == round(p.total_lo_ns * p.calls / p.timed) and p.total_lo_ns == 1000 * (s + exact)
    run = profile_run.ProfileRun(tmp_path, [rank])
    [row] = where.rows(run)
    assert row.calls == 4002   # the function's total: exact
    sites = row.as_dict()["sites"]
    assert [(s["calls"], s["calls_estimated"], s["calls_interval"]) for s in sites] == [
        (3001, True, list(a.calls_interval)), (1001, True, list(b.calls_interval))]
    lines = where.text(run, [row])
    assert lines[-3].split()[0] == "~3,001" and lines[-2].split()[0] == "~1,001"
    assert lines[-1] == "    ~ estimated from a sample of the calls (intervals in the JSON)"
    assert _site_calls(sites[0]) == f"~3,001 ({a.calls_interval[0]:,}-{a.calls_interval[1]:,})"
    # An inconsistent file says so.
    f.write_text(f.read_text().replace("polls Test 4001 40", "polls Test 4001 41"))
    with pytest.raises(profile_run.ProfileRunError, match="polls and polled lines disagree"):
        profile_run.read_rank(f)
