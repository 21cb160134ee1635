"""How reproducible are `colltune check` verdicts? Run the same check N times, compare verdicts.

    python benchmarks/reproducibility/reproducibility.py --runs 10 --db /tmp/repro.duckdb
    python benchmarks/reproducibility/reproducibility.py --reuse --db /tmp/repro.duckdb   # re-analyse

Each run is an independent `colltune check --preset quick -n 4` (own launches, own seed), stored
as its own run in one database. A verdict is the violation flag of one guideline comparison
(pattern, library, monotony, split) identified by process count, collective, variant and size.
For every pair of runs we report the share of verdicts that agree, and over all runs how many
verdicts flipped at least once. The same runs are also judged with the unpaired Mann-Whitney U
(PGMPI's literal method) for comparison. Writes results[_TAG].json and agreement[_TAG].png here. Extra arguments go to `colltune check`
(e.g. `-R 10`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from colltune.verify import (
    check,  # noqa: E402
    stats,  # noqa: E402
)

HERE = Path(__file__).resolve().parent
KEY = ["nprocs", "kind", "collective", "variant", "msg_bytes"]


def measure(db: Path, runs: int, extra: list[str]) -> None:
    for i in range(runs):
        t = time.time()
        cmd = [str(Path(sys.executable).parent / "colltune"), "check", "--preset", "quick", "-n", "4", "--db", str(db),
               "--quiet", "--seed", str(1000 + i), *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode not in (0, 1, 3):  # 3: no violation, some comparisons undecided
            sys.exit(f"run {i} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        print(f"run {i + 1}/{runs}: exit {proc.returncode}, {time.time() - t:.0f} s", flush=True)


def run_ids(db: Path) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created").fetchall()]


def verdict_table(db: Path, ids: list[str], settings: check.CheckSettings) -> pd.DataFrame:
    frames = []
    for rid in ids:
        v = check.judge(check.load_run(db, rid), settings).verdicts
        v = v[v["kind"].isin(check.GUIDELINE_KINDS)]
        frames.append(v.set_index(KEY)["violation"].rename(rid))
    return pd.concat(frames, axis=1)


def agreement(table: pd.DataFrame) -> dict[str, object]:
    table = table.dropna()
    pairs = [float((table[a] == table[b]).mean()) for a, b in itertools.combinations(table.columns, 2)]
    flipped = int((table.nunique(axis=1) > 1).sum())
    # Agreement is inflated by the many clean comparisons; the overlap of the violation sets
    # (|A and B| / |A or B|) looks at the violations alone.
    jac = []
    for a, b in itertools.combinations(table.columns, 2):
        union = int((table[a] | table[b]).sum())
        jac.append(float((table[a] & table[b]).sum() / union) if union else 1.0)
    return {
        "verdicts_per_run": int(len(table)),
        "violations_per_run": [int(table[c].sum()) for c in table.columns],
        "pairs": len(pairs),
        "pair_agreement_min": min(pairs), "pair_agreement_mean": sum(pairs) / len(pairs),
        "pair_agreement_max": max(pairs),
        "pair_agreement": pairs,
        "violation_overlap_mean": sum(jac) / len(jac),
        "flipped_at_least_once": flipped,
        "always_violation": int(table.all(axis=1).sum()),
        "flipped": [" ".join(map(str, k)) for k in table.index[table.nunique(axis=1) > 1]],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, default=Path("/tmp/colltune-repro.duckdb"))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--reuse", action="store_true", help="analyse the runs already in --db")
    ap.add_argument("--tag", default="", help="suffix of the output files, e.g. R20")
    args, extra = ap.parse_known_args()
    if not args.reuse:
        measure(args.db, args.runs, extra)
    ids = run_ids(args.db)
    if len(ids) < 2:
        sys.exit(f"need at least 2 complete runs in {args.db}, found {len(ids)}")
    results = {"runs": ids, "command": "colltune check --preset quick -n 4 --seed <1000+i>"}
    for name, settings in (("paired-t (default)", check.CheckSettings()),
                           ("mwu (unpaired, PGMPI)", check.CheckSettings(test=stats.Test.MWU))):
        results[name] = agreement(verdict_table(args.db, ids, settings))
        r = results[name]
        print(f"{name}: {r['verdicts_per_run']} verdicts/run, violations per run {r['violations_per_run']}; "
              f"pairwise agreement {r['pair_agreement_min']:.1%} .. {r['pair_agreement_max']:.1%} "
              f"(mean {r['pair_agreement_mean']:.1%}) over {r['pairs']} pairs; "
              f"{r['flipped_at_least_once']} verdicts flipped at least once, {r['always_violation']} always violated; "
              f"violation sets overlap {r['violation_overlap_mean']:.0%} on average")
    (HERE / f"results{'_' + args.tag if args.tag else ''}.json").write_text(json.dumps(results, indent=2) + "\n")
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    for name in ("paired-t (default)", "mwu (unpaired, PGMPI)"):
        ax.hist([100 * a for a in results[name]["pair_agreement"]], bins=20, range=(80, 100), alpha=0.6, label=name)
    ax.axvline(95, color="k", lw=0.8, ls="--")
    ax.set_xlabel("verdicts agreeing between two runs (%)")
    ax.set_ylabel("pairs of runs")
    ax.legend(fontsize=8)
    fig.savefig(HERE / f"agreement{'_' + args.tag if args.tag else ''}.png", dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main()
