"""The annotator's project page: their queue with progress, drafts, skipped, submitted; "Start next"."""

from __future__ import annotations

from annotator.models import AdjudicationItem, Assignment
from annotator.services.annotations import do_save_draft, do_skip, do_submit_annotation
from annotator.services.payload import AnnotationPayload


def mine(project, user):
    return list(Assignment.objects.filter(project=project, annotator=user).order_by("trace_id"))


def test_it_shows_progress_drafts_skipped_and_submitted(client, project, traces, annotator_a, adjudicator):
    slots = mine(project, annotator_a)
    do_submit_annotation(slots[0], AnnotationPayload(no_failure=True), actor=annotator_a, base_version=0)
    do_submit_annotation(slots[1], AnnotationPayload(no_failure=True), actor=annotator_a, base_version=0)
    AdjudicationItem.objects.create(project=project, trace_id=slots[1].trace_id, claimed_by=adjudicator)
    do_save_draft(slots[2], AnnotationPayload(note="half way"), actor=annotator_a, base_version=0)
    do_skip(slots[3], "The trace is cut off", actor=annotator_a)
    client.force_login(annotator_a)
    html = client.get(f"/p/{project.slug}/").content.decode()
    assert "My queue" in html
    assert "<b>3</b> of 4 done" in html  # submitted and skipped count as done
    assert "The trace is cut off" in html
    assert f"/p/{project.slug}/a/{slots[2].pk}/" in html  # the draft links back
    assert ">editable<" in html and ">locked<" in html


def test_start_next_opens_the_next_trace_and_a_second_click_another(client, project, traces, annotator_a):
    client.force_login(annotator_a)
    first = client.post(f"/p/{project.slug}/next/")
    second = client.post(f"/p/{project.slug}/next/")
    slots = mine(project, annotator_a)
    assert first["Location"] == f"/p/{project.slug}/a/{slots[0].pk}/"
    assert second["Location"] == f"/p/{project.slug}/a/{slots[1].pk}/"


def test_start_next_with_an_empty_queue_says_so(client, project, traces, annotator_a):
    Assignment.objects.filter(annotator=annotator_a).update(status="submitted")
    client.force_login(annotator_a)
    response = client.post(f"/p/{project.slug}/next/", follow=True)
    assert response.redirect_chain[-1][0] == f"/p/{project.slug}/"
    assert "Nothing left to start" in response.content.decode()


def test_only_annotators_start_work(client, project, traces, owner, outsider):
    client.force_login(owner)
    assert client.post(f"/p/{project.slug}/next/").status_code == 403
    assert "My queue" not in client.get(f"/p/{project.slug}/").content.decode()
    client.force_login(outsider)
    assert client.post(f"/p/{project.slug}/next/").status_code == 404
    assert client.get(f"/p/{project.slug}/").status_code == 404
