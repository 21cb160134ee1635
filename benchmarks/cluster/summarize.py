"""Summary of benchmarks/cluster/run.sh: per run its layout, load and violations; the default's
median per (collective, size) on 1 node x 4 vs 2 nodes x 2; violations found in every run of
one layout and in no run of the other.

    python benchmarks/cluster/summarize.py benchmarks/cluster/results   (markdown on stdout,
                                                                         results.json next to the runs)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from colltune.measure import confirm
from colltune.store import Store
from colltune.verify.check import load_verdicts


def one_run(db: Path) -> dict:
    with Store(db, read_only=True) as store:
        run_id = store.latest_run_id()
        shapes = confirm.run_shapes(store.environment(run_id), store.launches(run_id))
        launches = store.launches(run_id)
    v = load_verdicts(db, run_id)
    guideline = v[v["kind"].isin(["pattern", "library", "monotony", "split"])]
    viol = guideline[guideline["violation"].fillna(False).astype(bool)]
    load = (db.parent / f"{db.stem}.load.txt").read_text().split("\n")
    return {
        "run": db.stem, "layout": confirm.format_layouts(shapes), "launches": int(len(launches)),
        "load_before": load[0], "wall": load[1] if len(load) > 1 else "", "load_after": load[2] if len(load) > 2 else "",
        "tested": int(guideline["significant"].notna().sum()),
        "violations": sorted(f"{r.kind} {r.collective} {int(r.msg_bytes)} B {r.variant}" for r in viol.itertuples()),
        "default_median_us": {f"{c} {int(b)}": round(float(m) * 1e6, 2) for (c, b), m in
                              v.dropna(subset=["default_median_s"]).groupby(["collective", "msg_bytes"])
                              ["default_median_s"].first().items()},
    }


def main(out: Path) -> None:
    runs = [one_run(db) for db in sorted(out.glob("*x*-*.duckdb"))]
    (out / "results.json").write_text(json.dumps(runs, indent=1))
    print("| run | layout | launches | violations | load before -> after (1 min) | wall |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in runs:
        print(f"| {r['run']} | {r['layout']} | {r['launches']} | {len(r['violations'])} | "
              f"{r['load_before'].split()[0]} -> {r['load_after'].split()[0] if r['load_after'] else '?'} | {r['wall']} |")
    names = sorted({r["run"].rsplit("-", 1)[0] for r in runs})  # one node first: 1x4 before 2x2
    by = {lay: [r for r in runs if r["run"].rsplit("-", 1)[0] == lay] for lay in names}
    sets = {lay: [set(r["violations"]) for r in rs] for lay, rs in by.items()}
    if len(names) != 2:
        return
    one, two = names
    for lay, other in ((two, one), (one, two)):
        if not sets[lay]:
            continue
        everywhere = set.intersection(*sets[lay]) - set.union(set(), *sets[other])
        print(f"\nviolations in every {lay} run and in no {other} run ({len(everywhere)}):")
        for item in sorted(everywhere):
            print(f"- {item}")
    med = pd.DataFrame({lay: pd.DataFrame([r["default_median_us"] for r in rs]).median() for lay, rs in by.items()
                        if rs})
    med["ratio"] = (med[two] / med[one]).round(2)
    print("\ndefault's median (us, median over runs of the layout):\n")
    print(f"| collective, bytes | {one} | {two} | {two} / {one} |\n| --- | --- | --- | --- |")
    for key, row in med.iterrows():
        print(f"| {key} | {row[one]:.2f} | {row[two]:.2f} | {row['ratio']:.2f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/cluster/results"))
