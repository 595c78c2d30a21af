"""The real OpenTelemetry SDK exporter (OTLP/HTTP, protobuf, gzip) against the running test server."""

from __future__ import annotations

import threading

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from annotator.live import service
from annotator.models import LiveTrace, PendingSpan, SpanBatch
from annotator.services.api_tokens import do_issue_ingest_token
from annotator.services.enqueue import celery_app
from tests.live import agent_run
from traces.models import Trace

pytestmark = pytest.mark.django_db(transaction=True)


def _exporter(live_server, project, key: str) -> OTLPSpanExporter:
    return OTLPSpanExporter(
        endpoint=f"{live_server.url}/api/projects/{project.slug}/otlp/v1/traces",
        headers={"Authorization": f"Token {key}"},
        compression=Compression.Gzip,
        timeout=10,
    )


def test_an_instrumented_agent_run_becomes_one_trace_with_nested_steps(live_server, project, owner):
    _, key = do_issue_ingest_token(project, owner)

    result = _exporter(live_server, project, key).export(agent_run.record_run())

    assert result == SpanExportResult.SUCCESS
    [trace] = Trace.objects.in_project(project)
    steps = list(trace.steps.order_by("index"))
    assert len(steps) == 4
    root, *children = steps
    assert root.parent_index is None
    assert [s.parent_index for s in children] == [0, 0, 0]
    assert [s.kind for s in steps] == ["message", "message", "tool_call", "message"]
    tool = steps[2]
    assert tool.tool_name == agent_run.TOOL
    assert tool.tool_args == agent_run.TOOL_ARGS
    assert tool.content == agent_run.TOOL_RESULT
    assert steps[3].content == agent_run.ANSWER
    assert trace.model == agent_run.MODEL
    assert trace.task == agent_run.QUESTION
    assert trace.system == "travel-agent"
    assert trace.batch.name.startswith("Live ")
    assert LiveTrace.objects.get(project=project).trace == trace


def test_when_the_broker_is_down_the_exporter_is_told_to_retry_and_nothing_is_lost(
    live_server, project, owner, settings
):
    """503 with Retry-After while Redis is unreachable (nothing half-stored); the exporter retries on its own,
    and once the queue is back the run arrives whole."""
    settings.OTLP_RETRY_AFTER_SECONDS = 1
    _, key = do_issue_ingest_token(project, owner)
    app = celery_app()
    before = app.conf.broker_url, app.conf.task_always_eager
    refused = threading.Event()
    answers: list[int] = []
    accept = service.do_accept_spans

    def watched(project_, items):
        try:
            return accept(project_, items)
        except service.QueueUnavailable:
            answers.append(503)
            refused.set()
            raise

    def down() -> None:
        app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1
        app.conf.task_always_eager = False
        _reset_connections(app)

    def back() -> None:
        app.conf.broker_url, app.conf.task_always_eager = before
        _reset_connections(app)

    results: list[SpanExportResult] = []
    service.do_accept_spans = watched
    try:
        down()
        sender = threading.Thread(
            target=lambda: results.append(_exporter(live_server, project, key).export(agent_run.record_run()))
        )
        sender.start()
        assert refused.wait(timeout=30), "the endpoint never refused while the broker was down"
        assert not SpanBatch.objects.filter(project=project).exists()  # the request's row rolled back
        assert not PendingSpan.objects.filter(project=project).exists()
        back()
        sender.join(timeout=30)
    finally:
        service.do_accept_spans = accept
        back()
    assert answers and set(answers) == {503}
    assert results == [SpanExportResult.SUCCESS]
    [trace] = Trace.objects.in_project(project)
    assert trace.step_count == 4


def _reset_connections(app) -> None:
    """Forget pooled broker connections so the next publish dials the configured broker."""
    app._pool = None
    app.amqp._producer_pool = None
