"""Single-primary (nominal) agreement against scikit-learn, krippendorff, irrCAC and nltk."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from annotator.agreement.nominal import nominal_agreement
from annotator.agreement.results import NO_OVERLAP, NO_VARIATION, NOT_TWO_RATERS, TOO_FEW_RATERS

from ._reference import irrcac, krippendorff_nominal, nltk_task

TOL = 1e-9
CODES = [3, 7, 11, 20, 42]


def make_labels(seed, n_items, n_raters, *, missing=0.0, agree=0.7, codes=CODES):
    rng = np.random.default_rng(seed)
    weights = np.linspace(3, 1, len(codes))
    truth = rng.choice(codes, size=(n_items, 1), p=weights / weights.sum())
    noise = rng.choice(codes, size=(n_items, n_raters))
    labels = np.where(rng.random((n_items, n_raters)) < agree, truth, noise)
    labels[rng.random((n_items, n_raters)) < missing] = -1
    return labels


CASES = {
    "two_raters": (1, 200, 2, 0.0),
    "two_raters_missing": (2, 200, 2, 0.2),
    "three_raters_missing": (3, 150, 3, 0.25),
}


@pytest.mark.parametrize("name", ["two_raters", "two_raters_missing"])
def test_cohen_kappa_and_confusion_match_scikit_learn(name):
    labels = make_labels(*CASES[name][:3], missing=CASES[name][3])
    result = nominal_agreement(labels, categories=CODES)
    both = (labels >= 0).all(axis=1)
    a, b = labels[both, 0], labels[both, 1]
    assert result.cohen_kappa.value == pytest.approx(cohen_kappa_score(a, b), abs=TOL)
    np.testing.assert_array_equal(result.confusion, confusion_matrix(a, b, labels=CODES))
    assert result.observed_agreement.value == pytest.approx(np.mean(a == b), abs=TOL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_krippendorff_alpha_matches_krippendorff_irrcac_and_nltk(name):
    labels = make_labels(*CASES[name][:3], missing=CASES[name][3])
    result = nominal_agreement(labels)
    assert result.krippendorff_alpha.value == pytest.approx(krippendorff_nominal(labels), abs=TOL)
    est = irrcac(labels, "krippendorff", categories=CODES)
    assert result.krippendorff_alpha.value == pytest.approx(est["coefficient_value"], abs=TOL)
    assert result.krippendorff_alpha.value == pytest.approx(nltk_task(labels).alpha(), abs=TOL)
    assert result.observed_agreement.value == pytest.approx(irrcac(labels, "fleiss", categories=CODES)["pa"])
    assert result.n_items == int(((labels >= 0).sum(axis=1) >= 2).sum())


def test_confusion_follows_the_given_category_order_including_unused_codes():
    labels = np.array([[7, 3], [3, 3], [7, 7], [3, -1]])
    result = nominal_agreement(labels, categories=[7, 99, 3])
    assert result.categories == (7, 99, 3)
    np.testing.assert_array_equal(result.confusion, [[1, 0, 1], [0, 0, 0], [0, 0, 1]])
    assert not result.confusion.flags.writeable
    both = labels[:3]
    assert result.cohen_kappa.value == pytest.approx(cohen_kappa_score(both[:, 0], both[:, 1]), abs=TOL)


def test_three_raters_have_no_cohen_kappa_or_confusion():
    result = nominal_agreement(make_labels(4, 30, 3))
    assert result.cohen_kappa.undefined_code == NOT_TWO_RATERS
    assert result.confusion is None


def test_one_category_everywhere_is_no_variation():
    result = nominal_agreement(np.full((10, 2), 5))
    assert result.cohen_kappa.undefined_code == NO_VARIATION
    assert result.cohen_kappa.undefined_reason.startswith("no variation: both raters gave 5")
    assert result.krippendorff_alpha.undefined_code == NO_VARIATION
    assert result.observed_agreement.value == 1.0


def test_no_overlap_and_one_rater_are_undefined():
    disjoint = np.array([[1, -1], [2, -1], [-1, 1], [-1, 2]])
    result = nominal_agreement(disjoint)
    assert result.cohen_kappa.undefined_code == NO_OVERLAP
    assert result.observed_agreement.undefined_code == NO_OVERLAP
    assert result.confusion.sum() == 0
    single = nominal_agreement(np.array([[1], [2]]))
    assert single.cohen_kappa.undefined_code == TOO_FEW_RATERS
    assert single.krippendorff_alpha.undefined_code == TOO_FEW_RATERS


def test_perfect_agreement_is_one():
    labels = np.repeat(np.array([[1], [2], [3], [1]]), 2, axis=1)
    result = nominal_agreement(labels)
    assert result.cohen_kappa.value == pytest.approx(1.0)
    assert result.krippendorff_alpha.value == pytest.approx(1.0)


def test_unknown_codes_and_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match="not in categories"):
        nominal_agreement(np.array([[1, 2]]), categories=[1])
    with pytest.raises(ValueError, match="shape"):
        nominal_agreement(np.array([1, 2]))
    with pytest.raises(ValueError, match=">= 0"):
        nominal_agreement(np.array([[1, -2]]))
