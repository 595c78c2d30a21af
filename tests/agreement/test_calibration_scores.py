"""The scores against gold (annotator/agreement/calibration.py) match scikit-learn and statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from annotator.agreement.calibration import Counts, kappa_with_se, score, wilson


def test_per_mode_scores_match_the_libraries():
    rng = np.random.default_rng(7)
    gold = rng.random((40, 5)) < 0.3
    chosen = np.where(rng.random((40, 5)) < 0.8, gold, ~gold)
    result = score(chosen, gold, [f"M{j}" for j in range(5)])
    for j, mode in enumerate(result.modes):
        assert mode.kappa == pytest.approx(cohen_kappa_score(gold[:, j], chosen[:, j]), abs=1e-12)
        tp = int((chosen[:, j] & gold[:, j]).sum())
        positives = int(gold[:, j].sum())
        assert mode.sensitivity == pytest.approx(tp / positives)
        low, high = proportion_confint(tp, positives, alpha=0.05, method="wilson")
        assert mode.sensitivity_ci == pytest.approx((low, high), abs=1e-9)
    pooled = cohen_kappa_score(gold.ravel(), chosen.ravel())
    assert result.overall.kappa == pytest.approx(pooled, abs=1e-12)


def test_the_kappa_interval_uses_cohens_approximate_standard_error():
    counts = Counts(tp=8, fp=2, fn=3, tn=27)
    kappa, se, why = kappa_with_se(counts)
    p_o = 35 / 40
    p_e = (10 / 40) * (11 / 40) + (30 / 40) * (29 / 40)
    assert why == "" and kappa == pytest.approx((p_o - p_e) / (1 - p_e))
    assert se == pytest.approx(math.sqrt(p_o * (1 - p_o) / (40 * (1 - p_e) ** 2)))


def test_a_zero_standard_error_gives_no_interval():
    one_miss = score([[True]], [[False]], ["M"]).modes[0]
    assert (
        one_miss.kappa == 0
        and one_miss.kappa_ci is None
        and "approximate SE is 0" in one_miss.kappa_ci_undefined
    )
    perfect = score([[True], [False]], [[True], [False]], ["M"]).modes[0]
    assert perfect.kappa == 1 and perfect.kappa_ci is None


def test_undefined_and_empty_cases_say_so():
    assert kappa_with_se(Counts(0, 0, 0, 5))[2].startswith("one answer only")
    assert kappa_with_se(Counts(0, 0, 0, 0)) == (None, None, "no items")
    assert wilson(0, 0) is None
    assert wilson(3, 3)[1] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        score(np.zeros((2, 3)), np.zeros((3, 3)), ["a", "b", "c"])
