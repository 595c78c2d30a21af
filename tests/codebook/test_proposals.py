"""Proposals for new modes: recorded on a trace while labelling (with the modes chosen so far), blind to
other annotators, grouped for owners and settled by them."""

from __future__ import annotations

from annotator.models import Assignment, ModeProposal
from tests.labels import project_trace, submit


def test_an_annotator_proposes_a_mode_and_sees_only_their_own(
    client, project, annotator_a, annotator_b, owner
):
    trace = project_trace(project, n_steps=8)
    submit(project, trace, annotator_a, {"FM-1.3": [2]})
    Assignment.objects.get_or_create(project=project, trace=trace, annotator=annotator_b)
    client.force_login(annotator_a)
    url = f"/p/{project.slug}/t/{trace.pk}/proposals/"
    response = client.post(
        url,
        {
            "text": "Keeps calling the same tool with identical arguments",
            "name": "tool loop",
            "steps": "2, 5",
        },
    )
    assert response.status_code == 200 and "Recorded" in response.content.decode()
    proposal = ModeProposal.objects.get()
    assert (proposal.steps, proposal.cooccurring, proposal.author) == ([2, 5], ["FM-1.3"], annotator_a)
    bad = client.post(url, {"text": "x", "steps": "42"})
    assert bad.status_code == 400 and "not a step of this trace (steps #0 to #7)" in bad.content.decode()
    client.force_login(annotator_b)
    client.post(url, {"text": "Identical tool calls with the same arguments, again and again"})
    page = client.get(f"/p/{project.slug}/proposals/").content.decode()
    assert "Identical tool calls with the same" in page and "Keeps calling the same tool" not in page

    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/proposals/").content.decode()
    assert "2 proposals" in page and "tool loop" in page and "FM-1.3" in page
    ids = list(ModeProposal.objects.values_list("pk", flat=True))
    client.post(
        f"/p/{project.slug}/proposals/settle/", {"proposal": ids, "status": "accepted", "outcome": "FM-2.7"}
    )
    assert set(ModeProposal.objects.values_list("status", "outcome")) == {("accepted", "FM-2.7")}
    client.force_login(annotator_a)
    assert (
        client.post(
            f"/p/{project.slug}/proposals/settle/", {"proposal": ids, "status": "declined", "outcome": "x"}
        ).status_code
        == 403
    )


def test_an_annotator_cannot_propose_on_a_trace_not_assigned_to_them(client, project, annotator_a):
    trace = project_trace(project)
    Assignment.objects.filter(trace=trace).delete()
    client.force_login(annotator_a)
    assert client.post(f"/p/{project.slug}/t/{trace.pk}/proposals/", {"text": "x"}).status_code == 404
    assert not ModeProposal.objects.exists()


def test_owners_filter_proposals_by_status_with_a_count_for_each(client, project, annotator_a, owner):
    trace = project_trace(project, n_steps=4)
    Assignment.objects.get_or_create(project=project, trace=trace, annotator=annotator_a)
    client.force_login(annotator_a)
    for text in ("Loops on the same tool call", "Forgets the user's constraint"):
        client.post(f"/p/{project.slug}/t/{trace.pk}/proposals/", {"text": text})
    first = ModeProposal.objects.get(text__startswith="Loops")
    client.force_login(owner)
    client.post(
        f"/p/{project.slug}/proposals/settle/",
        {"proposal": [first.pk], "status": "declined", "outcome": "dup"},
    )
    url = f"/p/{project.slug}/proposals/"
    open_page = client.get(url).content.decode()
    assert "Open (1)" in open_page and "Declined (1)" in open_page and "All (2)" in open_page
    assert "Forgets the user" in open_page and "Loops on the same" not in open_page
    declined = client.get(url, {"status": "declined"}).content.decode()
    assert "Loops on the same" in declined and "Forgets the user" not in declined
    assert 'name="proposal"' not in declined  # settled proposals are not settled again from here
    assert "Forgets the user" in client.get(url, {"status": "all"}).content.decode()
    bad = client.get(url, {"status": "pending"})
    assert bad.status_code == 400 and "choose one of open, accepted, declined, all" in bad.content.decode()
