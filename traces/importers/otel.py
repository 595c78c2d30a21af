"""OpenTelemetry spans as OTLP JSON (``resourceSpans[].scopeSpans[].spans[]``), using the
GenAI semantic conventions (``gen_ai.*``) or OpenInference (``openinference.span.kind``,
``input.value``, ``llm.*``). Accepts one OTLP document or JSONL with one export per line
(what the collector's file exporter writes).

Spans are grouped by ``traceId``; each span is one step with ``parent`` pointing at its parent
span's step; steps are ordered depth-first with siblings in start-time order, so a parent
always precedes its children. A JSON document is grouped when it ends; with JSONL a trace is
emitted after the line holding its root span (exporters send the root last), which keeps
memory bounded by the traces still open.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from ._json import first_char, first_line, has_key, iter_jsonl, iter_paths, peek
from ._util import Ctx, as_int, iso_from_nanos, maybe_json, text_of
from .records import StepRecord, TraceRecord

FORMAT = "otel"
LABEL = "OpenTelemetry OTLP JSON (GenAI / OpenInference spans)"

_SPANS = "resourceSpans.item.scopeSpans.item.spans.item"
_RESOURCE = "resourceSpans.item.resource"
_OI_KIND = {"LLM": "message", "TOOL": "tool_call", "AGENT": "message"}
_GENAI_KIND = {
    "chat": "message",
    "text_completion": "message",
    "generate_content": "message",
    "invoke_agent": "message",
    "create_agent": "message",
    "execute_tool": "tool_call",
}


def sniff(head: bytes, filename: str) -> bool:
    c = first_char(head)
    if c == "{" and has_key(head, "resourceSpans"):
        obj = first_line(head)
        return obj is None or isinstance(obj, dict)
    return False


def _value(v: Any) -> Any:
    """Decode an OTLP ``AnyValue`` (intValue arrives as a string in OTLP/JSON)."""
    if not isinstance(v, dict):
        return v
    for key, val in v.items():
        if key == "intValue":
            return as_int(val)
        if key == "arrayValue":
            return [_value(x) for x in (val or {}).get("values", [])]
        if key == "kvlistValue":
            return attributes((val or {}).get("values", []))
        return val
    return None


def attributes(attrs: Any) -> dict:
    if isinstance(attrs, dict):  # already flattened (some SDK dumps)
        return attrs
    out = {}
    for a in attrs or []:
        if isinstance(a, dict) and "key" in a:
            out[a["key"]] = _value(a.get("value"))
    return out


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    head, stream = peek(stream)
    obj = first_line(head)
    is_jsonl = isinstance(obj, dict) and b"\n" in head.strip()
    open_traces: dict[str, list[dict]] = {}
    emitted = 0
    if is_jsonl:
        for line_no, doc in iter_jsonl(stream, filename):
            ctx = Ctx(filename, line=line_no)
            roots = []
            for span in _spans_of(ctx.obj(doc), ctx):
                open_traces.setdefault(span["traceId"], []).append(span)
                if not span.get("parentSpanId"):
                    roots.append(span["traceId"])
            for tid in dict.fromkeys(roots):
                emitted += 1
                yield _trace(tid, open_traces.pop(tid), emitted)
    else:
        resource: dict = {}
        for path, n, value in iter_paths(stream, filename, (_RESOURCE, _SPANS)):
            if path == _RESOURCE:
                resource = attributes(value.get("attributes") if isinstance(value, dict) else None)
                continue
            span = _span(value, resource, Ctx(filename, record=n), n)
            open_traces.setdefault(span["traceId"], []).append(span)
    for tid, spans in open_traces.items():
        emitted += 1
        yield _trace(tid, spans, emitted)


def _spans_of(doc: dict, ctx: Ctx) -> Iterator[dict]:
    n = 0
    for rs in doc.get("resourceSpans") or []:
        resource = attributes((rs.get("resource") or {}).get("attributes"))
        for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
            for raw in ss.get("spans") or []:
                n += 1
                yield _span(raw, resource, ctx, n)


def _span(raw: Any, resource: dict, ctx: Ctx, n: int) -> dict:
    s = ctx.obj(raw, f"spans[{n - 1}]")
    ctx.get(s, "traceId", str, f"spans[{n - 1}].traceId", required=True)
    ctx.get(s, "spanId", str, f"spans[{n - 1}].spanId", required=True)
    return {**s, "_attrs": attributes(s.get("attributes")), "_resource": resource}


def _first(attrs: dict, *keys: str) -> Any:
    for k in keys:
        if attrs.get(k) not in (None, ""):
            return attrs[k]
    return None


def _messages_text(attrs: dict, prefix: str) -> str:
    """OpenInference flattens messages as ``llm.output_messages.0.message.content``."""
    parts = []
    i = 0
    while f"{prefix}.{i}.message.content" in attrs or f"{prefix}.{i}.message.role" in attrs:
        parts.append(text_of(attrs.get(f"{prefix}.{i}.message.content")))
        i += 1
    return "\n".join(p for p in parts if p)


def _genai_messages(value: Any) -> str:
    msgs = maybe_json(value)
    if isinstance(msgs, list):
        texts = []
        for m in msgs:
            if isinstance(m, dict):
                texts.append(text_of(m.get("parts") or m.get("content") or m.get("message")))
        return "\n".join(t for t in texts if t)
    return text_of(msgs)


def _content(attrs: dict, kind: str) -> tuple[str, str]:
    """(output text, input text) from whichever convention the span uses."""
    out = _first(attrs, "gen_ai.tool.call.result", "gen_ai.completion", "output.value")
    out = text_of(out) if out is not None else ""
    out = (
        out
        or _genai_messages(attrs.get("gen_ai.output.messages"))
        or _messages_text(attrs, "llm.output_messages")
    )
    inp = _first(attrs, "gen_ai.prompt", "input.value")
    inp = text_of(inp) if inp is not None else ""
    inp = (
        inp
        or _genai_messages(attrs.get("gen_ai.input.messages"))
        or _messages_text(attrs, "llm.input_messages")
    )
    return out, inp


def _step(span: dict) -> StepRecord:
    attrs = span["_attrs"]
    op = str(attrs.get("gen_ai.operation.name") or "")
    oi = str(attrs.get("openinference.span.kind") or "").upper()
    kind = _GENAI_KIND.get(op) or _OI_KIND.get(oi) or "observation"
    status = span.get("status") if isinstance(span.get("status"), dict) else {}
    if status.get("code") in (2, "STATUS_CODE_ERROR", "ERROR"):
        kind = "error"
    out, inp = _content(attrs, kind)
    tool_name = (
        text_of(_first(attrs, "gen_ai.tool.name", "tool.name")) if kind in ("tool_call", "error") else ""
    )
    tool_args = None
    if tool_name or kind == "tool_call":
        tool_args = maybe_json(_first(attrs, "gen_ai.tool.call.arguments", "tool.parameters", "input.value"))
    tokens = as_int(_first(attrs, "gen_ai.usage.total_tokens", "llm.token_count.total"))
    if tokens is None:
        parts = [
            as_int(attrs.get(k))
            for k in (
                "gen_ai.usage.input_tokens",
                "gen_ai.usage.output_tokens",
                "llm.token_count.prompt",
                "llm.token_count.completion",
            )
        ]
        tokens = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    start, end = as_int(span.get("startTimeUnixNano")), as_int(span.get("endTimeUnixNano"))
    agent = text_of(_first(attrs, "gen_ai.agent.name", "agent.name")) or text_of(span.get("name"))
    content = out or inp or (text_of(status.get("message")) if kind == "error" else "")
    return StepRecord(
        kind=kind,
        content=content,
        agent=agent,
        role={"message": "assistant", "tool_call": "assistant"}.get(kind, ""),
        tool_name=tool_name,
        tool_args=tool_args,
        tool_call_id=text_of(attrs.get("gen_ai.tool.call.id")),
        timestamp=iso_from_nanos(start),
        tokens=tokens,
        duration_ms=(end - start) // 1_000_000 if start and end and end >= start else None,
    )


def _trace(trace_id: str, spans: list[dict], n: int) -> TraceRecord:
    by_id = {s["spanId"]: s for s in spans}
    children: dict[str, list[dict]] = {}
    roots = []
    for s in spans:
        parent = s.get("parentSpanId")
        if parent and parent in by_id:
            children.setdefault(parent, []).append(s)
        else:
            roots.append(s)

    def start(s: dict) -> int:
        return as_int(s.get("startTimeUnixNano")) or 0

    ordered: list[tuple[dict, str | None]] = []
    stack = [(s, None) for s in sorted(roots, key=start, reverse=True)]
    while stack:  # iterative DFS: deep agent trees must not hit the recursion limit
        span, parent = stack.pop()
        ordered.append((span, parent))
        for child in sorted(children.get(span["spanId"], []), key=start, reverse=True):
            stack.append((child, span["spanId"]))
    index = {span["spanId"]: i for i, (span, _) in enumerate(ordered)}
    steps = []
    for span, parent in ordered:
        step = _step(span)
        step.parent = index.get(parent) if parent else None
        steps.append(step)
    model = ""
    for span, _ in ordered:
        model = text_of(
            _first(span["_attrs"], "gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
        )
        if model:
            break
    root = ordered[0][0] if ordered else {}
    root_attrs = root.get("_attrs", {})
    task = text_of(_first(root_attrs, "input.value", "gen_ai.prompt")) or next(
        (_content(s["_attrs"], "")[1] for s, _ in ordered if _content(s["_attrs"], "")[1]), ""
    )
    resource = root.get("_resource", {})
    raw = [{k: v for k, v in s.items() if not k.startswith("_")} for s, _ in ordered]
    return TraceRecord(
        external_id=trace_id,
        steps=steps,
        task=task,
        system=text_of(resource.get("service.name")),
        model=model,
        metadata={"root_span": text_of(root.get("name")), "spans": len(spans)},
        raw=json.loads(json.dumps(raw, default=str)),
        record_no=n,
    )
