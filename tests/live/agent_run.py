"""A small agent run recorded with the real OpenTelemetry SDK (OpenInference attributes): an AGENT root, two
LLM spans with input/output messages and a tool call, and a TOOL span, as an instrumented agent emits them."""

from __future__ import annotations

import json

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

MODEL = "gpt-4o-mini"
TOOL = "search_flights"
TOOL_ARGS = {"to": "Paris", "date": "2026-12-24"}
TOOL_RESULT = "3 flights found: AF123, BA456, LH789"
QUESTION = "Book me a flight to Paris on Christmas Eve"
ANSWER = "Booked AF123 to Paris on 24 December."


def _messages(prefix: str, messages: list[dict]) -> dict:
    attrs = {}
    for i, message in enumerate(messages):
        attrs[f"{prefix}.{i}.message.role"] = message["role"]
        if message.get("content"):
            attrs[f"{prefix}.{i}.message.content"] = message["content"]
        for j, call in enumerate(message.get("tool_calls", [])):
            attrs[f"{prefix}.{i}.message.tool_calls.{j}.tool_call.function.name"] = call["name"]
            attrs[f"{prefix}.{i}.message.tool_calls.{j}.tool_call.function.arguments"] = json.dumps(
                call["args"]
            )
    return attrs


def record_run(service: str = "travel-agent", question: str = QUESTION) -> list[ReadableSpan]:
    """The four finished spans of one run (children end first, the root last, as an SDK exports them)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.live")
    with tracer.start_as_current_span("travel-agent") as root:
        root.set_attributes(
            {"openinference.span.kind": "AGENT", "input.value": question, "agent.name": "planner"}
        )
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attributes(
                {
                    "openinference.span.kind": "LLM",
                    "llm.model_name": MODEL,
                    "llm.token_count.prompt": 40,
                    "llm.token_count.completion": 12,
                    **_messages("llm.input_messages", [{"role": "user", "content": question}]),
                    **_messages(
                        "llm.output_messages",
                        [
                            {
                                "role": "assistant",
                                "content": "",
                                "tool_calls": [{"name": TOOL, "args": TOOL_ARGS}],
                            }
                        ],
                    ),
                    "output.value": json.dumps({"tool_calls": [{"name": TOOL, "arguments": TOOL_ARGS}]}),
                }
            )
        with tracer.start_as_current_span(TOOL) as tool:
            tool.set_attributes(
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": TOOL,
                    "tool.parameters": json.dumps(TOOL_ARGS),
                    "output.value": TOOL_RESULT,
                }
            )
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attributes(
                {
                    "openinference.span.kind": "LLM",
                    "llm.model_name": MODEL,
                    **_messages(
                        "llm.input_messages",
                        [{"role": "user", "content": question}, {"role": "tool", "content": TOOL_RESULT}],
                    ),
                    **_messages("llm.output_messages", [{"role": "assistant", "content": ANSWER}]),
                }
            )
        root.set_attribute("output.value", ANSWER)
    provider.shutdown()
    return list(memory.get_finished_spans())


def protobuf_body(spans: list[ReadableSpan]) -> bytes:
    return encode_spans(spans).SerializeToString()


def json_body(spans: list[ReadableSpan]) -> bytes:
    """The same request as OTLP/JSON (hex ids, camelCase), as the JSON exporters and collectors write it."""
    import base64

    from google.protobuf import json_format

    document = json_format.MessageToDict(encode_spans(spans))

    def hexed(node):
        if isinstance(node, dict):
            return {
                k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hexed(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [hexed(x) for x in node]
        return node

    return json.dumps(hexed(document)).encode()
