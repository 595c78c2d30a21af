"""The `disputed_mode` filter follows every write of a label and every change of who fills the overlap:
submitted, edited, withdrawn to a draft, deleted, reassigned, imported, a rater's kind, the project's
setting for imported labels. On PostgreSQL it reads a summary kept by triggers (migration annotator 0041),
on SQLite the label tables: the same answers either way."""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Assignment, LabelApplication
from annotator.models.raters import Rater, RaterKind
from annotator.raters import get_llm_rater
from annotator.services.label_import import IncomingAnnotation, do_import_annotations
from taxonomy.models import FailureMode
from tests.labels import project_trace, submit
from traces.importers.records import AnnotationRecord, LabelRecord

URL = "/api/projects/demo-project/traces/"


def disputed(client, code: str, extra: str = "") -> list[str]:
    response = client.get(f"{URL}?disputed_mode={code}{extra}")
    assert response.status_code == 200, response.content
    return sorted(row["external_id"] for row in response.json()["results"])


@pytest.fixture
def owner_client(client, owner, world):
    client.force_login(owner)
    return client


def _mode(world, code: str) -> FailureMode:
    return FailureMode.objects.get(version=world.project.taxonomy_version, code=code)


def test_submitting_and_editing_labels_moves_the_dispute(
    owner_client, world, annotator_a, annotator_b, project
):
    assert disputed(owner_client, "FM-1.1") == ["sre-2"]
    assert disputed(owner_client, "FM-1.5") == ["sre-2"]

    # b's label edited to FM-1.1 (the annotation page locks it once the trace is complete; an edit is an edit)
    LabelApplication.objects.filter(
        annotation__assignment__trace=world.disputed, annotation__assignment__annotator=annotator_b
    ).update(mode=_mode(world, "FM-1.1"))
    assert disputed(owner_client, "FM-1.1") == []
    assert disputed(owner_client, "FM-1.5") == []

    b_annotation = Annotation.objects.get(assignment__trace=world.disputed, assignment__annotator=annotator_b)
    LabelApplication.objects.create(annotation=b_annotation, mode=_mode(world, "FM-2.2"), evidence=[])
    assert disputed(owner_client, "FM-2.2") == ["sre-2"]
    assert disputed(owner_client, "FM-1.1") == []

    third = project_trace(project, external_id="new-1")
    submit(project, third, annotator_a, {"FM-2.2": [1]})
    assert disputed(owner_client, "FM-2.2") == ["sre-2"]  # alone: nobody to disagree with
    submit(project, third, annotator_b, {"FM-1.3": [1]})
    assert disputed(owner_client, "FM-2.2") == ["new-1", "sre-2"]
    assert disputed(owner_client, "FM-1.3") == ["new-1"]


def test_a_draft_a_deleted_label_and_a_deleted_annotation_end_the_dispute(
    owner_client, world, annotator_a, annotator_b
):
    annotation = Annotation.objects.get(assignment__trace=world.disputed, assignment__annotator=annotator_b)
    Annotation.objects.filter(pk=annotation.pk).update(status=Annotation.Status.DRAFT)
    assert disputed(owner_client, "FM-1.1") == []  # only a's submitted annotation is left
    Annotation.objects.filter(pk=annotation.pk).update(status=Annotation.Status.SUBMITTED)
    assert disputed(owner_client, "FM-1.1") == ["sre-2"]

    LabelApplication.objects.filter(
        annotation__assignment__trace=world.disputed, mode__code="FM-1.1"
    ).delete()
    assert disputed(owner_client, "FM-1.1") == []
    assert disputed(owner_client, "FM-1.5") == ["sre-2"]  # a now says "no failure", b still FM-1.5

    Annotation.objects.filter(pk=annotation.pk).delete()
    assert disputed(owner_client, "FM-1.5") == []


def test_a_reassigned_annotation_disputes_its_new_trace(owner_client, world, annotator_b, owner):
    assignment = Assignment.objects.get(trace=world.disputed, annotator=annotator_b)
    assignment.trace = world.started  # b's FM-1.5 moves to web-2, where nobody else has submitted
    assignment.save(update_fields=["trace"])
    assert disputed(owner_client, "FM-1.5") == []
    assert disputed(owner_client, "FM-1.1") == []

    assignment.trace = world.disputed
    assignment.save(update_fields=["trace"])
    assert disputed(owner_client, "FM-1.5") == ["sre-2"]

    assignment.purpose = Assignment.Purpose.CALIBRATION
    assignment.save(update_fields=["purpose"])
    assert disputed(owner_client, "FM-1.5") == []  # not a work annotation any more


def test_imported_labels_dispute_only_when_they_fill_the_overlap(owner_client, world):
    record = AnnotationRecord(annotator="published-rater", labels=[LabelRecord(mode="FM-1.3", steps=[1])])
    item = IncomingAnnotation(world.disputed, record, where="labels.json, record 1", source="published")
    do_import_annotations(world.project, [item], ignore_unknown_modes=True)

    world.project.imported_labels_count_toward_overlap = True
    world.project.save(update_fields=["imported_labels_count_toward_overlap"])
    assert disputed(owner_client, "FM-1.3") == ["sre-2"]  # the import chose it, a and b did not

    world.project.imported_labels_count_toward_overlap = False
    world.project.save(update_fields=["imported_labels_count_toward_overlap"])
    assert disputed(owner_client, "FM-1.3") == []
    assert disputed(owner_client, "FM-1.1") == ["sre-2"]


def test_model_labels_never_dispute_and_a_rater_turned_model_stops_counting(owner_client, world, annotator_b):
    submit(world.project, world.gold, get_llm_rater("judge-model"), {"FM-2.2": [0]})
    assert disputed(owner_client, "FM-2.2") == []
    assert disputed(owner_client, "FM-1.3") == []  # the model's annotation lacks FM-1.3 but does not count

    Rater.objects.update_or_create(user=annotator_b, defaults={"kind": RaterKind.LLM})
    assert disputed(owner_client, "FM-1.1") == []  # only a fills the overlap of sre-2 now
    Rater.objects.filter(user=annotator_b).delete()
    assert disputed(owner_client, "FM-1.1") == ["sre-2"]


def test_a_pair_and_a_mode_keep_their_own_meaning(owner_client, world, annotator_a, annotator_b):
    pair = f"&pair={annotator_a.username},{annotator_b.username}"
    assert disputed(owner_client, "FM-1.1", pair) == ["sre-2"]
    assert disputed(owner_client, "FM-1.3", pair) == []
