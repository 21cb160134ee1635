"""`colltune export --native`: the library's own tuning files, checked file by file and then
loaded into the real library, proving that the chosen algorithm runs.

The proof uses a floating-point sum whose rounded bits depend on the order of the additions:
each algorithm class of MPI_Allreduce gives its own bits. A run with the exported file must give
the bits of the chosen algorithm (forced through the library's own switch) inside the exported
range, and the default's bits outside it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from colltune.mpi import build, launch
from colltune.mpi import libraries as mpi
from colltune.tune import native_export as ne
from colltune.verify import check

SUMBITS = r"""
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* MPI_Allreduce(MPI_SUM) of doubles spread over 40 decades: the rounded result depends on the
 * order of the additions, i.e. on the algorithm. Rank 0 prints an FNV-1a hash of the result. */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, count = argc > 1 ? atoi(argv[1]) : 128;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double *in = malloc(sizeof(double) * (size_t)count), *out = malloc(sizeof(double) * (size_t)count);
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1);
    for (int i = 0; i < count; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        double scale = 1.0;
        for (int e = (int)(s % 40) - 20; e > 0; e--) scale *= 10.0;
        for (int e = (int)(s % 40) - 20; e < 0; e++) scale /= 10.0;
        in[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * scale;
    }
    MPI_Request req;   /* argument "i": MPI_Iallreduce + MPI_Wait */
    int rc = argc > 2 && argv[2][0] == 'i'
                 ? MPI_Iallreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req)
                 : MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS && argc > 2 && argv[2][0] == 'i')
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)out;
    for (size_t i = 0; i < sizeof(double) * (size_t)count; i++) { h ^= b[i]; h *= 1099511628211ull; }
    if (rank == 0) printf("sumbits %d %016llx\n", rc, (unsigned long long)h);
    MPI_Finalize();
    return 0;
}
"""


def verdict(nprocs: int, coll: str, variant: str, nbytes: int, slowdown: float, significant: bool = True,
            kind: str = "library") -> dict:
    v = {c: None for c in check.VERDICT_COLUMNS}
    v.update(run_id="r1", nprocs=nprocs, collective=coll, variant=variant, kind=kind, guideline="library",
             msg_bytes=nbytes, default_median_s=1e-5 * slowdown, variant_median_s=1e-5, slowdown=slowdown,
             rel_diff=1 - 1 / slowdown, significant=significant, violation=significant, barrier_warning=False,
             judged_at=dt.datetime(2026, 11, 22, 5))
    return v


def make_db(path: Path, rows: list[dict]) -> Path:
    duckdb.connect(str(path)).close()
    check.save_verdicts(path, pd.DataFrame(rows))
    return path


def allreduce_rows(nprocs: int, alg: str, other: str) -> list[dict]:
    """alg wins at 64 and 1024 B, nothing at 8192 B, `other` at 65536 B; a pattern row is ignored."""
    rows = []
    for n in (64, 1024, 8192, 65536):
        rows.append(verdict(nprocs, "allreduce", f"lib:allreduce:{alg}", n, 1.5 if n in (64, 1024) else 0.9))
        rows.append(verdict(nprocs, "allreduce", f"lib:allreduce:{other}", n, 1.2 if n == 65536 else 0.5))
        rows.append(verdict(nprocs, "allreduce", "allreduce_as_reduce_bcast", n, 3.0, kind="pattern"))
    rows.append(verdict(nprocs, "allreduce", f"lib:allreduce:{other}", 128, 1.05))  # below min-gain
    rows.append(verdict(nprocs, "allreduce", f"lib:allreduce:{other}", 256, 2.0, significant=False))
    return rows


def test_choices_merge_consecutive_sizes_only() -> None:
    choices = ne.choices_from_verdicts(pd.DataFrame(allreduce_rows(4, "ring", "basic_linear")))
    # Measured sizes: 64, 128, 256, 1024, 8192, 65536; ring wins at 64 and 1024 but 128 and 256
    # (measured, nothing wins there) lie between them: two segments, not one.
    assert choices == {("allreduce", 4): [ne.Segment(64, 64, "ring"), ne.Segment(1024, 1024, "ring"),
                                          ne.Segment(65536, 65536, "basic_linear")]}
    rows = [verdict(4, "bcast", "lib:bcast:binomial", n, 1.3) for n in (8, 16, 32)]
    assert ne.choices_from_verdicts(pd.DataFrame(rows)) == {("bcast", 4): [ne.Segment(8, 32, "binomial")]}
    # an algorithm of the nonblocking form, however fast, is no choice of the blocking call's file
    rows += [verdict(4, "bcast", "lib:bcast:chain#nonblocking", n, 3.0) for n in (8, 16, 32)]
    assert ne.choices_from_verdicts(pd.DataFrame(rows)) == {("bcast", 4): [ne.Segment(8, 32, "binomial")]}


PARAMS = ne.OmpiParams(
    algorithms={"allreduce": {"basic_linear": 1, "ring": 4}, "allgather": {"ring": 4}, "scan": {"linear": 1}},
    values={"coll_tuned_allreduce_algorithm_tree_fanout": 4, "coll_tuned_allreduce_algorithm_segmentsize": 0},
)


def test_openmpi_rules_file_exact() -> None:
    choices = {("allreduce", 4): [ne.Segment(64, 1024, "ring"), ne.Segment(65536, 65536, "basic_linear")],
               ("allgather", 2): [ne.Segment(16, 16, "ring")]}
    text = ne.openmpi_rules(choices, PARAMS)
    numbers = [line.split("#")[0].split() for line in text.splitlines()]
    numbers = [n for n in numbers if n]
    assert numbers == [
        ["2"],
        ["0"], ["3"],  # allgather: 3 communicator sizes
        ["1"], ["1"], ["0", "0", "0", "0"],
        ["2"], ["3"], ["0", "0", "0", "0"], ["32", "4", "4", "0"], ["33", "0", "0", "0"],  # 16 B * p=2
        ["3"], ["1"], ["0", "0", "0", "0"],
        ["2"], ["3"],  # allreduce
        ["1"], ["1"], ["0", "0", "0", "0"],
        ["4"], ["5"], ["0", "0", "0", "0"], ["64", "4", "4", "0"], ["1025", "0", "0", "0"],
        ["65536", "1", "4", "0"], ["65537", "0", "0", "0"],
        ["5"], ["1"], ["0", "0", "0", "0"],
    ]


def test_openmpi_scan_is_exported_only_when_size_independent() -> None:
    same = {("scan", 4): [ne.Segment(8, 8, "linear"), ne.Segment(64, 64, "linear")]}
    assert "14 # scan" in ne.openmpi_rules(same, PARAMS)
    mixed = {("scan", 4): [ne.Segment(8, 8, "linear"), ne.Segment(64, 64, "recursive_doubling")]}
    assert ne.openmpi_rules(mixed, PARAMS).splitlines()[2] == "0 # number of collectives"


def test_openmpi_unknown_algorithm_names_the_fix() -> None:
    with pytest.raises(ne.ExportError, match="Open MPI has no allreduce algorithm 'warp'"):
        ne.openmpi_rules({("allreduce", 4): [ne.Segment(1, 1, "warp")]}, PARAMS)


def test_mpich_tree_keeps_the_default_around_the_choice() -> None:
    default = {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}
    base = {"collective=allreduce": {"comm_type=intra": default, "comm_type=inter": {"x": {}}},
            "collective=barrier": {"y": {}}}
    tree = ne.mpich_tree({("allreduce", 3): [ne.Segment(64, 1024, "ring")]}, base)
    assert tree["collective=barrier"] == {"y": {}}
    assert tree["collective=allreduce"]["comm_type=inter"] == {"x": {}}
    assert tree["collective=allreduce"]["comm_type=intra"] == {
        "comm_size<=2": default,
        "comm_size<=3": {
            "avg_msg_size<=63": default,
            "avg_msg_size<=1024": {"algorithm=MPIR_Allreduce_intra_ring": {}},
            "avg_msg_size=any": default,
        },
        "comm_size=any": default,
    }
    assert list(tree["collective=allreduce"]["comm_type=intra"]) == ["comm_size<=2", "comm_size<=3", "comm_size=any"]


def test_mpich_total_size_and_parameterised_algorithms() -> None:
    base = {"collective=allgather": {"comm_type=intra": {"d": {}}}}
    tree = ne.mpich_tree({("allgather", 2): [ne.Segment(16, 16, "brucks")]}, base)
    node = tree["collective=allgather"]["comm_type=intra"]["comm_size<=2"]
    assert list(node) == ["total_msg_size<=31", "total_msg_size<=32", "total_msg_size=any"]
    with pytest.raises(ne.ExportError, match="MPIR_CVAR_BCAST_INTRA_ALGORITHM=tree"):
        ne.mpich_container("bcast", "tree")
    assert ne.mpich_container("bcast", "nb") == "algorithm=MPIR_Bcast_allcomm_nb"


def test_intel_settings_exact() -> None:
    choices = {("allreduce", 4): [ne.Segment(0, 1024, "3"), ne.Segment(65536, 65536, "2")],
               ("reduce_scatter_block", 4): [ne.Segment(4096, 8192, "1")]}
    assert ne.intel_settings(choices) == {
        "I_MPI_ADJUST_ALLREDUCE": "3:0-1024@4-4;2:65536-65536@4-4",
        "I_MPI_ADJUST_REDUCE_SCATTER_BLOCK": "1:1024-2048@4-4",
    }
    with pytest.raises(ne.ExportError, match="numbers"):
        ne.intel_settings({("allreduce", 4): [ne.Segment(0, 1, "ring")]})


def test_export_without_library_verdicts_says_what_to_measure(tmp_path: Path) -> None:
    db = make_db(tmp_path / "p.duckdb", [verdict(4, "allreduce", "allreduce_as_reduce_bcast", 8, 2.0, kind="pattern")])
    with pytest.raises(ne.ExportError, match="no verdicts on library algorithms"):
        ne.export(db, "openmpi", tmp_path / "rules.txt")
    with pytest.raises(ne.ExportError, match="unknown library"):
        ne.export(db, "lam", tmp_path / "rules.txt")


def _sumbits(lib: mpi.MpiLibrary, exe: Path, nprocs: int, count: int, env: dict[str, str], form: str = "") -> str:
    res = launch.run(lib, nprocs, [str(exe), str(count), *([form] if form else [])], rank_env=env, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("sumbits "))
    rc, bits = line.split()[1:]
    assert rc == "0"
    return bits


def _program(lib: mpi.MpiLibrary, tmp_path: Path) -> Path:
    src = tmp_path / "sumbits.c"
    src.write_text(SUMBITS)
    return build.compile_program(lib, [src], tmp_path / f"sumbits-{lib.name}")


def _env_file(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("export "):
            key, value = line[len("export "):].split("=", 1)
            out[key] = value.strip("'")
    return out


def _stand_in(tmp_path: Path, coll: str, algorithms: tuple[str, ...]) -> Path:
    path = tmp_path / "stand-in-proof.txt"
    path.write_text("colltune-proof 2\nsizes 2,3,4\n" + "".join(
        f"member lib:{coll}:{a} passed separate/builtin/float\n" for a in algorithms))
    return path


def test_native_export_leaves_out_what_failed_the_proof(openmpi: mpi.MpiLibrary, openmpi_build,
                                                       tmp_path: Path) -> None:
    """ring allreduce reorders non-commutative user ops and splits 8-bit sums otherwise than the
    default on Open MPI 5.0.11: a rules file would apply it to those calls too."""
    db = make_db(tmp_path / "r.duckdb", [verdict(4, "bcast", "lib:bcast:binomial", n, 1.3)
                                         for n in (8, 16)]
                 + allreduce_rows(4, "ring", "segmented_ring"))
    rules = ne.export(db, "openmpi", tmp_path / "rules.txt", mpi=openmpi)
    text = rules.read_text()
    env = (tmp_path / "rules.txt.env").read_text()
    assert "# allreduce" not in text and "# bcast" in text
    assert "left out (failed the proof, docs/select.md): lib:allreduce:ring (" in env
    assert "separate/user_noncommutative/int" in env
    only_ring = make_db(tmp_path / "ring.duckdb", allreduce_rows(4, "ring", "segmented_ring"))
    with pytest.raises(ne.ExportError, match="every algorithm the check chose failed the library's proof"):
        ne.export(only_ring, "openmpi", tmp_path / "r2.txt", mpi=openmpi)


def test_openmpi_rules_file_selects_the_algorithm(openmpi: mpi.MpiLibrary, tmp_path: Path) -> None:
    db = make_db(tmp_path / "r.duckdb", allreduce_rows(4, "ring", "basic_linear"))
    # Whether the file selects what it says, with a stand-in proof passing both algorithms (the
    # real proof refuses ring: test_native_export_leaves_out_what_failed_the_proof).
    rules = ne.export(db, "openmpi", tmp_path / "rules.txt", mpi=openmpi,
                      proof_file=_stand_in(tmp_path, "allreduce", ("ring", "basic_linear")))
    env = _env_file(tmp_path / "rules.txt.env")
    assert env == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                   "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(rules.resolve())}
    exe = _program(openmpi, tmp_path)

    def forced(alg: int, count: int) -> str:
        return _sumbits(openmpi, exe, 4, count, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                                                 "OMPI_MCA_coll_tuned_allreduce_algorithm": str(alg)})

    # 128 doubles = 1024 B: ring (4) from the file; the default's bits differ, so this can fail.
    tuned = _sumbits(openmpi, exe, 4, 128, env)
    assert tuned == forced(4, 128)
    assert tuned != _sumbits(openmpi, exe, 4, 128, {})
    # 8192 doubles = 65536 B: basic_linear (1).
    assert _sumbits(openmpi, exe, 4, 8192, env) == forced(1, 8192) != forced(4, 8192)
    # 1024 doubles = 8192 B: no rule (ring lost there), the library decides as without the file.
    assert _sumbits(openmpi, exe, 4, 1024, env) == _sumbits(openmpi, exe, 4, 1024, {}) != forced(4, 1024)


@pytest.mark.mpich
def test_mpich_selection_file_selects_the_algorithm(mpich: mpi.MpiLibrary, tmp_path: Path) -> None:
    db = make_db(tmp_path / "m.duckdb", allreduce_rows(3, "ring", "recursive_doubling"))
    sel = ne.export(db, "mpich", tmp_path / "selection.json", mpi=mpich,
                    proof_file=_stand_in(tmp_path, "allreduce", ("ring", "recursive_doubling")))
    tree = json.loads(sel.read_text())
    assert "collective=ibcast" in tree  # the library's own tree is kept for everything else
    env = _env_file(tmp_path / "selection.json.env")
    assert env == {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(sel.resolve()),
                   "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}
    exe = _program(mpich, tmp_path)
    ring = {"MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}
    tuned = _sumbits(mpich, exe, 3, 128, env)
    assert tuned == _sumbits(mpich, exe, 3, 128, ring)
    assert tuned != _sumbits(mpich, exe, 3, 128, {})
    assert _sumbits(mpich, exe, 3, 1024, env) == _sumbits(mpich, exe, 3, 1024, {}) != _sumbits(mpich, exe, 3, 1024, ring)


def _intel_proof(tmp_path: Path, passed: tuple[str, ...], failed: tuple[str, ...] = ()) -> Path:
    """A stand-in proof of Intel algorithms (colltune selftest --mpi intel writes the real one)."""
    path = tmp_path / "intel-proof.txt"
    path.write_text("colltune-proof 2\nsizes 2\n" + "".join(f"member {m} passed separate/builtin/int\n" for m in passed)
                    + "".join(f"member {m} passed -\nfail {m} separate/builtin/float result on rank 0: x\n" for m in failed))
    return path


def test_intel_settings_file(tmp_path: Path) -> None:
    rows = [verdict(4, "allreduce", "lib:allreduce:3", n, 1.4) for n in (8, 64)]
    db = make_db(tmp_path / "i.duckdb", rows)
    proven = _intel_proof(tmp_path, ("lib:allreduce:3", "lib:allreduce:4#nonblocking", "lib:bcast:2#nonblocking",
                                     "lib:reduce_scatter_block:2#nonblocking"))
    out = ne.export(db, "intel", tmp_path / "intel.env", proof_file=proven)
    assert _env_file(out) == {"I_MPI_ADJUST_ALLREDUCE": "3:8-64@4-4"}
    # the nonblocking form's algorithms: I_MPI_ADJUST_I<COLL>, Intel's message size as the blocking one's
    rows += [verdict(4, "allreduce", "lib:allreduce:4#nonblocking", n, 1.4) for n in (64, 1024)]
    rows += [verdict(4, "reduce_scatter_block", "lib:reduce_scatter_block:2#nonblocking", 4096, 1.3)]
    out = ne.export(make_db(tmp_path / "n.duckdb", rows), "intel", tmp_path / "intel-nb.env", proof_file=proven)
    assert _env_file(out) == {"I_MPI_ADJUST_ALLREDUCE": "3:8-64@4-4", "I_MPI_ADJUST_IALLREDUCE": "4:64-1024@4-4",
                              "I_MPI_ADJUST_IREDUCE_SCATTER_BLOCK": "2:1024-1024@4-4"}
    assert "not written" not in out.read_text()
    only_nonblocking = [verdict(4, "bcast", "lib:bcast:2#nonblocking", 8, 1.5)]
    out = ne.export(make_db(tmp_path / "b.duckdb", only_nonblocking), "intel", tmp_path / "intel-b.env",
                    proof_file=proven)
    assert _env_file(out) == {"I_MPI_ADJUST_IBCAST": "2:8-8@4-4"}
    # settings apply an algorithm to every call: one that failed a class of the proof is left out
    refusing = _intel_proof(tmp_path, ("lib:allreduce:3",), failed=("lib:allreduce:4#nonblocking",))
    out = ne.export(make_db(tmp_path / "r.duckdb", rows), "intel", tmp_path / "intel-r.env", proof_file=refusing)
    assert set(_env_file(out)) == {"I_MPI_ADJUST_ALLREDUCE"}
    assert "left out (failed the proof, docs/select.md): lib:allreduce:4#nonblocking (separate/builtin/float); " \
           "lib:reduce_scatter_block:2#nonblocking (not proven on this library)" in out.read_text()


def test_intel_settings_select_the_algorithm(tmp_path: Path) -> None:
    try:
        intel = mpi.resolve("intel")
    except mpi.MpiError as exc:
        pytest.skip(f"Intel MPI not installed (make setup-intel): {exc}")
    rows = [verdict(4, "allreduce", "lib:allreduce:8", n, 1.4) for n in (8, 1024)]
    out = ne.export(make_db(tmp_path / "i.duckdb", rows), "intel", tmp_path / "intel.env",
                    proof_file=_intel_proof(tmp_path, ("lib:allreduce:8",)))
    exe = _program(intel, tmp_path)
    ring = {"I_MPI_ADJUST_ALLREDUCE": "8"}
    tuned = _sumbits(intel, exe, 4, 128, _env_file(out))  # 1024 B: inside 8-1024
    assert tuned == _sumbits(intel, exe, 4, 128, ring) != _sumbits(intel, exe, 4, 128, {})
    # Outside every range Intel MPI 2021 applies the last listed algorithm (measured), so the
    # settings reach past the measured interval: the file must say so.
    assert "outside the listed ranges Intel MPI applies the last listed algorithm" in out.read_text()


def test_intel_nonblocking_settings_select_the_algorithm(tmp_path: Path) -> None:
    """The exported I_MPI_ADJUST_IALLREDUCE range makes MPI_Iallreduce run the chosen algorithm
    (id 4, ring: its result bits at 3 ranks) and leaves MPI_Allreduce the library's."""
    try:
        intel = mpi.resolve("intel")
    except mpi.MpiError as exc:
        pytest.skip(f"Intel MPI not installed (make setup-intel): {exc}")
    rows = [verdict(3, "allreduce", "lib:allreduce:4#nonblocking", n, 1.4) for n in (8, 1024)]
    out = ne.export(make_db(tmp_path / "i.duckdb", rows), "intel", tmp_path / "intel.env",
                    proof_file=_intel_proof(tmp_path, ("lib:allreduce:4#nonblocking",)))
    assert _env_file(out) == {"I_MPI_ADJUST_IALLREDUCE": "4:8-1024@3-3"}
    exe = _program(intel, tmp_path)
    tuned = _sumbits(intel, exe, 3, 128, _env_file(out), "i")  # 1024 B: inside 8-1024
    assert tuned == _sumbits(intel, exe, 3, 128, {"I_MPI_ADJUST_IALLREDUCE": "4"}, "i") != _sumbits(intel, exe, 3, 128, {}, "i")
    assert _sumbits(intel, exe, 3, 128, _env_file(out)) == _sumbits(intel, exe, 3, 128, {})


def test_intel_export_proves_the_chosen_algorithms_first(tmp_path: Path) -> None:
    """The runtime's proof leaves out what Intel MPI fixes per launch: the export proves the
    algorithms it chose (in a launch set to each, against a launch without) and adds them."""
    try:
        intel = mpi.resolve("intel")
    except mpi.MpiError as exc:
        pytest.skip(f"Intel MPI not installed (make setup-intel): {exc}")
    path = _intel_proof(tmp_path, ("lib:allreduce:3",))
    choices = {("allreduce", 2): [ne.Segment(8, 8, "3")], ("iallreduce", 2): [ne.Segment(8, 8, "4")]}
    assert ne._proven_at_launch(intel, path, choices) == path
    lines = path.read_text().splitlines()
    assert "member lib:allreduce:3 passed separate/builtin/int" in lines   # known: not proven again
    [ring] = [line for line in lines if line.startswith(("member lib:allreduce:4", "fail lib:allreduce:4"))]
    assert ring.startswith("member lib:allreduce:4#nonblocking passed ") and "separate/builtin/float" in ring


def test_nonblocking_choices_and_tree() -> None:
    """The nonblocking form's algorithms are chosen like the blocking ones and keyed `i<coll>`,
    MPICH's name of that selection subtree (which MPI_<Coll>_init's schedule is chosen from too);
    only its parameterless schedule builders (`sched_*`) are written."""
    rows = [verdict(3, "allreduce", "lib:allreduce:sched_naive#nonblocking", n, 1.5) for n in (64, 1024)]
    rows += [verdict(3, "allreduce", "lib:allreduce:ring", n, 1.5) for n in (64, 1024)]
    df = pd.DataFrame(rows)
    assert ne.choices_from_verdicts(df) == {("allreduce", 3): [ne.Segment(64, 1024, "ring")]}
    assert ne.choices_from_verdicts(df, form="nonblocking") == {("iallreduce", 3): [ne.Segment(64, 1024, "sched_naive")]}
    default = {"algorithm=MPIR_Iallreduce_intra_sched_recursive_doubling": {}}
    base = {"collective=iallreduce": {"comm_type=intra": default}}
    tree = ne.mpich_tree({("iallreduce", 3): [ne.Segment(64, 1024, "sched_naive")]}, base)
    assert tree["collective=iallreduce"]["comm_type=intra"] == {
        "comm_size<=2": default,
        "comm_size<=3": {"avg_msg_size<=63": default,
                         "avg_msg_size<=1024": {"algorithm=MPIR_Iallreduce_intra_sched_naive": {}},
                         "avg_msg_size=any": default},
        "comm_size=any": default}
    with pytest.raises(ne.ExportError, match="MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM=tsp_tree"):
        ne.mpich_container("iallreduce", "tsp_tree")
    assert ne.mpich_container("iallreduce", "tsp_ring") == "algorithm=MPIR_Iallreduce_intra_tsp_ring"


@pytest.mark.mpich
def test_mpich_selection_file_selects_the_nonblocking_algorithm(mpich: mpi.MpiLibrary, tmp_path: Path) -> None:
    """An MPI_Iallreduce of 128 doubles (1024 B) under the exported file gets the bits of the
    algorithm forced through MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM, not the default's; at 8192 B
    (no choice) the default's. tsp_ring: at 3 ranks MPICH's sched_* algorithms all add in the
    default's order (the same bits), the ring does not."""
    rows = [verdict(3, "allreduce", "lib:allreduce:tsp_ring#nonblocking", n,
                    1.5 if n in (64, 1024) else 0.9) for n in (64, 1024, 8192)]
    db = make_db(tmp_path / "nb.duckdb", rows)
    proof = tmp_path / "proof.txt"
    proof.write_text("colltune-proof 2\nsizes 2,3,4\nmember lib:allreduce:tsp_ring#nonblocking "
                     "passed separate/builtin/float\n")
    sel = ne.export(db, "mpich", tmp_path / "nb.json", mpi=mpich, proof_file=proof)
    env = _env_file(tmp_path / "nb.json.env")
    exe = _program(mpich, tmp_path)
    forced = {"MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM": "tsp_ring"}
    tuned = _sumbits(mpich, exe, 3, 128, env, "i")
    assert "collective=iallreduce" in json.loads(sel.read_text())
    assert tuned == _sumbits(mpich, exe, 3, 128, forced, "i") != _sumbits(mpich, exe, 3, 128, {}, "i")
    assert _sumbits(mpich, exe, 3, 1024, env, "i") == _sumbits(mpich, exe, 3, 1024, {}, "i")
