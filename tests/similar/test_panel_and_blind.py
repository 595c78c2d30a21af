"""The viewer's "similar traces" panel, and blind labelling: an annotator is ranked among, and shown, only
the traces they may already open, and a trace they may not open answers as if it did not exist."""

from __future__ import annotations

import pytest

from annotator.models import Assignment
from tests.similar.conftest import build, client_for

URL = "/api/projects/demo-project/traces/"


@pytest.fixture
def annotator_world(project, planted, annotator_a):
    """Annotator A holds the target, its second twin and two noise traces; not twin-1 nor twin-3."""
    mine = [planted.target, planted.twins[1], *planted.noise[:2]]
    for trace in mine:
        Assignment.objects.create(project=project, trace=trace, annotator=annotator_a)
    build(project)
    return mine


def test_an_annotator_is_ranked_only_among_the_traces_they_may_open(
    project, planted, annotator_a, annotator_world
):
    client = client_for(annotator_a)
    body = client.get(URL, {"like": planted.target.pk}).json()
    assert body["results"][0]["id"] == planted.twins[1].pk
    assert {row["id"] for row in body["results"]} == {t.pk for t in annotator_world[1:]}
    assert body["count"] == 3


def test_a_trace_an_annotator_may_not_open_gives_no_hint(project, planted, annotator_a, annotator_world):
    client = client_for(annotator_a)
    hidden = planted.twins[0].pk
    answer = client.get(URL, {"like": hidden})
    assert answer.status_code == 400 and answer.json()["fields"]["like"] == [
        f"no trace {hidden} in this project"
    ]
    assert client.get(f"/p/{project.slug}/t/{hidden}/similar/").status_code == 404
    panel = client.get(f"/p/{project.slug}/t/{planted.target.pk}/similar/")
    text = panel.content.decode()
    assert panel.status_code == 200 and "twin-2" in text
    for other in ("twin-1", "twin-3", "noise-2"):
        assert other not in text
    # Links go to the annotator's own assignment (the way they open a trace), never the review page.
    slot = Assignment.objects.get(project=project, trace=planted.twins[1], annotator=annotator_a)
    assert f"/p/{project.slug}/a/{slot.pk}/" in text and "/review/" not in text
    assert "Compute similar traces" not in text and "Rebuild" not in text


def test_owners_see_neighbours_with_review_links_and_may_rebuild(project, planted, owner, adjudicator):
    client = client_for(owner)
    panel = client.get(f"/p/{project.slug}/t/{planted.target.pk}/similar/").content.decode()
    assert "not computed for this project yet" in panel and "Compute similar traces" in panel
    build(project)
    panel = client.get(f"/p/{project.slug}/t/{planted.target.pk}/similar/").content.decode()
    assert panel.index("twin-1") < panel.index("twin-2") < panel.index("twin-3")
    assert f"/p/{project.slug}/t/{planted.twins[0].pk}/review/" in panel
    assert f"?like={planted.target.pk}" in panel and "Rebuild" in panel
    adjudicators = client_for(adjudicator).get(f"/p/{project.slug}/t/{planted.target.pk}/similar/")
    assert adjudicators.status_code == 200 and "Rebuild" not in adjudicators.content.decode()
    assert (
        client_for(adjudicator).post(f"/p/{project.slug}/t/{planted.target.pk}/similar/build/").status_code
        == 403
    )


def test_an_owners_build_request_shows_its_progress(
    project, planted, owner, django_capture_on_commit_callbacks
):
    client = client_for(owner)
    with django_capture_on_commit_callbacks(execute=False) as sent:  # the worker has not picked it up yet
        answer = client.post(
            f"/p/{project.slug}/t/{planted.target.pk}/similar/build/", headers={"HX-Request": "true"}
        )
    assert answer.status_code == 200 and len(sent) == 1
    text = answer.content.decode()
    assert "Building the representation" in text and f"0 / {len(planted.all)} traces" in text
    assert 'hx-trigger="every 2s"' in text  # the panel polls until the build ends
    state = client.get("/api/projects/demo-project/similar/").json()
    assert state["building"]["status"] == "queued" and state["current"] is None
    sent[0]()  # the worker runs it (eager)
    state = client.get("/api/projects/demo-project/similar/").json()
    assert state["current"]["traces_done"] == len(planted.all) and state["building"] is None
