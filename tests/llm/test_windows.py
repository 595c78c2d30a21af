"""Windows of a long trace (pure): every step in some window, in order, overlapping, each within the budget;
evidence outside a window refused; the merge rule; the "cut" option as before."""

from __future__ import annotations

import itertools
import re

import pytest

from annotator.llm.parse import MalformedAnswer, ParsedAnswer, ParsedLabel
from annotator.llm.prompt import (
    DEFAULT_INSTRUCTIONS,
    PromptMode,
    PromptStep,
    PromptTaxonomy,
    PromptTrace,
    build_messages,
)
from annotator.llm.windows import (
    CUT,
    PromptWindow,
    check_window,
    join_bounded,
    merge_answers,
    plan_windows,
    window_messages,
)

TAXONOMY = PromptTaxonomy(
    name="Tiny",
    single_primary=False,
    modes=(PromptMode("M-1", "Loops", "Repeats"), PromptMode("M-2", "Gives up", "Stops early")),
)
STEP = re.compile(r"^### Step (\d+) ", re.MULTILINE)


def steps(n: int, size: int = 100) -> list[PromptStep]:
    return [PromptStep(i, agent="a", content=f"<step {i}>" + "x" * (size + (i * 37) % 200)) for i in range(n)]


def shown(window: PromptWindow) -> list[int]:
    return [int(number) for number in STEP.findall(window.messages[1]["content"])]


@pytest.mark.parametrize(("n", "budget", "overlap"), [(2_000, 20_000, 2), (300, 5_000, 0), (500, 8_000, 3)])
def test_every_step_is_in_a_window_in_order_overlapping_and_within_the_budget(n, budget, overlap):
    trace = PromptTrace("t", steps(n), task="Fix the outage", outcome="failure")
    windows = window_messages(TAXONOMY, trace, DEFAULT_INSTRUCTIONS, budget=budget, overlap=overlap)
    assert len(windows) > 1
    seen: list[int] = []
    for k, window in enumerate(windows, start=1):
        numbers = shown(window)
        assert numbers == list(range(window.first, window.last + 1))  # consecutive whole steps
        assert (window.number, window.of) == (k, len(windows))
        body = window.messages[1]["content"].split("\n\n", 1)[1]
        assert len(body) <= budget + 100  # the steps within the budget; the closing line aside
        if k > 1:
            previous = windows[k - 2]
            assert window.first == previous.last + 1 - overlap  # shares `overlap` steps, moves forward
            assert window.last > previous.last
        seen.extend(numbers)
    assert sorted(set(seen)) == list(range(n)) and windows[0].first == 0 and windows[-1].last == n - 1


def test_each_window_says_which_steps_it_shows_in_the_traces_own_numbering():
    trace = PromptTrace("t-9", steps(400), task="Restart the pod", outcome="failure")
    windows = window_messages(TAXONOMY, trace, DEFAULT_INSTRUCTIONS, budget=10_000)
    system, user = windows[1].messages
    assert system == windows[0].messages[0]  # one system message for every window (prefix caching)
    text = user["content"]
    assert "Trace t-9" in text and "Task: Restart the pod" in text and "Recorded outcome: failure" in text
    assert "The trace has 400 steps, numbered 0 to 399." in text
    assert f"This is window 2 of {len(windows)}: steps {windows[1].first} to {windows[1].last}." in text
    assert "Step numbers are the trace's own" in text
    assert "truncated" not in text


def test_a_trace_that_fits_is_one_request_exactly_as_before():
    trace = PromptTrace("t", steps(5), task="x")
    (window,) = window_messages(TAXONOMY, trace, DEFAULT_INSTRUCTIONS, budget=60_000)
    assert not window.windowed and (window.first, window.last) == (0, 4)
    assert window.messages == build_messages(TAXONOMY, trace, DEFAULT_INSTRUCTIONS, budget=60_000)


def test_the_cut_option_is_todays_single_request_with_its_middle_cut():
    trace = PromptTrace("t", steps(2_000), task="x")
    (window,) = window_messages(TAXONOMY, trace, DEFAULT_INSTRUCTIONS, budget=20_000, long_traces=CUT)
    assert window.messages == build_messages(TAXONOMY, trace, DEFAULT_INSTRUCTIONS, budget=20_000)
    assert "omitted" in window.messages[1]["content"] and not window.windowed


def test_a_single_oversized_step_gets_a_window_of_its_own_cut_inside_with_the_marker():
    many = steps(20)
    many[7] = PromptStep(7, content="HEAD" + "y" * 50_000 + "TAIL")
    trace = PromptTrace("t", many)
    windows = window_messages(TAXONOMY, trace, DEFAULT_INSTRUCTIONS, budget=4_000)
    holding = [window for window in windows if 7 in shown(window)]
    assert holding and all(len(window.messages[1]["content"]) < 6_000 for window in windows)
    text = holding[0].messages[1]["content"]
    assert "HEAD" in text and "TAIL" in text and "characters truncated" in text
    assert sorted({s for window in windows for s in shown(window)}) == list(range(20))


def test_plan_windows_always_moves_forward_even_when_the_overlap_is_large():
    sizes = [900] * 50  # overlap 20 steps would carry 18,000 characters: capped at half the budget
    plan = plan_windows(sizes, 4_000, overlap=20)
    assert plan[0] == (0, 4) and plan[-1][1] == 50
    for (start, end), (next_start, next_end) in itertools.pairwise(plan):
        assert start < next_start < end < next_end
        assert sum(sizes[next_start:end]) <= 2_000
    assert plan_windows([], 4_000, 2) == [(0, 0)]
    assert plan_windows([10_000, 10, 10_000], 4_000, 2) == [(0, 1), (1, 2), (2, 3)]


def window(first: int, last: int, number: int = 2, of: int = 3) -> PromptWindow:
    return PromptWindow(number, of, first, last, [])


def test_evidence_outside_the_window_is_malformed():
    inside = ParsedAnswer((ParsedLabel("M-1", (100, 150)),))
    check_window(inside, window(100, 150))
    with pytest.raises(
        MalformedAnswer, match=r"step 1900 cited for M-1 is not in this window: cite only steps 100 to 150"
    ):
        check_window(ParsedAnswer((ParsedLabel("M-1", (120, 1900)),)), window(100, 150))
    check_window(
        ParsedAnswer((ParsedLabel("M-1", (1900,)),)), window(0, 10, 1, 1)
    )  # one window: the whole trace


def test_the_merge_rule_union_of_modes_and_steps_reasons_joined():
    first = ParsedAnswer((ParsedLabel("M-1", (3, 5), reason="repeats the search"),), summary="loops early")
    second = ParsedAnswer((), summary="No failure here")
    third = ParsedAnswer(
        (
            ParsedLabel("M-2", (1900,), reason="gives up"),
            ParsedLabel("M-1", (5, 1850), reason="repeats again"),
        ),
        summary="gives up at the end",
    )
    merged = merge_answers([first, second, third], single_primary=False)
    assert [label.code for label in merged.labels] == ["M-1", "M-2"]
    m1, m2 = merged.labels
    assert m1.steps == (3, 5, 1850) and m1.reason == "repeats the search; repeats again" and not m1.primary
    assert m2.steps == (1900,) and m2.reason == "gives up"
    assert merged.summary == "loops early; gives up at the end"  # the windows that found a failure
    assert not merged.no_failure


def test_no_failure_only_when_every_window_says_so():
    quiet = [ParsedAnswer((), summary="Nothing wrong"), ParsedAnswer((), summary="Nothing wrong")]
    assert merge_answers(quiet, single_primary=False) == ParsedAnswer((), summary="Nothing wrong")
    one = [*quiet, ParsedAnswer((ParsedLabel("M-2", (9,)),))]
    assert not merge_answers(one, single_primary=False).no_failure


def test_single_primary_the_mode_most_windows_marked_primary_ties_to_the_earliest():
    def answer(*labels):
        return ParsedAnswer(tuple(ParsedLabel(code, (1,), primary=primary) for code, primary in labels))

    votes = [answer(("M-1", True)), answer(("M-2", True), ("M-1", False)), answer(("M-2", True))]
    merged = merge_answers(votes, single_primary=True)
    assert [(label.code, label.primary) for label in merged.labels] == [("M-1", False), ("M-2", True)]
    tie = [answer(("M-2", True)), answer(("M-1", True), ("M-2", False)), ParsedAnswer(())]
    merged = merge_answers(tie, single_primary=True)
    assert [(label.code, label.primary) for label in merged.labels] == [("M-2", True), ("M-1", False)]
    assert sum(label.primary for label in merged.labels) == 1


def test_merged_texts_are_bounded_and_distinct():
    assert join_bounded(["a", "", "a", " b "]) == "a; b"
    long = join_bounded(["x" * 400, "y" * 400])
    assert len(long) == 500 and long.endswith("…")
    with pytest.raises(ValueError):
        merge_answers([], single_primary=False)


def test_merged_confidence_is_the_least_sure_window():
    from annotator.llm.parse import ParsedAnswer
    from annotator.llm.windows import merge_answers

    sure = ParsedAnswer(labels=(), summary="fine", confidence=0.9)
    doubtful = ParsedAnswer(labels=(), summary="fine", confidence=0.4)
    silent = ParsedAnswer(labels=(), summary="fine", confidence=None)
    assert merge_answers([sure, doubtful, silent], single_primary=False).confidence == 0.4
    assert merge_answers([silent, silent], single_primary=False).confidence is None
