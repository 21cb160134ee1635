"""Tuning profiles: the C parser (native/core/profile.c) and the Python reader accept and reject
exactly the same files with the same messages; lookups, hashes, writer and .prf import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colltune import catalog
from colltune.commands.profile import command as profile_cmd
from colltune.tune import prf
from colltune.tune import profile as prof

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "native" / "fuzz"
CORPUS = FUZZ / "corpus"
CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*.prof"))


@pytest.fixture(scope="module")
def cbin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """profile_check and profile_unit built with plain gcc (ASan+UBSan) and the names-only catalog."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler (gcc) on PATH: install gcc")
    out = tmp_path_factory.mktemp("ctprofile")
    subprocess.run([sys.executable, str(FUZZ / "gen_names.py"), str(out)], check=True)
    bins = {}
    for prog in ("profile_check", "profile_unit"):
        exe = out / prog
        subprocess.run(
            [cc, "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=undefined", f"-I{ROOT / 'native' / 'include'}", f"-I{out}", f"-I{ROOT / 'native' / 'generated'}",
             str(FUZZ / f"{prog}.c"), str(ROOT / "native" / "core" / "profile.c"), str(ROOT / "native" / "core" / "profile_rules.c"),
             str(ROOT / "native" / "core" / "textformat.c"), str(out / "ct_catalog.c"),
             "-o", str(exe)],
            check=True,
        )
        bins[prog] = exe
    return bins


def c_result(cbin: dict[str, Path], path: Path, *queries: str, cwd: Path | None = None) -> list[str]:
    run = subprocess.run([str(cbin["profile_check"]), str(path), *queries], capture_output=True, text=True, errors="replace",
                         cwd=cwd, env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1"})
    assert run.returncode in (0, 1), run.stderr
    assert run.stderr == ""
    return run.stdout.splitlines()


def py_result(path: Path, *queries: str) -> list[str]:
    try:
        p = prof.read_profile(path)
    except prof.ProfileError as exc:
        return [f"error: {exc}"]
    lines = [f"ok hash={p.content_hash():016x} rules={p.rule_count()}"]
    for coll, procs, nbytes in zip(queries[0::3], queries[1::3], queries[2::3]):
        nodes, _, ppn = procs.partition("x")  # "4": layout unknown; "2x2": that uniform layout
        layout = (int(nodes), int(ppn)) if ppn else None
        size = layout[0] * layout[1] if layout else int(procs)
        lines.append(f"lookup {coll} {procs} {nbytes} -> {p.lookup(coll, size, int(nbytes), layout) or 'library'}")
    return lines


def test_c_unit_program(cbin: dict[str, Path]) -> None:
    run = subprocess.run([str(cbin["profile_unit"])], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == "profile_unit: 48 checks, 0 failed"
    # The C program hashes the same rules; the Python hash must be the same number.
    text = ("colltune-profile 1\ncollective scan\nprocs 2 2\nbytes 0 8 scan_as_exscan_reducelocal\n"
            "collective bcast\nprocs 4 4\nbytes 16 16 bcast_as_allgatherv\nend\n")
    assert f"hash {prof.parse_profile(text).content_hash():016x}" in run.stdout
    assert prof.parse_profile(text).content_hash() == 0xDDFC106A3B2DEC4D
    layout = "colltune-profile 1\ncollective bcast\nnodes 2 ppn 2\nbytes 16 16 bcast_as_allgatherv\nend\n"
    assert f"hash-layout {prof.parse_profile(layout).content_hash():016x}" in run.stdout
    assert prof.parse_profile(layout).canonical_lines() == ["bcast 4 4 16 16 bcast_as_allgatherv 2x2\n"]


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_same_verdict_in_c_and_python(cbin: dict[str, Path], name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS)
    c = c_result(cbin, Path(name), cwd=CORPUS)
    py = py_result(Path(name))
    assert c == py
    assert c[0].startswith("ok " if name.startswith("ok_") else "error: ")


# Exact messages for the reject cases the brief names (truncated, malformed, overlapping,
# unknown variant/collective, wrong version); the parametrized test above proves C says the same.
EXPECTED_ERRORS = {
    "bad_truncated.prof": "17: file ends without the 'end' line (truncated?); regenerate it with colltune tune or add 'end'",
    "bad_truncated_midline.prof": "17: unknown variant 'allreduce_as_reducescat'; use a variant of allreduce (colltune profile show --variants)",
    "bad_overlap_bytes.prof": "5: bytes 512..2048 overlaps the previous rule 0..1024 of bcast procs 2..2; make the ranges disjoint",
    "bad_unsorted_bytes.prof": "5: bytes 0..10 of bcast procs 2..2 comes after bytes 100..200; sort the rules by size",
    "bad_overlap_procs.prof": "5: procs 4..8 overlaps the previous block 2..4 of bcast; make the blocks disjoint",
    "bad_unknown_variant.prof": "4: unknown variant 'bcast_as_magic'; use a variant of bcast (colltune profile show --variants)",
    "bad_unknown_collective.prof": "2: unknown collective 'alltoallx'; use a collective of collectives.toml, or "
                                   "<collective>#nonblocking (#persistent) for its nonblocking calls (persistent "
                                   "requests) (colltune profile show --variants)",
    # The nonblocking and persistent forms' sections (docs/profile.md, "Nonblocking and persistent forms")
    "bad_forms_member.prof": "4: 'allreduce_as_reduce_bcast' cannot serve allreduce#nonblocking: its rules name the "
                             "library's algorithms of that form, lib:allreduce:<algorithm>#nonblocking (the started "
                             "forms have no mock-ups)",
    "bad_forms_other_form.prof": "4: 'lib:allreduce:ring#nonblocking' cannot serve allreduce#persistent: its rules name "
                                 "the library's algorithms of that form, lib:allreduce:<algorithm>#persistent (the "
                                 "started forms have no mock-ups)",
    "bad_forms_nodes.prof": "3: 'nodes' block in bcast#nonblocking: a started call cannot learn its communicator's "
                            "layout without blocking; use 'procs LO HI' blocks in this section",
    "bad_forms_unknown.prof": "2: unknown collective 'allreduce#blocking'; use a collective of collectives.toml, or "
                              "<collective>#nonblocking (#persistent) for its nonblocking calls (persistent requests) "
                              "(colltune profile show --variants)",
    "bad_forms_twice.prof": "8: collective scan#nonblocking appears twice; merge its sections",
    "bad_wrong_collective.prof": "4: variant 'bcast_as_allgatherv' belongs to collective bcast, not allreduce; use a variant of allreduce",
    "bad_version2.prof": "1: unsupported profile version '2' (this colltune reads version 1); regenerate the profile with this colltune",
    "bad_nul.prof": "2: control character 0x00; remove it (a profile is text)",
    "bad_long_line.prof": "2: line longer than 1023 bytes; shorten it",
    "bad_empty.prof": "1: no 'colltune-profile 1' header (empty file?); write a profile with colltune tune",
    "bad_lib_variant.prof": "4: library algorithm 'lib:bcast:binomial' cannot be applied by the interposer; remove the line and use colltune export --native for library algorithms",
    "bad_nodes_fields.prof": "3: 'nodes' takes a layout: 'nodes NODES ppn PPN' (e.g. 'nodes 2 ppn 4')",
    "bad_nodes_zero.prof": "3: nodes 2 ppn 0 invalid: need NODES >= 1, PPN >= 1 and NODES x PPN <= 2147483647",
    "bad_nodes_too_big.prof": "3: nodes 65536 ppn 32768 invalid: need NODES >= 1, PPN >= 1 and NODES x PPN <= 2147483647",
    "bad_nodes_twice.prof": "5: nodes 2 ppn 2 of bcast appears twice; merge the two blocks",
    "bad_nodes_unsorted.prof": "5: nodes 1 ppn 4 of bcast comes after nodes 2 ppn 2; sort the layout blocks by nodes, then ppn",
    "bad_procs_after_nodes.prof": "5: procs 4..4 of bcast comes after a 'nodes' block; put the layout-free 'procs' blocks first",
    "bad_nodes_empty.prof": "3: nodes 2 ppn 2 of bcast has no 'bytes' rules; add 'bytes LO HI VARIANT' lines or remove the block",
    "bad_nodes_outside.prof": "2: 'nodes' before any 'collective'; start a section with 'collective NAME'",
    "bad_nodes_number.prof": "3: 'x2' is not a number (1 to 19 decimal digits)",
    "bad_overlap_bytes_layout.prof": "5: bytes 512..2048 overlaps the previous rule 0..1024 of bcast nodes 1 ppn 2; make the ranges disjoint",
}


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_expected_messages(name: str) -> None:
    with pytest.raises(prof.ProfileError) as info:
        prof.parse_profile((CORPUS / name).read_bytes(), name)
    assert str(info.value) == f"{name}:{EXPECTED_ERRORS[name]}"


def test_every_proper_prefix_is_refused_by_both(cbin: dict[str, Path], tmp_path: Path) -> None:
    """A profile cut anywhere (a crash while writing it, a full disk) is never applied."""
    data = (CORPUS / "ok_example.prof").read_bytes()
    cuts = sorted({i for i in range(0, len(data), 5)} | {i + 1 for i, b in enumerate(data) if b == ord("\n")})
    cuts = [c for c in cuts if c < len(data) - 1]  # dropping only the final "\n" is still complete
    for cut in cuts:
        f = tmp_path / "cut.prof"
        f.write_bytes(data[:cut])
        c = c_result(cbin, f)
        assert c == py_result(f), cut
        assert c[0].startswith("error: "), cut


def test_lookups_agree_and_are_exact(cbin: dict[str, Path]) -> None:
    queries = []
    for coll in ("allreduce", "scatter", "bcast"):
        for procs in (3, 4, 5, 8, 9):
            for nbytes in (0, 7, 8, 9, 64, 65, 1024, 1025, 65535, 65536, 262144, 262145):
                queries += [coll, str(procs), str(nbytes)]
    path = CORPUS / "ok_example.prof"
    c = c_result(cbin, path, *queries)
    assert c == py_result(path, *queries)
    p = prof.read_profile(path)
    assert p.lookup("allreduce", 4, 8) == "allreduce_as_reduce_bcast"
    assert p.lookup("allreduce", 4, 1024) == "allreduce_as_reduce_bcast"
    assert p.lookup("allreduce", 4, 1025) is None  # between rules: the library
    assert p.lookup("allreduce", 4, 65536) == "allreduce_as_reducescatterblock_allgather"
    assert p.lookup("allreduce", 4, 262145) is None
    assert p.lookup("allreduce", 8, 65) is None
    assert p.lookup("allreduce", 5, 8) is None
    assert p.lookup("scatter", 6, 1) == "scatter_as_bcast"
    assert p.lookup("scatter", 9, 1) is None
    assert "lookup allreduce 4 65536 -> allreduce_as_reducescatterblock_allgather" in c


def test_layout_lookups_agree_and_are_exact(cbin: dict[str, Path]) -> None:
    """Per-layout rules (docs/profile.md, "Layouts"): an exact layout block decides alone, any other
    layout (or none known, or a non-uniform one) gets the layout-free blocks; C and Python agree."""
    queries = []
    for coll in ("allreduce", "gather", "bcast"):
        for procs in ("2", "4", "3", "1x2", "2x1", "1x4", "2x2", "4x1", "1x3", "3x1", "2x4"):
            for nbytes in (0, 7, 8, 9, 64, 65, 1024, 1025, 32768, 65536, 262144):
                queries += [coll, procs, str(nbytes)]
    path = CORPUS / "ok_layouts.prof"
    c = c_result(cbin, path, *queries)
    assert c == py_result(path, *queries)
    p = prof.read_profile(path)
    ar = "allreduce"
    assert p.lookup(ar, 4, 8, (2, 2)) == "allreduce_as_reduce_bcast"
    assert p.lookup(ar, 4, 9, (2, 2)) is None  # 2 x 2 decides alone: not the layout-free 8..1024
    assert p.lookup(ar, 4, 32768, (2, 2)) == "allreduce_as_reducescatterblock_allgather"
    assert p.lookup(ar, 4, 9, (1, 4)) is None and p.lookup(ar, 4, 65536, (1, 4)) == "allreduce_as_reducescatter_allgatherv"
    assert p.lookup(ar, 4, 9, (4, 1)) == "allreduce_as_reduce_bcast"  # no 4 x 1 block: layout-free
    assert p.lookup(ar, 4, 9) == "allreduce_as_reduce_bcast"  # layout unknown or not uniform
    assert p.lookup(ar, 2, 64, (1, 2)) == "allreduce_as_reducescatterblock_allgather"
    assert p.lookup(ar, 2, 1024, (1, 2)) is None and p.lookup(ar, 2, 1024, (2, 1)) == "allreduce_as_reduce_bcast"
    assert p.lookup(ar, 3, 8, (1, 3)) == "allreduce_as_reduce_bcast" and p.lookup(ar, 8, 8, (2, 4)) is None
    assert p.lookup("gather", 4, 32768, (2, 2)) == "gather_as_gatherv" and p.lookup("gather", 4, 32768) is None
    assert "lookup allreduce 2x2 9 -> library" in c and "lookup allreduce 4 9 -> allreduce_as_reduce_bcast" in c
    assert p.has_layouts() and not prof.read_profile(CORPUS / "ok_example.prof").has_layouts()


def test_started_forms_agree_and_are_exact(cbin: dict[str, Path]) -> None:
    """Sections of the nonblocking and persistent forms name the library's algorithms of that form;
    C and Python read, hash and look them up alike (C resolves each name to an id, as MPI_Init does)."""
    queries = []
    for coll in ("allreduce#nonblocking", "bcast#persistent", "allreduce#persistent", "allreduce"):
        for procs in ("2", "3", "4", "8"):
            for nbytes in (0, 8, 64, 65, 65536, 65537):
                queries += [coll, procs, str(nbytes)]
    path = CORPUS / "ok_forms.prof"
    c = c_result(cbin, path, *queries)
    assert c == py_result(path, *queries)
    p = prof.read_profile(path)
    assert [(s.collective, s.base, s.form) for s in p.sections] == [
        ("allreduce", "allreduce", "blocking"), ("allreduce#nonblocking", "allreduce", "nonblocking"),
        ("bcast#persistent", "bcast", "persistent")]
    nb = "allreduce#nonblocking"
    assert p.lookup(nb, 3, 64) == "lib:allreduce:ring#nonblocking" and p.lookup(nb, 3, 65) == "lib:allreduce:binomial#nonblocking"
    assert p.lookup(nb, 4, 8) is None and p.lookup(nb, 8, 8) == "lib:allreduce:ring#nonblocking" and p.lookup(nb, 8, 9) is None
    assert p.lookup("bcast#persistent", 2, 8) == "lib:bcast:knomial#persistent" and p.lookup("bcast#persistent", 2, 0) is None
    assert p.lookup("allreduce", 3, 64) == "allreduce_as_reduce_bcast"
    assert c[0] == f"ok hash={p.content_hash():016x} rules=5"
    # the hash's lines: sections in byte order of their names, a started form's with its suffix
    assert p.canonical_lines() == [
        "allreduce 2 4 0 1024 allreduce_as_reduce_bcast\n",
        "allreduce#nonblocking 2 3 0 64 lib:allreduce:ring#nonblocking\n",
        "allreduce#nonblocking 2 3 65 65536 lib:allreduce:binomial#nonblocking\n",
        "allreduce#nonblocking 8 8 0 8 lib:allreduce:ring#nonblocking\n",
        "bcast#persistent 2 2 8 8 lib:bcast:knomial#persistent\n"]
    assert prof.parse_profile(prof.format_profile(p)) == p


def test_provenance_is_read_but_not_hashed() -> None:
    p = prof.read_profile(CORPUS / "ok_example.prof")
    assert p.provenance["mpi-version"] == "Open MPI v5.0.11, package: Open MPI ..., Oct 2025"
    assert p.provenance["nprocs"] == "4 8"
    assert p.provenance["machine"] == "node17 x86_64"
    bare = prof.Profile(sections=p.sections)
    assert bare.content_hash() == p.content_hash() == 0x8F2785D0281112C5


def test_crlf_tabs_and_leading_zeros_read_as_numbers() -> None:
    p = prof.read_profile(CORPUS / "ok_comments_crlf.prof")
    assert p.provenance == {"machine": "a b\t c"}
    (section,) = p.sections
    assert section.collective == "bcast"
    assert section.blocks[0].procs_lo == 2 and section.blocks[0].procs_hi == 3
    assert section.blocks[0].rules == (prof.Rule(lo=0, hi=10, variant="bcast_as_allgatherv"),)


def _profiles() -> st.SearchStrategy[prof.Profile]:
    cat = catalog.load()

    @st.composite
    def build(draw: st.DrawFn) -> prof.Profile:
        tunable = [c for c in cat.collective_names() if cat.variants_of(c)]
        colls = draw(st.lists(st.sampled_from(tunable), unique=True, max_size=4))
        sections = []
        for coll in colls:
            names = [v.name for v in cat.variants_of(coll)]
            edges = sorted(draw(st.lists(st.integers(1, 200), unique=True, min_size=2, max_size=6)))
            blocks = []
            layouts = sorted(draw(st.lists(st.tuples(st.integers(1, 64), st.integers(1, 64)), unique=True,
                                           max_size=3)))
            for lo, hi, layout in [(lo, hi, None) for lo, hi in zip(edges[0::2], edges[1::2])] + \
                    [(n * q, n * q, (n, q)) for n, q in layouts]:
                cuts = sorted(draw(st.lists(st.integers(0, 2**63 - 1), unique=True, min_size=2, max_size=8)))
                rules = tuple(prof.Rule(lo=a, hi=b, variant=draw(st.sampled_from(names)))
                              for a, b in zip(cuts[0::2], cuts[1::2]))
                if layout is None:
                    blocks.append(prof.Block(procs_lo=lo, procs_hi=hi, rules=rules))
                else:
                    blocks.append(prof.Block(nodes=layout[0], ppn=layout[1], rules=rules))
            if blocks:
                sections.append(prof.Section(collective=coll, blocks=tuple(blocks)))
        provenance = draw(st.dictionaries(st.sampled_from(prof.PROVENANCE_KEYS),
                                          st.text(st.characters(codec="utf-8"), min_size=0, max_size=30)
                                          .filter(lambda s: prof.clean_value(s) != ""), max_size=4))
        return prof.Profile(provenance=provenance, sections=tuple(sections))

    return build()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(p=_profiles())
def test_writer_round_trip_in_python_and_c(cbin: dict[str, Path], tmp_path: Path, p: prof.Profile) -> None:
    path = prof.write_profile(p, tmp_path / "rt.prof")
    back = prof.read_profile(path)
    assert back.sections == p.sections
    assert back.provenance == {k: prof.clean_value(v) for k, v in p.provenance.items()}
    c = c_result(cbin, path)
    assert c == [f"ok hash={p.content_hash():016x} rules={p.rule_count()}"]


def test_model_refuses_what_the_parser_refuses() -> None:
    with pytest.raises(ValueError, match="not a variant of allreduce"):
        prof.Section(collective="allreduce", blocks=(prof.Block(procs_lo=2, procs_hi=2, rules=(
            prof.Rule(lo=0, hi=1, variant="bcast_as_allgatherv"),)),))
    with pytest.raises(ValueError, match="not after"):
        prof.Block(procs_lo=2, procs_hi=2, rules=(prof.Rule(lo=0, hi=10, variant="x"), prof.Rule(lo=10, hi=12, variant="x")))
    with pytest.raises(ValueError, match="unknown provenance key"):
        prof.Profile(provenance={"colour": "blue"})


LISTING_1 = """# pgtune profile
MPI_Scatter
1024 # nb. of processes
2 # nb. of mock-up impl.
2 scatter_as_bcast
3 scatter_as_scatterv
8 # nb. of ranges
1 1 2 # byte_range_start byte_range_end alg_id
8 8 2
32 32 2
64 64 2
100 100 2
512 512 2
1024 1024 2
10000 10000 3
"""

PGMPITUNELIB_TEST_PROFILE = """#
# test profile
# no blank lines allowed (only at the end)
#
MPI_Allgather # collective name
4 # profile for p=4 procs
4
0 default
1 allgather_as_allreduce
2 allgather_as_alltoall
3 allgather_as_gather_bcast
5 # nb of (msg size range + alg id)
1024 2048 3
16 16 1
32 32 2
64 128 1
4096 8192 0
"""


def test_prf_listing_1() -> None:
    coll, nprocs, rules = prf.read_prf(LISTING_1, "scatter.prf")
    assert (coll, nprocs) == ("scatter", 1024)
    assert [(r.lo, r.hi, r.variant) for r in rules] == [
        (1, 1, "scatter_as_bcast"), (8, 8, "scatter_as_bcast"), (32, 32, "scatter_as_bcast"),
        (64, 64, "scatter_as_bcast"), (100, 100, "scatter_as_bcast"), (512, 512, "scatter_as_bcast"),
        (1024, 1024, "scatter_as_bcast"), (10000, 10000, "scatter_as_scatterv"),
    ]


def test_prf_ids_resolve_by_listed_name_default_is_library_and_ranges_sorted(tmp_path: Path) -> None:
    (tmp_path / "ag.prf").write_text(PGMPITUNELIB_TEST_PROFILE)
    (tmp_path / "sc.prf").write_text(LISTING_1)
    p = prf.import_prf([tmp_path / "sc.prf", tmp_path / "ag.prf"])
    assert [s.collective for s in p.sections] == ["allgather", "scatter"]
    ag = p.section("allgather")
    assert ag is not None
    assert [(r.lo, r.hi, r.variant) for r in ag.blocks[0].rules] == [
        (16, 16, "allgather_as_allreduce"), (32, 32, "allgather_as_alltoall"),
        (64, 128, "allgather_as_allreduce"), (1024, 2048, "allgather_as_gather_bcast"),
    ]
    assert p.lookup("allgather", 4, 5000) is None  # alg 0 = default = library
    assert p.provenance == {"source": "pgmpitunelib sc.prf ag.prf"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (LISTING_1.replace("MPI_Scatter", "MPI_Alltoallw"), "scatter.prf:2: 'MPI_Alltoallw' is not a collective colltune can tune"),
        (LISTING_1.replace("10000 10000 3", "10000 10000 4"), "scatter.prf:15: algorithm id 4 is not among the mock-ups listed above (2, 3)"),
        (LISTING_1.replace("3 scatter_as_scatterv", "3 scatter_as_lane"), "scatter.prf:6: mock-up 'scatter_as_lane' is not a colltune variant of scatter"),
        (LISTING_1.replace("64 64 2", "60 100 2"), "scatter.prf:12: range 100..100 overlaps 60..100"),
        (LISTING_1.rsplit("\n", 3)[0], "scatter.prf: ends before a range line 'start end id' (truncated?)"),
        (LISTING_1 + "5 5 2\n", "scatter.prf:16: unexpected content after the 8 ranges"),
        (LISTING_1.replace("8 8 2", "8 7 2"), "scatter.prf:9: a range end must be an integer >= 8"),
    ],
)
def test_prf_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(prof.ProfileError) as info:
        prf.read_prf(text, "scatter.prf")
    assert str(info.value).startswith(message)


def test_cli_import_and_show(tmp_path: Path) -> None:
    (tmp_path / "sc.prf").write_text(LISTING_1)
    out = tmp_path / "tuned.prof"
    runner = CliRunner()
    res = runner.invoke(profile_cmd, ["import", str(tmp_path / "sc.prf"), "--out", str(out), "--machine", "juqueen"])
    assert res.exit_code == 0, res.output
    p = prof.read_profile(out)
    assert p.rule_count() == 8 and p.provenance["machine"] == "juqueen"
    res = runner.invoke(profile_cmd, ["show", "--check", str(out)])
    assert res.exit_code == 0
    assert res.output.strip() == f"ok {out} hash={p.content_hash():016x} rules=8"
    res = runner.invoke(profile_cmd, ["show", str(CORPUS / "bad_overlap_bytes.prof")])
    assert res.exit_code == 1
    res = runner.invoke(profile_cmd, ["show", str(out)])
    assert res.exit_code == 0 and "scatter_as_scatterv" in res.output and "GL22" in res.output


def _mutations(seed_texts: list[bytes], count: int, seed: int) -> list[bytes]:
    """Deterministic structural mutations of valid profiles: drop, duplicate or swap lines,
    replace a word by another word of the corpus, flip a byte, cut the file."""
    import random

    rng = random.Random(seed)
    words = sorted({w for t in seed_texts for w in t.split()})
    out = []
    for _ in range(count):
        lines = rng.choice(seed_texts).split(b"\n")
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(6)
            i = rng.randrange(len(lines))
            if op == 0 and len(lines) > 1:
                del lines[i]
            elif op == 1:
                lines.insert(i, lines[rng.randrange(len(lines))])
            elif op == 2:
                j = rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
            elif op == 3 and lines[i].split():
                parts = lines[i].split()
                parts[rng.randrange(len(parts))] = rng.choice(words)
                lines[i] = b" ".join(parts)
            elif op == 4 and lines[i]:
                k = rng.randrange(len(lines[i]))
                lines[i] = lines[i][:k] + bytes([rng.randrange(256)]) + lines[i][k + 1:]
            else:
                lines = lines[: i + 1]
        out.append(b"\n".join(lines))
    return out


def test_c_and_python_agree_on_mutated_profiles(cbin: dict[str, Path], tmp_path: Path) -> None:
    """Differential test: 300 mutants of the accepted corpus files, same verdict and message."""
    seeds = [(CORPUS / n).read_bytes() for n in CORPUS_FILES if n.startswith("ok_")]
    accepted = 0
    for k, text in enumerate(_mutations(seeds, 300, seed=6)):
        f = tmp_path / f"m{k}.prof"
        f.write_bytes(text)
        c = c_result(cbin, f)
        assert c == py_result(f), text
        accepted += c[0].startswith("ok ")
    # Both outcomes occur, so the comparison covers accepting and rejecting paths.
    assert 10 < accepted < 290


def test_prf_reduce_scatter_block_block_sizes_become_vector_sizes() -> None:
    text = ("MPI_Reduce_scatter_block\n4\n1\n1 reducescatterblock_as_allreduce\n1\n16 32 1\n")
    coll, nprocs, rules = prf.read_prf(text, "rsb.prf")
    assert (coll, nprocs) == ("reduce_scatter_block", 4)
    assert rules == [prof.Rule(lo=64, hi=128, variant="reducescatterblock_as_allreduce")]
