"""POST /api/projects/<slug>/otlp/v1/traces (and /logs): what an exporter is answered, and what is stored."""

from __future__ import annotations

import gzip
import json

import pytest
from django.test import Client
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from annotator.models import Assignment, PendingLog, PendingSpan
from annotator.services.annotations import do_save_draft
from annotator.services.api_tokens import do_issue_ingest_token
from annotator.services.payload import AnnotationPayload
from tests.factories import ProjectFactory, add_member, api_token
from tests.importers import otel_shapes
from tests.live import agent_run
from traces.importers import limits
from traces.models import Trace

PROTOBUF = "application/x-protobuf"


@pytest.fixture
def run():
    return agent_run.record_run()


@pytest.fixture
def ingest_key(project, owner) -> str:
    return do_issue_ingest_token(project, owner)[1]


def _post(
    project_slug: str,
    body: bytes,
    key: str | None,
    *,
    kind: str = PROTOBUF,
    gzipped: bool = False,
    path="traces",
):
    headers = {"HTTP_AUTHORIZATION": f"Token {key}"} if key else {}
    if gzipped:
        body = gzip.compress(body)
        headers["HTTP_CONTENT_ENCODING"] = "gzip"
    return Client().post(f"/api/projects/{project_slug}/otlp/v1/{path}", body, content_type=kind, **headers)


def test_it_takes_otlp_json_and_answers_in_json(project, ingest_key, run):
    response = _post(project.slug, agent_run.json_body(run), ingest_key, kind="application/json")

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {}  # no partial_success: every span was accepted
    [trace] = Trace.objects.in_project(project)
    assert trace.step_count == 4
    assert trace.steps.get(index=2).tool_args == agent_run.TOOL_ARGS


def test_json_and_protobuf_bodies_of_the_same_run_make_the_same_trace(project, ingest_key, run):
    _post(project.slug, agent_run.json_body(run), ingest_key, kind="application/json")
    response = _post(project.slug, agent_run.protobuf_body(run), ingest_key, gzipped=True)

    assert response.status_code == 200
    assert Trace.objects.in_project(project).count() == 1
    assert PendingSpan.objects.filter(project=project).count() == 4


def test_an_owners_own_token_may_send_spans(project, owner, run):
    response = _post(project.slug, agent_run.protobuf_body(run), api_token(owner))

    assert response.status_code == 200
    assert ExportTraceServiceResponse.FromString(response.content) == ExportTraceServiceResponse()
    assert Trace.objects.in_project(project).count() == 1


@pytest.mark.parametrize("who", ["nobody", "wrong", "annotator", "outsider", "other_ingest"])
def test_a_wrong_token_is_refused_and_nothing_is_stored(project, annotator_a, outsider, who, run):
    other = ProjectFactory(taxonomy_version=project.taxonomy_version, slug="elsewhere")
    add_member(other, outsider, "owner")
    key, status = {
        "nobody": (None, 401),
        "wrong": ("not-a-token", 401),
        "annotator": (api_token(annotator_a), 403),
        "outsider": (api_token(outsider), 404),
        "other_ingest": (do_issue_ingest_token(other, outsider)[1], 403),
    }[who]

    response = _post(project.slug, agent_run.protobuf_body(run), key)

    assert response.status_code == status
    assert not PendingSpan.objects.exists()
    assert not Trace.objects.exists()


def test_a_project_that_does_not_exist_is_404(ingest_key, owner, run):
    assert _post("no-such-project", agent_run.protobuf_body(run), api_token(owner)).status_code == 404


def test_a_body_over_the_size_limit_is_413(project, ingest_key, run):
    body = agent_run.protobuf_body(run)
    with limits.override(max_record_bytes=len(body) - 1):
        response = _post(project.slug, body, ingest_key)

    assert response.status_code == 413
    assert "IMPORT_MAX_RECORD_MB" in Status.FromString(response.content).message
    assert not PendingSpan.objects.exists()


def test_a_gzip_bomb_is_413_before_it_is_inflated(project, ingest_key):
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024))
    response = Client().post(
        f"/api/projects/{project.slug}/otlp/v1/traces",
        bomb,
        content_type=PROTOBUF,
        HTTP_AUTHORIZATION=f"Token {ingest_key}",
        HTTP_CONTENT_ENCODING="gzip",
    )

    assert response.status_code == 413
    assert "IMPORT_MAX_ZIP_RATIO" in Status.FromString(response.content).message


@pytest.mark.parametrize(
    ("kind", "body", "says"),
    [
        (PROTOBUF, b"\xff\xff\xff not protobuf", "not an OTLP protobuf message"),
        ("application/json", b'{"resourceSpans": [', "not JSON"),
        ("application/json", b'{"resourceSpans": "many"}', "not an OTLP JSON message"),
        (
            "application/json",
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
            "not hex",
        ),
        ("text/plain", b"hello", "Content-Type"),
    ],
)
def test_a_body_that_is_not_otlp_is_400_and_says_why(project, ingest_key, kind, body, says):
    response = _post(project.slug, body, ingest_key, kind=kind)

    assert response.status_code == 400
    if response["Content-Type"] == "application/json":
        message = json.loads(response.content)["message"]
    else:
        message = Status.FromString(response.content).message
    assert says in message
    assert not PendingSpan.objects.exists()


def test_spans_breaking_a_limit_are_rejected_alone_as_a_partial_success(project, ingest_key, run):
    request = encode_spans(run)
    spans = request.resource_spans[0].scope_spans[0].spans
    big = spans.add()
    big.CopyFrom(spans[0])
    big.span_id = bytes(7) + b"\xff"
    attribute = big.attributes.add()
    attribute.key, attribute.value.string_value = "input.value", "x" * 5000
    unnamed = spans.add()
    unnamed.CopyFrom(spans[0])
    unnamed.span_id = bytes(8)
    with limits.override(max_value_bytes=4000):
        response = _post(project.slug, request.SerializeToString(), ingest_key)

    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == 2
    assert "IMPORT_MAX_VALUE_MB" in partial.error_message
    assert "spanId" in partial.error_message
    assert PendingSpan.objects.filter(project=project).count() == 4


def test_a_span_tree_deeper_than_the_limit_is_rejected(project, ingest_key):
    chain = [
        {
            "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": f"{i + 1:016x}",
            "parentSpanId": f"{i:016x}" if i else "",
            "name": f"level {i}",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
        }
        for i in range(12)
    ]
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": chain}]}]}).encode()
    with limits.override(max_depth=10):
        response = _post(project.slug, body, ingest_key, kind="application/json")

    assert response.status_code == 200
    partial = json.loads(response.content)["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    assert "IMPORT_MAX_DEPTH" in partial["errorMessage"]
    stored = PendingSpan.objects.filter(project=project).values_list("name", flat=True)
    assert sorted(stored) == sorted(f"level {i}" for i in range(10))


def test_a_span_holding_a_nul_character_is_rejected_alone(project, ingest_key, run):
    """PostgreSQL text cannot hold NUL: such a span is refused, however deep the NUL hides, and the
    request's other spans are kept."""
    request = encode_spans(run)
    spans = request.resource_spans[0].scope_spans[0].spans
    nested = spans[0].attributes.add(key="nested")
    nested.value.kvlist_value.values.add(
        key="deep", value={"array_value": {"values": [{"string_value": "a\0b"}]}}
    )
    spans[1].events.add(name="exception\0")

    response = _post(project.slug, request.SerializeToString(), ingest_key, gzipped=True)

    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == 2
    assert "NUL" in partial.error_message
    kept = {f"{span.context.span_id:016x}" for span in run[2:]}
    assert set(PendingSpan.objects.filter(project=project).values_list("span_id", flat=True)) == kept


def test_too_many_spans_in_one_request_is_413(project, ingest_key, run, settings):
    settings.OTLP_MAX_SPANS = 3
    response = _post(project.slug, agent_run.protobuf_body(run), ingest_key)

    assert response.status_code == 413
    assert "OTLP_MAX_SPANS" in Status.FromString(response.content).message


def test_a_full_queue_is_429_with_retry_after(project, ingest_key, run, settings):
    settings.OTLP_MAX_PENDING_SPANS = 3
    response = _post(project.slug, agent_run.protobuf_body(run), ingest_key)

    assert response.status_code == 429
    assert response["Retry-After"] == str(settings.OTLP_RETRY_AFTER_SECONDS)
    assert not PendingSpan.objects.exists()


def test_the_ingest_token_is_refused_on_every_other_route(project, ingest_key):
    response = Client().get(f"/api/projects/{project.slug}/traces/", HTTP_AUTHORIZATION=f"Token {ingest_key}")

    assert response.status_code == 403


def test_log_records_are_accepted_and_kept_with_their_trace(project, ingest_key, run):
    span = run[0]
    ids = {"traceId": f"{span.context.trace_id:032x}", "spanId": f"{span.context.span_id:016x}"}
    body = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {**ids, "eventName": "gen_ai.user.message", "body": {"stringValue": "hello"}},
                            {"eventName": "no ids", "body": {"stringValue": "lost"}},
                        ]
                    }
                ]
            }
        ]
    }
    response = _post(
        project.slug, json.dumps(body).encode(), ingest_key, kind="application/json", path="logs"
    )

    assert response.status_code == 200
    partial = json.loads(response.content)["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1"
    [log] = project.live_logs.all()
    assert log.trace_id == ids["traceId"]


def test_the_fast_span_conversion_writes_what_protobufs_own_json_does(run):
    """annotator.live.otlp.span_doc is a hand-written MessageToDict (with hex ids): the same documents."""
    import base64

    from google.protobuf import json_format

    from annotator.live.otlp import span_doc

    request = encode_spans(run)
    span = request.resource_spans[0].scope_spans[0].spans.add()
    span.CopyFrom(request.resource_spans[0].scope_spans[0].spans[0])
    span.status.code, span.status.message = 2, "boom"
    event = span.events.add(name="exception", time_unix_nano=5)
    nested = event.attributes.add(key="nested")
    nested.value.kvlist_value.values.add(key="n", value={"int_value": 7})
    nested.value.kvlist_value.values.add(key="a", value={"array_value": {"values": [{"double_value": 1.5}]}})
    event.attributes.add(key="raw", value={"bytes_value": b"\x01\x02"})
    span.links.add(trace_id=bytes(range(16)), span_id=bytes(range(8)), flags=1)
    for span in request.resource_spans[0].scope_spans[0].spans:
        expected = json_format.MessageToDict(span)
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in expected:
                expected[key] = base64.b64decode(expected[key]).hex()
        for link in expected.get("links", []):
            link["traceId"], link["spanId"] = (base64.b64decode(link[k]).hex() for k in ("traceId", "spanId"))
        assert span_doc(span) == expected


def test_an_archived_project_takes_no_new_spans(project, ingest_key, run):
    from django.utils import timezone

    project.archived_at = timezone.now()
    project.save(update_fields=["archived_at"])

    response = _post(project.slug, agent_run.protobuf_body(run), ingest_key)

    assert response.status_code == 403
    assert "archived" in response.json()["detail"]
    assert not PendingSpan.objects.exists()


def _llm_turns(trace: Trace) -> list[tuple[str, str]]:
    return [(step.role, step.content) for step in trace.steps.order_by("index") if step.role in ROLES]


ROLES = ("system", "user", "assistant", "tool")


def test_genai_log_events_sent_after_the_spans_join_the_live_traces_llm_steps(project, ingest_key):
    """The OpenAI instrumentation sends message content as log records, through its own exporter: they
    arrive in a second request, here after the trace was assembled (no worker: as soon as its root came),
    and rebuild it as late spans do, so the user's question and the model's answer are in its steps."""
    spans, logs = otel_shapes.openai_v2_run()
    sent = _post(project.slug, json.dumps(spans).encode(), ingest_key, kind="application/json")
    assert sent.status_code == 200
    trace = Trace.objects.in_project(project).get()
    assert "What is the weather in Paris?" not in [content for _, content in _llm_turns(trace)]

    response = _post(
        project.slug, json.dumps(logs).encode(), ingest_key, kind="application/json", path="logs"
    )

    assert response.status_code == 200
    assert json.loads(response.content) == {}
    trace = Trace.objects.in_project(project).get()  # the same trace, rebuilt
    assert _llm_turns(trace) == [
        ("system", "You are a weather assistant."),
        ("user", "What is the weather in Paris?"),
        ("assistant", ""),  # the tool call
        ("tool", "18°C and sunny"),
        ("assistant", "It is 18°C."),
    ]
    assert trace.task == "What is the weather in Paris?"
    assert set(project.live_logs.values_list("state", flat=True)) == {PendingLog.State.ASSEMBLED}


def test_genai_log_events_after_labelling_started_are_held_not_merged(project, ingest_key, annotator_a):
    spans, logs = otel_shapes.openai_v2_run()
    _post(project.slug, json.dumps(spans).encode(), ingest_key, kind="application/json")
    trace = Trace.objects.in_project(project).get()
    before = _llm_turns(trace)
    slot = Assignment.objects.get(project=project, trace=trace, annotator=annotator_a)
    do_save_draft(slot, AnnotationPayload(note="the answer is missing"), actor=annotator_a, base_version=0)

    response = _post(
        project.slug, json.dumps(logs).encode(), ingest_key, kind="application/json", path="logs"
    )

    assert response.status_code == 200
    assert _llm_turns(Trace.objects.in_project(project).get()) == before
    assert set(project.live_logs.values_list("state", flat=True)) == {PendingLog.State.HELD}
