"""Parsing the model's answer (pure): lenient about wrapping, strict about meaning."""

from __future__ import annotations

import json

import pytest

from annotator.llm.parse import MalformedAnswer, parse_answer

CODES = ("FM-1.1", "FM-1.3", "FM-2.2")


def parse(payload, *, single=False, n_steps=10):
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return parse_answer(text, codes=CODES, n_steps=n_steps, single_primary=single)


def test_it_reads_present_modes_with_steps_and_one_line_reasons():
    answer = parse(
        {"modes": {"FM-1.1": {"present": False}, "FM-1.3": {"present": True, "steps": [7, "2", 7], "reason": "Loops.\nmore"}},
         "summary": "It loops"}
    )  # fmt: skip
    assert [(label.code, label.steps, label.reason) for label in answer.labels] == [
        ("FM-1.3", (2, 7), "Loops.")
    ]
    assert answer.note == "It loops" and not answer.no_failure


def test_code_fences_and_prose_around_the_object_are_ignored():
    body = json.dumps({"modes": {"FM-2.2": {"present": True, "steps": [1], "reason": "r"}}})
    assert parse(f"```json\n{body}\n```").labels[0].code == "FM-2.2"
    assert parse(f"Sure! Here it is:\n{body}\nHope this helps.").labels[0].code == "FM-2.2"


def test_a_list_of_modes_is_accepted_and_nothing_present_means_no_failure():
    answer = parse({"modes": [{"code": "FM-1.1", "present": False}], "summary": "fine"})
    assert answer.no_failure and answer.labels == ()


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ("not json at all", "no JSON object"),
        ("", "empty"),
        ('{"modes": {"FM-1.1": {"present": true,}', "not valid JSON"),
        ([1, 2], "must be a JSON object"),
        ({"modes": {"FM-9.9": {"present": True}}}, "not a mode code"),
        ({"modes": {"FM-1.1": {"present": True, "steps": [10]}}}, "step 10 cited for FM-1.1 does not exist"),
        ({"modes": {"FM-1.1": {"present": True, "steps": [-1]}}}, "does not exist"),
        ({"modes": {"FM-1.1": {"present": True, "steps": ["four"]}}}, "step numbers"),
        ({"modes": {"FM-1.1": {"present": "yes"}}}, "true or false"),
        ({"modes": {"FM-1.1": {"present": True, "primary": True}, "FM-1.3": {"present": True, "primary": True}}}, "only one mode may be primary"),
        ({"modes": [{"code": "FM-1.1"}, {"code": "FM-1.1"}]}, "appears twice"),
        ({"no_failure": True, "modes": {"FM-1.1": {"present": True}}}, "no_failure"),
        ({"summary": "x"}, '"modes"'),
    ],
)  # fmt: skip
def test_malformed_answers_say_why(payload, problem):
    with pytest.raises(MalformedAnswer, match=problem):
        parse(payload)


def test_single_primary_needs_exactly_one_primary():
    two = {"modes": {"FM-1.1": {"present": True}, "FM-1.3": {"present": True}}}
    with pytest.raises(MalformedAnswer, match="exactly one"):
        parse(two, single=True)
    one = parse({"modes": {"FM-1.1": {"present": True}}}, single=True)
    assert one.labels[0].primary  # a lone present mode is the primary
    chosen = parse(
        {"modes": {"FM-1.1": {"present": True}, "FM-1.3": {"present": True, "primary": True}}}, single=True
    )
    assert [label.code for label in chosen.labels if label.primary] == ["FM-1.3"]


def test_multi_label_answers_carry_no_primary():
    answer = parse({"modes": {"FM-1.1": {"present": True, "primary": True}}})
    assert not answer.labels[0].primary


def test_a_confidence_from_0_to_1_is_kept_and_its_absence_is_unknown():
    present = {"modes": {"FM-1.1": {"present": True}}}
    assert parse({**present, "confidence": 0.25}).confidence == 0.25
    assert parse({**present, "confidence": 1}).confidence == 1.0
    assert parse({**present, "confidence": 0}).confidence == 0.0
    assert parse(present).confidence is None
    assert parse({**present, "confidence": None}).confidence is None


@pytest.mark.parametrize(
    "value", ["0.9", "high", True, 1.5, -0.1, [0.5], {"v": 1}, "NaN"]
)  # fmt: skip
def test_a_nonsense_confidence_makes_the_answer_malformed(value):
    text = json.dumps({"modes": {"FM-1.1": {"present": True}}, "confidence": value})
    if value == "NaN":
        text = text.replace('"NaN"', "NaN")  # JSON's non-standard NaN, which Python's parser accepts
    with pytest.raises(MalformedAnswer, match='"confidence"'):
        parse(text)
