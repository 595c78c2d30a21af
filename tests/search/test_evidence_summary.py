"""The evidence filters follow every write of a label: submitted, edited, withdrawn to a draft, deleted,
adjudicated, imported. On PostgreSQL they read a summary kept by triggers (migration annotator 0035), on
SQLite the label tables: the same answers either way."""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Assignment, LabelApplication
from annotator.services.adjudication import do_check_trace
from annotator.services.annotations import do_save_draft
from annotator.services.label_import import IncomingAnnotation, do_import_annotations
from annotator.services.payload import AnnotationPayload, Evidence, LabelInput
from tests.labels import submit
from traces.importers.records import AnnotationRecord, LabelRecord
from traces.models import Step

URL = "/api/projects/demo-project/traces/"


def found(client, query: str) -> list[str]:
    response = client.get(f"{URL}?{query}")
    assert response.status_code == 200, response.content
    return sorted(row["external_id"] for row in response.json()["results"])


@pytest.fixture
def owner_client(client, owner, world):
    client.force_login(owner)
    return client


@pytest.fixture
def web1(world):
    """`web-1` (no human slot; an LLM label on step 0) with a `python` tool call at step 4."""
    Step.objects.filter(trace=world.fresh, index=4).update(kind="tool_call", tool_name="python")
    return world.fresh


def test_a_submitted_label_is_found_by_its_evidence_and_follows_edits(owner_client, world, web1, annotator_a):
    assert found(owner_client, "evidence_tool=python") == []
    submit(world.project, web1, annotator_a, {"FM-1.1": [4]})
    assert found(owner_client, "evidence_tool=python") == ["web-1"]
    assert found(owner_client, "evidence_kind=tool_call") == ["sre-1", "web-1"]
    assert found(owner_client, "evidence_kind=tool_call&evidence_tool=python") == ["web-1"]
    assert found(owner_client, "evidence_kind=message&evidence_tool=python") == []

    submit(world.project, web1, annotator_a, {"FM-1.1": [1]})  # edited: the evidence moves to a message
    assert found(owner_client, "evidence_tool=python") == []
    assert "web-1" in found(owner_client, "evidence_kind=message")

    submit(world.project, web1, annotator_a, {"FM-1.1": [1], "FM-2.2": [4]})  # a second label
    assert found(owner_client, "evidence_tool=python") == ["web-1"]


def test_a_draft_does_not_count_nor_a_deleted_label(owner_client, world, web1, annotator_a):
    assignment = Assignment.objects.create(project=world.project, trace=web1, annotator=annotator_a)
    draft = AnnotationPayload(labels=(LabelInput(mode="FM-1.1", evidence=(Evidence(4),)),))
    do_save_draft(assignment, draft, actor=annotator_a, base_version=0)
    assert found(owner_client, "evidence_tool=python") == []

    annotation = submit(world.project, web1, annotator_a, {"FM-1.1": [4]})
    assert found(owner_client, "evidence_tool=python") == ["web-1"]
    Annotation.objects.filter(pk=annotation.pk).update(status=Annotation.Status.DRAFT)
    assert found(owner_client, "evidence_tool=python") == []
    Annotation.objects.filter(pk=annotation.pk).update(status=Annotation.Status.SUBMITTED)
    assert found(owner_client, "evidence_tool=python") == ["web-1"]

    LabelApplication.objects.filter(annotation=annotation).delete()
    assert found(owner_client, "evidence_tool=python") == []

    annotation = submit(world.project, web1, annotator_a, {"FM-1.1": [4]})
    assert found(owner_client, "evidence_tool=python") == ["web-1"]
    Annotation.objects.filter(pk=annotation.pk).delete()
    assert found(owner_client, "evidence_tool=python") == []


def test_adjudication_leaves_the_evidence_filters_as_they_were(
    owner_client, world, web1, annotator_a, annotator_b
):
    submit(world.project, web1, annotator_a, {"FM-1.1": [4]})
    submit(world.project, web1, annotator_b, {"FM-1.5": [1]})
    before = found(owner_client, "evidence_kind=message"), found(owner_client, "evidence_kind=tool_call")
    assert before == (["sre-2", "web-1"], ["sre-1", "web-1"])
    assert do_check_trace(world.project.pk, web1.pk) is not None  # they disagree: in adjudication
    after = found(owner_client, "evidence_kind=message"), found(owner_client, "evidence_kind=tool_call")
    assert after == before
    assert found(owner_client, "state=in_adjudication&evidence_tool=python") == ["web-1"]


def test_imported_labels_are_found_by_their_evidence(owner_client, world, web1):
    record = AnnotationRecord(annotator="published-rater", labels=[LabelRecord(mode="FM-1.2", steps=[4])])
    item = IncomingAnnotation(web1, record, where="labels.json, record 1", source="published")
    do_import_annotations(world.project, [item], ignore_unknown_modes=True)
    assert found(owner_client, "evidence_tool=python") == ["web-1"]
    assert found(owner_client, "evidence_kind=tool_call") == ["sre-1", "web-1"]


def test_evidence_naming_no_step_matches_nothing(owner_client, world, web1, annotator_a):
    annotation = submit(world.project, web1, annotator_a, {"FM-1.1": [4]})
    LabelApplication.objects.filter(annotation=annotation).update(
        evidence=[{"step": 99}, {"step": 1e12}, {"step": -1}, "4", {"note": "x"}]
    )
    assert found(owner_client, "evidence_tool=python") == []
    LabelApplication.objects.filter(annotation=annotation).update(evidence={"step": 4})
    assert found(owner_client, "evidence_tool=python") == []
