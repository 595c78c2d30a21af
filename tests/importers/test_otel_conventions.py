"""Each convention the OpenTelemetry format claims to map, in the shapes today's tools write (see otel_shapes):
roles, message text, tool name, arguments and result, model and tokens come through as steps."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

from tests.importers.otel_shapes import (
    TRACE,
    attrs,
    console_spans,
    jsonl,
    log,
    logs_doc,
    openai_v2_run,
    span,
    traces_doc,
)
from traces.importers import detect_format, guarded, iter_records, limits, otel
from traces.importers.records import TraceFormatError


def shape(record) -> list[tuple]:
    return [(s.kind, s.role, s.content, s.tool_name, s.parent) for s in record.steps]


def test_openinference_agent_llm_and_tool_spans():
    llm1 = span(
        "0000000000000002",
        "ChatCompletion",
        "0000000000000001",
        1,
        **{
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4.1",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Be brief.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "Where is order 42?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_order",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"order_id": 42}',
            "llm.token_count.total": 39,
        },
    )
    tool = span(
        "0000000000000003",
        "lookup_order",
        "0000000000000001",
        2,
        **{
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup_order",
            "input.value": '{"order_id": 42}',
            "output.value": "shipped on Monday",
        },
    )
    llm2 = span(
        "0000000000000004",
        "ChatCompletion",
        "0000000000000001",
        3,
        **{
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4.1",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Be brief.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "Where is order 42?",
            "llm.input_messages.2.message.role": "assistant",
            "llm.input_messages.2.message.tool_calls.0.tool_call.id": "call_9",
            "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": "lookup_order",
            "llm.input_messages.3.message.role": "tool",
            "llm.input_messages.3.message.tool_call_id": "call_9",
            "llm.input_messages.3.message.content": "shipped on Monday",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.contents.0.message_content.text": "It shipped on Monday.",
            "llm.token_count.prompt": 60,
            "llm.token_count.completion": 8,
        },
    )
    root = span(
        "0000000000000001",
        "support agent",
        None,
        0,
        **{"openinference.span.kind": "AGENT", "input.value": "Where is order 42?", "agent.name": "support"},
    )
    (rec,) = otel.assemble([traces_doc(llm2, tool), traces_doc(llm1, root)])
    assert rec.external_id == TRACE and rec.model == "gpt-4.1" and rec.system == "support-bot"
    assert rec.task == "Where is order 42?"
    assert shape(rec) == [
        ("message", "assistant", "Where is order 42?", "", None),  # the AGENT span
        ("message", "system", "Be brief.", "", 0),
        ("message", "user", "Where is order 42?", "", 0),
        # The first LLM span's answer is a tool call; the TOOL span that ran it completes that step with its
        # result (one step per call, not the request and the execution apart).
        ("tool_call", "assistant", "shipped on Monday", "lookup_order", 0),
        # The second LLM span: only what is new in its history (the result it read is the call's, shown), its
        # answer.
        ("message", "assistant", "It shipped on Monday.", "", 0),
    ]
    call, answer = rec.steps[3], rec.steps[4]
    assert call.tool_args == {"order_id": 42} and call.tool_call_id == "call_9" and call.tokens == 39
    assert answer.tokens == 68 and answer.duration_ms == 1000
    assert rec.steps[0].agent == "support"


def test_genai_spans_with_input_and_output_messages():
    messages_in = [
        {"role": "system", "parts": [{"type": "text", "content": "You book flights."}]},
        {"role": "user", "parts": [{"type": "text", "content": "A flight to Oslo on Friday"}]},
    ]
    messages_out = [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Searching."},
                {"type": "tool_call", "id": "t1", "name": "search_flights", "arguments": {"to": "OSL"}},
            ],
            "finish_reason": "tool_call",
        }
    ]
    chat = span(
        "00000000000000c1",
        "chat claude-sonnet-4",
        "00000000000000a1",
        1,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "claude-sonnet-4",
            "gen_ai.input.messages": json.dumps(messages_in),
            "gen_ai.output.messages": json.dumps(messages_out),
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 25,
        },
    )
    run_tool = span(
        "00000000000000e1",
        "execute_tool search_flights",
        "00000000000000a1",
        2,
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search_flights",
            "gen_ai.tool.call.id": "t1",
            "gen_ai.tool.call.arguments": '{"to": "OSL"}',
            "gen_ai.tool.call.result": "SK4411 at 09:05",
        },
    )
    agent = span(
        "00000000000000a1",
        "invoke_agent travel",
        None,
        0,
        **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel"},
    )
    (rec,) = otel.assemble([traces_doc(agent, chat, run_tool)])
    assert rec.model == "claude-sonnet-4" and rec.task == "A flight to Oslo on Friday"
    assert shape(rec) == [
        ("message", "assistant", "", "", None),
        ("message", "system", "You book flights.", "", 0),
        ("message", "user", "A flight to Oslo on Friday", "", 0),
        ("message", "assistant", "Searching.", "", 0),
        ("tool_call", "assistant", "SK4411 at 09:05", "search_flights", 0),  # asked for, then run
    ]
    assert rec.steps[3].tokens == 125 and rec.steps[4].tool_args == {"to": "OSL"}
    assert rec.steps[4].tool_call_id == "t1"
    assert rec.steps[0].agent == "travel"


def check_openai_v2(rec) -> None:
    """The agent loop of otel_shapes.openai_v2_run, with its log events joined."""
    assert rec.model == "gpt-4o-mini-2024-07-18" and rec.task == "What is the weather in Paris?"
    assert shape(rec) == [
        ("observation", "", "", "", None),
        ("message", "system", "You are a weather assistant.", "", 0),
        ("message", "user", "What is the weather in Paris?", "", 0),
        ("tool_call", "assistant", "", "get_weather", 0),
        ("tool_result", "tool", "18°C and sunny", "get_weather", 3),
        ("message", "assistant", "It is 18°C.", "", 0),
    ]
    assert rec.steps[3].tool_args == {"city": "Paris"} and rec.steps[3].tool_call_id == "call_1"
    assert rec.steps[3].tokens == 70 and rec.steps[5].tokens == 102
    assert rec.metadata["log_records"] == 8
    assert rec.steps[1].timestamp == rec.steps[3].timestamp  # the question is dated by the call that sent it
    assert sum(len(s.get("logRecords", [])) for s in rec.raw) == 8


def test_genai_log_events_in_the_same_file(tmp_path: Path):
    spans, logs = openai_v2_run()
    path = tmp_path / "export.jsonl"
    path.write_bytes(jsonl(logs, spans))  # the log exporter may flush before the span exporter
    assert detect_format(path) == "otel"
    (rec,) = iter_records(path)
    check_openai_v2(rec)


def test_genai_log_events_in_a_second_file_of_the_import():
    spans, logs = openai_v2_run()
    files = [(io.BytesIO(jsonl(spans)), "traces.jsonl"), (io.BytesIO(jsonl(logs)), "logs.jsonl")]
    (rec,) = otel.parse_files(files)
    check_openai_v2(rec)
    assert rec.metadata["files"] == ["traces.jsonl", "logs.jsonl"]
    # The same through the public function the live endpoint calls.
    (live,) = otel.assemble([spans], [logs])
    assert shape(live) == shape(rec)


def test_a_logs_file_alone_is_recognised_and_says_what_is_missing(tmp_path: Path):
    _, logs = openai_v2_run()
    path = tmp_path / "logs.json"
    path.write_text(json.dumps(logs, indent=2))
    assert detect_format(path) == "otel"
    with pytest.raises(TraceFormatError) as error:
        list(iter_records(path))
    assert str(error.value) == (
        f"{path}, record 1: 8 OpenTelemetry log records (GenAI events) have nothing to join: the import holds "
        f"no spans at all (first: trace {TRACE}); import the spans file of the same run together with the "
        "logs file"
    )


def test_a_log_record_outside_any_span_is_refused():
    record = log("gen_ai.user.message", {"content": "hi"}, "")
    record["traceId"] = ""
    spans, _ = openai_v2_run()
    with pytest.raises(
        TraceFormatError, match=r"record 2, field 'logRecords\[0\]\.traceId': a log record with no"
    ):
        list(otel.assemble([spans], [logs_doc(record)]))


def test_console_span_exporter_output(tmp_path: Path):
    path = tmp_path / "console.txt"
    path.write_bytes(console_spans())
    assert detect_format(path) == "otel"
    (rec,) = iter_records(path)
    assert rec.external_id == TRACE and rec.system == "console-agent" and rec.model == "gpt-4.1"
    assert rec.task == "Where is order 42?"
    assert shape(rec) == [
        ("message", "assistant", "Where is order 42?", "", None),
        ("message", "user", "Where is order 42?", "", 0),
        (
            "tool_call",
            "assistant",
            "shipped on Monday",
            "lookup_order",
            0,
        ),  # the call, completed by its TOOL span
    ]
    assert rec.steps[2].tool_args == {"order_id": 42} and rec.steps[2].tokens == 39


def test_console_output_run_together_without_newlines():
    data = console_spans().replace(b"}\n{", b"}{")
    (rec,) = otel.parse(io.BytesIO(data), "run.log")
    assert len(rec.steps) == 3


def test_a_failed_console_span_is_an_error_step():
    data = console_spans().replace(
        b'"status_code": "UNSET"', b'"status_code": "ERROR", "description": "timeout"', 1
    )
    (rec,) = otel.parse(io.BytesIO(data), "run.log")
    assert [s.kind for s in rec.steps][-1] == "error" and rec.steps[-1].content == "shipped on Monday"


def test_a_trace_split_over_two_lines_is_one_trace():
    """The collector's file exporter writes each batch as it comes: here the root ended before a late child."""
    root = span("0000000000000001", "agent", None, 0, **{"openinference.span.kind": "AGENT"})
    first = span("0000000000000002", "step one", "0000000000000001", 1)
    late = span("0000000000000003", "step two", "0000000000000001", 2)
    other = span("0000000000000009", "other", None, 0, trace="f" * 32)
    data = jsonl(traces_doc(first, root), traces_doc(other), traces_doc(late))
    records = list(guarded(otel.parse(io.BytesIO(data), "export.jsonl"), "export.jsonl"))
    assert [r.external_id for r in records] == [TRACE, "f" * 32]
    assert [s.agent for s in records[0].steps] == ["agent", "step one", "step two"]
    assert records[0].metadata["spans"] == 3


def test_a_trace_split_over_two_files_is_one_trace():
    root = span("0000000000000001", "agent", None, 0)
    late = span("0000000000000003", "late", "0000000000000001", 2)
    files = [
        (io.BytesIO(jsonl(traces_doc(root))), "a.jsonl"),
        (io.BytesIO(jsonl(traces_doc(late))), "b.jsonl"),
    ]
    (rec,) = otel.parse_files(files)
    assert [s.parent for s in rec.steps] == [None, 0] and rec.metadata["files"] == ["a.jsonl", "b.jsonl"]


def test_spans_waiting_for_their_trace_are_bounded():
    spans = [span(f"{i:016x}", "s" * 200, None, i, trace=f"{i:032x}") for i in range(1, 30)]
    with limits.override(max_archive_bytes=4000), pytest.raises(TraceFormatError) as error:
        list(otel.parse(io.BytesIO(jsonl(*(traces_doc(s) for s in spans))), "big.jsonl"))
    assert "IMPORT_MAX_ARCHIVE_MB" in str(error.value) and str(error.value).startswith("big.jsonl, line ")
    one_trace = [span(f"{i:016x}", "s" * 200, None, i) for i in range(1, 30)]
    with limits.override(max_record_bytes=3000), pytest.raises(TraceFormatError) as error:
        list(otel.parse(io.BytesIO(jsonl(*(traces_doc(s) for s in one_trace))), "big.jsonl"))
    assert f"trace {TRACE}: record is larger than 3000 bytes" in str(error.value)


def test_span_events_carry_messages_too():
    """Instrumentations of GenAI conventions 1.2x put the message events on the span itself."""
    chat = span("00000000000000c1", "chat", None, 0, **{"gen_ai.operation.name": "chat"})
    chat["events"] = [
        {"name": "gen_ai.user.message", "attributes": attrs(content="Hello?")},
        {"name": "gen_ai.choice", "attributes": attrs(message=json.dumps({"content": "Hi there."}))},
    ]
    (rec,) = otel.assemble([traces_doc(chat)])
    assert shape(rec) == [
        ("message", "user", "Hello?", "", None),
        ("message", "assistant", "Hi there.", "", None),
    ]


def test_export_lines_longer_than_the_head_are_read_as_lines():
    """A collector writes a whole batch on one line: 64 KB is a small one."""
    big = [span(f"{i:016x}", "x" * 400, "0000000000000001" if i > 1 else None, i) for i in range(1, 400)]
    late = span("f000000000000000", "late", "0000000000000001", 500)
    data = jsonl(traces_doc(*big), traces_doc(late))
    assert len(data.split(b"\n")[0]) > 64 * 1024
    (rec,) = otel.parse(io.BytesIO(data), "export.jsonl")
    assert len(rec.steps) == 400 and rec.steps[-1].agent == "late"


def test_ids_in_base64_or_upper_case_join_like_hex():
    """protobuf's MessageToDict writes ids in base64; OTLP/JSON's hex is case-insensitive."""
    spans, logs = openai_v2_run()
    for s in spans["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in s:
                s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    for r in logs["resourceLogs"][0]["scopeLogs"][0]["logRecords"]:
        r["traceId"] = r["traceId"].upper()
    (rec,) = otel.assemble([spans], [logs])
    assert rec.external_id == TRACE
    check_openai_v2(rec)


def console_log(event: str, body: dict, span_id: str) -> bytes:
    """What ``ConsoleLogExporter`` prints for one GenAI event (``LogRecord.to_json()``)."""
    record = {
        "body": body,
        "severity_number": 9,
        "severity_text": None,
        "attributes": {"gen_ai.system": "openai", "event.name": event},
        "dropped_attributes": 0,
        "timestamp": "2026-12-07T10:00:02.100000Z",
        "observed_timestamp": "2026-12-07T10:00:02.100000Z",
        "trace_id": "0x" + TRACE,
        "span_id": "0x" + span_id,
        "trace_flags": 1,
        "resource": {"attributes": {"service.name": "console-agent"}, "schema_url": ""},
    }
    return (json.dumps(record, indent=4) + "\n").encode()


def test_console_log_exporter_output_joins_the_console_spans(tmp_path: Path):
    logs = console_log(
        "gen_ai.user.message", {"content": "Is order 42 late?"}, "0000000000000002"
    ) + console_log(
        "gen_ai.choice", {"index": 0, "message": {"content": "Let me check."}}, "0000000000000002"
    )
    path = tmp_path / "logs.txt"
    path.write_bytes(logs)
    assert detect_format(path) == "otel"
    files = [(io.BytesIO(logs), "logs.txt"), (io.BytesIO(console_spans()), "spans.txt")]
    (rec,) = otel.parse_files(files)
    assert shape(rec)[1:3] == [
        ("message", "user", "Is order 42 late?", "", 0),
        ("message", "assistant", "Let me check.", "", 0),
    ]
    assert rec.steps[2].tokens == 39 and rec.metadata["files"] == ["logs.txt", "spans.txt"]


def test_events_without_captured_content_leave_no_empty_messages():
    """Content capture off (the instrumentation's default): the events come with no content, tool calls stay."""
    spans, _ = openai_v2_run()
    empty = logs_doc(
        log("gen_ai.system.message", {}, "c000000000000001"),
        log("gen_ai.user.message", {}, "c000000000000001"),
        log(
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather"}}]
                },
            },
            "c000000000000001",
        ),
    )
    (rec,) = otel.assemble([spans], [empty])
    assert [(s.kind, s.role, s.tool_name) for s in rec.steps] == [
        ("observation", "", ""),
        ("tool_call", "assistant", "get_weather"),
        ("message", "assistant", ""),  # the second call: no events, no content
    ]
    assert rec.steps[1].tokens == 70


def test_console_output_cut_short_names_the_object():
    data = console_spans()
    with pytest.raises(TraceFormatError, match=r"^run\.log, record 3: malformed JSON: truncated"):
        list(otel.parse(io.BytesIO(data[: len(data) - 200]), "run.log"))
