"""The kappa curve (pure): checkpoints, values equal to scikit-learn's on the same prefixes, the hint."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotator.triage.curve import CurvePoint, ModeCurve, checkpoints, kappa_curves, polyline


def test_checkpoints_double_from_ten_and_end_with_all():
    assert checkpoints(0) == []
    assert checkpoints(7) == [7]
    assert checkpoints(10) == [10]
    assert checkpoints(11) == [10, 11]
    assert checkpoints(100) == [10, 20, 40, 80, 100]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_each_point_equals_sklearn_on_the_same_prefix(seed):
    rng = np.random.default_rng(seed)
    n, codes = 173, ["A", "B", "C", "D"]
    gold = (rng.random((n, 4)) < [0.5, 0.1, 0.02, 0.3]).astype(int)
    flip = rng.random((n, 4)) < [0.1, 0.3, 0.05, 0.0]
    model = np.where(flip, 1 - gold, gold)
    model[:, 3] = 0  # a mode the model never marks
    curves = kappa_curves(codes, model, gold)
    for j, curve in enumerate(curves):
        assert [p.n_gold for p in curve.points] == [10, 20, 40, 80, 160, 173]
        for point in curve.points:
            a, b = model[: point.n_gold, j], gold[: point.n_gold, j]
            with np.errstate(all="ignore"):
                expected = cohen_kappa_score(a, b) if len(set(a) | set(b)) > 1 else math.nan
            if math.isnan(expected):
                assert point.kappa is None
            else:
                assert point.kappa == pytest.approx(expected, abs=1e-9)


def test_a_mode_both_sides_never_mark_is_undefined_not_perfect():
    [curve] = kappa_curves(["A"], np.zeros((12, 1)), np.zeros((12, 1)))
    assert [p.kappa for p in curve.points] == [None, None]
    assert not curve.good_enough


def test_good_enough_needs_the_last_two_points_high_and_close():
    def curve(*kappas):
        return ModeCurve("A", tuple(CurvePoint(10 * 2**i, k) for i, k in enumerate(kappas)))

    assert curve(0.2, 0.82, 0.85).good_enough
    assert not curve(0.9).good_enough  # one point says nothing about stability
    assert not curve(0.7, 0.95).good_enough  # the last two: not both high
    assert not curve(0.8, 0.99).good_enough  # high but still moving (more than 0.05)
    assert not curve(0.9, None).good_enough


def test_the_polyline_maps_kappa_minus_one_to_one_bottom_to_top():
    assert polyline([]) == ""
    assert polyline([-1.0, 1.0], width=100, height=20, pad=0) == "0.0,20.0 100.0,0.0"
    assert polyline([0.0, None, 0.5], width=100, height=20, pad=0) == "0.0,10.0 100.0,5.0"
