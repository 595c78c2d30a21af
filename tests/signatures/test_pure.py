"""The numpy module alone (no database): intervals against statsmodels and published values, the edge
cases each figure must survive, and input validation."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from annotator.signatures import (
    FAILURE,
    SUCCESS,
    UNKNOWN,
    Evidence,
    ModeInfo,
    SignatureInput,
    compute_signatures,
    factorize,
)
from annotator.signatures.charts import build_charts
from annotator.signatures.contrast import outcome_contrast
from annotator.signatures.intervals import newcombe_difference, wilson
from annotator.signatures.position import evidence_positions
from annotator.signatures.structure import failure_vectors
from annotator.signatures.tables import FIGURES, figure_table
from annotator.signatures.text import render_text

MODES = (ModeInfo("A", "alpha", "C1", "first"), ModeInfo("B", "beta", "C1", "first"), ModeInfo("C", "gamma"))


def make(labels, outcome, **kwargs) -> SignatureInput:
    return SignatureInput(np.asarray(labels, dtype=bool), np.asarray(outcome, dtype=np.int8), MODES, **kwargs)


def test_wilson_matches_the_published_example_and_statsmodels():
    # Newcombe (1998), Stat. Med. 17:857, table I: 81/263 -> 0.2553 to 0.3662.
    _, low, high = wilson([81], [263])
    assert (round(low[0], 4), round(high[0], 4)) == (0.2553, 0.3662)
    rng = np.random.default_rng(1)
    n = rng.integers(1, 500, 200)
    k = rng.integers(0, n + 1)
    _, low, high = wilson(k, n)
    expected = np.array([proportion_confint(a, b, method="wilson") for a, b in zip(k, n, strict=True)])
    np.testing.assert_allclose(low, expected[:, 0], atol=1e-12)
    np.testing.assert_allclose(high, expected[:, 1], atol=1e-12)


def test_newcombe_matches_the_published_example_and_statsmodels():
    # Newcombe (1998), Stat. Med. 17:873, example (a): 56/70 - 48/80 = 0.2, method 10: 0.0524 to 0.3339.
    d, low, high = newcombe_difference(48, 80, 56, 70)
    assert (round(float(d), 4), round(float(low), 4), round(float(high), 4)) == (0.2, 0.0524, 0.3339)
    rng = np.random.default_rng(2)
    for _ in range(100):
        na, nb = rng.integers(1, 300, 2)
        ka, kb = rng.integers(0, na + 1), rng.integers(0, nb + 1)
        _, low, high = newcombe_difference(ka, na, kb, nb)
        ref = confint_proportions_2indep(kb, nb, ka, na, method="newcomb", compare="diff")
        assert (float(low), float(high)) == (
            pytest.approx(ref[0], abs=1e-12),
            pytest.approx(ref[1], abs=1e-12),
        )


def test_an_empty_total_gives_no_interval_rather_than_nan_in_the_results():
    rate, low, high = wilson([0], [0])
    assert np.isnan(rate[0]) and np.isnan(low[0]) and np.isnan(high[0])
    s = compute_signatures(make(np.zeros((0, 3)), []))
    assert s.prevalence[0].groups == ()
    assert s.contrast.modes[0].in_failed.rate.undefined_code == "no_traces"
    assert s.contrast.modes[0].classification == "undetermined"
    assert s.vectors.top == () and s.positions.n_points == 0
    for figure in FIGURES:
        figure_table(s, figure)  # every table has a header even when empty


def test_without_successful_traces_benign_or_fatal_is_undetermined():
    s = compute_signatures(make([[1, 0, 0], [1, 1, 0]], [FAILURE, FAILURE]))
    row = s.contrast.modes[0]
    assert row.classification == "undetermined"
    assert row.relative_increase.undefined_code == "no_successful_traces"
    assert row.warnings == ("few_failed_traces", "few_successful_traces")


def test_unknown_outcomes_count_in_prevalence_but_not_in_the_outcome_contrast():
    s = compute_signatures(make([[1, 0, 0], [1, 0, 0], [0, 0, 0]], [UNKNOWN, FAILURE, SUCCESS]))
    assert s.prevalence[0].groups[0].modes[0].count == 2
    assert (s.contrast.n_failed, s.contrast.n_successful, s.contrast.n_unknown) == (1, 1, 1)
    assert s.contrast.modes[0].in_failed.count == 1


def test_the_fatal_threshold_is_plus_fifty_percent_inclusive():
    # Mode A: 15/100 failed vs 10/100 successful = exactly +50% -> fatal; mode B: 14/100 -> +40% -> benign.
    labels = np.zeros((200, 3), dtype=bool)
    labels[:15, 0] = labels[100:110, 0] = True
    labels[:14, 1] = labels[100:110, 1] = True
    contrast = outcome_contrast(make(labels, [FAILURE] * 100 + [SUCCESS] * 100))
    a, b, c = contrast.modes
    assert a.relative_increase.value == pytest.approx(0.5) and a.classification == "fatal"
    assert b.relative_increase.value == pytest.approx(0.4) and b.classification == "benign"
    assert c.classification == "not_observed"
    assert "intervals_overlap" in a.warnings


def test_deciles_use_integer_arithmetic_and_steps_outside_the_trace_are_invalid():
    ev = Evidence(
        trace=np.zeros(6, dtype=np.intp),
        mode=np.zeros(6, dtype=np.intp),
        step=np.array([0, 3, 7, 9, 10, -1]),
        step_count=np.array([10, 30, 70, 10, 10, 10]),
        agent=factorize(["a", "a", "b", "", "", ""]),
    )
    p = evidence_positions(make([[1, 0, 0]], [FAILURE], evidence=ev))
    # 3/30 and 7/70 are exactly 0.1: decile 1, not 0 (floating point would give 0.09999...).
    assert p.deciles == (1, 2, 0, 0, 0, 0, 0, 0, 0, 1)
    assert (p.n_points, p.n_invalid) == (4, 2)
    assert [(a.agent, a.count) for a in p.agents] == [("a", 2), ("(unnamed agent)", 1), ("b", 1)]


def test_failure_vectors_break_ties_by_taxonomy_order():
    labels = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 1, 0], [0, 0, 0]]
    v = failure_vectors(make(labels, [FAILURE] * 5))
    assert [x.modes for x in v.top] == [("A",), ("A", "B"), ("B",), ("C",)]
    assert (v.n_with_modes, v.n_distinct) == (4, 4)


def test_the_selection_keeps_the_compared_batches_out_of_the_figures_only():
    labels = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    ev = Evidence(
        np.array([0, 2]), np.array([0, 2]), np.array([1, 1]), np.array([4, 4]), factorize(["x", "y"])
    )
    data = make(
        labels,
        [FAILURE, SUCCESS, FAILURE],
        batch=factorize(["a", "b", "b"]),
        evidence=ev,
        selection=np.array([True, False, False]),
    )
    s = compute_signatures(data, compare=("a", "b"))
    assert s.n_traces == 1 and s.positions.n_points == 1
    assert (s.comparison.n_a, s.comparison.n_b) == (1, 2)
    assert s.comparison.modes[1].b.count == 1


def test_a_comparison_with_an_unknown_batch_is_undefined_not_an_error():
    s = compute_signatures(make([[1, 0, 0]], [FAILURE], batch=factorize(["a"])), compare=("a", "zzz"))
    assert s.comparison.n_b == 0
    assert s.comparison.modes[0].difference.undefined_reason == "no traces in zzz"
    assert build_charts(s)["comparison"]["rows"][0]["interval"] == "\u2013"


def test_inputs_are_validated():
    with pytest.raises(ValueError, match="labels must be"):
        make(np.zeros((2, 2)), [1, 1])
    with pytest.raises(ValueError, match="outcome codes"):
        make(np.zeros((1, 3)), [5])
    with pytest.raises(ValueError, match="one entry per trace"):
        make(np.zeros((2, 3)), [1, 0], groups={"model": factorize(["x"])})


def test_charts_and_text_render_for_a_random_project():
    rng = np.random.default_rng(3)
    labels = rng.random((300, 3)) < [0.3, 0.1, 0.05]
    outcome = rng.choice([FAILURE, SUCCESS], 300).astype(np.int8)
    groups = {"model": factorize(rng.choice(["m1", "m2"], 300))}
    s = compute_signatures(
        make(labels, outcome, groups=groups, batch=factorize(rng.choice(["x", "y"], 300))), compare=("x", "y")
    )
    charts = build_charts(s)
    assert len(charts["heatmap"]["dimensions"]) == 1
    assert all(bar.width.endswith("%") for bar in charts["prevalence"])
    text = render_text(s, "gold")
    assert "BENIGN OR FATAL" in text and "COMPARISON x (n=" in text


def test_jaccard_is_zero_when_only_one_of_two_modes_occurs():
    # A occurs in two traces, B in one, C never: A and C share none of A's traces (Jaccard 0, lift unknown);
    # C with itself is 0 / 0 and stays undefined.
    from annotator.signatures.structure import cooccurrence

    c = cooccurrence(make([[1, 0, 0], [1, 1, 0], [0, 0, 0]], [FAILURE, FAILURE, SUCCESS]))
    a, b, never = 0, 1, 2
    assert c.jaccard[a][b] == pytest.approx(1 / 2)
    assert (c.jaccard[a][never], c.jaccard[never][b]) == (0.0, 0.0)
    assert c.jaccard[never][never] is None
    assert (c.lift[a][never], c.lift[never][b]) == (None, None)
