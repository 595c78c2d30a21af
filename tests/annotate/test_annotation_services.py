"""Draft, submit and skip: validation, optimistic concurrency, history, the adjudication lock, the hook."""

from __future__ import annotations

import logging

import pytest

from annotator.models import AdjudicationItem, Annotation, Assignment, LabelHistory
from annotator.services import annotations as service
from annotator.services.annotations import (
    AnnotationInvalid,
    AnnotationLocked,
    StaleAnnotation,
    do_save_draft,
    do_skip,
    do_submit_annotation,
)
from annotator.services.locking import is_locked
from annotator.services.payload import AnnotationPayload, Evidence, LabelInput, payload_from_json
from tests.factories import ProjectFactory, add_member, trace_with_steps


def labels(*codes, steps=(), primary=None):
    return tuple(
        LabelInput(mode=code, primary=code == primary, evidence=tuple(Evidence(step=s) for s in steps))
        for code in codes
    )


def test_it_saves_a_draft_and_records_history(slot_a, annotator_a):
    payload = AnnotationPayload(
        labels=labels("FM-1.3", steps=[2]), confidence=3, note="loops", elapsed_seconds=40
    )
    annotation = do_save_draft(slot_a, payload, actor=annotator_a, base_version=0)
    assert annotation.version == 1
    assert annotation.status == Annotation.Status.DRAFT
    assert annotation.time_spent_seconds == 40
    assert [(la.mode.code, la.evidence) for la in annotation.labels.all()] == [("FM-1.3", [{"step": 2}])]
    slot_a.refresh_from_db()
    assert slot_a.status == Assignment.Status.IN_PROGRESS
    entry = LabelHistory.objects.get(annotation=annotation)
    assert (entry.action, entry.actor, entry.before) == ("create", annotator_a, None)
    assert entry.after["labels"][0]["mode"] == "FM-1.3"


def test_each_save_bumps_the_version_and_adds_time(slot_a, annotator_a):
    do_save_draft(slot_a, AnnotationPayload(elapsed_seconds=10), actor=annotator_a, base_version=0)
    annotation = do_save_draft(
        slot_a,
        AnnotationPayload(labels=labels("FM-2.1"), elapsed_seconds=5),
        actor=annotator_a,
        base_version=1,
    )
    assert (annotation.version, annotation.time_spent_seconds) == (2, 15)
    assert list(annotation.history.values_list("action", flat=True)) == ["create", "draft"]


def test_a_stale_save_is_refused_and_changes_nothing(slot_a, annotator_a):
    do_save_draft(slot_a, AnnotationPayload(labels=labels("FM-1.1")), actor=annotator_a, base_version=0)
    do_save_draft(slot_a, AnnotationPayload(labels=labels("FM-1.2")), actor=annotator_a, base_version=1)
    stale = AnnotationPayload(labels=labels("FM-3.1"))
    with pytest.raises(StaleAnnotation) as caught:
        do_save_draft(slot_a, stale, actor=annotator_a, base_version=1)  # a second tab, opened at version 1
    assert caught.value.current_version == 2
    assert caught.value.payload == stale
    annotation = Annotation.objects.get(assignment=slot_a)
    assert [la.mode.code for la in annotation.labels.all()] == ["FM-1.2"]


def test_submit_needs_labels_or_no_failure_but_not_both(slot_a, annotator_a):
    with pytest.raises(AnnotationInvalid, match="at least one failure mode"):
        do_submit_annotation(slot_a, AnnotationPayload(), actor=annotator_a, base_version=0)
    with pytest.raises(AnnotationInvalid, match="not both"):
        do_submit_annotation(
            slot_a,
            AnnotationPayload(labels=labels("FM-1.1"), no_failure=True),
            actor=annotator_a,
            base_version=0,
        )
    assert not Annotation.objects.filter(assignment=slot_a).exists()


def test_modes_must_belong_to_the_projects_taxonomy_version(slot_a, annotator_a, taxonomies):
    other = taxonomies["agent-failures-6"].modes.first().code
    with pytest.raises(AnnotationInvalid, match="not a failure mode"):
        do_save_draft(slot_a, AnnotationPayload(labels=labels(other)), actor=annotator_a, base_version=0)


def test_evidence_steps_must_exist_in_the_trace(slot_a, annotator_a):
    with pytest.raises(AnnotationInvalid, match="Step 99 is not in this trace"):
        do_save_draft(
            slot_a, AnnotationPayload(labels=labels("FM-1.1", steps=[99])), actor=annotator_a, base_version=0
        )


def test_evidence_beyond_the_step_count_is_still_checked_against_the_steps(slot_a, annotator_a):
    """A trace whose step count understates its steps (not written by an import) loses no valid evidence,
    and a step that is in neither is still refused."""
    Step = slot_a.trace.steps.model
    Step.objects.create(trace=slot_a.trace, index=500)
    type(slot_a.trace).objects.filter(pk=slot_a.trace_id).update(step_count=1)
    saved = do_save_draft(
        slot_a, AnnotationPayload(labels=labels("FM-1.1", steps=[0, 500])), actor=annotator_a, base_version=0
    )
    assert sorted(e["step"] for label in saved.labels.all() for e in label.evidence) == [0, 500]
    with pytest.raises(AnnotationInvalid, match="Step 501 is not in this trace"):
        do_save_draft(
            slot_a, AnnotationPayload(labels=labels("FM-1.1", steps=[501])), actor=annotator_a, base_version=1
        )


def test_single_primary_needs_exactly_one_primary_on_submit(taxonomies, annotator_a):
    project = ProjectFactory(taxonomy_version=taxonomies["agent-failures-6"])
    add_member(project, annotator_a, "annotator")
    trace = trace_with_steps(3)
    slot = Assignment.objects.create(project=project, trace=trace, annotator=annotator_a)
    with pytest.raises(AnnotationInvalid, match="primary"):
        do_submit_annotation(
            slot, AnnotationPayload(labels=labels("AF-1", "AF-2")), actor=annotator_a, base_version=0
        )
    with pytest.raises(AnnotationInvalid, match="one primary"):
        payload = AnnotationPayload(
            labels=(LabelInput("AF-1", primary=True), LabelInput("AF-2", primary=True))
        )
        do_submit_annotation(slot, payload, actor=annotator_a, base_version=0)
    annotation = do_submit_annotation(
        slot,
        AnnotationPayload(labels=labels("AF-1", "AF-2", primary="AF-2")),
        actor=annotator_a,
        base_version=0,
    )
    assert list(annotation.labels.filter(primary=True).values_list("mode__code", flat=True)) == ["AF-2"]


def test_multi_label_ignores_primary_flags(slot_a, annotator_a):
    payload = AnnotationPayload(labels=labels("FM-1.1", primary="FM-1.1"))
    annotation = do_submit_annotation(slot_a, payload, actor=annotator_a, base_version=0)
    assert not annotation.labels.filter(primary=True).exists()


def test_submit_releases_the_slot_and_calls_the_hook_after_commit(
    slot_a, annotator_a, monkeypatch, django_capture_on_commit_callbacks, caplog
):
    calls = []
    real = service.on_trace_annotations_changed
    monkeypatch.setattr(
        service, "on_trace_annotations_changed", lambda p, t: (calls.append((p, t)), real(p, t))
    )
    payload = AnnotationPayload(labels=labels("FM-1.3", steps=[1]), confidence=4)
    with (
        caplog.at_level(logging.DEBUG, logger="annotator.services.annotations"),
        django_capture_on_commit_callbacks(execute=True) as callbacks,
    ):
        annotation = do_submit_annotation(slot_a, payload, actor=annotator_a, base_version=0)
        assert calls == []  # not before the commit
    assert len(callbacks) == 1
    assert calls == [(slot_a.project_id, slot_a.trace_id)]
    assert f"annotations changed for trace {slot_a.trace_id}" in caplog.text
    slot_a.refresh_from_db()
    assert (slot_a.status, slot_a.reserved_until) == (Assignment.Status.SUBMITTED, None)
    assert annotation.submitted_at is not None
    assert annotation.history.get().action == "submit"


def test_a_submitted_annotation_changes_only_by_submitting_again(slot_a, annotator_a):
    do_submit_annotation(slot_a, AnnotationPayload(no_failure=True), actor=annotator_a, base_version=0)
    with pytest.raises(AnnotationInvalid, match="submit it again"):
        do_save_draft(slot_a, AnnotationPayload(labels=labels("FM-1.1")), actor=annotator_a, base_version=1)
    edited = do_submit_annotation(
        slot_a, AnnotationPayload(labels=labels("FM-1.1")), actor=annotator_a, base_version=1
    )
    assert edited.version == 2
    entry = edited.history.order_by("id").last()
    assert entry.action == "edit"
    assert entry.before["no_failure"] is True and entry.after["labels"][0]["mode"] == "FM-1.1"


@pytest.mark.parametrize(
    "item",
    [{"status": "agreed"}, {"status": "open"}, {"status": "open", "claimed": True}, {"status": "resolved"}],
)
def test_a_submitted_annotation_freezes_when_the_round_closes_whatever_the_others_chose(
    slot_a, annotator_a, adjudicator, item
):
    """The lock must not depend on agreement: locked only on a disagreement (claimed or resolved items)
    told a blind annotator that the other annotator disagreed (issue 11, point 8)."""
    do_submit_annotation(slot_a, AnnotationPayload(no_failure=True), actor=annotator_a, base_version=0)
    # Before every required annotation is in, the annotator may change their mind.
    do_submit_annotation(
        slot_a, AnnotationPayload(labels=labels("FM-1.1")), actor=annotator_a, base_version=1
    )
    slot_a.refresh_from_db()
    assert not is_locked(slot_a)
    AdjudicationItem.objects.create(
        project=slot_a.project,
        trace_id=slot_a.trace_id,
        status=item["status"],
        claimed_by=adjudicator if item.get("claimed") else None,
    )
    slot_a.refresh_from_db()
    assert is_locked(slot_a)
    with pytest.raises(AnnotationLocked, match="Every required annotation of this trace is in"):
        do_submit_annotation(slot_a, AnnotationPayload(no_failure=True), actor=annotator_a, base_version=2)


def test_a_slot_not_yet_submitted_stays_open_after_the_round_closes(slot_a, annotator_a, adjudicator):
    AdjudicationItem.objects.create(
        project=slot_a.project, trace_id=slot_a.trace_id, status="resolved", claimed_by=adjudicator
    )
    assert not is_locked(slot_a)
    done = do_submit_annotation(slot_a, AnnotationPayload(no_failure=True), actor=annotator_a, base_version=0)
    assert done.status == "submitted"


def test_skip_needs_a_reason_keeps_the_draft_and_is_in_history(
    slot_a, annotator_a, django_capture_on_commit_callbacks
):
    do_save_draft(slot_a, AnnotationPayload(labels=labels("FM-1.1")), actor=annotator_a, base_version=0)
    with pytest.raises(AnnotationInvalid, match="why"):
        do_skip(slot_a, "  ", actor=annotator_a)
    with django_capture_on_commit_callbacks() as callbacks:
        do_skip(slot_a, "Trace is truncated", actor=annotator_a)
    assert len(callbacks) == 1
    slot_a.refresh_from_db()
    assert (slot_a.status, slot_a.skip_reason) == (Assignment.Status.SKIPPED, "Trace is truncated")
    annotation = Annotation.objects.get(assignment=slot_a)
    assert annotation.labels.count() == 1
    entry = annotation.history.order_by("id").last()
    assert entry.action == "skip" and entry.after["skip_reason"] == "Trace is truncated"
    # Saving again reopens it.
    do_save_draft(
        slot_a, AnnotationPayload(no_failure=True), actor=annotator_a, base_version=annotation.version
    )
    slot_a.refresh_from_db()
    assert slot_a.status == Assignment.Status.IN_PROGRESS


def test_a_submitted_trace_cannot_be_skipped(slot_a, annotator_a):
    do_submit_annotation(slot_a, AnnotationPayload(no_failure=True), actor=annotator_a, base_version=0)
    with pytest.raises(AnnotationInvalid):
        do_skip(slot_a, "changed my mind", actor=annotator_a)


def test_the_json_payload_parser_rejects_malformed_bodies():
    from annotator.services.payload import PayloadError

    with pytest.raises(PayloadError):
        payload_from_json({"labels": [{"mode": "FM-1.1", "evidence": [{"step": -1}]}]})
    with pytest.raises(PayloadError):
        payload_from_json({"labels": "FM-1.1"})
    parsed = payload_from_json({"labels": [{"mode": "FM-1.1", "evidence": [3, {"step": 4, "quote": "x"}]}]})
    assert parsed.labels[0].evidence == (Evidence(3), Evidence(4, "x"))
