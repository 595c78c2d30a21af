"""The shapes the real OpenTelemetry SDK writes: its console exporters' output, and its OTLP protobuf requests
(spans sent as two batches; GenAI events as log records) as protobuf's JSON (``MessageToDict``: base64 ids),
through ``otel.assemble``."""

from __future__ import annotations

import io

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs import export as logs_export
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


def run_chat_with_events() -> tuple[str, list, list]:
    """A chat span with its GenAI events emitted as log records (what the OpenAI instrumentation does with
    content capture on), exported to the console and kept in memory."""
    # The exporters were renamed in SDK 1.3x (logs are not stable yet): the new names where they exist.
    in_memory = getattr(logs_export, "InMemoryLogRecordExporter", None) or logs_export.InMemoryLogExporter
    to_console = getattr(logs_export, "ConsoleLogRecordExporter", None) or logs_export.ConsoleLogExporter
    console, spans_memory, logs_memory = io.StringIO(), InMemorySpanExporter(), in_memory()
    resource = Resource.create({"service.name": "sdk-chat"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans_memory))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(logs_export.SimpleLogRecordProcessor(to_console(out=console)))
    logger_provider.add_log_record_processor(logs_export.SimpleLogRecordProcessor(logs_memory))
    logger = logger_provider.get_logger("opentelemetry.instrumentation.openai_v2")
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 12,
    }
    with tracer_provider.get_tracer("tests").start_as_current_span("chat gpt-4o-mini", attributes=chat):
        logger.emit(event_name="gen_ai.user.message", body={"content": "Say hi."})
        logger.emit(event_name="gen_ai.choice", body={"index": 0, "message": {"content": "Hi!"}})
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return console.getvalue(), list(spans_memory.get_finished_spans()), list(logs_memory.get_finished_logs())


def check_chat(rec) -> None:
    assert rec.model == "gpt-4o-mini" and rec.task == "Say hi."
    assert [(s.kind, s.role, s.content) for s in rec.steps] == [
        ("message", "user", "Say hi."),
        ("message", "assistant", "Hi!"),
    ]
    assert rec.steps[1].tokens == 12


def test_the_sdk_log_records_join_their_span():
    text, spans, logs = run_chat_with_events()
    (rec,) = otel.assemble([MessageToDict(encode_spans(spans))], [MessageToDict(encode_logs(logs))])
    check_chat(rec)
    (from_console,) = otel.parse(io.BytesIO(text.encode()), "console.log")
    check_chat(from_console)
