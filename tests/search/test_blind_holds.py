"""Blind holds on the trace filters: members may search content and filter by trace data and their own
work; filters on other raters' labels, the gold or the adjudication state are refused to annotators and
viewers, and to an owner still blind on a trace the filter would say something about."""

from __future__ import annotations

import pytest

from annotator.models import Assignment
from tests.factories import UserFactory, add_member

API = "/api/projects/demo-project/traces/"
PAGE = "/p/demo-project/traces/"
LABEL_QUERIES = [
    "gold_mode=FM-1.3",
    "human_mode=FM-1.1",
    "llm_mode=FM-2.2",
    "disputed_mode=FM-1.1",
    "evidence_kind=tool_call",
    "evidence_tool=bash",
    "state=gold",
    "state=in_adjudication",
]


@pytest.fixture
def viewer(project):
    user = UserFactory(username="vera-viewer")
    add_member(project, user, "viewer")
    return user


@pytest.mark.parametrize("query", LABEL_QUERIES)
@pytest.mark.parametrize("who", ["annotator_a", "viewer"])
def test_label_filters_are_refused_to_annotators_and_viewers(client, world, request, who, query):
    client.force_login(request.getfixturevalue(who))
    response = client.get(f"{API}?{query}")
    assert response.status_code == 403
    param = query.split("=")[0]
    assert param in response.json()["detail"] and "blind" in response.json()["detail"]


def test_annotators_search_content_and_their_own_traces_only(client, world, annotator_a, annotator_b):
    client.force_login(annotator_a)
    body = client.get(f"{API}?q=kubectl&state=in_progress").json()
    assert body["count"] == 0  # the two kubectl traces are complete; ana's open one has no kubectl
    names = [row["external_id"] for row in client.get(f"{API}?q=kubectl").json()["results"]]
    assert sorted(names) == ["sre-1", "sre-2"]
    assert client.get(f"{API}?model=gpt-4o").json()["count"] == 2  # sre-1 and web-2: hers, not web-1
    client.force_login(annotator_b)
    assert client.get(f"{API}?model=gpt-4o").json()["count"] == 1


def test_an_owner_still_annotating_is_refused_where_the_filter_reaches_that_trace(client, world, owner):
    add_member(world.project, owner, "annotator")
    Assignment.objects.create(project=world.project, trace=world.disputed, annotator=owner)
    client.force_login(owner)
    response = client.get(f"{API}?gold_mode=FM-1.3")
    assert response.status_code == 403
    assert "1 trace(s) to annotate" in response.json()["detail"]
    # A filter whose scope leaves that trace out reveals nothing about it.
    assert client.get(f"{API}?gold_mode=FM-1.3&batch=beta").status_code == 200
    assert client.get(f"{API}?gold_mode=FM-1.3&model=gpt-4o").json()["count"] == 1
    assert client.get(f"{API}?q=kubectl").status_code == 200  # content stays open


def test_the_page_shows_the_refusal_where_the_results_would_be(client, world, owner):
    add_member(world.project, owner, "annotator")
    Assignment.objects.create(project=world.project, trace=world.disputed, annotator=owner)
    client.force_login(owner)
    response = client.get(f"{PAGE}?disputed_mode=FM-1.1")
    assert response.status_code == 403
    text = response.content.decode()
    assert 'role="alert"' in text and "disputed_mode" in text and "sre-2" not in text
    partial = client.get(f"{PAGE}?disputed_mode=FM-1.1", headers={"HX-Request": "true"})
    assert (
        partial.status_code == 403 and b"<html" not in partial.content and b'role="alert"' in partial.content
    )


def test_the_page_stays_closed_to_annotators(client, world, annotator_a):
    client.force_login(annotator_a)
    assert client.get(f"{PAGE}?q=kubectl").status_code == 403
