"""What the trimmed t does to a comparison whose launches fall into two modes (issue 36).

    python benchmarks/reproducibility/trimming.py /tmp/repro-s3.duckdb [--collective scatter --variant scatter_as_scatterv --size 8]

Per stored complete run of DB, for one comparison at 4 ranks: the per-launch log-ratios' mean
ratio, the violation test (beyond the 5% tolerance) by the check's trimmed t (10% cut from each
end) and by the plain paired t, and whether stats.launch_modes finds two modes. Pure reading.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb
import numpy as np

from colltune.verify import check, comparisons, stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--collective", default="scatter")
    ap.add_argument("--variant", default="scatter_as_scatterv")
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--nprocs", type=int, default=4)
    ap.add_argument("--tolerance", type=float, default=0.05)
    args = ap.parse_args()
    with duckdb.connect(str(args.db), read_only=True) as con:
        ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created").fetchall()]
    for run_id in ids:
        by_side = comparisons.sides(check.load_run(args.db, run_id).measurements)
        ref = by_side.get((args.nprocs, args.collective, "default", args.size))
        alt = by_side.get((args.nprocs, args.collective, args.variant, args.size))
        if ref is None or alt is None:
            continue
        common = np.intersect1d(ref.launch_ids, alt.launch_ids)
        x = ref.launch_medians[np.isin(ref.launch_ids, common)]
        y = alt.launch_medians[np.isin(alt.launch_ids, common)]
        d = np.log(x) - np.log(y)
        trimmed = stats.beyond_tolerance_test(x, y, args.tolerance, stats.Test.TRIMMED_T)
        plain = stats.beyond_tolerance_test(x, y, args.tolerance, stats.Test.PAIRED_T)
        modes = stats.launch_modes(d)
        print(f"{run_id[-6:]}: {d.size} launches, mean ratio {np.exp(d.mean()):.3f}, "
              f"launches above 1.3x {int((d > np.log(1.3)).sum())}; beyond the tolerance: trimmed t "
              f"{trimmed.statistic:.2f} (p {trimmed.p_value:.2g}), plain t {plain.statistic:.2f} (p {plain.p_value:.2g}); "
              f"two modes: {f'{modes.low} at {modes.low_ratio:.2f}x, {modes.high} at {modes.high_ratio:.2f}x' if modes else 'not found'}")


if __name__ == "__main__":
    main()
