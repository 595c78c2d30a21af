"""MASI alpha's expected disagreement counted over subsets of the labels (a million traces have thousands of
distinct label sets) equals the pairwise sum over distinct sets it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.agreement import setstats


@pytest.mark.parametrize(
    ("items", "raters", "modes", "rate"), [(40, 2, 4, 0.3), (3000, 3, 14, 0.2), (600, 4, 16, 0.4)]
)
def test_the_expected_disagreement_by_subsets_equals_the_pairwise_sum(
    items, raters, modes, rate, monkeypatch
):
    rng = np.random.default_rng(items)
    ratings = (rng.random((items, raters, modes)) < rate).astype(np.int8)
    ratings[rng.random((items, raters)) < 0.1] = -1
    weights = rng.integers(1, 50, items)
    by_subsets = setstats.masi_alpha_from_ratings(ratings, weights)
    monkeypatch.setattr(setstats, "_expected_by_sizes", lambda *args: None)
    pairwise = setstats.masi_alpha_from_ratings(ratings, weights)
    assert by_subsets.expected_disagreement == pytest.approx(pairwise.expected_disagreement, rel=1e-12)
    assert by_subsets.alpha.value == pytest.approx(pairwise.alpha.value, rel=1e-12, abs=1e-12)
