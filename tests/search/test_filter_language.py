"""The filter language alone (no database): what a script writes in a query string, and what it gets back."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from annotator.search.filters import FilterError, TraceFilter, parse, snippet


def test_every_parameter_is_read_and_round_trips():
    query = (
        "batch=b1&benchmark=swe&model=gpt-4o&system=AG2&outcome=failure&score_min=0.5&score_max=1"
        "&steps_min=2&steps_max=30&meta=split:test&meta=lang:en&state=gold&gold_mode=FM-1.3"
        "&human_mode=FM-1.1&llm_mode=FM-2.2&disputed_mode=FM-1.5&evidence_kind=tool_call"
        "&evidence_tool=bash&tool=bash&tool_args=kubectl&q=kubectl+delete&ordering=-score"
    )
    found = parse(QueryDict(query))
    assert found.meta == (("split", "test"), ("lang", "en"))
    assert found.score_min == 0.5 and found.steps_max == 30
    assert parse(_qd(found.to_params())) == found


def _qd(pairs):
    query = QueryDict(mutable=True)
    for key, value in pairs:
        query.appendlist(key, value)
    return query


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("outcome=maybe", "outcome"),
        ("score_min=high", "score_min"),
        ("score_min=nan", "score_min"),
        ("steps_min=-3", "steps_min"),
        ("steps_min=9&steps_max=2", "steps_max"),
        ("meta=nokey", "meta"),
        ("state=done", "state"),
        ("gold_mode=<script>", "gold_mode"),
        ("evidence_kind=banana", "evidence_kind"),
        ("ordering=password", "ordering"),
        ("ordering=rank", "ordering"),
        ("model=a&model=b", "model"),
        ("q=" + "x" * 201, "q"),
    ],
)
def test_errors_name_the_parameter(query, param):
    with pytest.raises(FilterError) as error:
        parse(QueryDict(query))
    assert error.value.param == param


def test_unknown_parameters_are_left_to_the_caller():
    assert parse(QueryDict("page=3&format=json")) == TraceFilter()


def test_search_orders_by_rank_unless_told():
    assert parse(QueryDict("q=boom")).order_key == ("rank", True)
    assert parse(QueryDict("q=boom&ordering=external_id")).order_key == ("external_id", False)
    assert parse(QueryDict("")).order_key == ("", False)


def test_label_filters_are_the_ones_that_reveal_labels():
    assert not parse(QueryDict("q=x&model=m&state=unassigned&tool=bash")).reveals_labels
    for query in (
        "gold_mode=FM-1.1",
        "human_mode=FM-1.1",
        "llm_mode=FM-1.1",
        "disputed_mode=FM-1.1",
        "evidence_kind=error",
        "state=gold",
        "state=in_adjudication",
    ):
        assert parse(QueryDict(query)).reveals_labels, query


def test_snippet_marks_hits_and_leaves_escaping_to_the_caller():
    text = "x" * 200 + " then <b>kubectl</b> DELETE pod " + "y" * 200
    segments = snippet(text, ["kubectl", "delete"])
    hits = [t for t, hit in segments if hit]
    assert hits == ["kubectl", "DELETE"]
    assert segments[0] == ("…", False) and segments[-1] == ("…", False)
    assert "<b>" in "".join(t for t, _ in segments)  # raw text: the template escapes it
