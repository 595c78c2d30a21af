"""Krippendorff's alpha over label sets with MASI distance, against nltk."""

from __future__ import annotations

import numpy as np
import pytest
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import masi_distance as nltk_masi

from annotator.agreement.results import NO_VARIATION, TOO_FEW_PAIRABLE
from annotator.agreement.setstats import masi_alpha, masi_distance

TOL = 1e-9


def random_label_sets(seed, n_items, n_raters, n_labels, *, missing=0.0, allow_empty=False, p=0.3):
    """Correlated sets: each rater keeps a shared draw's labels with noise; ``None`` = missing."""
    rng = np.random.default_rng(seed)
    labels = [f"mode-{k}" for k in range(n_labels)]
    items = []
    for _ in range(n_items):
        truth = rng.random(n_labels) < p
        row = []
        for _ in range(n_raters):
            if rng.random() < missing:
                row.append(None)
                continue
            chosen = truth ^ (rng.random(n_labels) < 0.1)
            if not chosen.any() and not allow_empty:
                chosen[rng.integers(n_labels)] = True
            row.append(frozenset(label for label, c in zip(labels, chosen, strict=True) if c))
        items.append(row)
    return items


def nltk_alpha(items, distance=nltk_masi):
    triples = [
        (f"r{j}", f"i{i:05d}", value)
        for i, row in enumerate(items)
        for j, value in enumerate(row)
        if value is not None
    ]
    return AnnotationTask(data=triples, distance=distance).alpha()


@pytest.mark.parametrize(
    ("seed", "n_items", "n_raters", "n_labels", "missing"),
    [(1, 120, 2, 6, 0.0), (2, 150, 3, 8, 0.2), (3, 100, 4, 5, 0.35), (4, 80, 2, 14, 0.1)],
)
def test_masi_alpha_matches_nltk(seed, n_items, n_raters, n_labels, missing):
    items = random_label_sets(seed, n_items, n_raters, n_labels, missing=missing)
    result = masi_alpha(items)
    assert result.alpha.value == pytest.approx(nltk_alpha(items), abs=TOL)
    pairable = [row for row in items if sum(v is not None for v in row) >= 2]
    assert result.n_items == len(pairable)
    assert result.n_values == sum(v is not None for row in pairable for v in row)
    assert 1 - result.observed_disagreement / result.expected_disagreement == pytest.approx(
        result.alpha.value
    )


def test_masi_alpha_handles_more_than_64_labels():
    items = random_label_sets(5, 60, 3, 150, missing=0.1, p=0.05)
    assert masi_alpha(items).alpha.value == pytest.approx(nltk_alpha(items), abs=TOL)


def test_masi_alpha_with_empty_sets_matches_nltk_given_a_zero_distance_for_two_empty_sets():
    items = random_label_sets(6, 120, 3, 4, missing=0.1, allow_empty=True, p=0.15)
    assert any(v == frozenset() for row in items for v in row)
    with pytest.raises(ZeroDivisionError):
        nltk_alpha(items)  # nltk's masi_distance divides by |A u B| = 0
    assert masi_alpha(items).alpha.value == pytest.approx(nltk_alpha(items, distance=masi_distance), abs=TOL)


def test_masi_distance_matches_nltk_and_is_zero_for_two_empty_sets():
    rng = np.random.default_rng(7)
    for _ in range(300):
        a = frozenset(rng.choice(6, size=rng.integers(1, 5), replace=False).tolist())
        b = frozenset(rng.choice(6, size=rng.integers(1, 5), replace=False).tolist())
        assert masi_distance(a, b) == pytest.approx(nltk_masi(set(a), set(b)), abs=TOL)
    assert masi_distance(frozenset(), frozenset()) == 0.0
    assert masi_distance(frozenset(), frozenset({1})) == 1.0


def test_two_empty_sets_on_every_item_is_no_variation_not_an_error():
    result = masi_alpha([[frozenset(), frozenset()]] * 5)
    assert result.alpha.value is None
    assert result.alpha.undefined_code == NO_VARIATION
    assert result.n_values == 10


def test_identical_sets_everywhere_are_undefined_where_nltk_says_one():
    items = [[frozenset({"a", "b"}), frozenset({"a", "b"})]] * 4
    assert nltk_alpha(items) == 1
    assert masi_alpha(items).alpha.undefined_code == NO_VARIATION


def test_perfect_agreement_with_variation_is_one():
    items = [[frozenset({"a"}), frozenset({"a"}), None], [frozenset({"b", "c"})] * 3, [frozenset({"c"})] * 2]
    assert masi_alpha(items).alpha.value == pytest.approx(1.0, abs=TOL)


def test_single_label_set_per_item_has_too_few_pairable_values():
    result = masi_alpha([[frozenset({"a"}), None], [None, frozenset({"b"})], [frozenset({"c"})]])
    assert result.alpha.undefined_code == TOO_FEW_PAIRABLE
    assert result.alpha.undefined_reason.startswith("fewer than 2 pairable values")
    assert result.n_items == 0
    assert masi_alpha([]).alpha.undefined_code == TOO_FEW_PAIRABLE


def test_items_with_one_set_are_ignored_like_nltk():
    items = random_label_sets(8, 60, 3, 5, missing=0.6)
    assert any(sum(v is not None for v in row) == 1 for row in items)
    assert masi_alpha(items).alpha.value == pytest.approx(nltk_alpha(items), abs=TOL)
