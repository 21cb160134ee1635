"""The learning mode of libcolltune (docs/select.md) on real MPI programs.

Every check that matters here would hang or fail otherwise: ranks that drew different members
deadlock. The decisive check is the trace: the member every call got, as recorded by each rank,
is the member colltune.learn.table predicts from the seed, the communicator id and the call
index, so the C draw and the Python draw agree call for call.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from interposer_support import Run, compile_programs, mpmd_argv, run_argv, run_mpi

from colltune import catalog, interposer
from colltune.learn import table as sel
from colltune.learn import traces
from colltune.mpi import runenv

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "native" / "fuzz"
PROGRAMS = Path(__file__).resolve().parent / "programs"
COLLECTIVES = catalog.load().collective_names()
SEED = "1234567"
COLLTUNE = str(Path(sys.executable).with_name("colltune"))


@pytest.fixture(scope="session")
def ompi_programs(openmpi, tmp_path_factory):
    return compile_programs(openmpi, tmp_path_factory.mktemp("programs"))


@pytest.fixture(scope="session")
def mpich_programs(mpich, tmp_path_factory):
    return compile_programs(mpich, tmp_path_factory.mktemp("programs"))


def learn_env(lib, art, select: str | Path = "-", trace: Path | None = None, **extra: str) -> dict[str, str]:
    env = runenv.rank_environment(lib, art, verbose=True)
    env["COLLTUNE_SELECT"] = str(select)
    env["COLLTUNE_SELECT_SEED"] = SEED
    if trace is not None:
        env["COLLTUNE_TRACE_DIR"] = str(trace)
    env.update(extra)
    return env


def stand_in_proof(path: Path, members, sizes: int, classes: str = "separate/builtin/float") -> Path:
    """A proof that admits `members` for double sums on `sizes` ranks. The real proof refuses a
    member whose float bits differ from the default's (issue 37), which is exactly what the tests
    using this tell members apart by: they are about which member runs, not about the proof."""
    path.write_text(f"colltune-proof 2\nsizes {sizes}\n"
                    + "".join(f"member {m} passed {classes}\n" for m in members if m != "default"))
    return path


def ok(run: Run) -> Run:
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert "FAIL" not in run.stderr and "warning" not in run.stderr, run.describe()
    return run


def refused_members(art) -> set[str]:
    """Members the proof refuses in some class: failed there, or not proven in a class that
    another member of the collective passed (e.g. a mock-up not applicable to it)."""
    from colltune.measure import proof

    path = art.dir / proof.PROOF_FILE
    passed = proof.read_passed(path)
    cat = catalog.load()
    of = {m: m.split(":")[1] if m.startswith("lib:") else cat.variant(m).collective for m in passed}
    seen: dict[str, set[str]] = {}
    for m, classes in passed.items():
        seen.setdefault(of[m], set()).update(classes)
    return set(proof.failed_members(path)) | {m for m in passed if passed[m] != seen[of[m]]}


def predicted(table: sel.SelectionTable, calls, portfolios, refused: set[str] = frozenset()) -> list[str | None]:
    """The member Python's draw gives each call. A redrawn call must have drawn first a member
    the proof refuses in some class (`refused`), and got another: the redraw depends on the
    call's class, which the trace does not keep, so its member is taken as recorded."""
    out = []
    for r in calls.itertuples():
        member, _ = table.choose(r.collective, table.bins_of(r.msg_bytes, r.nodes, r.ppn),
                                 portfolios[r.collective], int(SEED), r.comm_id, r.call_index)
        member = member or "default"
        if r.redrawn:
            assert member in refused and member != r.member, (member, r)
            member = r.member
        out.append(member)
    return out


def read_calls(trace_dir: Path, nprocs: int):
    files = sorted(trace_dir.glob("rank-*.cttrace"))
    assert [f.name for f in files] == sorted(f"rank-{r}.cttrace" for r in range(nprocs))
    tfs = [traces.read_trace(f) for f in files]
    calls, disagree = traces.calls_frame(tfs)
    assert disagree == 0                      # every rank recorded the same member per call
    assert all(t.seed == int(SEED) and t.overflow == 0 for t in tfs)
    return calls, tfs[0].portfolios


# ---- the draw in C ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def select_unit(tmp_path_factory) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler (gcc) on PATH: install gcc")
    out = tmp_path_factory.mktemp("ctselect")
    subprocess.run([sys.executable, str(FUZZ / "gen_names.py"), str(out)], check=True)
    exe = out / "select_unit"
    subprocess.run([cc, "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=undefined", f"-I{ROOT / 'native' / 'include'}", f"-I{out}", f"-I{ROOT / 'native' / 'generated'}",
                    str(FUZZ / "select_unit.c"), str(ROOT / "native" / "core" / "select.c"), str(ROOT / "native" / "core" / "select_draw.c"), str(ROOT / "native" / "core" / "textformat.c"),
                    str(out / "ct_catalog.c"), "-o", str(exe)], check=True)
    return exe


def test_c_draw_matches_the_documented_vectors(select_unit):
    run = subprocess.run([str(select_unit)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
    assert run.stdout.splitlines()[-1] == "select_unit: 102 checks, 0 failed"


def test_c_and_python_pick_the_same_member(select_unit, tmp_path):
    text = ("colltune-select 1\ncaps 0.05 0.6\nunlisted explore\n"
            "collective allreduce\n  members allreduce_as_reduce_bcast default allreduce_as_reducescatterblock_allgather\n"
            "  cell 4 0 1 explore 0.3 0.5 0.2\n  cell 5 0 1 exploit 0.1 0.7 0.7\n"
            "collective bcast\n  members bcast_as_allgatherv\n  cell 3 1 0 explore 1\nend\n")
    path = tmp_path / "t.select"
    path.write_text(text)
    table = sel.read_table(path)
    port = {c: [catalog.DEFAULT, *(v.name for v in catalog.load().variants_of(c))] for c in COLLECTIVES}
    for coll, bins in [("allreduce", (4, 0, 1)), ("allreduce", (5, 0, 1)), ("allreduce", (9, 0, 0)),
                       ("bcast", (3, 1, 0)), ("scan", (0, 0, 0))]:
        for comm, call in [(0, 0), (1, 7), (3, 1000), (1 << 20, 5), (77, 123456)]:
            out = subprocess.run([str(select_unit), "pick", str(path), coll, *map(str, bins), SEED,
                                  str(comm), str(call)], capture_output=True, text=True, check=True)
            want, _ = table.choose(coll, bins, port[coll], int(SEED), comm, call)
            assert out.stdout.split()[0] == (want or "library"), (coll, bins, comm, call)


# ---- uniform exploration on a real program -------------------------------------------------------

def test_uniform_exploration_draws_every_member_with_exact_results(openmpi, openmpi_build, ompi_programs, tmp_path):
    """ct_collectives checks every result exactly; 3 ranks, each call drawn uniformly over the
    collective's portfolio; the traces show which member each call got, and Python predicts it."""
    run = ok(run_mpi(openmpi, 3, [ompi_programs["ct_collectives"], "-r", "6"],
                     learn_env(openmpi, openmpi_build, trace=tmp_path), timeout=240))
    calls, portfolios = read_calls(tmp_path, 3)
    made = {c: sum(k.values()) for c, k in run.program_calls.items()}
    assert Counter(calls["collective"]) == Counter(made)
    assert list(calls["member"]) == predicted(sel.SelectionTable(), calls, portfolios,
                                              refused_members(openmpi_build))
    # every member of every portfolio was drawn at least once, and counted as explored
    drawn = {(c, m) for c, m in zip(calls["collective"], calls["member"], strict=True)}
    assert drawn == {(c, m) for c, ms in portfolios.items() if c in made for m in ms}
    assert set(calls.loc[calls["outcome"] == "applied", "mode"]) == {"explore"}
    assert {k[1] for k in run.counts} == {"explore"}
    assert sum(run.counts.values()) == sum(made.values())
    # sparbit is drawn for in-place allgathers too, and drawn again there (not proven)
    assert run.redraws[("allgather", "lib:allgather:sparbit")] > 0, run.describe()
    assert sum(run.redraws.values()) == int(calls["redrawn"].sum())


def test_bad_table_warns_once_and_passes_through(openmpi, openmpi_build, ompi_programs, tmp_path):
    bad = tmp_path / "bad.select"
    bad.write_text("colltune-select 1\ncollective bcast\n  members default bcast_as_nothing\nend\n")
    run = run_mpi(openmpi, 2, [ompi_programs["ct_collectives"], "bcast"],
                  learn_env(openmpi, openmpi_build, select=bad), timeout=60)
    assert run.returncode == 0, run.describe()
    msgs = run.messages("learning mode off")
    assert len(msgs) == 1 and f"{bad}:3: unknown member 'bcast_as_nothing' of bcast" in msgs[0], run.describe()
    assert run.counts == Counter({("bcast", "none", "library", "library"): 12}), run.describe()


def test_differing_tables_turn_learning_off(openmpi, openmpi_build, ompi_programs, tmp_path):
    a, b = tmp_path / "a.select", tmp_path / "b.select"
    a.write_text("colltune-select 1\nend\n")
    b.write_text("colltune-select 1\nunlisted library\nend\n")
    prog = [ompi_programs["ct_collectives"], "bcast"]
    ea = learn_env(openmpi, openmpi_build, select=a)
    run = run_argv(openmpi, mpmd_argv(openmpi, [(1, prog, ea), (1, prog, {**ea, "COLLTUNE_SELECT": str(b)})]))
    assert run.returncode == 0, run.describe()
    assert len(run.messages("learning mode off")) == 1, run.describe()
    assert run.counts == Counter({("bcast", "none", "library", "library"): 12}), run.describe()


# ---- rank consistency: tests that hang when ranks draw differently -------------------------------

@pytest.fixture(scope="session")
def learn_programs(openmpi, tmp_path_factory) -> dict[str, Path]:
    from colltune.mpi import build

    out = tmp_path_factory.mktemp("learnprog")
    return {src.stem: build.compile_program(openmpi, [src], out / src.stem, ["-Wextra"])
            for src in sorted(PROGRAMS.glob("learn_*.c"))}


@pytest.mark.parametrize("nprocs", [3, 4])
def test_several_communicators_interleaved(openmpi, openmpi_build, learn_programs, tmp_path, nprocs):
    """World, its dup (freed), a reversed-order parity split, a two-rank split, dups of the
    halves: each keeps its own id and counter, and Python predicts every call's member."""
    run = ok(run_mpi(openmpi, nprocs, [learn_programs["learn_comms"], "12"],
                     learn_env(openmpi, openmpi_build, trace=tmp_path), timeout=240))
    assert "learn_comms ok calls=" in run.stdout, run.describe()
    calls, portfolios = read_calls(tmp_path, nprocs)
    assert list(calls["member"]) == predicted(sel.SelectionTable(), calls, portfolios, refused_members(openmpi_build))
    sizes = dict(zip(calls["comm_id"], calls["comm_size"], strict=False))
    halves = [nprocs - nprocs // 2, nprocs // 2]
    assert sorted(sizes.values()) == sorted([nprocs, nprocs, 2, *halves, *halves])


def test_datatype_sizes_exact_with_evicted_and_freed_types(openmpi, openmpi_build, learn_programs, tmp_path):
    """Six predefined types in turn (the 4-entry size cache evicts) and derived types freed and
    recreated with other sizes: every call's bytes in the trace are exact, every rank agrees."""
    run = ok(run_mpi(openmpi, 3, [learn_programs["learn_types"], "24"],
                     learn_env(openmpi, openmpi_build, trace=tmp_path), timeout=240))
    assert "learn_types ok" in run.stdout, run.describe()
    calls, _ = read_calls(tmp_path, 3)
    sizes = [4, 8, 2, 8, 1, 4]   # MPI_INT, DOUBLE, SHORT, LONG_LONG, SIGNED_CHAR, FLOAT
    expected = []
    for it in range(24):
        expected += [(1 + it % 5) * sizes[it % 6], 2 * 4 * (1 + it % 4)]
    world = calls[calls["comm_size"] == 3].sort_values("call_index")
    assert world["msg_bytes"].tolist() == expected
    assert world["collective"].tolist() == ["allreduce", "bcast"] * 24


def test_thread_multiple_one_communicator_per_thread(openmpi, openmpi_build, ompi_programs, tmp_path):
    run = ok(run_mpi(openmpi, 2, [ompi_programs["ct_threads"], "40"],
                     learn_env(openmpi, openmpi_build, trace=tmp_path), timeout=240))
    assert "threads calls allreduce=80 bcast=80 allgather=80" in run.stdout, run.describe()
    calls, portfolios = read_calls(tmp_path, 2)
    assert len(calls) == 240 and calls["comm_id"].nunique() == 2
    assert list(calls["member"]) == predicted(sel.SelectionTable(), calls, portfolios, refused_members(openmpi_build))


@pytest.mark.parametrize("counting", [False, True])
def test_started_calls_before_the_state_then_decided_once_it_is_made(openmpi, openmpi_build, learn_programs,
                                                                    tmp_path, counting):
    """learn_nostate: on two fresh communicators, 5 MPI_Iallreduce before their first blocking
    collective go to the library (no state yet, remembered per thread as "no state"), and the 5
    after it are decided and traced on every rank, the same call for call: on c the state was
    made by another thread (its making must void the main thread's "no state"), on d by the main
    thread. Both routes: the learning mode alone (its short path) and with counting."""
    calls = 5
    proof = stand_in_proof(tmp_path / "proof.txt", ["lib:allreduce:ring#nonblocking"], 2, "separate/builtin/int")
    (tmp_path / "trace").mkdir()
    env = learn_env(openmpi, openmpi_build, trace=tmp_path / "trace", COLLTUNE_PROOF=str(proof),
                    COLLTUNE_LIBRARY_WARMUP="0")
    if not counting:
        del env["COLLTUNE_VERBOSE"]
    run = ok(run_mpi(openmpi, 2, [learn_programs["learn_nostate"], str(calls)], env, timeout=120))
    assert f"learn_nostate ok calls={4 * calls + 2}" in run.stdout, run.describe()
    traced, _ = read_calls(tmp_path / "trace", 2)
    assert traced["comm_id"].nunique() == 2, traced
    for _, comm in traced.sort_values(["comm_id", "call_index"]).groupby("comm_id"):
        # the blocking call made the state (index 0); only the started calls after it count on
        assert comm["call_index"].tolist() == list(range(calls + 1)), comm
        assert comm["collective"].tolist() == ["allreduce"] + ["allreduce#nonblocking"] * calls, comm
    if counting:   # rank 0's two blocking calls, drawn among the blocking portfolio (redraws aside)
        blocking = {k: n for k, n in run.counts.items() if "#" not in k[2] and not k[3].startswith("redrawn")}
        assert sum(blocking.values()) == 2 and {k[:2] for k in blocking} == {("allreduce", "explore")}, run.describe()


@pytest.mark.parametrize("args", [["256"], ["256", "gaps"]])
def test_root_only_arguments_never_change_draws(openmpi, openmpi_build, ompi_programs, args):
    run = ok(run_mpi(openmpi, 3, [ompi_programs["ct_rootonly"], *args],
                     learn_env(openmpi, openmpi_build), timeout=120))
    assert sum(n for k, n in run.counts.items() if k[1] == "explore") == 9, run.describe()


def test_force_programs_pass_under_uniform_learning(openmpi, openmpi_build, ompi_programs):
    run = ok(run_mpi(openmpi, 3, [ompi_programs["ct_collectives"], "-t"], learn_env(openmpi, openmpi_build),
                     timeout=240))
    assert {k[1] for k in run.counts} == {"explore"}, run.describe()


@pytest.mark.mpich
def test_uniform_learning_under_mpich(mpich, mpich_build, mpich_programs, tmp_path):
    run = ok(run_mpi(mpich, 3, [mpich_programs["ct_collectives"], "-r", "3"],
                     learn_env(mpich, mpich_build, trace=tmp_path), timeout=240))
    assert {k[1] for k in run.counts} == {"explore"}, run.describe()
    calls, portfolios = read_calls(tmp_path, 3)
    assert list(calls["member"]) == predicted(sel.SelectionTable(), calls, portfolios, refused_members(mpich_build))
    large = ok(run_mpi(mpich, 2, [mpich_programs["ct_largecount"]], learn_env(mpich, mpich_build)))
    assert "largecount calls 10" in large.stdout, large.describe()


# ---- budget, frozen tables, bad trace settings ---------------------------------------------------

def test_budget_spent_means_exploit(openmpi, openmpi_build, ompi_programs):
    run = ok(run_mpi(openmpi, 2, [ompi_programs["ct_collectives"], "allreduce", "bcast"],
                     learn_env(openmpi, openmpi_build, COLLTUNE_SELECT_BUDGET="5")))
    explored = sum(n for k, n in run.counts.items() if k[1] == "explore")
    exploited = Counter({k: n for k, n in run.counts.items() if k[1] == "exploit"})
    assert explored == 5, run.describe()
    # unlisted explore past the budget: the first member of uniform weights, the library
    assert set(exploited) <= {("allreduce", "exploit", "library", "library"),
                              ("bcast", "exploit", "library", "library")}
    assert explored + sum(exploited.values()) == 9 + 12, run.describe()


def test_budget_is_spread_over_cells_on_every_rank(openmpi, openmpi_build, learn_programs, tmp_path):
    """Phases of 20 calls, one (collective, size) each, then a dup: with a budget of 25 and 8 per
    cell, world explores the first 8 calls of each of its first three phases and the first of
    the fourth (the budget ends there), the dup its own first 8 (its own counters). Every rank
    records exactly those as explored, and the same members; explored calls get the draw's
    member, the rest the library (unlisted explore past the budget)."""
    run = ok(run_mpi(openmpi, 3, [learn_programs["learn_cells"], "20"],
                     learn_env(openmpi, openmpi_build, trace=tmp_path, COLLTUNE_SELECT_BUDGET="25",
                               COLLTUNE_SELECT_CELL_BUDGET="8"), timeout=240))
    assert "learn_cells ok" in run.stdout, run.describe()
    first8 = list(range(8))
    world = [*first8, *(20 + i for i in first8), *(40 + i for i in first8), 60]
    for f in sorted(tmp_path.glob("rank-*.cttrace")):
        r = traces.read_trace(f).records
        comms = list(dict.fromkeys(r["comm_id"].tolist()))   # world first, then the dup
        explored = r[r["outcome"] == 3]
        assert [(comms.index(c), int(i)) for c, i in zip(explored["comm_id"], explored["call_index"], strict=True)] \
            == [(0, i) for i in world] + [(1, i) for i in first8], f.name
    calls, portfolios = read_calls(tmp_path, 3)
    assert len(calls) == 5 * 20
    per_cell = Counter(zip(calls["comm_id"], calls["collective"], calls["msg_bytes"], calls["mode"], strict=True))
    assert sorted(per_cell.values()) == [1, 8, 8, 8, 8, 12, 12, 12, 12, 19]
    drawn = predicted(sel.SelectionTable(), calls, portfolios, refused_members(openmpi_build))
    assert list(calls["member"]) == [m if mode == "explore" else "default" for m, mode in zip(drawn, calls["mode"], strict=True)]


def test_frozen_table_gives_the_same_member_every_run(openmpi, openmpi_build, ompi_programs, tmp_path):
    """Exploit cells and `unlisted library`: no draw, so another seed changes nothing."""
    frozen = tmp_path / "frozen.select"
    frozen.write_text("colltune-select 1\nunlisted library\ncollective bcast\n"
                      "  members default bcast_as_scatter_allgather bcast_as_allgatherv\n"
                      "  cell 3 0 1 exploit 0.1 0.2 0.7\n  cell 4 0 1 exploit 0.1 0.7 0.2\nend\n")
    runs = [ok(run_mpi(openmpi, 2, [ompi_programs["ct_collectives"], "bcast"],
                       learn_env(openmpi, openmpi_build, select=frozen, COLLTUNE_SELECT_SEED=str(s))))
            for s in (1, 2)]
    assert runs[0].counts == runs[1].counts
    assert {k[1] for k in runs[0].counts} == {"exploit"}
    # 1 int (4 bytes, size bin 3) -> bcast_as_allgatherv; 3 ints (bin 4) -> scatter_allgather
    assert runs[0].counts["bcast", "exploit", "bcast_as_allgatherv", "applied"] == 4, runs[0].describe()
    assert runs[0].counts["bcast", "exploit", "bcast_as_scatter_allgather", "applied"] == 4, runs[0].describe()


def test_unwritable_trace_dir_and_full_buffer_warn_and_run_on(openmpi, openmpi_build, ompi_programs, tmp_path):
    missing = tmp_path / "missing"
    run = run_mpi(openmpi, 2, [ompi_programs["ct_collectives"], "bcast"],
                  learn_env(openmpi, openmpi_build, trace=missing))
    assert run.returncode == 0 and len(run.messages("is not a writable directory")) == 2, run.describe()
    assert not missing.exists()
    run = run_mpi(openmpi, 2, [ompi_programs["ct_collectives"], "bcast"],
                  learn_env(openmpi, openmpi_build, trace=tmp_path, COLLTUNE_TRACE_RECORDS="5"))
    assert run.returncode == 0 and len(run.messages("trace buffer full, 7 calls not recorded")) == 2, run.describe()
    t = traces.read_trace(tmp_path / "rank-1.cttrace")
    assert len(t.records) == 5 and t.overflow == 7


def test_trace_ranks_sample(openmpi, openmpi_build, ompi_programs, tmp_path):
    """Two of four ranks record; all four decide (the run would hang otherwise)."""
    ok(run_mpi(openmpi, 4, [ompi_programs["ct_collectives"], "bcast"],
               learn_env(openmpi, openmpi_build, trace=tmp_path, COLLTUNE_TRACE_RANKS="2")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank-0.cttrace", "rank-2.cttrace"]


def test_colltune_run_learn_and_traces_ingest(openmpi, openmpi_build, ompi_programs, tmp_path):
    trace_dir, db = tmp_path / "tr", tmp_path / "x.duckdb"
    env = {**os.environ, "COLLTUNE_SELECT_SEED": SEED}
    argv = [COLLTUNE, "run", "--mpi", "openmpi", "--learn", "-", "--trace-dir", str(trace_dir),
            "--", str(openmpi.mpiexec), "-n", "2", str(ompi_programs["ct_collectives"]), "scan"]
    subprocess.run(argv, check=True, env=env, capture_output=True, timeout=240)
    out = subprocess.run([COLLTUNE, "traces", "ingest", str(trace_dir), "--db", str(db)],
                         check=True, capture_output=True, text=True)
    assert ": 2 rank files, 18 records, 9 calls, 0 calls not recorded\n" in out.stdout


# ---- mpi4py's collective tests under uniform exploration ------------------------------------------

try:  # the fixture that fetches mpi4py's test sources, and its checks
    from test_interposer_thirdparty import TESTS, assert_suite_passed, mpi4py_tests  # noqa: F401
except pytest.skip.Exception:  # no mpi4py: that module skips itself on import
    TESTS = None

@pytest.mark.slow
@pytest.mark.parametrize("library", ["openmpi", pytest.param("mpich", marks=pytest.mark.mpich)])
def test_mpi4py_collective_suite_under_learning(request, library, tmp_path):
    """mpi4py's own collective tests (test_interposer_thirdparty fetches them), every eligible
    call drawn uniformly over its portfolio and traced: the suite passes and every rank recorded
    the same member for every call."""
    if TESTS is None:
        pytest.skip("mpi4py is not installed")
    tests_dir = request.getfixturevalue("mpi4py_tests")
    lib = request.getfixturevalue(library)
    art = request.getfixturevalue(f"{library}_build")
    argv = [COLLTUNE, "run", "--mpi", lib.name, "--verbose", "--learn", "-", "--trace-dir", str(tmp_path),
            "--", str(lib.mpiexec), "-n", "2", sys.executable, "main.py", "-f", *TESTS]
    proc = subprocess.run(argv, cwd=tests_dir, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, check=False, env={**os.environ, "COLLTUNE_SELECT_SEED": SEED,
                                                                       "COLLTUNE_SELECT_BUDGET": "1000000000",
                                                                       "COLLTUNE_SELECT_CELL_BUDGET": "1000000000"})
    run = Run(proc.returncode, proc.stdout, proc.stderr)
    assert_suite_passed(run)
    assert sum(n for k, n in run.counts.items() if k[1] == "explore" and k[3] == "applied") > 100, run.describe()
    calls, portfolios = read_calls(tmp_path, 2)
    assert list(calls["member"]) == predicted(sel.SelectionTable(), calls, portfolios, refused_members(art))


# ---- the C and Python readers agree on every prefix and mutation of the seed corpus --------------

CORPUS = FUZZ / "corpus_select"


def mutations(data: bytes) -> list[bytes]:
    """Every byte prefix; each line dropped, doubled, and with its first digit changed to 9."""
    out = [data[:i] for i in range(len(data) + 1)]
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        out.append(b"\n".join(lines[:i] + lines[i + 1:]))
        out.append(b"\n".join(lines[:i] + [line, line] + lines[i + 1:]))
        digit = next((j for j, c in enumerate(line) if 48 <= c <= 57), None)
        if digit is not None:
            out.append(b"\n".join(lines[:i] + [line[:digit] + b"9" + line[digit + 1:]] + lines[i + 1:]))
    return out


def test_c_and_python_readers_agree_on_corpus_mutations(tmp_path):
    """The parser harness (ASan+UBSan, its own invariants) on every input, and for each: both
    readers accept with the same content hash, or both refuse naming the same line."""
    cc = shutil.which("gcc") or shutil.which("cc")
    out = tmp_path / "names"
    subprocess.run([sys.executable, str(FUZZ / "gen_names.py"), str(out)], check=True)
    exe = tmp_path / "fuzz_select"
    subprocess.run([cc, "-std=c11", "-DCT_FUZZ_MAIN", "-O1", "-g", "-Wall", "-Wextra", "-Werror",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                    f"-I{ROOT / 'native' / 'include'}", f"-I{out}", f"-I{ROOT / 'native' / 'generated'}", str(FUZZ / "fuzz_select.c"),
                    str(ROOT / "native" / "core" / "select.c"), str(ROOT / "native" / "core" / "select_draw.c"), str(ROOT / "native" / "core" / "textformat.c"), str(out / "ct_catalog.c"), "-o", str(exe)], check=True)
    inputs = []
    for src in sorted(CORPUS.glob("*.select")):
        for k, data in enumerate(mutations(src.read_bytes())):
            path = tmp_path / f"{src.stem}-{k}.select"
            path.write_bytes(data)
            inputs.append(path)
    run = subprocess.run([str(exe), *map(str, inputs)], capture_output=True, text=True, check=True)
    got = run.stdout.splitlines()
    assert len(got) == len(inputs) > 300
    accepted = 0
    for path, c_line in zip(inputs, got, strict=True):
        try:
            sel.parse_table(path.read_bytes(), str(path))
            py_line = f"ok {sel.content_hash(path.read_bytes()):016x}"
            accepted += 1
        except sel.TableError as exc:
            py_line = "error " + ":".join(str(exc).split(":")[:2])
        c_cmp = c_line if c_line.startswith("ok") else ":".join(c_line.split(":")[:2])
        assert c_cmp == py_line, (path.read_text(errors="replace"), c_line, py_line)
    assert 0 < accepted < len(inputs)


# ---- front end ------------------------------------------------------------------------------------

def test_front_end_refuses_a_bad_table_before_launch(openmpi, openmpi_build, tmp_path):
    from colltune.mpi.libraries import MpiError

    bad = tmp_path / "bad.select"
    bad.write_text("colltune-select 1\ncollective bcast\nend\n")
    with pytest.raises(MpiError, match=r"--learn: .*bad.select:2: collective bcast has no 'members' line"):
        interposer.rank_environment(openmpi, openmpi_build, learn=bad)
    env = runenv.rank_environment(openmpi, openmpi_build, learn="-", trace_dir=tmp_path / "new" / "dir")
    assert env["COLLTUNE_SELECT"] == "-" and (tmp_path / "new" / "dir").is_dir()
    assert env["COLLTUNE_TRACE_DIR"] == str((tmp_path / "new" / "dir").resolve())


def test_mpi_env_prints_the_learning_settings(openmpi, openmpi_build, tmp_path):
    out = subprocess.run([COLLTUNE, "mpi", "env", "--mpi", "openmpi", "--learn", "-", "--trace-dir", str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout
    assert "COLLTUNE_SELECT=-" in out.replace("'", "") and f"COLLTUNE_TRACE_DIR={tmp_path}" in out.replace("'", "")


# ---- check mode -----------------------------------------------------------------------------------

@pytest.mark.parametrize("library", ["openmpi", pytest.param("mpich", marks=pytest.mark.mpich)])
def test_check_mode_compares_every_explored_variant_call(request, library):
    """Integer data: every explored call a mock-up served gives the library's bytes exactly;
    the count of compared calls is the counting table's explored-and-applied calls."""
    lib = request.getfixturevalue(library)
    art = art = request.getfixturevalue(f"{library}_build")
    prog = request.getfixturevalue("ompi_programs" if library == "openmpi" else "mpich_programs")["ct_collectives"]
    run = ok(run_mpi(lib, 3, [prog, "-r", "2", "-t"], learn_env(lib, art, COLLTUNE_SELECT_CHECK="1"), timeout=240))
    applied = sum(n for k, n in run.counts.items() if k[1] == "explore" and k[3] == "applied")
    assert applied > 50
    assert run.messages("check: ") == [f"colltune: check: rank 0 compared {applied} explored calls with the "
                                       "library: all identical"], run.describe()


def test_check_mode_sees_floating_point_differences(openmpi, openmpi_build, learn_programs, tmp_path):
    """Sums of mixed-magnitude doubles: mock-ups add in another order than the library, and the
    check mode reports it on every rank (the application still gets the library's bytes). The
    real proof refuses those members for double sums, so a stand-in proof admits them here."""
    members = [v.name for v in catalog.load().variants_of("allreduce")]
    proof = stand_in_proof(tmp_path / "proof.txt", members, 4, "in_place/builtin/float")
    run = run_mpi(openmpi, 4, [learn_programs["learn_float"]],
                  learn_env(openmpi, openmpi_build, COLLTUNE_SELECT_CHECK="1", COLLTUNE_PROOF=str(proof)),
                  timeout=240)
    assert run.returncode == 0 and "learn_float done" in run.stdout, run.describe()
    reports = run.messages("explored calls with the library")
    assert len(reports) == 4 and all(" differ (first: allreduce by allreduce_as_" in r for r in reports), run.describe()


def test_spent_budget_serves_the_cells_best_member_on_the_short_path(openmpi, openmpi_build, learn_programs, tmp_path):
    """Once a communicator's budget is spent, an explore cell picks its best member and an unlisted
    cell the library (at once when unlisted cells never explore), on learn.c's short path (not
    counting: no verbose). learn_float's 32 KiB
    in-place double sums on 4 ranks (size bin 16, one node, ppn bin 2) tell the member apart by
    its bits: the settled cell gives exactly what the same member in an exploit cell gives."""
    proof = stand_in_proof(tmp_path / "proof.txt", ["allreduce_as_reduce_bcast"], 4, "in_place/builtin/float")

    def digest(cell: str | None, unlisted: str = "explore", **extra: str) -> str:
        env = runenv.rank_environment(openmpi, openmpi_build)
        if cell is not None:
            table = tmp_path / f"t{len(list(tmp_path.glob('t*.select')))}.select"
            table.write_text(f"colltune-select 1\nunlisted {unlisted}\n"
                             "collective allreduce\n  members default allreduce_as_reduce_bcast\n"
                             f"  cell {cell}\nend\n")
            env.update(COLLTUNE_SELECT=str(table), COLLTUNE_SELECT_SEED=SEED, COLLTUNE_PROOF=str(proof), **extra)
        run = ok(run_mpi(openmpi, 4, [learn_programs["learn_float"]], env, timeout=240))
        words = [line.split() for line in run.stdout.splitlines() if line.startswith("learn_float done")]
        assert len(words) == 1 and len(words[0]) == 3, run.describe()
        return words[0][2]

    library = digest(None)
    mockup = digest("16 0 2 exploit 0.1 0.9")
    assert mockup != library   # the member's additions are in another order: the bits tell
    assert digest("16 0 2 explore 0.1 0.9", COLLTUNE_SELECT_BUDGET="0") == mockup
    assert digest("16 0 2 explore 0.1 0.9", COLLTUNE_SELECT_CELL_BUDGET="0") == mockup
    assert digest("16 0 2 explore 0.9 0.1", COLLTUNE_SELECT_BUDGET="0") == library
    assert digest("3 0 2 exploit 0.1 0.9", COLLTUNE_SELECT_BUDGET="0") == library   # unlisted cell
    assert digest("3 0 2 exploit 0.1 0.9", unlisted="exploit") == library    # unlisted never explores


# ---- cost of the mode (issue 26): routes and bounds, observed through the debug queries ----------

def routes(run: Run) -> dict[str, str]:
    """ct_routes' report: collective -> colltune_route_name right after MPI_Init (rank 0)."""
    out = dict(line.split()[1:3] for line in run.stdout.splitlines() if line.startswith("route "))
    assert set(out) == set(COLLECTIVES), run.describe()
    return out


def recording(run: Run) -> list[int]:
    """ct_routes' colltune_learn_recording before and after its broadcasts (rank 0)."""
    return [int(line.split()[1]) for line in run.stdout.splitlines() if line.startswith("recording ")]


def exploit_default_table(path: Path) -> Path:
    path.write_text("colltune-select 1\nunlisted library\ncollective bcast\n  members default bcast_as_allgatherv\n"
                    "  cell 3 0 1 exploit 1 0\nend\n")
    return path


def test_refused_or_absent_table_leaves_the_pass_through_route(openmpi, openmpi_build, ompi_programs, tmp_path):
    """A learning run whose table is refused at MPI_Init costs what the pass-through costs: every
    wrapper calls the library directly (ct_active 0), as with no setting at all."""
    prog = [ompi_programs["ct_routes"], "3"]
    bad = tmp_path / "bad.select"
    bad.write_text("colltune-select 1\nthis is no table\n")
    plain_env = runenv.rank_environment(openmpi, openmpi_build)
    for env in (plain_env, {**plain_env, "COLLTUNE_SELECT": str(bad), "COLLTUNE_SELECT_SEED": SEED}):
        run = run_mpi(openmpi, 2, prog, env)
        assert run.returncode == 0 and "ok 3 calls" in run.stdout, run.describe()
        assert set(routes(run).values()) == {"pass-through"}, run.describe()
        assert recording(run) == [0, 0], run.describe()
    assert len(run.messages("learning mode off")) == 1, run.describe()
    good = exploit_default_table(tmp_path / "good.select")
    env = {**plain_env, "COLLTUNE_SELECT": str(good), "COLLTUNE_SELECT_SEED": SEED}
    assert set(routes(ok(run_mpi(openmpi, 2, prog, env))).values()) == {"learning-only"}
    counted = ok(run_mpi(openmpi, 2, prog, {**env, "COLLTUNE_VERBOSE": "1"}))
    assert set(routes(counted).values()) == {"learning"}, counted.describe()
    # the exploit cell (1 int: size bin 3) took its default on every call of the short path
    assert counted.counts[("bcast", "exploit", "library", "library")] == 3, counted.describe()


@pytest.mark.parametrize("bound,stop", [({"COLLTUNE_TRACE_RECORDS": "5"}, "records"),
                                        ({"COLLTUNE_TRACE_SECONDS": "0.000000001"}, "seconds")])
def test_tracing_stops_at_its_bound_and_says_so(openmpi, openmpi_build, ompi_programs, tmp_path, bound, stop):
    """At the first call past the record or the time bound the trace closes: later calls take
    the untraced path (recording 0), are counted as not recorded, and the header says which
    bound stopped it. 12 broadcasts and ct_routes' final allreduce: 13 calls per rank."""
    table = exploit_default_table(tmp_path / "t.select")
    env = {**runenv.rank_environment(openmpi, openmpi_build), "COLLTUNE_SELECT": str(table),
           "COLLTUNE_SELECT_SEED": SEED, "COLLTUNE_TRACE_DIR": str(tmp_path), **bound}
    run = run_mpi(openmpi, 2, [ompi_programs["ct_routes"], "12"], env)
    assert run.returncode == 0 and "ok 12 calls" in run.stdout, run.describe()
    assert recording(run) == [1, 0], run.describe()
    kept = 5 if stop == "records" else 0
    for rank in (0, 1):
        t = traces.read_trace(tmp_path / f"rank-{rank}.cttrace")
        assert (t.stop, len(t.records), t.overflow) == (stop, kept, 13 - kept)
        assert t.record_limit == (5 if stop == "records" else 65536)
        assert t.seconds_limit == (3600.0 if stop == "records" else 1e-9)
        assert 0 < t.stop_s <= t.wall_s
        assert t.records["call_index"].tolist() == list(range(kept))
    msg = "trace buffer full, 8 calls not recorded" if stop == "records" else "tracing stopped after 1e-09 s, 13 calls"
    assert len(run.messages(msg)) == 2, run.describe()


def test_error_classes_reach_the_caller_on_the_learning_only_route(openmpi, openmpi_build, ompi_programs, tmp_path):
    """The learning-only route checks erroneous calls from the communicator's cached size and
    rank, not modes.c's PMPI queries: the library's error classes still reach the caller, with
    mock-ups exploited wherever the call is correct."""
    cases = ["bcast_root_out_of_range", "bcast_negative_count", "allreduce_negative_count", "allreduce_null_op",
             "reduce_root_out_of_range", "allgather_null_type", "ok_allreduce"]
    table = tmp_path / "t.select"
    blocks = {"bcast": "bcast_as_scatter_allgather", "allreduce": "allreduce_as_reduce_bcast",
              "reduce": "reduce_as_allreduce", "allgather": "allgather_as_gather_bcast"}
    table.write_text("colltune-select 1\nunlisted library\n" + "".join(
        f"collective {c}\n  members default {m}\n" + "".join(f"  cell {s} 0 1 exploit 0 1\n" for s in range(24))
        for c, m in blocks.items()) + "end\n")
    prog = [ompi_programs["ct_errors"], *cases]
    plain = ok(run_mpi(openmpi, 2, prog, {}))
    env = {**runenv.rank_environment(openmpi, openmpi_build), "COLLTUNE_SELECT": str(table),
           "COLLTUNE_SELECT_SEED": SEED}
    learned = run_mpi(openmpi, 2, prog, env)
    assert learned.returncode == 0 and "warning" not in learned.stderr, learned.describe()
    lines = [line for line in plain.stdout.splitlines() if line.startswith("error ")]
    assert len(lines) == len(cases) and lines[-1] == "error ok_allreduce class 0", plain.describe()
    assert [line for line in learned.stdout.splitlines() if line.startswith("error ")] == lines, learned.describe()
