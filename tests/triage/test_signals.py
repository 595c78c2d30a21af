"""The three triage signals (pure): each orders traces as its rule says."""

from __future__ import annotations

import pytest

from annotator.triage.signals import (
    ModelAnswer,
    TriageInputs,
    gold_disagreement,
    ranking,
    rare_modes,
    scores,
    uncertain,
)

MODES = ("A", "B", "C")


def answer(trace, modes=(), confidence=None, rater="llm:m"):
    return ModelAnswer(trace, rater, frozenset(modes), confidence)


def inputs(answers, gold=None, human=None, group=None):
    return TriageInputs(
        answers=tuple(answers),
        gold={t: frozenset(m) for t, m in (gold or {}).items()},
        human={t: frozenset(m) for t, m in (human or {}).items()},
        group=group or {},
    )


def order(found):
    return [score.trace for score in ranking(found)]


def test_the_least_confident_answer_comes_first():
    found = uncertain(inputs([answer(1, "A", 0.9), answer(2, "A", 0.2), answer(3, "", 0.6)]))
    assert order(found) == [2, 3, 1]
    assert found[2].value == pytest.approx(0.8)
    assert "confidence 0.20" in found[2].reason


def test_two_models_that_disagree_count_as_uncertain_even_without_confidence():
    found = uncertain(
        inputs(
            [
                answer(1, "A", rater="llm:a"),
                answer(1, "A", rater="llm:b"),  # agree
                answer(2, "A", rater="llm:a"),
                answer(2, "B", rater="llm:b"),  # nothing shared
                answer(3, "AB", rater="llm:a"),
                answer(3, "A", rater="llm:b"),  # half
                answer(4, "A"),  # one model, no confidence: unknown
            ]
        )
    )
    assert order(found) == [2, 3, 1]
    assert 4 not in found
    assert found[2].value == 1.0 and found[3].value == 0.5 and found[1].value == 0.0
    assert "disagree on A, B" in found[2].reason


def test_disagreement_with_gold_on_the_same_batch_is_counted_per_call():
    # Batch 1: when the model says A present, gold says otherwise 2 times of 3. Batch 2: it is always right.
    answers = [answer(t, "A") for t in (10, 11, 12)] + [answer(t, "A") for t in (20, 21)]
    gold = {10: "", 11: "", 12: "A", 20: "A", 21: "A"}
    answers += [answer(13, "A"), answer(22, "A"), answer(30, "A")]  # to rank: no gold of their own
    group = {10: 1, 11: 1, 12: 1, 13: 1, 20: 2, 21: 2, 22: 2, 30: 3}
    found = gold_disagreement(inputs(answers, gold=gold, group=group), MODES)
    assert found[13].value == pytest.approx(2 / 3)  # B and C absent: never contradicted in batch 1
    assert found[22].value == 0.0
    assert 30 not in found  # no gold trace in its batch: nothing to go by
    assert order({t: found[t] for t in (13, 22)}) == [13, 22]
    assert "wrong on 2 of 3" in found[13].reason


def test_a_traces_own_gold_is_left_out_of_its_estimate():
    answers = [answer(1, "A"), answer(2, "A")]
    found = gold_disagreement(inputs(answers, gold={1: "", 2: "A"}, group={1: 0, 2: 0}), MODES)
    # Trace 1 is judged by trace 2 only (right there), trace 2 by trace 1 only (wrong there).
    assert found[1].value == 0.0
    assert found[2].value == 1.0


def test_modes_people_rarely_marked_come_first():
    human = {1: "A", 2: "A", 3: "AB", 4: ""}
    answers = [answer(10, "A"), answer(11, "B"), answer(12, "C"), answer(13, "")]
    found = rare_modes(inputs(answers, human=human, gold={5: "A"}))
    assert order(found) == [12, 11, 10, 13]
    assert found[12].value == 1.0  # never marked by a person
    assert found[11].value == 0.5  # once
    assert found[10].value == 0.2  # four times (three humans' traces and one gold)
    assert found[13].value == 0.0
    assert "C, which people marked on 0 traces" in found[12].reason


def test_equal_scores_keep_trace_order_and_an_unknown_signal_is_refused():
    found = uncertain(inputs([answer(3, "A", 0.5), answer(1, "A", 0.5), answer(2, "A", 0.5)]))
    assert order(found) == [1, 2, 3]
    with pytest.raises(ValueError, match="unknown triage signal"):
        scores("vibes", inputs([]), MODES)
