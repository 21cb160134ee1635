"""Issue 35's cost table: colltune's own costs as the simulated ranks grow, one row per quantity,
its growth law and cost_table.png (README, "The cost table, 16 to 4096 ranks"). Runs nothing:
it reads the CSV files the measuring scripts of this directory wrote.

    .venv/bin/python benchmarks/scale/cost_table.py --out benchmarks/scale

| quantity | file | written by |
| --- | --- | --- |
| decision per call, pass-through and learning (instructions) | percall.csv, results.csv | percall.py (--window), run.py |
| first-call layout of a communicator (colltune's instructions) | percall_functions.csv | percall.py --functions |
| MPI_Init and first calls per rank, learning (instructions) | percall.csv | percall.py |
| proof (CPU s) | proof_report_cost.csv | proof_report_cost.py |
| trace bytes, trace_calls rows of one run | results.csv | run.py |
| ingest and `learn table` (s) | learn_cost.csv | learn_cost.py |
| `colltune report` (s) | proof_report_cost.csv | proof_report_cost.py |

Each law is run.py's growth_law (least squares of a + b f(P), f = 0, log P, P, P^2; flat when
every value lies within 10% of their mean). A per-call quantity whose law is P or P^2 is a
defect (issue 35): the script says so and exits 1.
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
    ("learning", "decision per call, learning, members' work included (instructions)", True),
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


def collect(out: Path) -> dict[str, dict[int, float]]:
    """quantity -> {ranks: value} from the CSV files in `out`."""
    data: dict[str, dict[int, float]] = {key: {} for key, _, _ in QUANTITIES}
    for r in _rows(out / "results.csv"):  # session 5's 4-round table (16-256 under callgrind)
        p = int(r["ranks"])
        if r["per_call_instructions"]:
            data["passthrough"][p] = float(r["per_call_instructions"])
        data["trace_bytes"][p] = float(r["trace_bytes"])
        data["trace_rows"][p] = float(r["trace_rows"])
    percall = _rows(out / "percall.csv")
    # one method per row of the table, never a mix (the pair's difference counts ~75 instructions
    # per call more than the window: README, "One run per size"): per mode, the method measured
    # at the most rank counts, the window's on a tie; the set-up per rank is the pair's only
    sizes: dict[tuple[str, str], set[str]] = {}
    for r in percall:
        sizes.setdefault((r["mode"], r.get("method") or "difference"), set()).add(r["ranks"])
    chosen = {mode: max(("difference", "window"), key=lambda m: (len(sizes.get((mode, m), ())), m == "window"))
              for mode in {r["mode"] for r in percall}}
    for r in percall:
        key = "learning" if r["mode"] == "learning" else "passthrough"
        if (r.get("method") or "difference") == chosen[r["mode"]]:
            data[key][int(r["ranks"])] = float(r["per_call"])
        if r["mode"] == "learning" and r["setup_per_rank"]:
            data["setup"][int(r["ranks"])] = float(r["setup_per_rank"])
    # 1024 ranks, pass-through: session 6's callgrind pair (run.py, 2 and 50 rounds, the settings
    # of README "4096 ranks", main c73ae3e): 4.0 (README, "callgrind at 1024 ranks"); a pair of
    # this file's own method replaces it
    data["passthrough"].setdefault(1024, 4.0)
    for r in _rows(out / "percall_functions.csv"):
        if r["mode"] == "learning" and r["function"] == "ct_comm_layout":
            p = int(r["ranks"])  # app.c's two communicators per rank: the world and its 16-rank group
            data["layout"][p] = round(float(r["self_short"]) / (2 * p), 1)
    for r in _rows(out / "learn_cost.csv"):  # CPU seconds (session 11; wall before, at load 0.8)
        data["ingest"][int(r["ranks"])] = float(r.get("ingest_cpu_s") or r["ingest_s"])
        data["learn"][int(r["ranks"])] = float(r.get("learn_table_cpu_s") or r["learn_table_s"])
    for r in _rows(out / "proof_report_cost.csv"):
        data["proof" if r["item"] == "proof" else "report"][int(r["ranks"])] = float(r["cpu_s"])
    return data


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


def table(data: dict[str, dict[int, float]]) -> tuple[str, list[str]]:
    """The markdown table and the defects (a per-call law faster than log P)."""
    ranks = sorted({p for values in data.values() for p in values})
    lines = ["| quantity | " + " | ".join(str(p) for p in ranks) + " | growth law |",
             "| --- | " + " | ".join("---:" for _ in ranks) + " | --- |"]
    defects = []
    for key, label, per_call in QUANTITIES:
        values = data[key]
        xs = sorted(values)
        law = growth_law(xs, [values[p] for p in xs]) if values else "not measured"
        span = f" ({xs[0]}-{xs[-1]}: {fit(xs, [values[p] for p in xs], law)})" if len(xs) > 1 else ""
        lines.append(f"| {label} | " + " | ".join(_cell(values.get(p)) for p in ranks) + f" | **{law}**{span} |")
        if per_call and law in ("P", "P^2"):
            defects.append(f"{label}: {law}")
    return "\n".join(lines), defects


def plot(data: dict[str, dict[int, float]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 5, figsize=(17, 7.5))
    for ax, (key, label, _) in zip(axes.flat, QUANTITIES):
        values = data[key]
        ranks = sorted(values)
        ax.plot(ranks, [values[p] for p in ranks], "o-")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        law = growth_law(ranks, [values[p] for p in ranks]) if ranks else "not measured"
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
    data = collect(args.out)
    text, defects = table(data)
    print(text)
    plot(data, args.out)
    if defects:
        sys.exit("a per-call cost grows faster than log P: " + "; ".join(defects))


if __name__ == "__main__":
    main()
