"""Stored quick checks judged again without the violation's median gate (issue 36, session 8; the
rule is NOT changed, this measures what the gate costs in agreement).

    python benchmarks/reproducibility/median_gate.py --db /tmp/repro-verd36-s8.duckdb --tag quiet_s8 --last 10

A violation needs the beyond-tolerance test significant after correction *and* the comparison's
shown slowdown beyond the tolerance (stats.is_violation). The test (screened t) takes the mean of
the per-launch log-ratios; the slowdown is the median per-launch ratio. Where launches fall in two
modes (MPI_Scatter vs Scatterv at 8 B: about a third of the launches with the mock-up 1.5-1.8x
faster, the rest near 1.0x) the two disagree: the test shows the mean beyond the tolerance while
the median launch lies inside it, and the comparison stays undecided in the runs whose fast mode
has fewer launches. This judges the stored runs with the gate left out (violation = the test
alone) and reports reproducibility.py's figures, written to results_<tag>_no_median_gate_test_screened-t.json
next to this script. The rounds' launches were still chosen by the rule that measured them.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import reproducibility  # noqa: E402

from colltune.verify import stats  # noqa: E402


def test_alone(p_adjusted: float, rel_diff: float, alpha: float, tolerance: float) -> bool:
    """stats.is_violation without the shown slowdown's gate."""
    return not math.isnan(p_adjusted) and p_adjusted <= alpha


def main() -> None:
    stats.is_violation = test_alone  # type: ignore[assignment]
    args = sys.argv[1:]
    tag = args[args.index("--tag") + 1] if "--tag" in args else "quiet"
    rest = [a for i, a in enumerate(args) if a != "--tag" and (i == 0 or args[i - 1] != "--tag")]
    # --test forces the stored runs to be judged again (the default test, with the gate left out)
    sys.argv = ["reproducibility.py", "--reuse", "--test", "screened-t", "--tag", f"{tag}_no_median_gate", *rest]
    reproducibility.main()


if __name__ == "__main__":
    main()
