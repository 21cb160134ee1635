"""`colltune learn run` on a real MPI program under the interposer's learning mode (embedded Open
MPI, 3 ranks): the program checks every result exactly (a wrong member would fail it), the
second batch runs with the table the first one produced, and every call of it got the member
the Python side predicts from the recorded seed, communicator id and call index."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from interposer_support import compile_programs

from colltune.cli import main
from colltune.learn import draw
from colltune.learn.table import content_hash, parse_table
from colltune.store import Store


@pytest.mark.slow
def test_two_batches_of_a_real_program(openmpi, openmpi_build, tmp_path: Path) -> None:
    prog = compile_programs(openmpi, tmp_path / "programs")["ct_collectives"]
    db = tmp_path / "app.duckdb"
    res = CliRunner().invoke(main, [
        "learn", "run", "--batches", "2", "--db", str(db), "--table-out", str(tmp_path / "t.sel"),
        "--trace-root", str(tmp_path / "traces"), "--min-timings", "5", "--min-cell-evidence", "3", "--trees", "50",
        "--", str(openmpi.mpiexec), "--oversubscribe", "-n", "3", str(prog), "-r", "3"])
    assert res.exit_code == 0, res.output
    with Store(db, read_only=True) as store:
        batches = store.learn_batches()
        runs = store.trace_runs().set_index("trace_run_id")
        second = batches.iloc[1]
        calls = store.trace_calls(str(second["trace_run_id"]))
    assert batches["batch"].tolist() == [1, 2] and set(batches["source"]) == {"app"}
    run = runs.loc[str(second["trace_run_id"])]
    assert (run["mpi_name"], run["world_size"], run["overflow"]) == ("openmpi", 3, 0)
    # the runtime loaded the very table the loop wrote after batch 1
    table = parse_table(str(second["table_text"]).encode())
    assert int(run["table_hash"]) == content_hash(str(second["table_text"]).encode()) == int(second["table_hash"])
    assert table.collectives  # batch 1 taught it something
    import json

    portfolios = json.loads(run["portfolios"])
    applied = calls[calls["outcome"] == "applied"]
    assert len(applied) > 100
    for r in applied.itertuples():
        bins = table.bins_of(r.msg_bytes, r.nodes, r.ppn)
        if r.mode == "explore":
            want, mode = table.choose(r.collective, bins, portfolios[r.collective], int(run["seed"]), r.comm_id,
                                      r.call_index)
            # a redrawn call drew first a member not proven for it (test_learn_runtime.predicted)
            assert (r.member, r.mode) == (want, mode) or (r.redrawn and r.member != want), r
        else:  # exploit: a listed cell's argmax (beyond the budget too), else the library
            found = table.cell(r.collective, bins)
            assert r.member == (found[0][draw.pick_exploit(found[1].weights)] if found else "default"), r
    assert set(applied["mode"]) <= {"explore", "exploit"}


@pytest.mark.slow
def test_check_command_reads_the_output_and_stops_the_loop(openmpi, openmpi_build, tmp_path: Path) -> None:
    """`--check` sees each launch's output ($COLLTUNE_LEARN_LOG): a passing check lets the batch
    in, a failing one stops the loop before the batch is recorded (a wrong result must not teach)."""
    prog = compile_programs(openmpi, tmp_path / "programs")["ct_collectives"]
    launch = ["--", str(openmpi.mpiexec), "--oversubscribe", "-n", "2", str(prog), "-r", "1", "bcast"]

    def run(db: Path, check: str) -> object:
        return CliRunner().invoke(main, [
            "learn", "run", "--batches", "1", "--db", str(db), "--table-out", str(tmp_path / "t.sel"),
            "--trace-root", str(tmp_path / db.stem), "--check", check, *launch])

    good = run(tmp_path / "good.duckdb", 'grep -q "^ok 2 ranks$" "$COLLTUNE_LEARN_LOG" && test "$COLLTUNE_LEARN_BATCH" = 1')
    assert good.exit_code == 0, good.output
    logs = list((tmp_path / "good").rglob("batch-001-app0.log"))
    assert len(logs) == 1 and "ok 2 ranks" in logs[0].read_text()
    bad = run(tmp_path / "bad.duckdb", 'grep -q "^FAIL" "$COLLTUNE_LEARN_LOG"')
    assert bad.exit_code != 0 and "batch 1: the check" in bad.output, bad.output
    with Store(tmp_path / "bad.duckdb", read_only=True) as store:
        assert store.learn_batches().empty and store.trace_runs().empty
