"""Queued spans become traces: when a trace is complete, late spans, the same run twice, where traces land."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from annotator.live import assembly, otlp, service
from annotator.live.assembly import do_assemble_due, due_trace_ids
from annotator.live.service import do_accept_spans, live_status
from annotator.models import Assignment, LiveSettings, LiveTrace, PendingSpan, SpanBatch
from annotator.services.annotations import do_save_draft
from annotator.services.payload import AnnotationPayload
from tests.importers import otel_shapes
from tests.live import agent_run
from traces.models import Trace


def _items(spans) -> otlp.Decoded:
    return _accepted(encode_spans(spans))


def _accepted(request) -> otlp.Decoded:
    """What the endpoint accepts of an ExportTraceServiceRequest."""
    return otlp.parse_traces(request.SerializeToString(), otlp.PROTOBUF)


def _spans_of(request):
    return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]


def _root_and_children(run):
    root = next(s for s in run if s.parent is None)
    return root, [s for s in run if s.parent is not None]


def test_a_trace_waits_for_its_root_and_a_quiet_window_when_a_worker_assembles(
    project, monkeypatch, settings
):
    """With a worker, a trace is complete once its root span has ended and no span came for
    OTLP_TRACE_QUIET_SECONDS."""
    settings.OTLP_TRACE_QUIET_SECONDS = 30
    monkeypatch.setattr(assembly, "is_eager", lambda: False)
    monkeypatch.setattr(
        service, "_queue_assembly", lambda project: None
    )  # the broker's part, tested elsewhere
    root, children = _root_and_children(agent_run.record_run())
    do_accept_spans(project, _items(children))
    service.do_read_batches(project)  # the task's first step
    later = timezone.now() + timedelta(seconds=31)

    assert PendingSpan.objects.count() == 3
    assert due_trace_ids(project.pk, later) == []  # no root yet
    do_accept_spans(project, _items([root]))
    service.do_read_batches(project)
    assert due_trace_ids(project.pk) == []  # root here, but not quiet yet
    assert do_assemble_due(project.pk, later) == 1
    assert Trace.objects.in_project(project).get().step_count == 4


def test_a_trace_whose_root_never_comes_is_assembled_after_the_abandon_time(project, monkeypatch, settings):
    monkeypatch.setattr(assembly, "is_eager", lambda: False)
    monkeypatch.setattr(service, "_queue_assembly", lambda project: None)
    _, children = _root_and_children(agent_run.record_run())
    do_accept_spans(project, _items(children))

    assert (
        do_assemble_due(project.pk, timezone.now() + timedelta(seconds=settings.OTLP_TRACE_QUIET_SECONDS + 1))
        == 0
    )
    later = timezone.now() + timedelta(seconds=settings.OTLP_TRACE_ABANDON_SECONDS + 1)
    assert do_assemble_due(project.pk, later) == 1
    assert Trace.objects.in_project(project).get().step_count == 3


def test_the_same_run_sent_twice_is_one_trace(project):
    run = agent_run.record_run()
    do_accept_spans(project, _items(run))
    do_accept_spans(project, _items(run))

    assert Trace.objects.count() == 1
    assert PendingSpan.objects.count() == 4
    assert LiveTrace.objects.get().spans == 4


def test_a_run_sent_again_under_a_new_trace_id_is_the_same_content_and_one_trace(project):
    """Content identity: two recordings with the same content are one trace; the second id points at it."""
    first = agent_run.record_run()
    do_accept_spans(project, _items(first))
    trace = Trace.objects.get()
    request = encode_spans(first)
    for span in _spans_of(request):
        span.trace_id = bytes.fromhex("ab" * 16)
    # The trace id is part of a trace's content (its external id), so a new id is a new trace ...
    do_accept_spans(project, _accepted(request))
    assert Trace.objects.count() == 2
    # ... while the same id and spans again is not.
    do_accept_spans(project, _items(first))
    assert Trace.objects.count() == 2
    assert LiveTrace.objects.get(otlp_trace_id=f"{first[0].context.trace_id:032x}").trace == trace


def test_late_spans_extend_a_trace_nobody_has_started_labelling(project):
    root, children = _root_and_children(agent_run.record_run())
    do_accept_spans(project, _items([root, *children[:2]]))
    trace = Trace.objects.get()
    assert trace.step_count == 3

    do_accept_spans(project, _items(children[2:]))

    trace.refresh_from_db()
    assert trace.step_count == 4
    assert trace.steps.get(index=3).content == agent_run.ANSWER
    assert trace.batch.step_count == 4
    assert LiveTrace.objects.get().held_spans == 0


def test_late_spans_after_labelling_started_are_kept_and_reported_not_merged(project, annotator_a):
    root, children = _root_and_children(agent_run.record_run())
    do_accept_spans(project, _items([root, *children[:2]]))
    trace = Trace.objects.get()
    slot = Assignment.objects.get(project=project, trace=trace, annotator=annotator_a)
    do_save_draft(slot, AnnotationPayload(note="step 2 looks wrong"), actor=annotator_a, base_version=0)

    do_accept_spans(project, _items(children[2:]))

    trace.refresh_from_db()
    assert trace.step_count == 3  # the labelled trace is untouched
    late = PendingSpan.objects.get(state=PendingSpan.State.HELD)
    assert late.span_id == f"{children[2].context.span_id:016x}"
    status = live_status(project)
    assert [(held.trace, held.held_spans) for held in status.held] == [(trace, 1)]


def test_live_traces_land_in_a_batch_of_the_day_the_project_follows(project):
    do_accept_spans(project, _items(agent_run.record_run()))
    do_accept_spans(project, _items(agent_run.record_run(question="And a hotel?")))

    [batch] = {trace.batch for trace in Trace.objects.in_project(project)}
    assert batch.name == f"Live {timezone.now():%Y-%m-%d}"
    assert batch.trace_count == 2
    assert project.batches.filter(pk=batch.pk).exists()


def test_live_traces_are_assigned_like_imported_ones(project, annotator_a, annotator_b):
    do_accept_spans(project, _items(agent_run.record_run()))

    trace = Trace.objects.get()
    assert set(Assignment.objects.filter(trace=trace).values_list("annotator__username", flat=True)) == {
        annotator_a.username,
        annotator_b.username,
    }


@pytest.mark.parametrize(
    ("choice", "rate", "assigned"),
    [("none", 1.0, False), ("sample", 0.0, False), ("sample", 1.0, True), ("failures", 1.0, False)],
)
def test_the_projects_live_setting_decides_which_live_traces_get_annotators(project, choice, rate, assigned):
    LiveSettings.objects.create(project=project, assign=choice, sample_rate=rate)
    do_accept_spans(project, _items(agent_run.record_run()))  # outcome unknown: not a failure

    trace = Trace.objects.get()
    assert Assignment.objects.filter(trace=trace).exists() is assigned
    assert LiveTrace.objects.get().unassigned is not assigned


def test_a_failed_run_is_assigned_when_the_project_assigns_failures(project):
    """The root span's ERROR status is the run's outcome: failure."""
    LiveSettings.objects.create(project=project, assign="failures")
    request = encode_spans(agent_run.record_run())
    root = next(span for span in _spans_of(request) if not span.parent_span_id)
    root.status.code = root.status.STATUS_CODE_ERROR
    root.status.message = "no seat left"
    do_accept_spans(project, _accepted(request))

    trace = Trace.objects.get()
    assert trace.outcome == "failure"
    assert Assignment.objects.filter(trace=trace).exists()


def test_spans_with_the_genai_semantic_conventions_map_to_steps(project):
    """The GenAI conventions (gen_ai.*), as the OpenTelemetry GenAI instrumentations write them."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "genai-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.live.genai")
    with tracer.start_as_current_span("invoke_agent planner") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"})
        with tracer.start_as_current_span("chat gpt-4.1") as chat:
            chat.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4.1",
                    "gen_ai.usage.input_tokens": 30,
                    "gen_ai.usage.output_tokens": 8,
                    "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]}]',
                    "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "Checking."}]}]',
                }
            )
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "call_1",
                    "gen_ai.tool.call.arguments": '{"city": "Oslo"}',
                    "gen_ai.tool.call.result": "-3 C, snow",
                }
            )
    provider.shutdown()

    do_accept_spans(project, _items(memory.get_finished_spans()))

    trace = Trace.objects.in_project(project).get()
    agent, question, chat, tool = trace.steps.order_by("index")
    assert (agent.parent_index, question.parent_index, chat.parent_index, tool.parent_index) == (
        None,
        0,
        0,
        0,
    )
    assert agent.agent == "planner"
    assert (question.role, question.content) == ("user", "Weather in Oslo?")
    assert "Checking." in chat.content and chat.tokens == 38
    assert (tool.kind, tool.tool_name, tool.tool_args, tool.tool_call_id) == (
        "tool_call",
        "get_weather",
        {"city": "Oslo"},
        "call_1",
    )
    assert tool.content == "-3 C, snow"
    assert trace.model == "gpt-4.1"
    assert trace.system == "genai-agent"


def test_spans_still_in_their_request_count_towards_the_queue_limit(project, monkeypatch, settings):
    """With a worker, a request's spans wait as one row until the task reads them: they are waiting too."""
    monkeypatch.setattr(service, "_queue_assembly", lambda project: None)
    settings.OTLP_MAX_PENDING_SPANS = 6
    do_accept_spans(project, _items(agent_run.record_run()))  # 4 spans, not read yet

    with pytest.raises(service.QueueFull):
        do_accept_spans(project, _items(agent_run.record_run(question="And a hotel?")))
    assert SpanBatch.objects.get().spans == 4
    status = live_status(project)
    assert (status.pending_spans, status.pending_traces) == (4, 1)


def test_the_project_page_counts_a_trace_once_when_part_of_it_is_not_read_yet(project, monkeypatch):
    monkeypatch.setattr(service, "_queue_assembly", lambda project: None)
    root, children = _root_and_children(agent_run.record_run())
    do_accept_spans(project, _items(children))
    service.do_read_batches(project)
    do_accept_spans(project, _items([root]))  # still in its request
    other = agent_run.record_run(question="And a hotel?")
    do_accept_spans(project, _items(other))

    status = live_status(project)

    assert (status.pending_spans, status.pending_traces) == (8, 2)
    assert len(status.recent_spans) == 3  # listed once the task has read them


def test_late_log_records_rebuild_the_trace_once_they_are_quiet_when_a_worker_assembles(
    project, monkeypatch, settings
):
    settings.OTLP_TRACE_QUIET_SECONDS = 30
    monkeypatch.setattr(assembly, "is_eager", lambda: False)
    monkeypatch.setattr(service, "_queue_assembly", lambda project: None)
    spans, logs = otel_shapes.openai_v2_run()
    do_accept_spans(project, otlp.parse_traces(json.dumps(spans).encode(), otlp.JSON))
    later = timezone.now() + timedelta(seconds=31)
    assert do_assemble_due(project.pk, later) == 1
    trace = Trace.objects.get()
    assert not trace.steps.filter(content="It is 18°C.").exists()

    service.do_accept_logs(project, otlp.parse_logs(json.dumps(logs).encode(), otlp.JSON))

    assert due_trace_ids(project.pk) == []  # not quiet yet
    assert due_trace_ids(project.pk, timezone.now() + timedelta(seconds=31)) == [otel_shapes.TRACE]
    assert do_assemble_due(project.pk, timezone.now() + timedelta(seconds=31)) == 1
    assert Trace.objects.get() == trace
    assert trace.steps.filter(role="user", content="What is the weather in Paris?").exists()
    assert trace.steps.filter(role="assistant", content="It is 18°C.").exists()
    assert due_trace_ids(project.pk, timezone.now() + timedelta(seconds=31)) == []  # joined once


def test_the_sweep_reads_requests_whose_task_was_lost(project, monkeypatch):
    monkeypatch.setattr(assembly, "is_eager", lambda: False)
    monkeypatch.setattr(service, "_queue_assembly", lambda project: None)  # the task never comes
    do_accept_spans(project, _items(agent_run.record_run()))

    assembly.do_sweep()

    assert not SpanBatch.objects.exists()
    assert PendingSpan.objects.filter(project=project, state=PendingSpan.State.PENDING).count() == 4
