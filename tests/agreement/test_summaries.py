"""Rater-pair matrix, per-item agreement, macro averages and localisation agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest

from annotator.agreement.results import NO_OVERLAP, NO_PAIRS, NO_VALUES, NO_VARIATION, SAME_RATER, Estimate
from annotator.agreement.summaries import (
    localisation_agreement,
    macro_average,
    pairwise_matrix,
    per_item_agreement,
)

from ._reference import make_ratings, sklearn_cohen

TOL = 1e-9


def test_pairwise_kappa_is_the_mean_of_scikit_learn_kappas_over_defined_modes():
    ratings = make_ratings(21, 150, 4, 5, 0.2, 0.15, 0.25)
    ratings[:, :, 4] = np.where(ratings[:, :, 4] >= 0, 0, -1)  # a mode nobody chose: undefined everywhere
    result = pairwise_matrix(ratings)
    for a in range(4):
        for b in range(4):
            if a == b:
                assert math.isnan(result.kappa[a, b]) and math.isnan(result.observed_agreement[a, b])
                assert result.kappa_estimate(a, b).undefined_code == SAME_RATER
                continue
            kappas = [sklearn_cohen(ratings[:, a, j], ratings[:, b, j]) for j in range(4)]
            assert result.kappa[a, b] == pytest.approx(np.mean(kappas), abs=TOL)
            assert result.kappa_estimate(a, b).value == pytest.approx(np.mean(kappas), abs=TOL)
            assert result.n_modes_defined[a, b] == 4
            both = (ratings[:, a] >= 0) & (ratings[:, b] >= 0)
            agree = both & (ratings[:, a] == ratings[:, b])
            assert result.observed_agreement[a, b] == pytest.approx(agree.sum() / both.sum(), abs=TOL)
            assert result.n_shared_items[a, b] == int(both.any(axis=1).sum())
    np.testing.assert_array_equal(result.n_shared_items.diagonal(), (ratings >= 0).any(axis=2).sum(axis=0))
    assert not result.kappa.flags.writeable


def test_pairwise_matrix_reports_no_overlap_and_no_variation():
    ratings = np.zeros((6, 3, 2), dtype=np.int8)
    ratings[:3, 2] = -1
    ratings[3:, 1] = -1
    ratings[:, 0, 0] = [0, 0, 0, 0, 1, 0]
    ratings[:, 2, 0] = [-1, -1, -1, 0, 1, 1]
    result = pairwise_matrix(ratings)
    assert result.kappa_estimate(1, 2).undefined_code == NO_OVERLAP
    assert result.kappa_estimate(0, 1).undefined_code == NO_VARIATION  # both constant 0 on shared items
    assert result.kappa_estimate(0, 2).value == pytest.approx(
        sklearn_cohen(ratings[:, 0, 0], ratings[:, 2, 0]), abs=TOL
    )
    assert result.n_modes_defined[0, 2] == 1


def test_per_item_agreement_counts_unanimous_modes_among_those_with_two_ratings():
    ratings = make_ratings(22, 120, 3, 6, 0.3, 0.2, 0.3)
    result = per_item_agreement(ratings)
    for i in range(ratings.shape[0]):
        compared = agreed = 0
        for j in range(ratings.shape[2]):
            given = ratings[i, :, j][ratings[i, :, j] >= 0]
            if len(given) >= 2:
                compared += 1
                agreed += len(set(given.tolist())) == 1
        assert result.n_modes_compared[i] == compared
        assert result.n_modes_agreed[i] == agreed
        if compared:
            assert result.fraction[i] == pytest.approx(agreed / compared)
        else:
            assert math.isnan(result.fraction[i])
    assert (result.n_modes_compared == 0).any()


def test_macro_average_skips_undefined_values_per_group_and_overall():
    undefined = Estimate.undefined(NO_VARIATION, "no variation: every rating is 0 (expected agreement is 1)")
    values = [0.5, None, Estimate.of(0.7), float("nan"), 0.1, undefined, 0.9]
    groups = ["a", "a", "a", "b", "b", "c", "a"]
    result = macro_average(values, groups)
    by = result.by_group()
    assert list(by) == ["a", "b", "c"]
    assert by["a"].mean.value == pytest.approx((0.5 + 0.7 + 0.9) / 3)
    assert (by["a"].n_defined, by["a"].n_total) == (3, 4)
    assert by["b"].mean.value == pytest.approx(0.1)
    assert by["c"].mean.value is None and by["c"].mean.undefined_code == NO_VALUES
    assert result.overall.mean.value == pytest.approx((0.5 + 0.7 + 0.9 + 0.1) / 4)
    assert result.overall.n_total == 7
    assert result.mean_of_group_means.value == pytest.approx((0.7 + 0.1) / 2)
    with pytest.raises(ValueError, match="same length"):
        macro_average([1.0], [])


def test_macro_average_of_nothing_defined_is_undefined():
    result = macro_average([None, None], ["x", "y"])
    assert result.overall.mean.undefined_code == NO_VALUES
    assert result.mean_of_group_means.undefined_code == NO_VALUES


def _brute_force_localisation(pairs, window):
    kept = [(a, b) for a, b in pairs if a and b]
    exact = sum(bool(set(a) & set(b)) for a, b in kept)
    near = sum(any(abs(x - y) <= window for x in a for y in b) for a, b in kept)
    return len(kept), exact, near


@pytest.mark.parametrize("window", [0, 1, 3])
def test_localisation_agreement_matches_a_brute_force_loop(window):
    rng = np.random.default_rng(23)
    pairs = [
        (
            set(rng.integers(0, 40, size=rng.integers(0, 4)).tolist()),
            set(rng.integers(0, 40, size=rng.integers(0, 4)).tolist()),
        )
        for _ in range(500)
    ]
    result = localisation_agreement(pairs, window)
    n, exact, near = _brute_force_localisation(pairs, window)
    assert (result.n_pairs, result.n_exact, result.n_within_window) == (n, exact, near)
    assert result.exact_match.value == pytest.approx(exact / n)
    assert result.within_window.value == pytest.approx(near / n)
    only_a = sum(bool(a) and not b for a, b in pairs)
    only_b = sum(bool(b) and not a for a, b in pairs)
    neither = sum(not a and not b for a, b in pairs)
    assert (result.n_only_a_pinned, result.n_only_b_pinned, result.n_neither_pinned) == (
        only_a,
        only_b,
        neither,
    )
    assert n + only_a + only_b + neither == len(pairs)


def test_localisation_agreement_edge_cases():
    result = localisation_agreement([([], [3]), ([], [])], window=2)
    assert result.n_pairs == 0
    assert result.exact_match.undefined_code == NO_PAIRS
    assert (result.n_only_b_pinned, result.n_neither_pinned) == (1, 1)
    close = localisation_agreement([([10], [12]), ([5, 7], [7]), ([0], [100])], window=2)
    assert (close.n_exact, close.n_within_window) == (1, 2)
    with pytest.raises(ValueError, match="window"):
        localisation_agreement([], window=-1)
