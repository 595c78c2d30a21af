"""After a submit: the worker is asked to check a trace for the adjudication queue only when the check can
change something (every required annotation is in, or the trace has an item already); otherwise a busy
project would send one useless task per first annotation of each trace."""

from __future__ import annotations

import pytest

from annotator.models import AdjudicationItem
from annotator.services import followups
from annotator.services.annotations import do_submit_annotation
from annotator.services.payload import AnnotationPayload

CHECK = "annotator.adjudication.check_traces"


@pytest.fixture
def sent(monkeypatch):
    """The adjudication checks sent to the worker, as (project, traces)."""
    checks = []
    real = followups.enqueue

    def record(name, *args, **kwargs):
        if name == CHECK:
            checks.append(tuple(args))
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(followups, "enqueue", record)
    return checks


def submit(slot, user, django_capture_on_commit_callbacks, *, version=0, no_failure=True):
    with django_capture_on_commit_callbacks(execute=True):
        do_submit_annotation(slot, AnnotationPayload(no_failure=no_failure), actor=user, base_version=version)


def test_the_first_annotation_of_a_trace_sends_no_check_the_last_one_does(
    slot_a, slot_b, annotator_a, annotator_b, sent, django_capture_on_commit_callbacks
):
    submit(slot_a, annotator_a, django_capture_on_commit_callbacks)
    assert sent == []  # one of two: the check would find nothing to compare
    submit(slot_b, annotator_b, django_capture_on_commit_callbacks)
    assert sent == [(slot_a.project_id, [slot_a.trace_id])]


def test_a_trace_with_an_item_is_checked_again_after_any_change(
    slot_a, annotator_a, sent, django_capture_on_commit_callbacks
):
    """An item already there may have to be re-evaluated or withdrawn, whatever the count says."""
    AdjudicationItem.objects.create(project=slot_a.project, trace_id=slot_a.trace_id, status="open")
    submit(slot_a, annotator_a, django_capture_on_commit_callbacks)
    assert sent == [(slot_a.project_id, [slot_a.trace_id])]


def test_only_the_traces_that_can_change_are_sent_from_a_batch(
    traces, slot_a, slot_b, annotator_a, annotator_b, sent, django_capture_on_commit_callbacks
):
    submit(slot_a, annotator_a, django_capture_on_commit_callbacks)
    submit(slot_b, annotator_b, django_capture_on_commit_callbacks)
    sent.clear()
    AdjudicationItem.objects.create(project=slot_a.project, trace_id=traces[2].pk, status="open")
    followups.after_annotations_changed(slot_a.project_id, [t.pk for t in traces])
    assert sent == [(slot_a.project_id, [traces[0].pk, traces[2].pk])]


def test_when_the_count_fails_every_trace_is_sent(slot_a, annotator_a, sent, monkeypatch, caplog):
    class Gone:
        def cursor(self):
            raise RuntimeError("database gone")

    monkeypatch.setattr(followups, "connection", Gone())
    followups.after_annotations_changed(slot_a.project_id, [slot_a.trace_id])
    assert sent == [(slot_a.project_id, [slot_a.trace_id])]
    assert "counting the annotations" in caplog.text
