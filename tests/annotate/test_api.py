"""The REST API: same access rules as the pages (outsider 404, blind annotators), scoped modes, 409s."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotator.models import Annotation
from annotator.services.annotations import do_submit_annotation
from annotator.services.payload import AnnotationPayload, LabelInput
from tests.factories import api_token
from traces.models import Step


def api(user=None):
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(user)}")
    return client


def base(project):
    return f"/api/projects/{project.slug}"


def endpoints(project, trace, slot):
    b = base(project)
    return [
        ("get", f"{b}/traces/"),
        ("get", f"{b}/traces/{trace.pk}/"),
        ("get", f"{b}/traces/{trace.pk}/steps/"),
        ("get", f"{b}/traces/{trace.pk}/search/?q=step"),
        ("get", f"{b}/traces/{trace.pk}/annotations/"),
        ("get", f"{b}/assignments/"),
        ("post", f"{b}/assignments/next/"),
        ("get", f"{b}/assignments/{slot.pk}/annotation/"),
        ("put", f"{b}/assignments/{slot.pk}/annotation/"),
        ("post", f"{b}/assignments/{slot.pk}/submit/"),
        ("post", f"{b}/assignments/{slot.pk}/skip/"),
    ]


def test_outsiders_get_404_everywhere(project, traces, slot_a, outsider):
    client = api(outsider)
    for method, url in endpoints(project, traces[0], slot_a):
        assert getattr(client, method)(url, {}, format="json").status_code == 404, url


def test_anonymous_requests_are_refused(project, traces, slot_a):
    for method, url in endpoints(project, traces[0], slot_a):
        assert getattr(api(), method)(url, {}, format="json").status_code == 401, url


def test_traces_are_paginated_with_step_counts_and_no_content(project, traces, annotator_a, owner):
    body = api(owner).get(f"{base(project)}/traces/").json()
    assert body["count"] == 4
    first = body["results"][0]
    assert first["step_count"] == 8 and "content" not in first and "raw" not in first and "steps" not in first


def test_annotators_list_only_their_traces(project, traces, annotator_a, outsider):
    from tests.factories import UserFactory, add_member

    carl = UserFactory(username="carl")
    add_member(project, carl, "annotator")
    assert api(carl).get(f"{base(project)}/traces/").json()["count"] == 0
    assert api(carl).get(f"{base(project)}/traces/{traces[0].pk}/steps/").status_code == 404
    assert api(annotator_a).get(f"{base(project)}/traces/").json()["count"] == 4


def test_steps_are_paginated_and_filterable(project, traces, annotator_a):
    trace = traces[0]
    Step.objects.filter(trace=trace, index=5).update(kind="error", content="Boom: a needle broke")
    client = api(annotator_a)
    body = client.get(f"{base(project)}/traces/{trace.pk}/steps/").json()
    assert body["count"] == 8 and [s["index"] for s in body["results"]] == list(range(8))
    errors = client.get(f"{base(project)}/traces/{trace.pk}/steps/?kind=error").json()
    assert [s["content"] for s in errors["results"]] == ["Boom: a needle broke"]
    hits = client.get(f"{base(project)}/traces/{trace.pk}/search/?q=NEEDLE").json()
    assert hits == {"q": "NEEDLE", "hits": [5], "total": 1}


def test_my_assignments_and_claim_next(project, traces, annotator_a):
    client = api(annotator_a)
    rows = client.get(f"{base(project)}/assignments/").json()["results"]
    assert len(rows) == 4 and {r["status"] for r in rows} == {"pending"}
    claimed = client.post(f"{base(project)}/assignments/next/").json()
    assert claimed["id"] == rows[0]["id"] and claimed["reserved_until"]


def test_draft_then_conflict_then_submit(project, slot_a, annotator_a):
    client = api(annotator_a)
    url = f"{base(project)}/assignments/{slot_a.pk}/annotation/"
    assert client.get(url).json()["version"] == 0
    draft = {
        "version": 0,
        "labels": [{"mode": "FM-1.3", "evidence": [{"step": 2, "quote": "again"}]}],
        "confidence": 3,
    }
    saved = client.put(url, draft, format="json")
    assert saved.status_code == 200 and saved.json()["version"] == 1 and saved.json()["status"] == "draft"
    stale = client.put(url, {**draft, "note": "other tab"}, format="json")
    assert stale.status_code == 409
    assert stale.json()["code"] == "stale" and stale.json()["current_version"] == 1
    assert stale.json()["your_payload"]["note"] == "other tab"
    submitted = client.post(
        f"{base(project)}/assignments/{slot_a.pk}/submit/", {**draft, "version": 1}, format="json"
    )
    assert submitted.status_code == 200 and submitted.json()["status"] == "submitted"
    assert submitted.json()["labels"] == [
        {"mode": "FM-1.3", "primary": False, "evidence": [{"step": 2, "quote": "again"}], "note": ""}
    ]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"version": 0}, "at least one failure mode"),
        ({"version": 0, "labels": [{"mode": "AF-1"}]}, "does not exist"),  # another taxonomy's mode
        ({"version": 0, "labels": [{"mode": "FM-1.1", "evidence": [{"step": 80}]}]}, "Step 80"),
    ],
)
def test_invalid_submissions_are_400_with_reasons(project, slot_a, annotator_a, taxonomies, body, needle):
    response = api(annotator_a).post(f"{base(project)}/assignments/{slot_a.pk}/submit/", body, format="json")
    assert response.status_code == 400
    assert needle in str(response.json())
    assert not Annotation.objects.filter(assignment=slot_a, status="submitted").exists()


def test_annotators_cannot_read_each_others_labels(project, slot_a, slot_b, annotator_a, annotator_b):
    do_submit_annotation(
        slot_a,
        AnnotationPayload(labels=(LabelInput("FM-1.3", note="mine"),)),
        actor=annotator_a,
        base_version=0,
    )
    client = api(annotator_b)
    assert client.get(f"{base(project)}/assignments/{slot_a.pk}/annotation/").status_code == 404
    assert (
        client.put(
            f"{base(project)}/assignments/{slot_a.pk}/annotation/", {"version": 1}, format="json"
        ).status_code
        == 404
    )
    assert client.get(f"{base(project)}/traces/{slot_a.trace_id}/annotations/").status_code == 403
    own = client.get(f"{base(project)}/assignments/{slot_b.pk}/annotation/").json()
    assert own["labels"] == [] and own["version"] == 0


def test_reviewers_list_all_annotations_of_a_trace(
    project, slot_a, slot_b, annotator_a, annotator_b, adjudicator
):
    do_submit_annotation(
        slot_a, AnnotationPayload(labels=(LabelInput("FM-1.3"),)), actor=annotator_a, base_version=0
    )
    do_submit_annotation(slot_b, AnnotationPayload(no_failure=True), actor=annotator_b, base_version=0)
    rows = api(adjudicator).get(f"{base(project)}/traces/{slot_a.trace_id}/annotations/").json()
    assert [(r["annotator"], r["no_failure"], [la["mode"] for la in r["labels"]]) for r in rows] == [
        ("ana-annotator", False, ["FM-1.3"]),
        ("ben-annotator", True, []),
    ]


def test_skip_through_the_api(project, slot_a, annotator_a):
    client = api(annotator_a)
    assert client.post(f"{base(project)}/assignments/{slot_a.pk}/skip/", {}, format="json").status_code == 400
    response = client.post(
        f"{base(project)}/assignments/{slot_a.pk}/skip/", {"reason": "empty trace"}, format="json"
    )
    assert response.json()["status"] == "skipped"


def test_the_schema_documents_the_endpoints(client, owner):
    client.force_login(owner)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    for path in (
        "/api/projects/{slug}/traces/{trace_id}/steps/",
        "/api/projects/{slug}/assignments/{assignment_id}/annotation/",
        "/api/projects/{slug}/assignments/{assignment_id}/submit/",
        "/api/projects/{slug}/traces/{trace_id}/annotations/",
    ):
        assert path in schema
    assert "ConflictSerializer" in schema or "Conflict" in schema


def _by_fields(serializer_class, instance, **context) -> dict:
    """What DRF makes of the serializer's declared fields (the schema documents those)."""
    from rest_framework.serializers import Serializer

    return dict(Serializer.to_representation(serializer_class(instance, context=context), instance))


def test_answers_are_what_the_documented_fields_say(project, slot_a, slot_b, annotator_a, annotator_b):
    """The annotation and assignment answers are written by hand for speed; they must stay equal to what
    the serializers' declared fields (the OpenAPI schema) give, whatever state the annotation is in."""
    from annotator.api.annotations import (
        AnnotationSerializer,
        AssignmentSerializer,
        ReviewAnnotationSerializer,
        _Unsaved,
    )

    unsaved = _Unsaved(slot_b)
    assert AnnotationSerializer(unsaved).data == _by_fields(AnnotationSerializer, unsaved)
    client = api(annotator_a)
    draft = {"version": 0, "labels": [{"mode": "FM-1.3", "evidence": [{"step": 2, "quote": "q"}]}]}
    client.put(f"{base(project)}/assignments/{slot_a.pk}/annotation/", draft, format="json")
    annotation = Annotation.objects.select_related("assignment__annotator").get(assignment=slot_a)
    for locked in (None, True):
        assert AnnotationSerializer(annotation, context={"locked": locked}).data == _by_fields(
            AnnotationSerializer, annotation, locked=locked
        )
    body = {**draft, "version": 1, "confidence": 4, "note": "n", "elapsed_seconds": 7}
    client.post(f"{base(project)}/assignments/{slot_a.pk}/submit/", body, format="json")
    annotation = Annotation.objects.select_related("assignment__annotator").get(assignment=slot_a)
    assert annotation.submitted_at is not None and annotation.confidence == 4
    assert AnnotationSerializer(annotation).data == _by_fields(AnnotationSerializer, annotation)
    assert ReviewAnnotationSerializer(annotation).data == _by_fields(ReviewAnnotationSerializer, annotation)
    slot_a.refresh_from_db()
    claimed = api(annotator_b).post(f"{base(project)}/assignments/next/").json()
    slot_b.refresh_from_db()
    assert claimed == _by_fields(AssignmentSerializer, slot_b) and claimed["reserved_until"]
    assert AssignmentSerializer(slot_a).data == _by_fields(AssignmentSerializer, slot_a)
    assert AssignmentSerializer(slot_a).data["purpose"] == "work"


@pytest.mark.parametrize(
    "body",
    [
        {"version": 0, "labels": [{"mode": "FM-1.3"}]},  # valid: the save's own locking read refuses it
        {"version": -1},  # invalid for the serializer
        {"version": 0, "labels": [{"mode": "NOT-A-MODE"}]},  # a mode of no taxonomy of the project
    ],
)
def test_saving_into_someone_elses_or_a_missing_slot_is_404_whatever_the_body(
    project, slot_a, slot_b, annotator_b, body
):
    """API saves check the assignment in the lock's own read (no separate look-up): another annotator's
    slot, a missing one, or a body the serializer refuses all answer 404 before anything else, and nothing
    is written."""
    client = api(annotator_b)
    missing = slot_a.pk + slot_b.pk + 1000
    for slot in (slot_a.pk, missing):
        for method, path in (("put", "annotation/"), ("post", "submit/")):
            response = getattr(client, method)(
                f"{base(project)}/assignments/{slot}/{path}", body, format="json"
            )
            assert response.status_code == 404, (slot, path, response.content)
    assert not Annotation.objects.filter(assignment=slot_a).exists()
    own = client.put(f"{base(project)}/assignments/{slot_b.pk}/annotation/", body, format="json")
    assert own.status_code == (200 if body["version"] == 0 and "NOT" not in str(body) else 400)
