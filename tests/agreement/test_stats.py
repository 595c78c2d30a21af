"""Per-mode binary agreement: every statistic against its reference library, to 1e-9."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

from annotator.agreement import stats
from annotator.agreement.results import (
    BOOTSTRAP_DISABLED,
    NO_OVERLAP,
    NO_VARIATION,
    NOT_TWO_RATERS,
    POINT_UNDEFINED,
    TOO_FEW_DEFINED_RESAMPLES,
    TOO_FEW_PAIRABLE,
    TOO_FEW_RATERS,
    ConfidenceInterval,
    Estimate,
)
from annotator.agreement.stats import binary_mode_agreement

from ._reference import (
    SHAPES,
    irrcac,
    krippendorff_nominal,
    nltk_task,
    percentile_ci,
    shape_ratings,
    sklearn_cohen,
    statsmodels_fleiss,
)

TOL = 1e-9
ALL_SHAPES = sorted(SHAPES)
TWO_RATER_SHAPES = [name for name in ALL_SHAPES if SHAPES[name][2] == 2]
COMPLETE_SHAPES = [name for name in ALL_SHAPES if SHAPES[name][6] == 0.0]


def rows_for(name: str):
    return binary_mode_agreement(shape_ratings(name), n_boot=0)


@pytest.mark.parametrize("name", TWO_RATER_SHAPES)
def test_cohen_kappa_matches_scikit_learn_per_mode(name):
    ratings = shape_ratings(name)
    rows = rows_for(name)
    for j, row in enumerate(rows):
        assert row.cohen_kappa.value == pytest.approx(
            sklearn_cohen(ratings[:, 0, j], ratings[:, 1, j]), abs=TOL
        )


def test_cohen_kappa_matches_nltk_kappa_on_complete_two_rater_data():
    ratings = shape_ratings("two_raters")
    for j, row in enumerate(rows_for("two_raters")):
        assert row.cohen_kappa.value == pytest.approx(nltk_task(ratings[:, :, j]).kappa(), abs=TOL)


@pytest.mark.parametrize("name", COMPLETE_SHAPES)
def test_fleiss_kappa_matches_statsmodels_when_every_item_has_every_rater(name):
    ratings = shape_ratings(name)
    for j, row in enumerate(rows_for(name)):
        assert row.fleiss_kappa.value == pytest.approx(statsmodels_fleiss(ratings[:, :, j]), abs=TOL)


@pytest.mark.parametrize("name", ALL_SHAPES)
def test_fleiss_kappa_matches_irrcac_with_varying_raters_per_item(name):
    ratings = shape_ratings(name)
    for j, row in enumerate(rows_for(name)):
        expected = irrcac(ratings[:, :, j], "fleiss")["coefficient_value"]
        assert row.fleiss_kappa.value == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("name", ALL_SHAPES)
def test_krippendorff_alpha_matches_krippendorff_package_with_missing_ratings(name):
    ratings = shape_ratings(name)
    for j, row in enumerate(rows_for(name)):
        assert row.krippendorff_alpha.value == pytest.approx(krippendorff_nominal(ratings[:, :, j]), abs=TOL)


@pytest.mark.parametrize("name", ["two_raters_missing", "four_raters_missing"])
def test_krippendorff_alpha_matches_irrcac_and_nltk(name):
    ratings = shape_ratings(name)
    for j, row in enumerate(rows_for(name)):
        assert row.krippendorff_alpha.value == pytest.approx(
            irrcac(ratings[:, :, j], "krippendorff")["coefficient_value"], abs=TOL
        )
        assert row.krippendorff_alpha.value == pytest.approx(nltk_task(ratings[:, :, j]).alpha(), abs=TOL)


@pytest.mark.parametrize("name", ALL_SHAPES)
def test_gwet_ac1_matches_irrcac(name):
    ratings = shape_ratings(name)
    for j, row in enumerate(rows_for(name)):
        assert row.gwet_ac1.value == pytest.approx(
            irrcac(ratings[:, :, j], "gwet")["coefficient_value"], abs=TOL
        )


@pytest.mark.parametrize("name", ALL_SHAPES)
def test_observed_agreement_is_irrcac_pairwise_agreement(name):
    ratings = shape_ratings(name)
    for j, row in enumerate(rows_for(name)):
        assert row.observed_agreement.value == pytest.approx(
            irrcac(ratings[:, :, j], "fleiss")["pa"], abs=TOL
        )


@pytest.mark.parametrize("name", COMPLETE_SHAPES)
def test_observed_agreement_and_pabak_match_nltk_on_complete_data(name):
    ratings = shape_ratings(name)
    for j, row in enumerate(rows_for(name)):
        task = nltk_task(ratings[:, :, j])
        assert row.observed_agreement.value == pytest.approx(task.avg_Ao(), abs=TOL)
        # nltk's S (Bennett et al.) with both labels present is 2 * Ao - 1: PABAK.
        assert row.pabak.value == pytest.approx(task.S(), abs=TOL)
        assert row.pabak.value == pytest.approx(2 * row.observed_agreement.value - 1, abs=TOL)


@pytest.mark.parametrize("name", ALL_SHAPES)
def test_counts_and_prevalence_per_rater(name):
    ratings = shape_ratings(name)
    for j, row in enumerate(rows_for(name)):
        rated = ratings[:, :, j] >= 0
        assert row.n_items == int((rated.sum(axis=1) >= 2).sum())
        assert row.n_items_rated == int(rated.any(axis=1).sum())
        expected = [(ratings[rated[:, k], k, j] == 1).mean() for k in range(ratings.shape[1])]
        assert row.prevalence == pytest.approx(expected, abs=TOL)


def test_cohen_kappa_is_undefined_for_more_than_two_raters():
    for row in rows_for("three_raters"):
        assert row.cohen_kappa.value is None
        assert row.cohen_kappa.undefined_code == NOT_TWO_RATERS
        assert row.kappa_ci_statistic == "fleiss_kappa"


def test_no_variation_makes_kappa_and_alpha_undefined_with_reason_but_ac1_is_one():
    ratings = np.zeros((50, 2, 2), dtype=np.int8)
    ratings[:, :, 1] = 1
    zero, one = binary_mode_agreement(ratings, n_boot=100)
    for row, value in ((zero, 0), (one, 1)):
        for est in (row.cohen_kappa, row.fleiss_kappa, row.krippendorff_alpha):
            assert est.value is None
            assert est.undefined_code == NO_VARIATION
            assert f"{value}" in est.undefined_reason
        assert (
            row.fleiss_kappa.undefined_reason
            == f"no variation: every rating is {value} (expected agreement is 1)"
        )
        assert row.observed_agreement.value == 1.0
        assert row.pabak.value == 1.0
        assert row.gwet_ac1.value == pytest.approx(
            irrcac(ratings[:, :, row.mode], "gwet")["coefficient_value"]
        )
        assert row.gwet_ac1.value == 1.0
        assert row.kappa_ci.low is None
        assert row.kappa_ci.undefined_code == POINT_UNDEFINED
        assert row.alpha_ci.undefined_code == POINT_UNDEFINED


def test_raters_constant_on_opposite_values_give_defined_kappa_like_scikit_learn():
    ratings = np.zeros((30, 2, 1), dtype=np.int8)
    ratings[:, 0, 0] = 1
    (row,) = binary_mode_agreement(ratings, n_boot=0)
    assert row.cohen_kappa.value == pytest.approx(sklearn_cohen(ratings[:, 0, 0], ratings[:, 1, 0]), abs=TOL)
    assert row.fleiss_kappa.value == pytest.approx(irrcac(ratings[:, :, 0], "fleiss")["coefficient_value"])
    assert row.krippendorff_alpha.value == pytest.approx(krippendorff_nominal(ratings[:, :, 0]), abs=TOL)


def test_one_rater_leaves_every_statistic_undefined():
    ratings = np.random.default_rng(0).integers(0, 2, size=(40, 1, 3)).astype(np.int8)
    for row in binary_mode_agreement(ratings, n_boot=50):
        for est in (
            row.observed_agreement,
            row.cohen_kappa,
            row.fleiss_kappa,
            row.krippendorff_alpha,
            row.gwet_ac1,
            row.pabak,
        ):
            assert est.value is None
            assert est.undefined_code == TOO_FEW_RATERS
        assert row.n_items == 0
        assert row.kappa_ci.undefined_code == POINT_UNDEFINED
        assert row.prevalence[0] is not None


def test_no_overlapping_items_leaves_pairwise_statistics_undefined():
    ratings = np.random.default_rng(1).integers(0, 2, size=(40, 2, 2)).astype(np.int8)
    ratings[:20, 1] = -1
    ratings[20:, 0] = -1
    for row in binary_mode_agreement(ratings, n_boot=20):
        assert row.cohen_kappa.undefined_code == NO_OVERLAP
        assert row.fleiss_kappa.undefined_code == NO_OVERLAP
        assert row.observed_agreement.undefined_code == NO_OVERLAP
        assert row.gwet_ac1.undefined_code == NO_OVERLAP
        assert row.krippendorff_alpha.undefined_code == TOO_FEW_PAIRABLE
        assert row.n_items == 0 and row.n_items_rated == 40


def test_empty_input_is_undefined_not_an_error():
    (row,) = binary_mode_agreement(np.zeros((0, 2, 1), dtype=np.int8), n_boot=10)
    assert row.cohen_kappa.undefined_code == NO_OVERLAP
    assert row.prevalence == (None, None)
    assert row.kappa_ci.undefined_code == POINT_UNDEFINED


def test_perfect_agreement_gives_one_everywhere():
    rng = np.random.default_rng(2)
    one_rater = rng.integers(0, 2, size=(60, 1, 3)).astype(np.int8)
    for n_raters in (2, 3):
        for row in binary_mode_agreement(np.repeat(one_rater, n_raters, axis=1), n_boot=100):
            for est in (
                row.fleiss_kappa,
                row.krippendorff_alpha,
                row.gwet_ac1,
                row.pabak,
                row.observed_agreement,
            ):
                assert est.value == pytest.approx(1.0, abs=TOL)
            if n_raters == 2:
                assert row.cohen_kappa.value == pytest.approx(1.0, abs=TOL)
            assert row.kappa_ci.low == pytest.approx(1.0) and row.kappa_ci.high == pytest.approx(1.0)


def test_rejects_values_other_than_one_zero_minus_one():
    with pytest.raises(ValueError, match="1, 0 or -1"):
        binary_mode_agreement(np.full((3, 2, 1), 2))
    with pytest.raises(ValueError, match="shape"):
        binary_mode_agreement(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="n_boot"):
        binary_mode_agreement(np.zeros((3, 2, 1)), n_boot=-1)


def test_boolean_ratings_mean_nothing_missing():
    ratings = shape_ratings("two_raters")
    from_bool = binary_mode_agreement(ratings.astype(bool), n_boot=0)
    assert from_bool == rows_for("two_raters")


def test_estimates_never_hold_nan():
    with pytest.raises(ValueError, match="finite"):
        Estimate(float("nan"))
    with pytest.raises(ValueError, match="reason"):
        Estimate(None)


# --- bootstrap ---


def test_bootstrap_is_deterministic_for_a_seed_and_changes_with_it():
    ratings = shape_ratings("two_raters_missing")
    first = binary_mode_agreement(ratings, n_boot=300, seed=7)
    again = binary_mode_agreement(ratings, n_boot=300, seed=7)
    other = binary_mode_agreement(ratings, n_boot=300, seed=8)
    assert first == again
    assert [r.kappa_ci for r in first] != [r.kappa_ci for r in other]


@pytest.mark.parametrize("name", ["two_raters", "four_raters_missing"])
def test_bootstrap_interval_brackets_the_point_estimate(name):
    for row in binary_mode_agreement(shape_ratings(name), n_boot=500, seed=3):
        kappa = row.cohen_kappa if row.kappa_ci_statistic == "cohen_kappa" else row.fleiss_kappa
        assert row.kappa_ci.low < kappa.value < row.kappa_ci.high
        assert row.alpha_ci.low < row.krippendorff_alpha.value < row.alpha_ci.high
        assert row.kappa_ci.n_defined == 500 and row.kappa_ci.level == 0.95
        assert row.kappa_ci.high - row.kappa_ci.low < 0.5


def _reference_bootstrap(ratings, n_boot, seed, statistic):
    """Call the library on real resampled datasets built from the implementation's draws.

    White-box on purpose: the implementation draws per-mode *state* counts
    (``Multinomial(n, state frequencies)``, see ``stats._bootstrap``). Here
    each draw is turned back into an actual list of items -- ``count`` copies
    of an item in each state -- and the reference library is run on it, so
    the statistic computed from state counts is checked against the library
    resample by resample.
    """
    codes, states = stats._state_codes(stats.as_ratings(ratings))
    n_items, _, n_modes = ratings.shape
    freq = np.stack([np.bincount(codes[:, j], minlength=len(states)) for j in range(n_modes)])
    draws = np.random.default_rng(seed).multinomial(n_items, freq / n_items, size=(n_boot, n_modes))
    first = [{int(c): i for i, c in reversed(list(enumerate(codes[:, j])))} for j in range(n_modes)]
    out = np.full((n_boot, n_modes), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in range(n_boot):
            for j in range(n_modes):
                items = np.concatenate(
                    [np.full(count, first[j][state]) for state, count in enumerate(draws[b, j]) if count]
                )
                with contextlib.suppress(ValueError):  # krippendorff raises when undefined
                    out[b, j] = statistic(ratings[items, :, j])
    return out


def test_bootstrap_intervals_match_a_loop_over_reference_libraries():
    ratings = shape_ratings("two_raters_missing")[:80, :, :3]
    rows = binary_mode_agreement(ratings, n_boot=120, seed=5, ci=0.9)
    kappas = _reference_bootstrap(ratings, 120, 5, lambda r: sklearn_cohen(r[:, 0], r[:, 1]))
    alphas = _reference_bootstrap(ratings, 120, 5, krippendorff_nominal)
    for j, row in enumerate(rows):
        assert (row.kappa_ci.low, row.kappa_ci.high) == pytest.approx(
            percentile_ci(kappas[:, j], 0.9), abs=TOL
        )
        assert (row.alpha_ci.low, row.alpha_ci.high) == pytest.approx(
            percentile_ci(alphas[:, j], 0.9), abs=TOL
        )
        assert row.kappa_ci.n_defined == int(np.isfinite(kappas[:, j]).sum())


def test_fleiss_bootstrap_matches_a_loop_over_irrcac():
    ratings = shape_ratings("four_raters_missing")[:60, :, :2]
    rows = binary_mode_agreement(ratings, n_boot=60, seed=9)
    fleiss = _reference_bootstrap(ratings, 60, 9, lambda r: irrcac(r, "fleiss")["coefficient_value"])
    for j, row in enumerate(rows):
        assert (row.kappa_ci.low, row.kappa_ci.high) == pytest.approx(
            percentile_ci(fleiss[:, j], 0.95), abs=TOL
        )


def _numpy_cohen(a, b):
    both = (a >= 0) & (b >= 0)
    a, b = a[both], b[both]
    po = np.mean(a == b)
    pe = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
    return (po - pe) / (1 - pe)


def test_state_count_bootstrap_has_the_distribution_of_a_plain_item_bootstrap():
    ratings = shape_ratings("two_raters_missing")[:, :, :2]
    n_boot = 2000
    rows = binary_mode_agreement(ratings, n_boot=n_boot, seed=11)
    draws = np.random.default_rng(99).integers(0, ratings.shape[0], size=(n_boot, ratings.shape[0]))
    for j, row in enumerate(rows):
        plain = np.array([_numpy_cohen(ratings[d, 0, j], ratings[d, 1, j]) for d in draws])
        low, high = percentile_ci(plain, 0.95)
        width = high - low
        # Two independent Monte Carlo estimates of the same interval: equal up to sampling noise.
        assert row.kappa_ci.low == pytest.approx(low, abs=0.1 * width)
        assert row.kappa_ci.high == pytest.approx(high, abs=0.1 * width)


def test_bootstrap_interval_is_withheld_when_most_resamples_are_undefined():
    # Only two items are rated by both raters (one 1/1, one 0/0): kappa is defined
    # only in resamples that draw both of them (~40%).
    ratings = np.full((30, 2, 1), -1, dtype=np.int8)
    ratings[0, :, 0] = 1
    ratings[1, :, 0] = 0
    ratings[2:16, 0, 0] = 1
    ratings[16:, 1, 0] = 0
    (row,) = binary_mode_agreement(ratings, n_boot=400, seed=1)
    assert row.cohen_kappa.value == pytest.approx(1.0)
    ci = row.kappa_ci
    assert ci == ConfidenceInterval(
        None,
        None,
        0.95,
        400,
        ci.n_defined,
        TOO_FEW_DEFINED_RESAMPLES,
        f"statistic defined in only {ci.n_defined} of 400 resamples (< 50%)",
    )
    assert 0 < ci.n_defined < 200


def test_bootstrap_can_be_disabled():
    (row, *_) = binary_mode_agreement(shape_ratings("two_raters"), n_boot=0)
    assert row.kappa_ci.undefined_code == BOOTSTRAP_DISABLED
    assert row.alpha_ci.n_resamples == 0


def test_bootstrap_chunking_does_not_change_results(monkeypatch):
    ratings = shape_ratings("three_raters")
    whole = binary_mode_agreement(ratings, n_boot=90, seed=4)
    n_states = 10  # three raters: (r + 1)(r + 2) / 2 states
    monkeypatch.setattr(stats, "_BOOT_CHUNK_ELEMENTS", ratings.shape[2] * n_states * 7)  # 13 chunks of 7
    chunked = binary_mode_agreement(ratings, n_boot=90, seed=4)
    for a, b in zip(whole, chunked, strict=True):
        assert a.kappa_ci.low == pytest.approx(b.kappa_ci.low, abs=TOL)
        assert a.alpha_ci.high == pytest.approx(b.alpha_ci.high, abs=TOL)
