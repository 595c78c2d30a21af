"""The shapes the real OpenTelemetry SDK writes: its ConsoleSpanExporter's output, and its OTLP protobuf
request as protobuf's JSON (``MessageToDict``: base64 ids), sent as two batches, through ``otel.assemble``."""

from __future__ import annotations

import io

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from traces.importers import otel

LLM = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "gpt-4.1",
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "Where is order 42?",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_order",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"order_id": 42}',
    "llm.token_count.prompt": 30,
    "llm.token_count.completion": 9,
}
TOOL = {
    "openinference.span.kind": "TOOL",
    "tool.name": "lookup_order",
    "input.value": '{"order_id": 42}',
    "output.value": "shipped on Monday",
}


def run_agent() -> tuple[str, list]:
    """An AGENT span with an LLM call and a failing TOOL call, exported to the console and kept in memory."""
    console, memory = io.StringIO(), InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests")
    root = {"openinference.span.kind": "AGENT", "input.value": "Where is order 42?"}
    with tracer.start_as_current_span("agent", attributes=root):
        with tracer.start_as_current_span("ChatCompletion", attributes=LLM):
            pass
        with tracer.start_as_current_span("lookup_order", attributes=TOOL) as tool:
            tool.set_status(Status(StatusCode.ERROR, "the order service timed out"))
    provider.shutdown()
    return console.getvalue(), list(memory.get_finished_spans())


def check(rec) -> None:
    assert rec.system == "sdk-agent" and rec.model == "gpt-4.1" and rec.task == "Where is order 42?"
    assert [(s.kind, s.role, s.content, s.tool_name, s.parent) for s in rec.steps] == [
        ("message", "assistant", "Where is order 42?", "", None),
        ("message", "user", "Where is order 42?", "", 0),
        ("tool_call", "assistant", "", "lookup_order", 0),
        ("error", "", "shipped on Monday", "lookup_order", 0),
    ]
    assert rec.steps[2].tool_args == {"order_id": 42} and rec.steps[2].tokens == 39
    assert rec.steps[3].tool_args == {"order_id": 42}


def test_the_sdk_console_exporter_output():
    text, spans = run_agent()
    assert text.lstrip().startswith("{") and text.count('"trace_id"') == 3
    (rec,) = otel.parse(io.BytesIO(text.encode()), "console.log")
    assert rec.external_id == format(spans[0].context.trace_id, "032x")
    check(rec)


def test_the_sdk_protobuf_request_as_json_in_two_batches():
    _, spans = run_agent()
    batches = [MessageToDict(encode_spans(spans[:1])), MessageToDict(encode_spans(spans[1:]))]
    (rec,) = otel.assemble(batches)
    assert rec.external_id == format(spans[0].context.trace_id, "032x")
    check(rec)
