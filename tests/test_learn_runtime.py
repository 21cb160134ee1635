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

from colltune import catalog
from colltune.learn import table as sel
from colltune.learn import traces
from colltune.mpi import runenv

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "native" / "fuzz"
PROGRAMS = Path(__file__).resolve().parent / "programs"
COLLECTIVES = catalog.load().collective_names()
SEED = "1234567"


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


def ok(run: Run) -> Run:
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert "FAIL" not in run.stderr and "warning" not in run.stderr, run.describe()
    return run


def predicted(table: sel.SelectionTable, calls, portfolios) -> list[str | None]:
    out = []
    for r in calls.itertuples():
        member, _ = table.choose(r.collective, table.bins_of(r.msg_bytes, r.nodes, r.ppn),
                                 portfolios[r.collective], int(SEED), r.comm_id, r.call_index)
        out.append(member or "default")
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
                    "-fno-sanitize-recover=undefined", f"-I{ROOT / 'native' / 'include'}", f"-I{out}",
                    str(FUZZ / "select_unit.c"), str(ROOT / "native" / "core" / "select.c"),
                    str(out / "ct_catalog.c"), "-o", str(exe)], check=True)
    return exe


def test_c_draw_matches_the_documented_vectors(select_unit):
    run = subprocess.run([str(select_unit)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
    assert run.stdout.splitlines()[-1] == "select_unit: 74 checks, 0 failed"


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
    assert list(calls["member"]) == predicted(sel.SelectionTable(), calls, portfolios)
    # every member of every portfolio was drawn at least once, and counted as explored
    drawn = {(c, m) for c, m in zip(calls["collective"], calls["member"], strict=True)}
    assert drawn == {(c, m) for c, ms in portfolios.items() for m in ms}
    assert set(calls.loc[calls["outcome"] == "applied", "mode"]) == {"explore"}
    assert {k[1] for k in run.counts} == {"explore"}
    assert sum(run.counts.values()) == sum(made.values())


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
