"""Discussions: comments on a trace or a mode pointing at steps, @mentions, blind until one's own submit, the
threads a closed round opens for its disagreements, and the decisions they end with."""

from __future__ import annotations

import pytest

from annotator.models import Assignment, Comment, Mention, Thread
from annotator.services.rounds import TraceChoice, do_close_round, do_open_round
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit

HTMX = {"HX-Request": "true"}


@pytest.fixture
def trace(project):
    return project_trace(project, n_steps=6)


def url(project, trace):
    return f"/p/{project.slug}/t/{trace.pk}/discussion/"


def test_an_annotator_joins_the_discussion_only_after_submitting(
    client, project, trace, annotator_a, annotator_b, owner
):
    submit(project, trace, annotator_b, {"FM-1.1": [2]})
    client.force_login(owner)
    response = client.post(
        url(project, trace),
        {"body": "Step 2 is the real failure, @ben-annotator?", "mode": "FM-1.1", "step": "2"},
        headers=HTMX,
    )
    assert response.status_code == 200 and "Step 2 is the real failure" in response.content.decode()
    Assignment.objects.get_or_create(project=project, trace=trace, annotator=annotator_a)
    client.force_login(annotator_a)  # assigned, not yet submitted: blind
    assert client.get(url(project, trace)).status_code == 403
    assert client.post(url(project, trace), {"body": "hello"}).status_code == 403
    submit(project, trace, annotator_a, {"FM-2.1": [1]})
    page = client.get(url(project, trace)).content.decode()
    assert "Step 2 is the real failure" in page and "step #2" in page


def test_mentions_notify_members_only_and_the_mentions_page_marks_them_read(
    client, project, trace, owner, annotator_b, outsider
):
    submit(project, trace, annotator_b, {"FM-1.1": [2]})
    client.force_login(owner)
    client.post(
        url(project, trace),
        {"body": f"@{annotator_b.username} and @{outsider.username}, see step 3", "step": "3"},
    )
    assert list(Mention.objects.values_list("user__username", flat=True)) == [annotator_b.username]
    client.force_login(annotator_b)
    page = client.get("/mentions/").content.decode()
    assert "see step 3" in page and "new" in page
    assert not Mention.objects.filter(read_at__isnull=True).exists()


def test_a_refused_comment_says_why_in_the_form(client, project, trace, owner):
    client.force_login(owner)
    response = client.post(url(project, trace), {"body": "look", "step": "99"}, headers=HTMX)
    assert response.status_code == 400
    assert "not a step of this trace (steps #0 to #5)" in response.content.decode()
    assert client.post(url(project, trace), {"body": "  "}, headers=HTMX).status_code == 400
    assert not Thread.objects.exists()


def test_a_plain_comment_form_goes_back_to_its_page_with_the_outcome(
    client, project, annotator_a, annotator_b, owner
):
    """The round's disagreements page posts a plain form: the answer is that page again (not a bare
    fragment), with "Comment added." or why not; `next` only ever leads back into this project."""
    traces = [project_trace(project, n_steps=6) for _ in range(2)]
    round_ = do_open_round(
        project,
        name="Round 1",
        annotators=[annotator_a.username, annotator_b.username],
        choice=TraceChoice(ids=tuple(t.pk for t in traces)),
    )
    for t in traces:
        submit(project, t, annotator_a, {"FM-1.1": [1]})
        submit(project, t, annotator_b, {"FM-1.1": [1], "FM-2.1": [4]} if t == traces[0] else {"FM-1.1": [1]})
    do_close_round(round_)
    page_url = f"/p/{project.slug}/rounds/{round_.pk}/discussion/"
    client.force_login(annotator_a)
    page = client.get(page_url).content.decode()
    thread = Thread.objects.get()
    assert f'name="next" value="{page_url}#thread-{thread.pk}"' in page
    response = client.post(
        url(project, traces[0]),
        {"body": "Step 4 is a retry, not a reset.", "mode": "FM-2.1", "step": "4", "next": page_url},
        follow=True,
    )
    assert response.redirect_chain == [(page_url, 302)]
    page = response.content.decode()
    assert "Comment added." in page and "Step 4 is a retry, not a reset." in page and "step #4" in page
    response = client.post(
        url(project, traces[0]), {"body": "see", "step": "99", "next": page_url}, follow=True
    )
    assert response.redirect_chain == [(page_url, 302)]
    assert "The comment was not added: Step “99” is not a step of this trace" in response.content.decode()
    for elsewhere in ("https://evil.example/p/x/", "//evil.example/", "/p/other-project/"):
        response = client.post(url(project, traces[0]), {"body": "again", "next": elsewhere})
        assert response.status_code == 302 and response["Location"] == f"/p/{project.slug}/"
    assert thread.comments.count() == 1
    assert Comment.objects.filter(thread__trace=traces[0], thread__mode=None).count() == 3


def test_an_annotator_finds_the_disagreements_of_their_closed_rounds_in_their_queue(
    client, project, annotator_a, annotator_b
):
    traces = [project_trace(project, n_steps=6) for _ in range(2)]
    round_ = do_open_round(
        project,
        name="Round 1",
        annotators=[annotator_a.username, annotator_b.username],
        choice=TraceChoice(ids=tuple(t.pk for t in traces)),
    )
    client.force_login(annotator_a)
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert "Round 1</b>" in page and "open: its traces are in your queue" in page
    for t in traces:
        submit(project, t, annotator_a, {"FM-1.1": [1]})
        submit(project, t, annotator_b, {"FM-2.1": [2]})  # two disagreements per trace
    do_close_round(round_)
    Thread.objects.filter(trace=traces[1], mode__code="FM-1.1").update(decision="annotator_error")
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert (
        f'href="/p/{project.slug}/rounds/{round_.pk}/discussion/">Round 1: 4 disagreements to discuss' in page
    )
    assert "(3 undecided)" in page
    # A trace they are blind on again (a re-check reopened it, say) hides its threads from the count.
    Assignment.objects.filter(trace=traces[0], annotator=annotator_a).update(status="in_progress")
    assert "Round 1: 2 disagreements to discuss" in client.get(f"/p/{project.slug}/").content.decode()


def test_outsiders_and_viewers_see_no_discussion(client, project, trace, outsider):
    client.force_login(outsider)
    assert client.get(url(project, trace)).status_code == 404
    viewer = add_member(project, UserFactory(username="vic-viewer"), "viewer").user
    client.force_login(viewer)
    assert client.get(url(project, trace)).status_code == 403


def test_a_closed_round_opens_a_thread_per_disagreement_and_a_decision_clarifies_the_guidelines(
    client, project, annotator_a, annotator_b, owner
):
    traces = [project_trace(project) for _ in range(3)]
    round_ = do_open_round(
        project,
        name="Round 1",
        annotators=[annotator_a.username, annotator_b.username],
        choice=TraceChoice(ids=tuple(t.pk for t in traces)),
    )
    submit(project, traces[0], annotator_a, {"FM-1.1": [1]})
    submit(project, traces[0], annotator_b, {"FM-1.1": [3], "FM-2.1": [4]})  # disagree on FM-2.1 only
    for t in traces[1:]:
        submit(project, t, annotator_a, {"FM-1.1": [1]})
        submit(project, t, annotator_b, {"FM-1.1": [1]})
    client.force_login(annotator_a)
    assert "still open" in client.get(f"/p/{project.slug}/rounds/{round_.pk}/discussion/").content.decode()
    do_close_round(round_)
    thread = Thread.objects.get()
    assert (thread.trace_id, thread.mode.code, thread.calibration_round_id) == (
        traces[0].pk,
        "FM-2.1",
        round_.pk,
    )
    page = client.get(f"/p/{project.slug}/rounds/{round_.pk}/discussion/").content.decode()
    assert "did not choose it" in page and "evidence step #4" in page
    assert (
        client.post(
            f"/p/{project.slug}/threads/{thread.pk}/decide/", {"decision": "guideline", "text": "x"}
        ).status_code
        == 403
    )
    client.force_login(owner)
    client.post(
        f"/p/{project.slug}/threads/{thread.pk}/decide/",
        {"decision": "guideline", "text": "A retry loop counts only after three identical calls."},
    )
    thread.refresh_from_db()
    project.refresh_from_db()
    assert thread.decision == "guideline" and thread.decided_by == owner
    assert "FM-2.1" in project.guidelines and "three identical calls" in project.guidelines
    response = client.post(
        f"/p/{project.slug}/threads/{thread.pk}/decide/", {"decision": "definition", "text": ""}, follow=True
    )
    assert "Write the clarified guideline or the definition change" in response.content.decode()


def test_the_labelling_page_offers_the_discussion_only_after_submit(client, project, trace, annotator_a):
    slot, _ = Assignment.objects.get_or_create(project=project, trace=trace, annotator=annotator_a)
    client.force_login(annotator_a)
    page = client.get(f"/p/{project.slug}/a/{slot.pk}/").content.decode()
    assert "opens once you submit" in page and url(project, trace) not in page
    assert f"/p/{project.slug}/t/{trace.pk}/proposals/" in page  # a new mode may be proposed while labelling
    submit(project, trace, annotator_a, {"FM-1.1": [1]})
    page = client.get(f"/p/{project.slug}/a/{slot.pk}/").content.decode()
    assert url(project, trace) in page


def test_a_mention_never_carries_a_comment_to_someone_still_blind_on_the_trace(
    client, project, trace, owner, annotator_a, annotator_b
):
    Assignment.objects.get_or_create(project=project, trace=trace, annotator=annotator_a)  # not submitted
    submit(project, trace, annotator_b, {"FM-1.1": [2]})
    client.force_login(owner)
    client.post(url(project, trace), {"body": f"@{annotator_a.username} Ben chose FM-1.1 at step 2"})
    assert not Mention.objects.filter(user=annotator_a).exists()
    # A mention made while the reader could follow the discussion waits while they are blind on it again.
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    client.post(url(project, trace), {"body": f"@{annotator_a.username} now you may read this"})
    assert Mention.objects.filter(user=annotator_a).count() == 1
    Assignment.objects.filter(trace=trace, annotator=annotator_a).update(status="in_progress")
    client.force_login(annotator_a)
    assert "now you may read this" not in client.get("/mentions/").content.decode()


def test_the_api_shows_a_rounds_disagreements_to_its_annotators_only_once_it_is_closed(
    project, annotator_a, annotator_b, owner
):
    from rest_framework.test import APIClient

    traces = [project_trace(project, n_steps=6) for _ in range(2)]
    round_ = do_open_round(
        project,
        name="Round 1",
        annotators=[annotator_a.username, annotator_b.username],
        choice=TraceChoice(ids=tuple(t.pk for t in traces)),
    )
    for t in traces:
        submit(project, t, annotator_a, {"FM-1.1": [1]})
        submit(project, t, annotator_b, {"FM-1.1": [1], "FM-2.1": [4]} if t == traces[0] else {"FM-1.1": [1]})
    api = APIClient()
    url = f"/api/projects/{project.slug}/rounds/{round_.pk}/threads/"
    api.force_authenticate(annotator_a)
    assert api.get(url).json() == []  # open: nothing tells who disagreed yet
    do_close_round(round_)
    [thread] = api.get(url).json()
    assert (thread["trace"], thread["mode"], thread["decision"]) == (traces[0].external_id, "FM-2.1", "")
    assert thread["positions"] == [
        {"username": annotator_a.username, "chose": False, "steps": []},
        {"username": annotator_b.username, "chose": True, "steps": [4]},
    ]
    viewer = add_member(project, UserFactory(username="vic-viewer"), "viewer").user
    api.force_authenticate(viewer)
    assert api.get(url).status_code == 403
    api.force_authenticate(owner)
    decision = f"/api/projects/{project.slug}/threads/{thread['id']}/decision/"
    answer = api.post(decision, {"decision": "guideline", "text": "Resets only."}, format="json").json()
    assert answer["decision_text"] == "Resets only." and answer["decided_by"] == owner.username
    project.refresh_from_db()
    assert "Resets only." in project.guidelines
