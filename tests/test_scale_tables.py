"""benchmarks/scale's table scripts (issue 35's cost table): which rows draws.py counts in a
window, and which rows cost_table.py puts in a cell, with the code each one measured."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

SCALE = Path(__file__).parents[1] / "benchmarks" / "scale"
sys.path.insert(0, str(SCALE))

import cost_table  # noqa: E402
import draws  # noqa: E402
import percall  # noqa: E402


def test_window_calls_are_the_rounds_of_the_window_on_each_communicator() -> None:
    # 32 ranks, 4 rounds: the world (id 7) calls Allreduce, Bcast in rounds 0 and 2, then the
    # final Reduce; each 16-rank group (ids 8, 9) in rounds 1 and 3; call indices need not start at 0
    rows = [(7, 0, 32, "allreduce", "library"), (7, 1, 32, "bcast", "a"),
            (7, 2, 32, "allreduce", "b"), (7, 3, 32, "bcast", "library"), (7, 4, 32, "reduce", "c")]
    for group in (8, 9):
        rows += [(group, 5, 16, "allreduce", "x"), (group, 6, 16, "bcast", "y"),
                 (group, 7, 16, "allreduce", f"z{group}"), (group, 8, 16, "bcast", "library")]
    got = sorted(draws.window_calls(rows, 2, 4))
    assert got == [("group", "allreduce", "z8", 16, 8), ("group", "allreduce", "z9", 16, 9),
                   ("group", "bcast", "library", 16, 8), ("group", "bcast", "library", 16, 9),
                   ("world", "allreduce", "b", 32, 7), ("world", "bcast", "library", 32, 7)]
    assert sum(c[3] for c in got) == 32 * 2 * 2
    assert sorted(draws.window_calls(rows, 1, 2)) == [("group", "allreduce", "x", 16, 8),
                                                      ("group", "allreduce", "x", 16, 9),
                                                      ("group", "bcast", "y", 16, 8), ("group", "bcast", "y", 16, 9)]


def _write(path: Path, fields: tuple[str, ...], rows: list[dict[str, object]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _percall(p: int, mode: str, method: str, rounds: tuple[int, int], per_call: object, setup: object,
             code: str) -> dict[str, object]:
    row: dict[str, object] = {f: "" for f in percall.FIELDS}
    row.update(ranks=p, mode=mode, method=method, rounds_short=rounds[0], rounds_long=rounds[1],
               per_call=per_call, setup_per_rank=setup, native_code=code)
    return row


def test_cost_table_keeps_each_window_in_its_own_row_and_names_the_code(tmp_path: Path) -> None:
    _write(tmp_path / "percall.csv", percall.FIELDS, [
        _percall(16, "learning", "difference", (2, 10), 1178.5, 338640, "b812b0e"),
        _percall(16, "learning", "window", (2, 10), 1095.3, "", "96b59d7"),
        _percall(16, "learning", "window", (2, 4), 1021.0, "", "96b59d7"),
        _percall(16, "learning", "setup", (2, 2), "", 338000, "96b59d7"),
        _percall(4096, "learning", "window", (2, 4), 918.1, "", "9939901"),
        _percall(16, "pass-through", "window", (2, 10), 4.0, "", "96b59d7"),
    ])
    _write(tmp_path / "percall_functions.csv", percall.FUNCTION_FIELDS, [
        {"ranks": 16, "mode": "learning", "function": "ct_comm_layout", "self_short": 4406, "self_long": 4406,
         "per_call": 0.0, "calls_short": 32, "self_per_call_short": 137.7},
        {"ranks": 16, "mode": "learning (setup, 2 rounds)", "function": "ct_comm_layout", "self_short": 4416,
         "self_long": "", "per_call": "", "calls_short": 32, "self_per_call_short": 138.0},
    ])
    data, code = cost_table.collect(tmp_path)
    assert data["learning"] == {16: 1095.3} and code["learning"] == {16: "96b59d7"}
    assert data["learning23"] == {16: 1021.0, 4096: 918.1}
    assert cost_table.code_cell(code["learning23"]) == "96b59d7 (16); 9939901 (4096)"
    assert data["setup"] == {16: 338000.0} and code["setup"] == {16: "96b59d7"}
    assert data["layout"] == {16: 138.0} and code["layout"] == {16: "96b59d7"}
    assert data["passthrough"] == {16: 4.0, 1024: 4.0} and code["passthrough"] == {16: "96b59d7", 1024: "c73ae3e"}


def test_percall_rows_of_two_windows_are_two_rows() -> None:
    a = _percall(256, "learning", "window", (2, 10), 1049.0, "", "x")
    b = _percall(256, "learning", "window", (2, 4), 1000.0, "", "x")
    assert percall._key(a) != percall._key(b)
    assert percall._key({**a, "rounds_short": "2", "rounds_long": "10", "ranks": "256"}) == percall._key(a)
