"""The draw (bit-exact vectors shared with the C runtime, docs/select.md "Test vectors") and
selection tables: round trip, lookup, and every grammar error with its line."""

from __future__ import annotations

import pytest

from colltune.learn import draw
from colltune.learn.table import (
    Cell,
    CollectiveTable,
    SelectionTable,
    TableError,
    bin_centre,
    bin_range,
    check_members,
    content_hash,
    count_bin,
    format_table,
    parse_table,
    read_table,
    size_bin,
    write_table,
)

A = [0.40, 0.35, 0.10, 0.15]
B = [1.0, 0.0, 0.0, 0.0, 0.0]
# seed, comm_id, call_index, splitmix64 bits, bits >> 11, u, pick A, pick B (docs/select.md)
VECTORS = [
    (0x0000000000000000, 0, 0, 0xE220A8397B1DCDAF, 7956156453446585, 0.8833108082136426, 3, 2),
    (0x0000000000000001, 0, 0, 0x910A2DEC89025CC1, 5103132997656651, 0.5665615751722809, 1, 0),
    (0x0123456789ABCDEF, 1, 0, 0x1F733CD593B32EBE, 1106553674561125, 0.12285213674813333, 0, 0),
    (0x0123456789ABCDEF, 1, 1, 0x61228819C2255BE5, 3417630085498027, 0.3794331610571552, 0, 0),
    (0x0123456789ABCDEF, 7, 1000, 0xA6BDFA95E8B53763, 5866716261062310, 0.6513363471974187, 1, 0),
    (0xFFFFFFFFFFFFFFFF, 4294967295, 4294967295, 0xFCE6955D82781F96, 8898152915554051, 0.9878934243483574, 3, 4),
    (0x000000000000002A, 3, 17, 0xD5657A4085711121, 7508218222784034, 0.8335796744845008, 2, 1),
]


def test_splitmix64_reference_values() -> None:
    assert draw.splitmix64(0) == 0xE220A8397B1DCDAF
    assert draw.splitmix64(1) == 0x910A2DEC89025CC1


@pytest.mark.parametrize("seed,comm,idx,bits,top,u,pick_a,pick_b", VECTORS)
def test_draw_vectors(seed: int, comm: int, idx: int, bits: int, top: int, u: float, pick_a: int,
                      pick_b: int) -> None:
    assert draw.draw_bits(seed, comm, idx) == bits
    assert bits >> 11 == top
    assert draw.uniform(seed, comm, idx) == u
    assert draw.pick("explore", A, seed, comm, idx) == pick_a
    assert draw.pick("explore", B, seed, comm, idx) == pick_b
    assert draw.pick("exploit", A, seed, comm, idx) == 0


def test_probability_vectors() -> None:
    assert [f"{p:.17g}" for p in draw.probabilities(B)] == ["0.80645161290322565"] + ["0.04838709677419354"] * 4
    assert [f"{p:.17g}" for p in draw.probabilities([0.9, 0.05, 0.05])] == [
        "0.83333333333333326", "0.083333333333333329", "0.083333333333333329"]
    assert [f"{p:.17g}" for p in draw.probabilities([6, 4, 2, 2, 4, 2], (0.0, 1.0))] == [
        "0.30000000000000004", "0.20000000000000004", "0.10000000000000002", "0.10000000000000002",
        "0.20000000000000004", "0.10000000000000002"]
    with pytest.raises(ValueError):
        draw.probabilities([0.0, 0.0])


def test_prefix_sum_pick_of_the_seed_table_and_ties() -> None:
    assert draw.pick_explore([6, 4, 2, 2, 4, 2], 0.645, (0.0, 1.0)) == 3  # IOTA Table 4.2
    assert draw.pick_explore([6, 4, 2, 2, 4, 2], 0.0, (0.0, 1.0)) == 0
    assert draw.pick_explore([6, 4, 2, 2, 4, 2], 0.9999999999999999, (0.0, 1.0)) == 5
    assert draw.pick_exploit([0.2, 0.5, 0.5]) == 1


def test_explore_frequencies_follow_the_capped_probabilities() -> None:
    counts = [0] * 5
    for i in range(20000):
        counts[draw.pick("explore", B, 12345, 2, i)] += 1
    # 20000 draws: binomial sd of the first share is 0.0028, 0.806 +- 0.012 is 4 sd.
    assert abs(counts[0] / 20000 - 0.80645) < 0.012
    assert all(abs(c / 20000 - 0.04839) < 0.006 for c in counts[1:])


def test_bins_and_centres() -> None:
    assert [size_bin(b) for b in (0, 1, 2, 3, 4, 7, 8, 1 << 22, 1 << 40)] == [0, 1, 2, 2, 3, 3, 4, 23, 23]
    assert [count_bin(n, 4) for n in (1, 2, 3, 4, 7, 8, 1000)] == [0, 1, 1, 2, 2, 3, 3]
    assert bin_centre("size", 0) == 0.0
    assert bin_centre("size", 4) == pytest.approx(8 * 2**0.5)
    assert bin_centre("ppn", 0) == 1.0
    assert bin_range("size", 4, 24) == (8, 15)
    assert bin_range("nodes", 3, 4) == (8, None)


TEXT = b"""# comment before the header
colltune-select 1
# written by colltune learn (batch 3); edit freely
generator colltune 0.1.0
mpi openmpi
bins 24 4 8
caps 0.03 0.50
unlisted explore
budget 1000
cellbudget 100

collective allreduce
  members default allreduce_as_reduce_bcast allreduce_as_reducescatterblock_allgather lib:allreduce:4
  cell 4 0 1 explore 0.40 0.35 0.10 0.15
  cell 5 0 1 exploit 0.10 0.70 0.10 0.10
collective bcast
  members default bcast_as_scatter_allgather
end
# trailing comment
"""


def test_parse_the_documented_example() -> None:
    t = parse_table(TEXT, "t.sel")
    assert (t.bins, t.caps, t.unlisted, t.budget, t.cell_budget, t.generator, t.mpi) == (
        (24, 4, 8), (0.03, 0.5), "explore", 1000, 100, "colltune 0.1.0", "openmpi")
    ar = t.collectives["allreduce"]
    assert ar.members[3] == "lib:allreduce:4"
    assert ar.cells == {(4, 0, 1): Cell("explore", (0.40, 0.35, 0.10, 0.15)),
                        (5, 0, 1): Cell("exploit", (0.10, 0.70, 0.10, 0.10))}
    assert t.collectives["bcast"].cells == {}
    # 16 bytes -> size bin 5, 1 node -> 0, 2 ppn -> 1: the exploit cell picks member 1.
    assert t.bins_of(16, 1, 2) == (5, 0, 1)
    assert t.choose("allreduce", (5, 0, 1), ar.members, 7, 1, 2) == ("allreduce_as_reduce_bcast", "exploit")
    u = draw.uniform(7, 1, 2)
    assert t.choose("allreduce", (4, 0, 1), ar.members, 7, 1, 2) == (
        ar.members[draw.pick_explore(A, u)], "explore")
    # unlisted cell: uniform over the runtime's portfolio
    portfolio = ("default", "bcast_as_scatter_allgather", "bcast_as_allgatherv")
    assert t.choose("bcast", (3, 0, 0), portfolio, 7, 1, 2) == (
        portfolio[draw.pick_explore([1, 1, 1], u)], "explore")
    frozen = t.frozen()
    assert frozen.choose("bcast", (3, 0, 0), portfolio, 7, 1, 2) == (None, "exploit")
    assert frozen.collectives["allreduce"].cells[(4, 0, 1)].mode == "exploit"


def test_round_trip_through_the_writer(tmp_path) -> None:
    t = SelectionTable(
        collectives={"allreduce": CollectiveTable("allreduce", ("default", "allreduce_as_reduce_bcast"), {
            (3, 0, 1): Cell("explore", (0.25, 0.75)), (23, 3, 7): Cell("exploit", (1.0, 0.0))})},
        bins=(24, 4, 8), caps=(0.05, 0.6), unlisted="library", budget=50, cell_budget=5,
        generator="colltune 0.1.0",
        mpi="mpich", comments=("written by a test",))
    path = write_table(t, tmp_path / "sub" / "t.sel")
    back = read_table(path)
    assert back == SelectionTable(**{**t.__dict__, "comments": ()})
    assert content_hash(path.read_bytes()) == content_hash(format_table(t).encode())
    assert content_hash(b"") == 0xCBF29CE484222325
    assert content_hash(b"a") == 0xAF63DC4C8601EC8C


def test_check_members_names_the_missing_member() -> None:
    t = parse_table(TEXT)
    check_members(t, {"allreduce": ["default", "allreduce_as_reduce_bcast",
                                    "allreduce_as_reducescatterblock_allgather", "lib:allreduce:4"],
                      "bcast": ["default", "bcast_as_scatter_allgather"]})
    with pytest.raises(TableError, match="member 'lib:allreduce:4' of allreduce is not offered"):
        check_members(t, {"allreduce": ["default", "allreduce_as_reduce_bcast",
                                        "allreduce_as_reducescatterblock_allgather"],
                          "bcast": ["default", "bcast_as_scatter_allgather"]})


HEAD = "colltune-select 1\n"
COLL = "collective allreduce\n  members default allreduce_as_reduce_bcast\n"
ERRORS = [
    ("", 0, "empty file: not a selection table"),
    ("# only\n", 1, "empty file"),
    ("colltune-profile 1\nend\n", 1, "not a selection table (the first line must be 'colltune-select 1')"),
    ("colltune-select 2\nend\n", 1, "unsupported selection table version '2'"),
    ("colltune-select 1 x\nend\n", 1, "unsupported selection table version '1 x'"),
    (HEAD + "bins 24 4\nend\n", 2, "'bins' takes three numbers"),
    (HEAD + "bins 24 0 8\nend\n", 2, "bins '0' is not a whole number in 1..64"),
    (HEAD + "bins 24 4 65\nend\n", 2, "bins '65' is not a whole number in 1..64"),
    (HEAD + "caps 0.5 0.03\nend\n", 2, "caps 0.5 0.03 invalid: need 0 <= LO <= HI <= 1"),
    (HEAD + "caps 0.03 1.5\nend\n", 2, "caps 0.03 1.5 invalid"),
    (HEAD + "caps -0.1 0.5\nend\n", 2, "cap '-0.1' is not a decimal number"),
    (HEAD + "caps 0.1\nend\n", 2, "'caps' takes two decimals"),
    (HEAD + "unlisted maybe\nend\n", 2, "'unlisted' takes one of explore, library, exploit"),
    (HEAD + "budget -1\nend\n", 2, "budget '-1' is not a whole number"),
    (HEAD + "budget\nend\n", 2, "'budget' takes one number"),
    (HEAD + "cellbudget 1 2\nend\n", 2, "'cellbudget' takes one number: 'cellbudget N'"),
    (HEAD + "cellbudget x\nend\n", 2, "cellbudget 'x' is not a whole number"),
    (HEAD + "generator\nend\n", 2, "'generator' needs a value"),
    (HEAD + "mpi a\nmpi b\nend\n", 3, "duplicate 'mpi' line; keep one"),
    (HEAD + COLL + "budget 5\nend\n", 4, "'budget' after the first collective"),
    (HEAD + "frobnicate 1\nend\n", 2, "unknown keyword 'frobnicate'"),
    (HEAD + "collective nosuch\nend\n", 2, "unknown collective 'nosuch'"),
    (HEAD + "collective allreduce x\nend\n", 2, "'collective' takes one name"),
    (HEAD + COLL + COLL + "end\n", 4, "collective allreduce appears twice"),
    (HEAD + "collective allreduce\nend\n", 2, "collective allreduce has no 'members' line"),
    (HEAD + "collective allreduce\ncollective bcast\n", 2, "collective allreduce has no 'members' line"),
    (HEAD + "collective allreduce\n  cell 1 0 0 explore 1\nend\n", 3, "'cell' before the block's 'members' line"),
    (HEAD + "members default\nend\n", 2, "'members' outside a collective block"),
    (HEAD + COLL + "  members default\nend\n", 4, "'members' twice in one block"),
    (HEAD + "collective allreduce\n  members\nend\n", 3, "'members' takes 1 to 64 member names"),
    (HEAD + "collective allreduce\n  members default default\nend\n", 3, "member default is listed twice"),
    (HEAD + "collective allreduce\n  members bcast_as_allgatherv\nend\n", 3, "unknown member 'bcast_as_allgatherv' of allreduce"),
    (HEAD + "collective allreduce\n  members lib:bcast:2\nend\n", 3, "library member 'lib:bcast:2' is not lib:allreduce:<algorithm>"),
    (HEAD + "collective allreduce\n  members lib:allreduce:\nend\n", 3, "library member 'lib:allreduce:'"),
    (HEAD + "collective allreduce\n  members lib:allreduce:ring#nonblocking\nend\n", 3,
     "library member 'lib:allreduce:ring#nonblocking' is an algorithm of another form"),
    (HEAD + "collective allreduce#nonblocking\n  members lib:allreduce:ring\nend\n", 3,
     "library member 'lib:allreduce:ring' is an algorithm of another form"),
    (HEAD + "collective allreduce#nonblocking\n  members allreduce_as_reduce_bcast\nend\n", 3,
     "unknown member 'allreduce_as_reduce_bcast' of allreduce#nonblocking"),
    (HEAD + "collective allreduce#persistent\n  members lib:allreduce:ring#nonblocking\nend\n", 3,
     "library member 'lib:allreduce:ring#nonblocking' is an algorithm of another form; members of "
     "allreduce#persistent serve its persistent calls: lib:allreduce:<algorithm>#persistent"),
    (HEAD + "collective allreduce#blocking\nend\n", 2, "unknown collective 'allreduce#blocking'"),
    (HEAD + "cell 0 0 0 explore 1\nend\n", 2, "'cell' outside a collective block"),
    (HEAD + COLL + "  cell 0 0 0 explore 1\nend\n", 4, "'cell' takes S N P MODE and 2 weights (one per member), got 5 fields"),
    (HEAD + COLL + "  cell 24 0 0 explore 1 1\nend\n", 4, "size bin '24' is not a whole number in 0..23"),
    (HEAD + "bins 8 2 2\n" + COLL + "  cell 0 2 0 explore 1 1\nend\n", 5, "nodes bin '2' is not a whole number in 0..1"),
    (HEAD + COLL + "  cell 0 0 x explore 1 1\nend\n", 4, "ppn bin 'x' is not a whole number"),
    (HEAD + COLL + "  cell 0 0 0 greedy 1 1\nend\n", 4, "cell mode 'greedy' is neither explore nor exploit"),
    (HEAD + COLL + "  cell 0 0 0 explore 1 1e3\nend\n", 4, "weight '1e3' is not a decimal number"),
    (HEAD + COLL + "  cell 0 0 0 explore 1 .5\nend\n", 4, "weight '.5' is not a decimal number"),
    (HEAD + COLL + "  cell 0 0 0 explore 0 0.000\nend\n", 4, "the weights of a cell are all 0"),
    (HEAD + COLL + "  cell 0 0 0 explore 1 1\n  cell 0 0 0 exploit 1 1\nend\n", 5, "cell 0 0 0 of allreduce appears twice"),
    (HEAD + COLL, 3, "file ends without the 'end' line (truncated?)"),
    (HEAD + "end x\n", 2, "'end' takes nothing after it"),
    (HEAD + "end\nbudget 1\n", 3, "text after 'end'"),
    (HEAD + "end\n" + "# " + "x" * 1022 + "\n", 3, "line longer than 1023 bytes"),
    (HEAD + "mpi a\x01b\nend\n", 2, "control character in the line"),
    ("end\n", 1, "not a selection table"),
]


@pytest.mark.parametrize("text,line,message", ERRORS)
def test_every_grammar_error_names_its_line(text: str, line: int, message: str) -> None:
    with pytest.raises(TableError) as info:
        parse_table(text.encode(), "bad.sel")
    assert str(info.value).startswith(f"bad.sel:{line}: ")
    assert message in str(info.value)


def test_crlf_tabs_and_a_maximal_line_are_accepted() -> None:
    text = (HEAD + "\tmpi  x\r\n" + COLL + "# " + "y" * 1021 + "\nend\n").encode()
    assert parse_table(text).mpi == "x"


def test_unreadable_file(tmp_path) -> None:
    with pytest.raises(TableError, match=r"nothere.sel:0: cannot read the selection table"):
        read_table(tmp_path / "nothere.sel")
