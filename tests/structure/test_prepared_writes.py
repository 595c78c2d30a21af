"""The annotation verbs' writes (annotator.prepared: insert, update, delete) store what the ORM stores."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from annotator import prepared
from annotator.models import Annotation, Assignment, LabelApplication, LabelHistory
from annotator.services.assignment import do_assign
from tests.factories import BatchFactory, trace_with_steps

HISTORY = {"status": "draft", "labels": [{"mode": "FM-1.1", "evidence": [{"step": 2, "quote": 'é "q"'}]}]}


@pytest.fixture
def slots(project, annotator_a, annotator_b):
    batch = BatchFactory()
    project.batches.add(batch)
    trace_with_steps(3, batch=batch)
    do_assign(project)
    return list(Assignment.objects.filter(project=project).order_by("pk"))


def stored(obj, *, skip=("created_at", "updated_at", "assignment")) -> dict:
    """The row as read back, without its key and what differs between two inserts by design."""
    row = type(obj).objects.filter(pk=obj.pk).values().get()
    return {k: v for k, v in row.items() if k != "id" and k.removesuffix("_id") not in skip}


def test_an_insert_stores_what_create_stores_and_sets_the_new_rows_keys(slots, annotator_a, taxonomies):
    now = timezone.now()
    values = {"status": "submitted", "confidence": 4, "note": "x\ty 'z'", "submitted_at": now, "version": 1}
    ours = Annotation(assignment=slots[0], time_spent_seconds=7, **values)
    prepared.insert([ours])
    theirs = Annotation.objects.create(assignment=slots[1], time_spent_seconds=7, **values)
    assert ours.pk and not ours._state.adding and ours._state.db == "default"
    assert stored(ours) == stored(theirs)
    assert ours.created_at and ours.updated_at  # auto_now_add and auto_now applied, as save() does
    assert Annotation.objects.get(pk=ours.pk).created_at == ours.created_at

    modes = list(slots[0].project.taxonomy_version.modes.order_by("order")[:2])
    labels = [
        LabelApplication(annotation=ours, mode=mode, primary=i == 0, evidence=[{"step": i}], note="n")
        for i, mode in enumerate(modes)
    ]
    prepared.insert(labels)
    copies = LabelApplication.objects.bulk_create(
        LabelApplication(annotation=theirs, mode=m, primary=i == 0, evidence=[{"step": i}], note="n")
        for i, m in enumerate(modes)
    )
    assert [label.pk for label in labels] == sorted(label.pk for label in labels)
    assert [stored(a, skip=("annotation",)) for a in labels] == [
        stored(b, skip=("annotation",)) for b in copies
    ]

    history = LabelHistory(annotation=ours, actor=annotator_a, action="submit", before=None, after=HISTORY)
    prepared.insert([history])
    copy = LabelHistory.objects.create(
        annotation=theirs, actor=annotator_a, action="submit", before=None, after=HISTORY
    )
    assert stored(history, skip=("annotation", "at")) == stored(copy, skip=("annotation", "at"))
    assert LabelHistory.objects.get(pk=history.pk).before is None  # None stays SQL NULL, as in the ORM
    assert LabelHistory.objects.filter(pk=history.pk, before__isnull=True).exists()


def test_an_update_sets_adds_and_changes_nothing_when_its_condition_fails(slots):
    annotation = Annotation.objects.create(assignment=slots[0], version=3, time_spent_seconds=10)
    later = timezone.now() + datetime.timedelta(minutes=5)
    assert (
        prepared.update(Annotation, annotation.pk, where={"version": 2}, add={"version": 1}, note="no") == 0
    )
    changed = prepared.update(
        Annotation,
        annotation.pk,
        where={"version": 3},
        add={"version": 1, "time_spent_seconds": 5},
        updated_at=later,
        confidence=None,
        note="yes",
    )
    assert changed == 1
    row = Annotation.objects.get(pk=annotation.pk)
    assert (row.version, row.time_spent_seconds, row.updated_at, row.confidence, row.note) == (
        4,
        15,
        later,
        None,
        "yes",
    )
    assert prepared.update(Assignment, slots[1].pk, status="submitted", reserved_until=None) == 1
    assert Assignment.objects.get(pk=slots[1].pk).status == "submitted"
    with pytest.raises(TypeError, match="NULL"):
        prepared.update(Annotation, annotation.pk, where={"confidence": None}, note="x")


def test_a_delete_removes_the_matching_rows_and_refuses_a_model_others_point_to(slots, taxonomies):
    annotation = Annotation.objects.create(assignment=slots[0])
    mode = slots[0].project.taxonomy_version.modes.first()
    LabelApplication.objects.create(annotation=annotation, mode=mode)
    other = Annotation.objects.create(assignment=slots[1])
    LabelApplication.objects.create(annotation=other, mode=mode)
    assert prepared.delete(LabelApplication, annotation=annotation.pk) == 1
    assert list(LabelApplication.objects.values_list("annotation_id", flat=True)) == [other.pk]
    with pytest.raises(TypeError, match="point to"):
        prepared.delete(Annotation, assignment=slots[1].pk)  # its labels and history would be orphaned
    with pytest.raises(TypeError):
        prepared.delete(LabelApplication)
