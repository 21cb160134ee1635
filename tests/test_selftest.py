"""Correctness of the variants: the selftest driver on Open MPI and MPICH.

The expected case counts and not-applicable counts are computed here from the matrix as
docs/variants.md describes it and from the `needs` of native/spec/collectives.toml: a third,
independent statement of the rules (the core and the driver's own rules are the other two).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import CliRunner

from colltune import catalog
from colltune.cli import main
from colltune.measure import selftest as st
from colltune.mpi import libraries as mpi
from colltune.mpi.build import Artifacts

# Ops per datatype for reductions; "mixed" (the vector on even ranks, twice as many ints on odd
# ranks) only for data movement, as reductions take one datatype everywhere. `user_count` assumes
# its caller's count (like MPICH's red3/red4 tests): only at count 1, of allreduce, reduce, scan.
USER_OPS = ("user_commutative", "user_noncommutative", "user_callers_count")
OPS = {"MPI_BYTE": ("MPI_BOR",), "MPI_INT": ("MPI_SUM", "MPI_MAX", "MPI_BOR", *USER_OPS),
       "MPI_DOUBLE": ("MPI_SUM", "MPI_MAX"), "contiguous": USER_OPS, "vector": USER_OPS, "mixed": (),
       "MPI_UINT8_T": ("MPI_SUM", "MPI_MAX", "MPI_BOR")}
ROOTED = {"bcast", "gather", "reduce", "scatter", "gatherv", "scatterv"}
WITH_OP = {"allreduce", "reduce", "reduce_scatter_block", "reduce_scatter", "scan", "exscan"}
CALLERS_COUNT = {"allreduce", "reduce", "scan"}
BIG = 1 << 18   # ints of the 1 MiB case
BYTES = {"MPI_BYTE": 1, "MPI_INT": 4, "MPI_DOUBLE": 8, "contiguous": 12, "vector": 8, "mixed": 8,
         "MPI_UINT8_T": 1}   # per element of the matrix's datatypes ("mixed": the vector's)
# MPICH family: the mock-ups that hand MPI_Allgatherv another collective's per-rank layouts step
# aside where MPICH runs its ring (T bytes in all: GL4's p blocks, GL9's one block), from 512 KiB
# on 2^k ranks and 80 KiB on the others (docs/variants.md, "MPICH's Allgatherv ring").
RING_TOTAL = {"allgather_as_allgatherv": lambda size, n: size * n,
              "bcast_as_allgatherv": lambda size, n: n}


def _mpich_ring(size: int, total: int) -> bool:
    return total >= (512 * 1024 if size & (size - 1) == 0 else 80 * 1024)
Keep = Callable[[int, str, str, int], bool]   # (communicator size, datatype, op, count) -> counted


def _comm_sizes(p: int) -> list[tuple[str, int]]:
    halves = [("split", (p + 1) // 2)] + ([("split", p // 2)] if p // 2 else [])
    return [("world", p), *halves, ("dup", p)]


def _everything(size: int, t: str, op: str, n: int) -> bool:
    return True


def _cases(coll: str, p: int, quick: bool, big: bool, only_type: str | None = None,
           user_ops_only: bool = False, keep: Keep = _everything) -> int:
    """Cases of the matrix for `coll` on p ranks that `keep` (and the older filters) select."""
    def kept(size: int, t: str, op: str, n: int) -> bool:
        return ((only_type is None or t == only_type) and (not user_ops_only or op in USER_OPS)
                and keep(size, t, op, n))

    if coll == "barrier":   # no data: one case, twice, per communicator
        return 2 * sum(kept(size, "MPI_BYTE", "-", 0) for _, size in _comm_sizes(p))
    in_place = 2 if catalog.load().collectives[_index(coll)].in_place else 1
    counts = (0, 7) if quick else (0, 1, 7, 1000)
    total = 0
    for name, size in _comm_sizes(p):
        roots = len({0, size - 1, size // 2}) if coll in ROOTED else 1
        for t, ops in OPS.items():
            if quick and name != "world" and t not in ("MPI_INT", "vector"):
                continue
            for op in (ops if coll in WITH_OP else ("-",)):
                for n in counts:
                    if op == "user_callers_count" and (n != 1 or coll not in CALLERS_COUNT):
                        continue
                    total += roots * in_place * kept(size, t, op, n)
    sum_op = "MPI_SUM" if coll in WITH_OP else "-"
    if big:
        total += kept(p, "MPI_INT", sum_op, BIG) * (1 if quick else in_place)
        if coll in WITH_OP and not quick:
            total += kept(p, "MPI_DOUBLE", "MPI_SUM", BIG)
    # count 1 with adjacent send and receive buffers, both orders (every collective with both)
    if coll != "bcast":
        total += 2 * kept(p, "MPI_INT", sum_op, 1)
    return total


def _index(coll: str) -> int:
    return catalog.load().collective_names().index(coll)


def _only_8bit_sums(report: st.Report, r: st.VariantResult) -> None:
    """Open MPI 5.0's op/avx saturates 8-bit sums and its algorithms split vectors differently:
    mock-ups then differ from the default there and nowhere else (the proof refuses them for
    that class, tests/test_proof.py)."""
    mine = [f for x in report.launches for f in x.failures if f.variant == r.variant]
    assert all(f.case["datatype"] == "MPI_UINT8_T" and f.case["op"] == "MPI_SUM"
               for f in mine), mine[:5]
    assert r.failures == 0 or report.library.family == "openmpi", r.variant


def _check(report: st.Report, quick: bool = False, big: bool = True) -> None:
    cat = catalog.load()
    results = {v.variant: v for v in report.variants}
    assert all(r.summary["arena_ok"] is True for r in report.launches)
    assert sorted(results) == sorted(v.name for v in cat.variants)
    nprocs = [r.nprocs for r in report.launches]
    for v in cat.variants:
        r = results[v.name]
        # Open MPI 5.0's op/avx saturates 8-bit sums and its algorithms split vectors
        # differently: mock-ups then differ from the default there and nowhere else (the proof
        # refuses them for that class, tests/test_proof.py).
        _only_8bit_sums(report, r)
        assert r.reason_mismatches == 0 and r.nonuniform == 0, v.name
        assert r.cases == sum(_cases(v.collective, p, quick, big) for p in nprocs), v.name
        # The vector datatype (gaps) is exactly what contiguity-needing variants refuse (only
        # reductions, whose datatype is the same on all ranks); nothing else in the matrix is
        # refused (no variant reorders a reduction: the non-commutative user op applies).
        vector = sum(_cases(v.collective, p, quick, big, "vector") for p in nprocs)
        expected_na = {"datatype": vector} if "contiguous" in v.needs else {}
        if "predefined_op" in v.needs:  # user ops on the datatypes without gaps
            expected_na["op"] = sum(_cases(v.collective, p, quick, big, t, user_ops_only=True)
                                    for p in nprocs for t in ("MPI_INT", "contiguous"))
        if v.name == "reducescatterblock_as_reducescatter":  # contiguous only in place: half
            expected_na = {"datatype": vector // 2}
        if "invertible" in v.needs:   # MPI_SUM on MPI_INT and MPI_UINT8_T only (no MPI_BXOR here)
            expected_na["op"] = sum(_cases(v.collective, p, quick, big, keep=lambda s, t, o, n: (
                t != "vector" and not (o == "MPI_SUM" and t in ("MPI_INT", "MPI_UINT8_T"))))
                for p in nprocs)
        if "equal_counts" in v.needs:   # the matrix's blocks are equal at counts 0 and 7 only
            expected_na["size"] = sum(_cases(v.collective, p, quick, big, keep=lambda s, t, o, n: (
                s > 1 and n not in (0, 7))) for p in nprocs)
        if report.library.family == "mpich" and v.name in RING_TOTAL:
            total = RING_TOTAL[v.name]
            expected_na["size"] = sum(_cases(v.collective, p, quick, big, keep=lambda s, t, o, n: (
                _mpich_ring(s, total(s, n * BYTES[t])))) for p in nprocs)
        expected_na = {k: n for k, n in expected_na.items() if n}
        assert r.not_applicable == expected_na, v.name
        # One intercommunicator probe per launch with at least 2 ranks.
        assert r.probe_reasons.get("intercomm", 0) == sum(1 for p in nprocs if p >= 2), v.name


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4, 5, 8])
def test_selftest_openmpi(openmpi: mpi.MpiLibrary, openmpi_build: Artifacts, nprocs: int) -> None:
    report = st.run(openmpi, [nprocs], timeout=300)
    _check(report)


@pytest.mark.mpich
def test_selftest_mpich_2(mpich: mpi.MpiLibrary, mpich_build: Artifacts) -> None:
    report = st.run(mpich, [2], timeout=300)
    _check(report)


@pytest.mark.mpich
def test_selftest_mpich_3_quick(mpich: mpi.MpiLibrary, mpich_build: Artifacts) -> None:
    # MPICH busy-polls: 3 ranks on 2 cores make every collective slow; the quick matrix without
    # the 1 MiB cases keeps this under 10 s (`colltune selftest --mpi mpich -n 3` runs it all).
    report = st.run(mpich, [3], quick=True, big=False, timeout=300)
    _check(report, quick=True, big=False)


def test_probe_reasons_openmpi(openmpi: mpi.MpiLibrary, openmpi_build: Artifacts) -> None:
    """Overflow and scratch probes at 4 ranks (count 2^30 ints, and n = the scratch cap)."""
    report = st.run(openmpi, [4], collective="allgather", big=False, timeout=120)
    got = {v.variant: v.probe_reasons for v in report.variants}
    # the last two probes of every Allgather variant: p n just below and at MPICH's ring bound
    # (4 ranks: 131,071 and 131,072 bytes per block), applicable on Open MPI
    assert got["allgather_as_gather_bcast"] == {"overflow": 1, "applicable": 3, "intercomm": 1}
    # p*n bytes: 4 * 2^32 overflows int, 4 * 2^28 does not but its 2 p n / p n bytes of
    # scratch exceed the 256 MiB cap.
    assert got["allgather_as_alltoall"] == {"overflow": 1, "scratch": 1, "applicable": 2,
                                            "intercomm": 1}
    assert got["allgather_as_allreduce"] == {"overflow": 1, "scratch": 1, "applicable": 2,
                                             "intercomm": 1}
    assert got["allgather_as_allgatherv"] == {"overflow": 1, "applicable": 3, "intercomm": 1}
    assert got["reduce_as_reducescatter_gatherv"] == {"scratch": 1, "applicable": 1,
                                                       "intercomm": 1}


def test_small_cap_and_chunk(openmpi: mpi.MpiLibrary, openmpi_build: Artifacts,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16 KiB scratch cap refuses the larger cases (and the rules predict exactly which);
    1-byte chunks make GL7/GL16 split into single elements."""
    monkeypatch.setenv("COLLTUNE_SCRATCH_BYTES", "16K")
    monkeypatch.setenv("COLLTUNE_CHUNK_BYTES", "1")
    report = st.run(openmpi, [3], big=False, timeout=120)
    results = {v.variant: v for v in report.variants}
    assert report.launches[0].summary["scratch_cap"] == 16384
    assert report.launches[0].summary["chunk_bytes"] == 1
    for v in report.variants:
        _only_8bit_sums(report, v)
        assert v.reason_mismatches == 0 and v.nonuniform == 0, v.variant
    # p*n bytes with n = 1000 doubles: over the cap; arrays of p ints never are.
    assert results["allgather_as_alltoall"].not_applicable.get("scratch", 0) > 0
    assert "scratch" not in results["allgather_as_allgatherv"].not_applicable
    assert "scratch" not in results["allreduce_as_reducescatter_allgatherv"].not_applicable


def test_invalid_setting_falls_back(openmpi: mpi.MpiLibrary, openmpi_build: Artifacts,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed byte count warns once and uses the default; cap 0 refuses every variant that
    needs scratch, exactly as the rules say."""
    monkeypatch.setenv("COLLTUNE_CHUNK_BYTES", "64 bytes")
    monkeypatch.setenv("COLLTUNE_SCRATCH_BYTES", "0")
    report = st.run(openmpi, [2], collective="bcast", big=False, timeout=120)
    summary = report.launches[0].summary
    assert (summary["chunk_bytes"], summary["scratch_cap"]) == (64, 0)
    got = {v.variant: v for v in report.variants if v.collective == "bcast"}
    cases = _cases("bcast", 2, quick=False, big=False)
    # GL9 always needs 2pI bytes; GL10 needs n + c, which is 0 for count 0 (a quarter of the
    # cases).
    assert got["bcast_as_allgatherv"].not_applicable == {"scratch": cases}
    assert got["bcast_as_scatter_allgather"].not_applicable == {"scratch": cases * 3 // 4}
    assert all(v.failures == 0 and v.reason_mismatches == 0 for v in got.values())


def test_parse_and_aggregate() -> None:
    lines = [
        '{"type":"start","nprocs":2,"library":"X 1.0","variants":1}',
        "some library notice",
        '{"type":"failure","variant":"v","rank":1,"comm_rank":1,"case":{"count":7},'
        '"what":"result","detail":"byte 3"}',
        '{"type":"variant","collective":"c","variant":"v","guideline":"GL1","cases":10,'
        '"failures":1,"not_applicable":{"datatype":2},"reason_mismatches":0,"nonuniform":0,'
        '"probes":3,"probe_reasons":{"intercomm":1}}',
        '{"type":"summary","nprocs":2,"cases":10,"failures":1,"seconds":0.5}',
    ]
    launch_ = st.parse(lines, 2)
    assert launch_.library == "X 1.0" and launch_.seconds == 0.5
    assert launch_.failures == (st.Failure(nprocs=2, variant="v", rank=1, case={"count": 7},
                                           what="result", detail="byte 3"),)
    total = st.aggregate([launch_, launch_])
    assert len(total) == 1
    assert (total[0].cases, total[0].failures, total[0].not_applicable, total[0].probe_reasons) == (
        20, 2, {"datatype": 4}, {"intercomm": 2})
    assert not total[0].ok
    with pytest.raises(ValueError, match="no summary"):
        st.parse(lines[:-1], 2)


def test_saturating_sums_are_named_not_failures() -> None:
    """The matrix's table counts mismatches before the proof; the line after the proof names
    the variants the library finding explains (Open MPI's saturating 8-bit sums), and only
    those: a mismatch in another datatype stays a failure."""
    from pathlib import Path

    from colltune.commands import selftest as cmd
    from colltune.measure import proof as pf

    def variant(name: str, failures: int) -> st.VariantResult:
        return st.VariantResult(collective="allreduce", variant=name, guideline="GL6", cases=9,
                                failures=failures, not_applicable={}, reason_mismatches=0,
                                nonuniform=0)

    def failure(name: str, datatype: str) -> st.Failure:
        return st.Failure(nprocs=3, variant=name, rank=0, what="result", detail="byte 0",
                          case={"datatype": datatype, "op": "MPI_SUM", "count": 7})

    lib = mpi.MpiLibrary(name="openmpi", family="openmpi", version="Open MPI v5.0.7",
                         mpicc=Path("/usr/bin/mpicc"), mpiexec=Path("/usr/bin/mpiexec"))
    launch_ = st.Launch(nprocs=3, library="Open MPI v5.0.7", seconds=1.0,
                        variants=(variant("a", 2), variant("b", 1), variant("c", 0)),
                        failures=(failure("a", "MPI_UINT8_T"), failure("a", "MPI_UINT8_T"),
                                  failure("b", "MPI_INT")), summary={})
    report = st.Report(library=lib, launches=(launch_,))
    proof = pf.Proof(library=lib, nprocs=(3,), members={}, findings=["8-bit sums saturate"],
                     seconds=1.0)
    a, b, c = report.variants
    assert [cmd._explained(v, report, proof) for v in (a, b, c)] == [True, False, False]
    assert not cmd._explained(a, report, None)   # no proof ran: nothing is explained
    assert cmd._explained_note([a], report) == (
        "[yellow]not failures:[/] the 2 mismatch lines of a (GL6) are all MPI_SUM on MPI_UINT8_T, "
        "which the library's own reduction saturates on some of its paths (the finding above): "
        "its arithmetic, not the variants'; the proof refuses those classes")


def test_cli_selftest(openmpi_build: Artifacts) -> None:
    result = CliRunner().invoke(main, ["selftest", "-n", "2", "--quick", "--no-big", "--quiet",
                                       "-c", "bcast"])
    assert result.exit_code == 0, result.output
    assert "bcast_as_scatter_allgather" in result.output
    assert "OK: 2 variants" in result.output
    bad = CliRunner().invoke(main, ["selftest", "-n", "0"])
    assert bad.exit_code == 2 and "not a process count" in bad.output
    bad = CliRunner().invoke(main, ["selftest", "-c", "allgatherx"])
    assert bad.exit_code == 2 and "unknown collective" in bad.output


def test_driver_crash_is_an_error(openmpi: mpi.MpiLibrary, openmpi_build: Artifacts) -> None:
    with pytest.raises(st.SelftestError, match="exited with code"):
        st.run_launch(openmpi, 2, [str(openmpi_build.selftest), "--bogus-option"], timeout=60)
