"""The annotation page and its verbs (autosave, submit, skip): access, blindness, conflicts, errors."""

from __future__ import annotations

import json

import pytest

from annotator.models import Annotation, Assignment
from annotator.services.annotations import do_save_draft, do_submit_annotation
from annotator.services.payload import AnnotationPayload, Evidence, LabelInput

HX = {"HTTP_HX_REQUEST": "true"}


def url(slot, action=""):
    return f"/p/{slot.project.slug}/a/{slot.pk}/{action}"


def form(version=0, **fields):
    data = {"version": str(version), "elapsed": "12"}
    data.update(fields)
    return data


def test_it_shows_the_trace_and_the_labelling_panel(client, slot_a, annotator_a):
    client.force_login(annotator_a)
    response = client.get(url(slot_a))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="trace-steps"' in html and 'id="label-form"' in html and 'id="help-dialog"' in html
    assert 'value="FM-1.3"' in html and "No failure observed" in html
    assert 'name="version" value="0"' in html
    slot_a.refresh_from_db()
    assert slot_a.reserved_until is not None  # opening holds the slot


def test_outsiders_get_404_and_non_annotators_403(client, slot_a, outsider, owner):
    client.force_login(outsider)
    for action in ("", "save/", "submit/", "skip/"):
        method = client.get if action == "" else client.post
        assert method(url(slot_a, action)).status_code == 404
    client.force_login(owner)
    assert client.get(url(slot_a)).status_code == 403


def test_another_annotators_slot_is_404(client, slot_a, slot_b, annotator_b):
    client.force_login(annotator_b)
    assert client.get(url(slot_a)).status_code == 404
    assert client.post(url(slot_a, "save/"), form(labels="FM-1.1"), **HX).status_code == 404
    assert not Annotation.objects.filter(assignment=slot_a).exists()


def test_an_annotator_never_sees_another_annotators_labels(client, slot_a, slot_b, annotator_a, annotator_b):
    payload = AnnotationPayload(
        labels=(LabelInput("FM-1.3", evidence=(Evidence(4, "SECRET-QUOTE"),), note="SECRET-LABEL-NOTE"),),
        note="SECRET-TRACE-NOTE",
    )
    do_submit_annotation(slot_a, payload, actor=annotator_a, base_version=0)
    client.force_login(annotator_b)
    pages = [
        client.get(url(slot_b)),
        client.get(f"/p/{slot_b.project.slug}/t/{slot_b.trace_id}/steps/", **HX),
        client.get(f"/p/{slot_b.project.slug}/"),
    ]
    for response in pages:
        html = response.content.decode()
        assert response.status_code == 200
        assert "SECRET" not in html
        assert 'value="FM-1.3" checked' not in html


def test_autosave_returns_the_status_partial_with_the_new_version(client, slot_a, annotator_a):
    client.force_login(annotator_a)
    pin = json.dumps({"step": 3, "quote": "wrong file"})
    response = client.post(url(slot_a, "save/"), form(labels="FM-1.3", **{"evidence:FM-1.3": pin}), **HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="save-status"') and "Draft saved" in html
    assert 'name="version" value="1"' in html
    annotation = Annotation.objects.get(assignment=slot_a)
    assert annotation.labels.get().evidence == [{"step": 3, "quote": "wrong file"}]
    assert annotation.time_spent_seconds == 12


def test_a_stale_autosave_is_409_and_echoes_the_users_answer(client, slot_a, annotator_a):
    do_save_draft(slot_a, AnnotationPayload(note="from tab one"), actor=annotator_a, base_version=0)
    client.force_login(annotator_a)
    response = client.post(url(slot_a, "save/"), form(0, labels="FM-2.4", note="from tab two"), **HX)
    html = response.content.decode()
    assert response.status_code == 409
    assert "changed in another tab" in html and "from tab two" in html and "FM-2.4" in html
    assert 'name="version" value="0"' in html  # still based on what this tab had: no silent overwrite
    assert 'data-version="1"' in html  # "keep mine" saves over version 1
    assert Annotation.objects.get(assignment=slot_a).note == "from tab one"


def test_an_invalid_save_is_422_with_the_reason(client, slot_a, annotator_a):
    client.force_login(annotator_a)
    pin = json.dumps({"step": 999})
    response = client.post(url(slot_a, "save/"), form(labels="FM-1.1", **{"evidence:FM-1.1": pin}), **HX)
    assert response.status_code == 422
    assert "Step 999 is not in this trace" in response.content.decode()


def test_submit_goes_to_the_next_trace(client, slot_a, annotator_a, traces):
    client.force_login(annotator_a)
    response = client.post(url(slot_a, "submit/"), form(no_failure="1", confidence="4"), **HX)
    assert response.status_code == 204
    following = Assignment.objects.get(project=slot_a.project, annotator=annotator_a, trace=traces[1])
    assert response["HX-Redirect"] == url(following)
    slot_a.refresh_from_db()
    assert slot_a.status == Assignment.Status.SUBMITTED


def test_submit_without_javascript_redirects_or_rerenders_with_the_answer(client, slot_a, annotator_a):
    client.force_login(annotator_a)
    response = client.post(url(slot_a, "submit/"), form(labels="FM-2.2", no_failure="1", note="kept note"))
    html = response.content.decode()
    assert response.status_code == 422
    assert "not both" in html and "kept note" in html and 'value="FM-2.2" checked' in html
    assert client.post(url(slot_a, "submit/"), form(labels="FM-2.2")).status_code == 302


def test_the_last_submit_returns_to_the_queue(client, project, slot_a, annotator_a):
    Assignment.objects.filter(annotator=annotator_a).exclude(pk=slot_a.pk).update(status="submitted")
    client.force_login(annotator_a)
    response = client.post(url(slot_a, "submit/"), form(no_failure="1"))
    assert response["Location"] == f"/p/{project.slug}/"


@pytest.mark.parametrize(
    ("data", "status"), [({"reason_choice": "Duplicate of another trace"}, "skipped"), ({}, "pending")]
)
def test_skip_needs_a_reason(client, slot_a, annotator_a, data, status):
    client.force_login(annotator_a)
    response = client.post(url(slot_a, "skip/"), data, follow=True)
    slot_a.refresh_from_db()
    assert slot_a.status == status
    if status == "pending":
        assert "Say why" in response.content.decode()


def test_guidelines_are_rendered_sanitised(client, slot_a, annotator_a):
    project = slot_a.project
    project.guidelines = "## Read first\n\n<script>alert(1)</script> **bold** [x](javascript:alert(1))"
    project.save()
    client.force_login(annotator_a)
    html = client.get(url(slot_a)).content.decode()
    assert "<h2>Read first</h2>" in html and "<strong>bold</strong>" in html
    assert "<script>alert(1)" not in html and "javascript:alert" not in html


def test_verdict_metadata_is_hidden_from_annotators(client, slot_a, annotator_a, owner):
    # Imports keep the answer key apart from the metadata (traces/answer_key.py).
    trace = slot_a.trace
    trace.metadata, trace.answer_key = {"level": 2}, {"mistake_agent": "WebSurfer"}
    trace.save()
    client.force_login(annotator_a)
    html = client.get(url(slot_a)).content.decode()
    assert "WebSurfer" not in html and "level" in html
    client.force_login(owner)
    assert "WebSurfer" in client.get(f"/p/{slot_a.project.slug}/t/{trace.pk}/review/").content.decode()
