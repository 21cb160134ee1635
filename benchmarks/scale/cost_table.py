"""Issue 35's cost table: colltune's own costs as the simulated ranks grow, one row per quantity,
its growth law and cost_table.png (README, "The cost table, 16 to 4096 ranks"). Runs nothing:
it reads the CSV files the measuring scripts of this directory wrote.

    .venv/bin/python benchmarks/scale/cost_table.py --out benchmarks/scale

| quantity | file | written by |
| --- | --- | --- |
| decision per call, pass-through and learning (instructions) | percall.csv, results.csv | percall.py (--window), run.py |
| first-call layout of a communicator (colltune's instructions) | percall_functions.csv | percall.py --functions (--setup) |
| MPI_Init and first calls per rank, learning (instructions) | percall.csv | percall.py (--setup) |
| proof (CPU s) | proof_report_cost.csv | proof_report_cost.py |
| trace bytes, trace_calls rows of one run | draws_runs.csv, results.csv | draws.py, run.py |
| ingest and `learn table` (s) | learn_cost.csv | learn_cost.py |
| `colltune report` (s) | proof_report_cost.csv | proof_report_cost.py |

Each law is run.py's growth_law (least squares of a + b f(P), f = 0, log P, P, P^2; flat when
every value lies within 10% of their mean). A per-call quantity whose law is P or P^2 is a
defect (issue 35): the script says so and exits 1.

Every row names the code it measured (the column "code"): for percall.py's rows, percall.csv's
`native_code` (the last commit that changed libcolltune's sources before the run), for draws.py's
its own; for the older files, which do not record it, the commit that landed their rows (the code
measured was main's then: MEASURED_IN).
"""

from __future__ import annotations

import argparse
import csv
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import growth_law  # noqa: E402  (benchmarks/scale/run.py)

# (key, label, per-call path?)
QUANTITIES = (
    ("passthrough", "decision per call, pass-through (instructions)", True),
    ("learning", "decision per call, learning, members' work included, rounds 2-9 (instructions)", True),
    ("learning23", "decision per call, learning, members' work included, rounds 2-3 (instructions)", True),
    ("layout", "first-call layout of a communicator, colltune's own (instructions)", False),
    ("setup", "MPI_Init and first calls per rank, learning (instructions)", False),
    ("proof", "proof, `proof.prove` on P ranks (CPU s)", False),
    ("trace_bytes", "trace bytes of one run (app.c, 11 calls per rank)", False),
    ("trace_rows", "trace_calls rows of that run", False),
    ("ingest", "`traces ingest` of a 50-round run (CPU s)", False),
    ("learn", "`learn table`: train and write (CPU s)", False),
    ("report", "`colltune report` of a `check --preset quick` (s)", False),
)


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


# The files that record no code: the commit that landed their rows (main's code then), by file
# and rank count (None: every row of the file)
MEASURED_IN = {
    "results.csv": {None: "ae27895", 4096: "1bf18d6"},   # sessions 5 and 6
    "learn_cost.csv": {None: "87882f9"},                 # session 11
    "proof_report_cost.csv": {None: "73f86a0"},          # the report rows (session 8)
    # the proof rows: main 7ee07ec's driver (smpi35b, session 14; landed in ddad45e)
    "proof_report_cost.csv proof": {None: "7ee07ec"},
    "percall_functions.csv": {None: "b812b0e"},          # the pair's layout rows (session 10)
}


def _measured_in(name: str, p: int) -> str:
    commits = MEASURED_IN[name]
    return commits.get(p) or commits[None]


def _pick(rows: list[dict[str, str]], method: str, rounds: tuple[int, int] | None) -> list[dict[str, str]]:
    """The percall.csv rows of one method (and window), one row per table cell."""
    return [r for r in rows if (r.get("method") or "difference") == method
            and (rounds is None or (int(r["rounds_short"]), int(r["rounds_long"])) == rounds)]


def collect(out: Path) -> tuple[dict[str, dict[int, float]], dict[str, dict[int, str]]]:
    """quantity -> {ranks: value}, and quantity -> {ranks: the code measured}, from the CSV files
    in `out`."""
    data: dict[str, dict[int, float]] = {key: {} for key, _, _ in QUANTITIES}
    code: dict[str, dict[int, str]] = {key: {} for key, _, _ in QUANTITIES}

    def put(key: str, p: int, value: float, commit: str) -> None:
        data[key][p] = value
        code[key][p] = commit

    # the trace of run.py's traced 4-round run: draws.py's runs of it (newer code) where there are
    # any, else results.csv's, never a mix (the trace's fixed part per rank grew with the
    # nonblocking and persistent portfolios: 1,365 bytes per rank in session 5, 2,870 on 96b59d7)
    traces = [r for r in _rows(out / "draws_runs.csv") if int(r["rounds"]) == 4]
    for r in traces:
        put("trace_bytes", int(r["ranks"]), float(r["trace_bytes"]), r["native_code"])
        put("trace_rows", int(r["ranks"]), float(r["trace_rows"]), r["native_code"])
    for r in _rows(out / "results.csv"):  # session 5's 4-round table (16-256 under callgrind)
        p = int(r["ranks"])
        if r["per_call_instructions"]:
            put("passthrough", p, float(r["per_call_instructions"]), _measured_in("results.csv", p))
        if not traces:
            put("trace_bytes", p, float(r["trace_bytes"]), _measured_in("results.csv", p))
            put("trace_rows", p, float(r["trace_rows"]), _measured_in("results.csv", p))
    percall = _rows(out / "percall.csv")
    # one method and one window per row of the table, never a mix (the pair's difference counts
    # ~75 instructions per call more than the window, a window of rounds 2-3 other draws than one
    # of 2-9: README, "One run per size", "Why 4096 ranks count fewer instructions per call")
    # pass-through: the window of rounds 2-9 where it ran, the pair elsewhere (4.0 either way)
    passthrough = [r for r in percall if r["mode"] == "pass-through"]
    for r in [*_pick(passthrough, "difference", None), *_pick(passthrough, "window", (2, 10))]:
        put("passthrough", int(r["ranks"]), float(r["per_call"]), r["native_code"])
    learning = [r for r in percall if r["mode"] == "learning"]
    for key, rounds in (("learning", (2, 10)), ("learning23", (2, 4))):
        for r in _pick(learning, "window", rounds):
            put(key, int(r["ranks"]), float(r["per_call"]), r["native_code"])
    # the set-up per rank: the --setup run's where it ran, the pair's short run elsewhere
    for r in [*_pick(learning, "difference", None), *_pick(learning, "setup", None)]:
        if r["setup_per_rank"]:
            put("setup", int(r["ranks"]), float(r["setup_per_rank"]), r["native_code"])
    # 1024 ranks, pass-through: session 6's callgrind pair (run.py, 2 and 50 rounds, the settings
    # of README "4096 ranks", main c73ae3e): 4.0 (README, "callgrind at 1024 ranks"); a row of
    # percall.py's replaces it
    if 1024 not in data["passthrough"]:
        put("passthrough", 1024, 4.0, "c73ae3e")
    setup_code = {int(r["ranks"]): r["native_code"] for r in _pick(learning, "setup", None)}
    functions = _rows(out / "percall_functions.csv")
    for mode in ("learning", "learning (setup, 2 rounds)"):   # the --setup run's where it ran
        for r in functions:
            if r["mode"] == mode and r["function"] == "ct_comm_layout":
                p = int(r["ranks"])  # app.c's two communicators per rank: the world and its 16-rank group
                put("layout", p, round(float(r["self_short"]) / (2 * p), 1),
                    setup_code.get(p, "?") if mode != "learning" else _measured_in("percall_functions.csv", p))
    for r in _rows(out / "learn_cost.csv"):  # CPU seconds (session 11; wall before, at load 0.8)
        p = int(r["ranks"])
        put("ingest", p, float(r.get("ingest_cpu_s") or r["ingest_s"]), _measured_in("learn_cost.csv", p))
        put("learn", p, float(r.get("learn_table_cpu_s") or r["learn_table_s"]), _measured_in("learn_cost.csv", p))
    for r in _rows(out / "proof_report_cost.csv"):
        p = int(r["ranks"])
        proof = r["item"] == "proof"
        put("proof" if proof else "report", p, float(r["cpu_s"]),
            _measured_in("proof_report_cost.csv" + (" proof" if proof else ""), p))
    return data, code


def code_cell(codes: dict[int, str]) -> str:
    """The code of a row's cells: each commit with the rank counts it measured."""
    by: dict[str, list[int]] = {}
    for p in sorted(codes):
        by.setdefault(codes[p], []).append(p)
    if len(by) == 1:
        return next(iter(by))
    return "; ".join(f"{c} ({', '.join(str(p) for p in ps)})" for c, ps in by.items())


def _num(x: float) -> str:
    """3 significant digits without an exponent in the range these costs take."""
    if abs(x) >= 100:
        return f"{round(x, -len(str(int(abs(x)))) + 3):,.0f}"
    return f"{float(f'{x:.3g}'):g}" if abs(x) >= 1e-4 else f"{x:.2e}"


def fit(ranks: list[int], values: list[float], law: str) -> str:
    """The fitted a + b f(P) of a law, to read a slope's size (a law says how, not how much)."""
    import numpy as np

    x, y = np.asarray(ranks, float), np.asarray(values, float)
    if law not in ("log P", "P", "P^2") or len(x) < 2:
        return _num(float(np.mean(y))) if len(y) else ""
    f = {"log P": np.log2(x), "P": x, "P^2": x * x}[law]
    (a, b), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(x), f]), y, rcond=None)
    term = f"{_num(b)} {'log2 P' if law == 'log P' else law}"
    return term if abs(a) < 1e-3 * abs(b) * float(f.max()) else f"{_num(a)} + {term}"


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:g}"


def table(data: dict[str, dict[int, float]], code: dict[str, dict[int, str]]) -> tuple[str, list[str]]:
    """The markdown table and the defects (a per-call law faster than log P)."""
    ranks = sorted({p for values in data.values() for p in values})
    lines = ["| quantity | " + " | ".join(str(p) for p in ranks) + " | growth law | code |",
             "| --- | " + " | ".join("---:" for _ in ranks) + " | --- | --- |"]
    defects = []
    for key, label, per_call in QUANTITIES:
        values = data[key]
        xs = sorted(values)
        law = growth_law(xs, [values[p] for p in xs]) if values else "not measured"
        span = f" ({xs[0]}-{xs[-1]}: {fit(xs, [values[p] for p in xs], law)})" if len(xs) > 1 else ""
        lines.append(f"| {label} | " + " | ".join(_cell(values.get(p)) for p in ranks)
                     + f" | **{law}**{span} | {code_cell(code[key])} |")
        if per_call and law in ("P", "P^2"):
            defects.append(f"{label}: {law}")
    return "\n".join(lines), defects


def plot(data: dict[str, dict[int, float]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 5, figsize=(17, 7.5))
    # the two learning windows share a panel (same quantity, two mixes of draws)
    panels = [(key, label) for key, label, _ in QUANTITIES if key != "learning23"]
    for ax, (key, label) in zip(axes.flat, panels):
        values = data[key]
        ranks = sorted(values)
        law = growth_law(ranks, [values[p] for p in ranks]) if ranks else "not measured"
        if key == "learning":
            other = data["learning23"]
            ax.plot(ranks, [values[p] for p in ranks], "o-", label=f"rounds 2-9: {law}")
            xs = sorted(other)
            law23 = growth_law(xs, [other[p] for p in xs]) if xs else "not measured"
            ax.plot(xs, [other[p] for p in xs], "s--", label=f"rounds 2-3: {law23}")
            ax.legend(fontsize=7, loc="lower left")
            label, law = label.replace(", rounds 2-9", ""), "two windows"
        else:
            ax.plot(ranks, [values[p] for p in ranks], "o-")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_title("\n".join(textwrap.wrap(label, 34)) + f"\n{law}", fontsize=8)
        ax.set_xlim(2, 2 ** 13)
        ax.set_xlabel("simulated ranks", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("colltune's own costs on SimGrid SMPI (benchmarks/scale/cost_table.py)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "cost_table.png", dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE, help="the directory of the CSV files and of the plot")
    args = ap.parse_args()
    data, code = collect(args.out)
    text, defects = table(data, code)
    print(text)
    plot(data, args.out)
    if defects:
        sys.exit("a per-call cost grows faster than log P: " + "; ".join(defects))


if __name__ == "__main__":
    main()
