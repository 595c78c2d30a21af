"""The gate's numbers: kappa equal to statsmodels on the raters' table, coverage, pass and fail."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from annotator.discovery.gate_stats import RaterAnswer, gate

RATERS = ("m1", "m2", "m3")


def _answers(table: np.ndarray, code: str = "NEW") -> list[RaterAnswer]:
    return [
        RaterAnswer(trace=i, rater=RATERS[k], codes=frozenset({code} if table[i, k] else set()))
        for i in range(table.shape[0])
        for k in range(table.shape[1])
    ]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_it_gives_the_kappa_statsmodels_gives_on_the_raters_table(seed):
    rng = np.random.default_rng(seed)
    truth = rng.random(60) < 0.3
    table = np.array([[t ^ (rng.random() < 0.1) for _ in RATERS] for t in truth], dtype=int)
    result = gate(
        _answers(table), traces=list(range(60)), failed=[], raters=RATERS, candidates=["NEW"], current=[]
    )
    counts, _ = aggregate_raters(table)
    expected = fleiss_kappa(counts, method="fleiss")
    found = result["candidates"][0]
    assert found["kappa"] == pytest.approx(expected, abs=1e-9)
    low, high = found["interval"]
    assert low <= found["kappa"] <= high
    assert found["prevalence"] == pytest.approx(table.mean(), abs=1e-12)


def test_a_candidate_applied_inconsistently_fails_and_its_disagreements_are_listed():
    rng = np.random.default_rng(7)
    table = (rng.random((40, 3)) < 0.5).astype(int)  # three coins: no agreement beyond chance
    result = gate(
        _answers(table), traces=list(range(40)), failed=[], raters=RATERS, candidates=["NEW"], current=[]
    )
    found = result["candidates"][0]
    assert found["kappa"] < 0.75 and not found["passes"]
    split = [i for i in range(40) if 0 < table[i].sum() < 3]
    assert found["disagreement_count"] == len(split)
    assert {v["rater"] for v in found["disagreements"][0]["votes"]} == set(RATERS)


def test_coverage_counts_failed_traces_a_majority_coded():
    answers = [
        RaterAnswer(0, "m1", frozenset({"FM-1.3"})),
        RaterAnswer(0, "m2", frozenset({"FM-1.3"})),
        RaterAnswer(0, "m3", frozenset()),
        RaterAnswer(1, "m1", frozenset({"NEW"})),
        RaterAnswer(1, "m2", frozenset()),
        RaterAnswer(1, "m3", frozenset()),
    ]
    result = gate(
        answers,
        traces=[0, 1],
        failed=[0, 1],
        raters=RATERS,
        candidates=["NEW"],
        current=["FM-1.3"],
        coverage_min=0.5,
        n_boot=0,
    )
    assert result["coverage"] == 0.5
    assert result["codebook_passes"]
    assert not result["candidates"][0]["passes"]
