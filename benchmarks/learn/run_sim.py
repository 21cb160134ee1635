"""Simulator benchmark of `colltune learn` (issue 12): batches to converge and final regret for
the ground truths in truths/, over several application seeds (new call sequence, new noise).

    PYTHONPATH=src .venv/bin/python benchmarks/learn/run_sim.py [--batches 10] [--seeds 5] [--out DIR]

Per truth and seed: the loop (simulator -> trace files -> ingest -> train -> table) for B
batches; after each batch, the exploit-only version of the new table is scored against the
ground truth: the share of visited (collective, cell) pairs where it picks the best member, and
the regret (time of the application's calls with it / with the best member everywhere - 1).
"Converged at b": from batch b on, >= 95% of visited cells pick the best member. Writes
results.json and prints the README table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from colltune.learn.loop import LoopSettings, SimulatedBackend, run_loop
from colltune.learn.models import ModelSettings
from colltune.learn.simulate import Simulator, load_truth
from colltune.store import Store

HERE = Path(__file__).resolve().parent


def right_share(sim: Simulator, table: object) -> float:
    truth = sim.cell_truth((24, 4, 8))
    frozen = table.frozen()  # type: ignore[attr-defined]
    right = 0
    for _, row in truth.iterrows():
        found = frozen.cell(row["collective"], row["cell"])
        pick = found[0][int(np.argmax(found[1].weights))] if found else "default"
        right += pick == row["best"]
    return right / len(truth)


def one(truth_path: Path, seed: int, batches: int, work: Path, budget: int | None) -> dict[str, object]:
    truth = dataclasses.replace(load_truth(truth_path), seed=seed)
    if budget:
        truth = dataclasses.replace(truth, budget=budget)
    sim = Simulator(truth)
    started = time.perf_counter()
    with Store(work / f"{truth.name}-{seed}.duckdb") as store:
        results = run_loop(store, SimulatedBackend(sim), LoopSettings(batches, work / "t.sel", work / "traces",
                                                                      ModelSettings()))
    shares = [right_share(sim, r.table) for r in results]
    regrets = [float(r.row["regret"]) for r in results]  # type: ignore[arg-type]
    converged = next((b + 1 for b in range(batches) if all(s >= 0.95 for s in shares[b:])), None)
    budget = str(truth.budget or 1000)  # no budget in the truth: the table's 1000
    return {"truth": truth.name, "seed": seed, "budget": budget, "shares": shares, "regrets": regrets,
            "converged": converged,
            "explored": [int(r.row["explored_calls"]) for r in results],  # type: ignore[call-overload]
            "oracle_over_default": sim.default_s() / sim.oracle_s(), "seconds": time.perf_counter() - started}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--budget", type=int, default=None,
                    help="explored calls per communicator and run [default: the table's, 1000]")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted((HERE / "truths").glob("*.toml")):
            for seed in range(1, args.seeds + 1):
                rows.append(one(path, seed, args.batches, Path(tmp), args.budget))
                r = rows[-1]
                print(f"{r['truth']} seed {seed}: converged at {r['converged']}, final regret "
                      f"{100 * r['regrets'][-1]:.2f}%, {r['seconds']:.1f} s", flush=True)
    tag = f"-budget{args.budget}" if args.budget else ""
    (args.out / f"results{tag}.json").write_text(json.dumps(rows, indent=1))
    print("\n| ground truth | budget per communicator | default / oracle | converged at batch (per seed) | right cells after batch 1 / 3 / last "
          "| regret after batch 1 / 3 / last (max over seeds) | s per batch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in dict.fromkeys(r["truth"] for r in rows):
        mine = [r for r in rows if r["truth"] == name]
        conv = ", ".join(str(r["converged"]) for r in mine)
        share = " / ".join(f"{100 * min(r['shares'][i] for r in mine):.0f}%" for i in (0, 2, -1))
        regret = " / ".join(f"{100 * max(r['regrets'][i] for r in mine):.2f}%" for i in (0, 2, -1))
        per = np.mean([r["seconds"] / len(r["regrets"]) for r in mine])
        print(f"| {name} | {mine[0]['budget']} | {mine[0]['oracle_over_default']:.3f} | {conv} | {share} (min over seeds) | {regret} "
              f"| {per:.2f} |")


if __name__ == "__main__":
    main()
