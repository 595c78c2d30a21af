"""Queued spans that can no longer rebuild their trace are deleted by the sweep; held and waiting ones stay."""

from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from annotator.live import assembly, otlp, service, tidy
from annotator.live.assembly import do_assemble_due, do_sweep
from annotator.live.service import do_accept_logs, do_accept_spans, live_status
from annotator.models import Assignment, LiveTrace, PendingLog, PendingSpan
from annotator.services.annotations import do_save_draft
from annotator.services.payload import AnnotationPayload
from tests.importers import otel_shapes
from tests.live import agent_run
from traces.models import Trace

State = PendingSpan.State


def _items(spans) -> otlp.Decoded:
    return otlp.parse_traces(agent_run.protobuf_body(spans), otlp.PROTOBUF)


def _split(run):
    root = next(s for s in run if s.parent is None)
    return root, [s for s in run if s.parent is not None]


def _trace_id(run) -> str:
    return f"{run[0].context.trace_id:032x}"


def _label(project, trace, annotator) -> None:
    slot = Assignment.objects.get(project=project, trace=trace, annotator=annotator)
    do_save_draft(slot, AnnotationPayload(note="step 2 looks wrong"), actor=annotator, base_version=0)


def _states(trace_id: str) -> list[str]:
    return sorted(PendingSpan.objects.filter(trace_id=trace_id).values_list("state", flat=True))


def test_the_sweep_deletes_consumed_spans_of_a_labelled_trace_and_keeps_held_ones(project, annotator_a):
    run = agent_run.record_run()
    root, children = _split(run)
    do_accept_spans(project, _items([root, *children[:2]]))
    trace = Trace.objects.get()
    _label(project, trace, annotator_a)
    do_accept_spans(project, _items(children[2:]))  # late: held
    other = agent_run.record_run(question="Where is the nearest station?")
    do_accept_spans(project, _items(other))  # nobody labels it: its spans may still rebuild it

    do_sweep()

    assert _states(_trace_id(run)) == [State.HELD]
    assert _states(_trace_id(other)) == [State.ASSEMBLED] * 4
    trace.refresh_from_db()
    assert trace.step_count == 3  # the trace itself is untouched
    status = live_status(project)
    assert [(held.trace, held.held_spans) for held in status.held] == [(trace, 1)]


def test_consumed_log_records_of_a_labelled_trace_are_deleted_too(project, annotator_a):
    spans, logs = otel_shapes.openai_v2_run()
    do_accept_spans(project, otlp.parse_traces(json.dumps(spans).encode(), otlp.JSON))
    do_accept_logs(project, otlp.parse_logs(json.dumps(logs).encode(), otlp.JSON))
    assert PendingLog.objects.filter(state=State.ASSEMBLED).exists()
    _label(project, Trace.objects.get(), annotator_a)

    assert tidy.do_tidy() > 0

    assert not PendingSpan.objects.exists()
    assert not PendingLog.objects.exists()


def test_late_spans_after_labelling_delete_the_consumed_ones_when_assembled(project, annotator_a):
    run = agent_run.record_run()
    root, children = _split(run)
    do_accept_spans(project, _items([root, *children[:2]]))
    _label(project, Trace.objects.get(), annotator_a)

    do_accept_spans(project, _items(children[2:]))

    assert _states(_trace_id(run)) == [State.HELD]


def test_consumed_spans_of_unlabelled_traces_are_deleted_after_the_retention(project, settings):
    settings.OTLP_KEEP_SPANS_DAYS = 30
    old, recent = agent_run.record_run(), agent_run.record_run(question="Where is the nearest station?")
    root, children = _split(old)
    do_accept_spans(project, _items([root, *children[:2]]))
    do_accept_spans(project, _items(recent))
    LiveTrace.objects.filter(otlp_trace_id=_trace_id(old)).update(
        last_received_at=timezone.now() - timedelta(days=31)
    )
    assert tidy.tidy_candidates() == [(project.pk, _trace_id(old))]

    do_sweep()

    assert _states(_trace_id(old)) == []
    assert _states(_trace_id(recent)) == [State.ASSEMBLED] * 4
    # A span arriving later for the old trace cannot rebuild it (its spans are gone): it is held and
    # reported, and the stored trace keeps its steps.
    trace = LiveTrace.objects.get(otlp_trace_id=_trace_id(old)).trace
    do_accept_spans(project, _items(children[2:]))
    trace.refresh_from_db()
    assert trace.step_count == 3
    assert _states(_trace_id(old)) == [State.HELD]
    assert LiveTrace.objects.get(otlp_trace_id=_trace_id(old)).held_spans == 1
    assert Trace.objects.count() == 2


def test_the_retention_is_a_setting(project, settings):
    do_accept_spans(project, _items(agent_run.record_run()))
    LiveTrace.objects.update(last_received_at=timezone.now() - timedelta(days=8))
    settings.OTLP_KEEP_SPANS_DAYS = 10
    assert tidy.do_tidy() == 0
    settings.OTLP_KEEP_SPANS_DAYS = 7
    assert tidy.do_tidy() == 4


def test_a_trace_waiting_for_its_quiet_window_is_never_touched(project, annotator_a, monkeypatch, settings):
    settings.OTLP_TRACE_QUIET_SECONDS = 30
    settings.OTLP_KEEP_SPANS_DAYS = 1
    monkeypatch.setattr(assembly, "is_eager", lambda: False)
    monkeypatch.setattr(service, "_queue_assembly", lambda project: None)
    run = agent_run.record_run()
    root, children = _split(run)
    do_accept_spans(project, _items([root, *children[:2]]))
    assert do_assemble_due(project.pk, timezone.now() + timedelta(seconds=31)) == 1
    _label(project, Trace.objects.get(), annotator_a)
    LiveTrace.objects.update(last_received_at=timezone.now() - timedelta(days=2))
    do_accept_spans(project, _items(children[2:]))  # late, waiting for the quiet window
    waiting = agent_run.record_run(question="Where is the nearest station?")
    do_accept_spans(project, _items(waiting))  # a new trace, not assembled yet

    do_sweep()  # reads the requests; nothing is quiet yet

    assert _states(_trace_id(run)) == [State.ASSEMBLED] * 3 + [State.PENDING]
    assert _states(_trace_id(waiting)) == [State.PENDING] * 4
    assert tidy.tidy_candidates() == []


def test_a_run_is_bounded_and_the_next_one_goes_on(project, annotator_a):
    first, second = agent_run.record_run(), agent_run.record_run(question="Where is the nearest station?")
    do_accept_spans(project, _items(first))
    do_accept_spans(project, _items(second))
    for trace in Trace.objects.all():
        _label(project, trace, annotator_a)

    assert tidy.do_tidy(limit=1) == 4
    assert PendingSpan.objects.count() == 4
    assert tidy.do_tidy(limit=1) == 4
    assert not PendingSpan.objects.exists()


def test_a_trace_extended_after_the_candidates_were_read_is_left_alone(project, settings):
    """The sweep asks again under the project's lock: a late span that extended an old unlabelled trace
    in between makes it recent, so its spans stay."""
    settings.OTLP_KEEP_SPANS_DAYS = 30
    run = agent_run.record_run()
    root, children = _split(run)
    do_accept_spans(project, _items([root, *children[:2]]))
    LiveTrace.objects.update(last_received_at=timezone.now() - timedelta(days=31))
    candidates = tidy.tidy_candidates()
    assert candidates == [(project.pk, _trace_id(run))]

    do_accept_spans(project, _items(children[2:]))  # extends it: its last span is now recent
    assert tidy._tidy_chunk(project.pk, [_trace_id(run)], timezone.now()) == 0

    assert _states(_trace_id(run)) == [State.ASSEMBLED] * 4
