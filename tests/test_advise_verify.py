"""--verify's statistics: the noise of a difference of medians, and the verdicts it allows (no
agreement is claimed where the predicted saving is below the noise)."""

from __future__ import annotations

import math

import pytest

from colltune.advise.verify import Comparison, Verification, notch

DEFAULT = [10.0, 10.4, 9.6, 10.2, 9.8]        # median 10.0, IQR 0.4
TUNED = [9.0, 9.4, 8.6, 9.2, 8.8]             # median 9.0, IQR 0.4
NOISE = math.hypot(1.57 * 0.4 / math.sqrt(5), 1.57 * 0.4 / math.sqrt(5))   # 0.39718


def test_notch():
    assert notch([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(1.57 * 2 / math.sqrt(5))
    assert notch([3.0]) == 0.0


def test_comparison_figures():
    c = Comparison("wall time", DEFAULT, TUNED)
    assert c.gain_s == pytest.approx(1.0) and c.noise_s == pytest.approx(NOISE)


@pytest.mark.parametrize("predicted, verdict", [
    (0.9, "wall time: prediction 900.0 ms within 30% of the gain, measured 1000.0 ms +- 397.2 ms"),
    # outside the measured interval: off, even though the prediction itself is below the noise
    (0.3, "wall time: prediction 300.0 ms off, measured 1000.0 ms +- 397.2 ms (predicted/measured = 0.3)"),
    (-0.3, "wall time: prediction -300.0 ms off, measured 1000.0 ms +- 397.2 ms (predicted/measured = -0.3)"),
    (2.0, "wall time: prediction 2000.0 ms off, measured 1000.0 ms +- 397.2 ms (predicted/measured = 2)"),
    (0.65, "wall time: prediction 650.0 ms more than 30% from the gain but inside the noise, measured "
           "1000.0 ms +- 397.2 ms (predicted/measured = 0.65): more runs would tell"),
    (0.0, "wall time: no gain predicted; measured 1000.0 ms +- 397.2 ms"),
])
def test_verdicts(predicted, verdict):
    assert Comparison("wall time", DEFAULT, TUNED).verdict(predicted) == verdict


@pytest.mark.parametrize("predicted, what", [(0.3, "saving 300.0 ms"), (-0.3, "change -300.0 ms")])
def test_below_the_noise_is_not_resolvable(predicted, what):
    # measured 0 +- 397 ms: a prediction of +-300 ms is inside the interval, neither confirmed nor refuted
    assert Comparison("wall time", DEFAULT, DEFAULT).verdict(predicted) == (
        f"wall time: not resolvable: the predicted {what} is below the run-to-run noise +- 397.2 ms "
        "(~95% interval of the difference of medians, 5 runs per side); measured 0.0 ms +- 397.2 ms")


def test_slower_and_aa():
    c = Comparison("wall time", TUNED, DEFAULT)
    assert c.verdict(None).endswith("(the advice made it slower: do not apply it)")
    assert c.verdict(None, changed=False) == ("wall time: no advice, both sides ran the same (A/A): "
                                              "measured -1000.0 ms +- 397.2 ms is the noise")


def test_insitu_agrees_wall_does_not_resolve():
    # The collectives' time fell by 10 ms as predicted; the wall time's noise (397 ms) hides it.
    insitu = Comparison("in-situ own cost at the advised points", [0.050, 0.051, 0.049], [0.040, 0.041, 0.039])
    v = Verification(Comparison("wall time", DEFAULT, DEFAULT), insitu, 0.0095)
    assert v.agreement().splitlines() == [
        "in-situ own cost at the advised points: prediction 9.5 ms within 30% of the gain, measured "
        "10.0 ms +- 1.3 ms",
        "wall time: not resolvable: the predicted saving 9.5 ms is below the run-to-run noise "
        "+- 397.2 ms (~95% interval of the difference of medians, 5 runs per side); measured 0.0 ms "
        "+- 397.2 ms",
        "the advised collectives changed as predicted; the wall time did not resolve it"]
