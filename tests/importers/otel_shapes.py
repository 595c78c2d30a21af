"""OpenTelemetry data in the shapes today's tools write, built here (the project ships only data it makes).

Each helper writes what one tool writes: OTLP/JSON spans as the collector's file exporter has them (one
``ExportTraceServiceRequest`` per line), the GenAI log events of the OpenTelemetry OpenAI instrumentation
(``opentelemetry-instrumentation-openai-v2``: message content as log records), and the SDK's
``ConsoleSpanExporter`` output (``span.to_json()`` objects, indented by 4, one after another).
"""

from __future__ import annotations

import json
from typing import Any

TRACE = "5b8aa5a2d2c872e8321cf37308d69df2"
START = 1_765_000_000_000_000_000


def value(v: Any) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"stringValue": str(v)}


def attrs(**kv: Any) -> list[dict]:
    return [{"key": k.replace("__", "."), "value": value(v)} for k, v in kv.items()]


def span(span_id: str, name: str, parent: str | None, at: int, trace: str = TRACE, **kv: Any) -> dict:
    s = {
        "traceId": trace,
        "spanId": span_id,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(START + at * 10**9),
        "endTimeUnixNano": str(START + at * 10**9 + 10**9),
        "attributes": [{"key": k, "value": value(v)} for k, v in kv.items()],
        "status": {},
    }
    if parent:
        s["parentSpanId"] = parent
    return s


def traces_doc(*spans: dict, service: str = "support-bot") -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attrs(service__name=service)},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}],
            }
        ]
    }


def log(event: str, body: dict, span_id: str, trace: str = TRACE) -> dict:
    return {
        "timeUnixNano": str(START),
        "severityNumber": 9,
        "eventName": event,
        "body": value(body),
        "attributes": attrs(gen_ai__system="openai"),
        "traceId": trace,
        "spanId": span_id,
    }


def logs_doc(*records: dict) -> dict:
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": attrs(service__name="support-bot")},
                "scopeLogs": [
                    {
                        "scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                        "logRecords": list(records),
                    }
                ],
            }
        ]
    }


def jsonl(*docs: dict) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in docs).encode()


CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def openai_v2_run() -> tuple[dict, dict]:
    """(spans, logs) of an agent loop under the OpenAI instrumentation with content capture on: two chat
    calls (the first asks for a tool, the second answers) inside the application's own agent span."""
    spans = traces_doc(
        span("a000000000000001", "weather agent", None, 0),
        span(
            "c000000000000001",
            "chat gpt-4o-mini",
            "a000000000000001",
            1,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                "gen_ai.usage.input_tokens": 50,
                "gen_ai.usage.output_tokens": 20,
            },
        ),
        span(
            "c000000000000002",
            "chat gpt-4o-mini",
            "a000000000000001",
            3,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 90,
                "gen_ai.usage.output_tokens": 12,
            },
        ),
    )
    system = {"content": "You are a weather assistant."}
    user = {"content": "What is the weather in Paris?"}
    logs = logs_doc(
        log("gen_ai.system.message", system, "c000000000000001"),
        log("gen_ai.user.message", user, "c000000000000001"),
        log(
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "tool_calls": [CALL]},
            },
            "c000000000000001",
        ),
        log("gen_ai.system.message", system, "c000000000000002"),
        log("gen_ai.user.message", user, "c000000000000002"),
        log("gen_ai.assistant.message", {"tool_calls": [CALL]}, "c000000000000002"),
        log("gen_ai.tool.message", {"content": "18°C and sunny", "id": "call_1"}, "c000000000000002"),
        log(
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "It is 18°C."}},
            "c000000000000002",
        ),
    )
    return spans, logs


def console_spans() -> bytes:
    """What ``ConsoleSpanExporter`` prints for an OpenInference agent run: a TOOL span, an LLM span and their
    AGENT root (children end first), each ``span.to_json()`` followed by a newline."""
    trace = "0x" + TRACE
    resource = {"attributes": {"service.name": "console-agent"}, "schema_url": ""}

    def one(name: str, span_id: str, parent: str | None, at: int, attributes: dict, status: str = "UNSET"):
        return {
            "name": name,
            "context": {"trace_id": trace, "span_id": "0x" + span_id, "trace_state": "[]"},
            "kind": "SpanKind.INTERNAL",
            "parent_id": "0x" + parent if parent else None,
            "start_time": f"2026-12-07T10:00:0{at}.000000Z",
            "end_time": f"2026-12-07T10:00:0{at}.500000Z",
            "status": {"status_code": status},
            "attributes": attributes,
            "events": [],
            "links": [],
            "resource": resource,
        }

    tool = one(
        "lookup_order",
        "0000000000000003",
        "0000000000000001",
        3,
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup_order",
            "input.value": '{"order_id": 42}',
            "output.value": "shipped on Monday",
        },
    )
    llm = one(
        "ChatCompletion",
        "0000000000000002",
        "0000000000000001",
        2,
        {
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
        },
    )
    root = one(
        "agent",
        "0000000000000001",
        None,
        1,
        {"openinference.span.kind": "AGENT", "input.value": "Where is order 42?"},
    )
    return "".join(json.dumps(s, indent=4) + "\n" for s in (tool, llm, root)).encode()
