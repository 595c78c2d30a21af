"""Per-format writers for synthetic traces (see :mod:`synthetic`).

They render :class:`TraceRecord` objects in source formats that have no real sample in the
repository, so those parsers are tested end to end.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable
from pathlib import Path

from .records import TraceRecord

MAST_CODES = ("1.1", "1.2", "1.3", "1.5", "2.2", "2.3", "2.6", "3.1", "3.2", "3.3")


def _chat_messages(rec: TraceRecord) -> list[dict]:
    msgs: list[dict] = []
    for s in rec.steps:
        if s.kind == "tool_call":
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": s.tool_call_id,
                            "type": "function",
                            "function": {"name": s.tool_name, "arguments": json.dumps(s.tool_args)},
                        }
                    ],
                }
            )
        elif s.kind in ("tool_result", "error") and s.role == "tool":
            msgs.append(
                {"role": "tool", "tool_call_id": s.tool_call_id, "name": s.tool_name, "content": s.content}
            )
        else:
            role = s.role if s.role in ("system", "user", "assistant") else "assistant"
            msgs.append(
                {"role": role, "name": s.agent, "content": s.content}
                if role == "assistant"
                else {"role": role, "content": s.content}
            )
    return msgs


def write_openai_chat_jsonl(records: Iterable[TraceRecord], path: Path) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            obj = {"id": rec.external_id, "model": rec.model, "messages": _chat_messages(rec)}
            if rec.score is not None:
                obj["reward"] = rec.score
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
            n += 1
    return n


def _attr(key: str, value: object) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def otel_document(records: Iterable[TraceRecord], convention: str = "genai") -> dict:
    """OTLP/JSON document: one root agent span per trace, one child span per step."""
    spans = []
    for t, rec in enumerate(records):
        trace_id = f"{t + 1:032x}"
        root_id = f"{t + 1:08x}{0:08x}"
        start = 1_700_000_000_000_000_000 + t * 10**12
        spans.append(
            {
                "traceId": trace_id,
                "spanId": root_id,
                "name": "invoke_agent crew",
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + 10**11),
                "attributes": [
                    _attr("gen_ai.operation.name", "invoke_agent"),
                    _attr("gen_ai.agent.name", "crew"),
                    _attr("input.value", rec.task),
                    _attr("openinference.span.kind", "AGENT"),
                ],
            }
        )
        # Children listed in reverse to prove the parser orders by start time, not file order.
        for j, s in reversed(list(enumerate(rec.steps))):
            st = start + (j + 1) * 10**9
            attrs = [_attr("gen_ai.agent.name", s.agent)]
            if s.kind == "tool_call":
                attrs += [
                    _attr("gen_ai.operation.name", "execute_tool"),
                    _attr("gen_ai.tool.name", s.tool_name),
                    _attr("gen_ai.tool.call.arguments", json.dumps(s.tool_args)),
                    _attr("gen_ai.tool.call.id", s.tool_call_id),
                ]
            elif convention == "openinference":
                attrs += [
                    _attr("openinference.span.kind", "LLM"),
                    _attr("llm.model_name", rec.model),
                    _attr("llm.output_messages.0.message.role", "assistant"),
                    _attr("llm.output_messages.0.message.content", s.content),
                    _attr("llm.token_count.total", 42),
                ]
            else:
                attrs += [
                    _attr("gen_ai.operation.name", "chat"),
                    _attr("gen_ai.request.model", rec.model),
                    _attr("gen_ai.completion", s.content),
                    _attr("gen_ai.usage.input_tokens", 30),
                    _attr("gen_ai.usage.output_tokens", 12),
                ]
            span = {
                "traceId": trace_id,
                "spanId": f"{t + 1:08x}{j + 1:08x}",
                "parentSpanId": root_id,
                "name": s.kind,
                "startTimeUnixNano": str(st),
                "endTimeUnixNano": str(st + 5 * 10**8),
                "attributes": attrs,
            }
            if s.kind == "error":
                span["status"] = {"code": 2, "message": s.content}
            spans.append(span)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "synthetic-crew")]},
                "scopeSpans": [{"scope": {"name": "synthetic"}, "spans": spans}],
            }
        ]
    }


def write_otel_json(records: Iterable[TraceRecord], path: Path, convention: str = "genai") -> int:
    doc = otel_document(records, convention)
    Path(path).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return len({s["traceId"] for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]})


def write_codex_rollout(rec: TraceRecord, path: Path, session_id: str = "0199-synthetic-session") -> None:
    lines = [
        {
            "timestamp": "2025-09-01T10:00:00.000Z",
            "type": "session_meta",
            "payload": {
                "id": session_id,
                "cwd": "/repo",
                "originator": "codex_cli_rs",
                "cli_version": "0.30.0",
                "instructions": None,
            },
        },
        {
            "timestamp": "2025-09-01T10:00:00.100Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>",
                    }
                ],
            },
        },
        {
            "timestamp": "2025-09-01T10:00:00.200Z",
            "type": "turn_context",
            "payload": {"cwd": "/repo", "approval_policy": "on-request", "model": rec.model or "gpt-5-codex"},
        },
    ]
    for j, s in enumerate(rec.steps):
        ts = f"2025-09-01T10:00:{(j + 1) % 60:02d}.000Z"
        if s.kind == "tool_call":
            p = {
                "type": "function_call",
                "name": s.tool_name,
                "arguments": json.dumps(s.tool_args),
                "call_id": s.tool_call_id,
            }
        elif s.kind in ("tool_result", "error") and s.tool_call_id:
            p = {
                "type": "function_call_output",
                "call_id": s.tool_call_id,
                "output": json.dumps(
                    {"output": s.content, "metadata": {"exit_code": 1 if s.kind == "error" else 0}}
                ),
            }
        elif s.kind == "reasoning":
            p = {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": s.content}],
                "encrypted_content": "gAAA",
            }
        else:
            role = "user" if s.role == "user" else "assistant"
            p = {
                "type": "message",
                "role": role,
                "content": [{"type": "input_text" if role == "user" else "output_text", "text": s.content}],
            }
        lines.append({"timestamp": ts, "type": "response_item", "payload": p})
        if j % 5 == 0:
            lines.append(
                {
                    "timestamp": ts,
                    "type": "event_msg",
                    "payload": {
                        "type": "token_count",
                        "info": {"total_token_usage": {"total_tokens": 100 * (j + 1)}},
                    },
                }
            )
    with open(path, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")


def inspect_sample(rec: TraceRecord, sample_id: object, epoch: int = 1) -> dict:
    value = {"success": "C", "failure": "I"}.get(rec.outcome, 0.5)
    messages = []
    for m in _chat_messages(rec):
        m = dict(m)
        m.pop("name", None)
        if m.get("tool_calls"):
            m["tool_calls"] = [
                {
                    "id": tc["id"],
                    "function": tc["function"]["name"],
                    "arguments": json.loads(tc["function"]["arguments"]),
                }
                for tc in m["tool_calls"]
            ]
            m["content"] = ""
        messages.append(m)
    if (
        messages
        and messages[1:2]
        and messages[1]["role"] == "assistant"
        and isinstance(messages[1]["content"], str)
    ):
        messages[1]["content"] = [
            {"type": "reasoning", "reasoning": "Let me think first."},
            {"type": "text", "text": messages[1]["content"]},
        ]
    return {
        "id": sample_id,
        "epoch": epoch,
        "input": rec.task,
        "target": "42",
        "messages": messages,
        "output": {"model": rec.model},
        "scores": {"match": {"value": value, "answer": "x"}},
        "metadata": {},
        "events": [],
    }


def write_inspect_eval(
    records: Iterable[TraceRecord], path: Path, model: str = "openai/gpt-4o", epochs: int = 1
) -> int:
    """A minimal ``.eval`` ZIP (header.json + samples/<id>_epoch_<n>.json + summaries)."""
    n = 0
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "_journal/start.json", json.dumps({"version": 2, "eval": {"task": "synthetic", "model": model}})
        )
        for i, rec in enumerate(records, start=1):
            for epoch in range(1, epochs + 1):
                zf.writestr(f"samples/{i}_epoch_{epoch}.json", json.dumps(inspect_sample(rec, i, epoch)))
                n += 1
        zf.writestr(
            "header.json",
            json.dumps(
                {
                    "version": 2,
                    "status": "success",
                    "eval": {"eval_id": "syn", "task": "synthetic", "model": model},
                    "results": {},
                }
            ),
        )
        zf.writestr("summaries.json", "[]")
    return n


def write_mast_full_json(records: Iterable[TraceRecord], path: Path) -> int:
    """Full-MAD-shaped array: Magentic-One style raw logs plus LLM-judge 0/1 labels (one NaN)."""
    rows = []
    for i, rec in enumerate(records):
        log = "\n".join(
            f"---------- {s.agent or 'user'} ----------\n{s.content or s.tool_name}" for s in rec.steps
        )
        labels = {
            code: int(any(lab.mode == code for a in rec.annotations for lab in a.labels))
            for code in MAST_CODES
        }
        rows.append(
            {
                "mas_name": "Magentic",
                "llm_name": rec.model,
                "benchmark_name": "GAIA",
                "trace_id": i,
                "trace": {"key": "Magentic_GAIA_" + rec.model, "index": i, "trajectory": log},
                "mast_annotation": labels,
            }
        )
    text = json.dumps(rows, indent=1)
    # The real MAD files were written by Python's json with NaN allowed; keep one to test it.
    text = text.replace('"1.1": 0', '"1.1": NaN', 1)
    Path(path).write_text(text, encoding="utf-8")
    return len(rows)
