"""Agreement of the verdicts of two independent `colltune compare` runs of the same configurations.

    python benchmarks/compare/agreement.py run1.duckdb run2.duckdb [--test mwu|welch-log] [--csv both.csv]
                                           [--show COLLECTIVE:BYTES]

Each database's newest comparison is judged with the same settings; the points and pairs both
judged are matched. Printed: the share of points whose verdict is decided ("A faster" / "B
faster" / "no difference") in both runs and the same (the issue's criterion: a point undecided in
a run is no decided verdict to disagree with), the share undecided in each run, the share with
the same verdict of all four (undecided included), the points whose verdict differs, and the
points called faster for one configuration in one run and for the other in the other run.
--show prints one point's per-launch medians of the defaults in both runs (in launch order).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from colltune.compare import data, judge
from colltune.compare.judge import default_samples
from colltune.compare import stats as cstats

KEY = ["nprocs", "collective", "msg_bytes", "a", "b"]


def verdicts(db: str, settings: judge.CompareSettings) -> pd.DataFrame:
    return judge.compare(data.from_comparison(db), settings).verdicts


def agreement(first: pd.DataFrame, second: pd.DataFrame) -> tuple[float, pd.DataFrame, pd.DataFrame]:
    """(share of matched points with the same verdict, matched table, the differing rows)."""
    cols = [*KEY, "ratio", "ci_low", "ci_high", "p_adjusted", "verdict"]
    both = first[cols].merge(second[cols], on=KEY, suffixes=("_1", "_2"))
    same = both["verdict_1"] == both["verdict_2"]
    return float(same.mean()) if len(both) else float("nan"), both, both[~same]


FASTER = ("A faster", "B faster")
DECIDED = (*FASTER, "no difference")


def show(point: str, dbs: tuple[str, ...]) -> None:
    coll, _, size = point.partition(":")
    for i, db in enumerate(dbs, 1):
        for m in data.from_comparison(db):
            hits = [v for k, v in default_samples(m).items() if k[1] == coll and k[2] == int(size)]
            if hits:
                ids, med = hits[0]
                print(f"run {i} {m.label} {point} per-launch medians (us): "
                      + " ".join(f"{x * 1e6:.1f}" for x in med))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db1")
    parser.add_argument("db2")
    parser.add_argument("--test", choices=[t.value for t in cstats.TESTS], default=cstats.TESTS[0].value)
    parser.add_argument("--csv", help="write the matched verdicts of both runs here")
    parser.add_argument("--show", metavar="COLLECTIVE:BYTES", help="print this point's per-launch medians")
    args = parser.parse_args(argv)
    settings = judge.CompareSettings(test=args.test)
    share, both, flips = agreement(verdicts(args.db1, settings), verdicts(args.db2, settings))
    for label, db in (("run 1", args.db1), ("run 2", args.db2)):
        counts = both[f"verdict_{label[-1]}"].value_counts().to_dict()
        print(f"{label} ({db}): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    decided = both[both["verdict_1"].isin(DECIDED) & both["verdict_2"].isin(DECIDED)]
    agree = int((decided["verdict_1"] == decided["verdict_2"]).sum())
    print(f"decided in both runs: {len(decided)} of {len(both)} points; the same decided verdict: {agree} of "
          f"{len(decided)} = {agree / len(decided) if len(decided) else float('nan'):.1%} (test {args.test})")
    for i in (1, 2):
        undecided = int((~both[f"verdict_{i}"].isin(DECIDED)).sum())
        print(f"undecided in run {i}: {undecided} of {len(both)} = {undecided / len(both):.1%}")
    print(f"the same verdict, undecided included: {int(round(share * len(both)))} of {len(both)} points = "
          f"{share:.1%}")
    opposite = both[both["verdict_1"].isin(FASTER) & both["verdict_2"].isin(FASTER)
                    & (both["verdict_1"] != both["verdict_2"])]
    print(f"opposite verdicts (A faster in one run, B faster in the other): {len(opposite)}")
    if args.show:
        show(args.show, (args.db1, args.db2))
    if args.csv:
        both.to_csv(args.csv, index=False)
    if len(flips):
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(flips.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
