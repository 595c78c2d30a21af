"""One trace's spans (and the log records joined to them) to steps: the mapping ``otel`` describes."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ._chat import chat_steps
from ._otel_messages import GENAI_EVENTS, Message, attributes, body_value, message_key, span_messages
from ._util import Ctx, as_int, iso_from_nanos, maybe_json, text_of
from .records import StepRecord, TraceRecord

_OI_KIND = {"LLM": "message", "TOOL": "tool_call", "AGENT": "message"}
_GENAI_KIND = {
    "chat": "message",
    "text_completion": "message",
    "generate_content": "message",
    "invoke_agent": "message",
    "create_agent": "message",
    "execute_tool": "tool_call",
}


def _first(attrs: dict, *keys: str) -> Any:
    for k in keys:
        if attrs.get(k) not in (None, ""):
            return attrs[k]
    return None


def _content(attrs: dict) -> tuple[str, str]:
    """(output text, input text) of a span without chat messages."""
    out = _first(attrs, "gen_ai.tool.call.result", "gen_ai.completion", "output.value")
    inp = _first(attrs, "gen_ai.prompt", "input.value")
    return (text_of(out) if out is not None else ""), (text_of(inp) if inp is not None else "")


def _event_name(record: dict) -> str:
    name = record.get("eventName") or record.get("name")
    if not name:
        name = attributes(record.get("attributes")).get("event.name")
    return str(name or "")


def _events(span: dict) -> list[dict]:
    out = []
    for e in span.get("events") or []:
        if isinstance(e, dict):
            attrs = attributes(e.get("attributes"))
            body = maybe_json(attrs.get("gen_ai.event.content")) if "gen_ai.event.content" in attrs else attrs
            out.append({"name": e.get("name"), "body": body})
    return out


def _logs(records: list[dict]) -> list[dict]:
    out = []
    for r in records:
        name = _event_name(r)
        if name in GENAI_EVENTS:
            out.append({"name": name, "body": body_value(r.get("body"))})
    return out


def span_step(span: dict) -> StepRecord:
    """The step of a span without chat messages (and the span's figures for one with them)."""
    attrs = span["_attrs"]
    op = str(attrs.get("gen_ai.operation.name") or "")
    oi = str(attrs.get("openinference.span.kind") or "").upper()
    kind = _GENAI_KIND.get(op) or _OI_KIND.get(oi) or "observation"
    status = span.get("status") if isinstance(span.get("status"), dict) else {}
    if status.get("code") in (2, "2", "STATUS_CODE_ERROR", "ERROR"):
        kind = "error"
    out, inp = _content(attrs)
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
        tool_call_id=text_of(attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id")),
        timestamp=iso_from_nanos(start),
        tokens=tokens,
        duration_ms=(end - start) // 1_000_000 if start and end and end >= start else None,
    )


class _Steps:
    """The trace's steps as they are added, with what the conversation has shown so far."""

    def __init__(self, ctx: Ctx) -> None:
        self.steps: list[StepRecord] = []
        self.shown: Counter = Counter()  # message key -> times shown
        self.calls: dict[str, int] = {}  # tool call id -> its tool_call step
        self.executed: set[int] = set()  # tool_call steps a TOOL span completed with its result
        self.ctx = ctx

    def add(self, step: StepRecord, parent: int | None) -> int:
        step.parent = parent
        if step.kind == "tool_call" and step.tool_call_id:
            self.calls.setdefault(step.tool_call_id, len(self.steps))
        self.steps.append(step)
        return len(self.steps) - 1

    def add_tool(self, step: StepRecord, parent: int | None) -> int:
        """A tool span's step. When the model asked for this call just before (the same call id, or the same
        tool and arguments in a call not yet executed), the span is that call's execution: it completes the
        asked-for step with its result instead of showing the call twice."""
        asked = self._asked(step)
        if asked is None:
            return self.add(step, parent)
        call = self.steps[asked]
        call.content = call.content or step.content
        call.tool_call_id = call.tool_call_id or step.tool_call_id
        self.executed.add(asked)
        return asked

    def _asked(self, step: StepRecord) -> int | None:
        if step.tool_call_id and step.tool_call_id in self.calls:
            found = self.calls[step.tool_call_id]
            return None if found in self.executed else found
        args = _comparable(step.tool_args)
        for i in range(len(self.steps) - 1, -1, -1):
            call = self.steps[i]
            if (
                call.kind == "tool_call"
                and i not in self.executed
                and not call.content
                and call.tool_name == step.tool_name
                and _comparable(call.tool_args) == args
            ):
                return i
        return None

    def _resent_result(self, step: StepRecord) -> bool:
        """A tool result in a later call's history that a TOOL span already showed on its call's step."""
        if step.kind != "tool_result":
            return False
        if step.tool_call_id and step.tool_call_id in self.calls:
            candidates = [self.calls[step.tool_call_id]]
        else:
            candidates = sorted(self.executed)
        return any(i in self.executed and self.steps[i].content == step.content for i in candidates)

    def new(self, messages: list[Message]) -> list[Message]:
        """The messages not shown yet (a history is resent whole with every call); marks them shown."""
        seen: Counter = Counter()
        fresh = []
        for m in messages:
            key = message_key(m)
            seen[key] += 1
            if seen[key] > self.shown[key]:
                fresh.append(m)
        for key, count in seen.items():
            self.shown[key] = max(self.shown[key], count)
        return fresh

    def add_chat(
        self,
        messages: list[Message],
        parent: int | None,
        span: StepRecord | None = None,
        agent: str = "",
        when: str | None = None,
    ) -> int | None:
        """Chat messages as steps under `parent`; with `span`, the first is the span's step (its figures).
        Returns the index of the first step added."""
        local = chat_steps(messages, self.ctx, "messages")
        first = None
        placed: dict[int, int] = {}  # local index -> index in the trace
        for j, step in enumerate(local):
            if self._resent_result(step):
                continue
            if step.parent is None and step.kind in ("tool_result", "error") and step.tool_call_id:
                where = self.calls.get(step.tool_call_id)
                step.parent = where if where is not None else parent
                if where is not None and not step.tool_name:
                    step.tool_name = self.steps[where].tool_name
            elif step.parent is not None:
                step.parent = placed.get(step.parent, parent)
            else:
                step.parent = parent
            step.timestamp = step.timestamp or (span.timestamp if span is not None else when)
            if span is not None:
                if step.role == "assistant":
                    step.agent = agent or step.agent
                if j == 0:
                    step.tokens, step.duration_ms = span.tokens, span.duration_ms
            index = self.add(step, step.parent)
            placed[j] = index
            first = index if first is None else first
        return first


def _comparable(args: Any) -> Any:
    """Tool arguments as a value, whether they came as a JSON string or already decoded."""
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args.strip()
    return args


def trace_record(trace_id: str, spans: list[dict], logs: list[dict], n: int) -> TraceRecord:
    by_id = {s["spanId"]: s for s in spans}
    children: dict[str, list[dict]] = {}
    roots = []
    for s in spans:
        parent = s.get("parentSpanId")
        if parent and parent in by_id and parent != s["spanId"]:
            children.setdefault(parent, []).append(s)
        else:
            roots.append(s)

    def start(s: dict) -> int:
        return as_int(s.get("startTimeUnixNano")) or 0

    ordered: list[tuple[dict, str | None]] = []
    placed: set[int] = set()
    pending = sorted(roots, key=start)
    while pending or len(placed) < len(spans):
        if not pending:  # spans whose parents form a loop: the earliest becomes a root
            pending = [min((s for s in spans if id(s) not in placed), key=start)]
        stack = [(s, None) for s in reversed(pending)]
        pending = []
        while stack:  # iterative DFS: deep agent trees must not hit the recursion limit
            span, parent = stack.pop()
            if id(span) in placed:
                continue
            placed.add(id(span))
            ordered.append((span, parent))
            for child in sorted(children.get(span["spanId"], []), key=start, reverse=True):
                stack.append((child, span["spanId"]))
    root = ordered[0][0] if ordered else {}
    joined: dict[str, list[dict]] = {}
    for record in logs:
        span_id = record.get("spanId")
        joined.setdefault(span_id if span_id in by_id else root.get("spanId"), []).append(record)

    builder = _Steps(Ctx(trace_id))
    index: dict[str, int | None] = {}
    for span, parent_id in ordered:
        parent = index.get(parent_id) if parent_id else None
        own = span_step(span)
        inputs, outputs = span_messages(span["_attrs"], _events(span), _logs(joined.get(span["spanId"], [])))
        if (inputs or outputs) and own.kind != "tool_call":
            builder.add_chat(builder.new(inputs), parent, None, when=own.timestamp)
            # No answer (not captured, or the call failed) or none not shown yet: the span still has a step.
            answer = builder.new(outputs) or [{"role": "assistant", "content": ""}]
            agent = text_of(_first(span["_attrs"], "gen_ai.agent.name", "agent.name"))
            here = builder.add_chat(answer, parent, own, agent)
            if own.kind == "error" and here is not None:
                failed = builder.steps[here]
                failed.kind, failed.content = "error", failed.content or own.content
        elif own.kind == "tool_call":
            here = builder.add_tool(own, parent)
        else:
            here = builder.add(own, parent)
        index[span["spanId"]] = here
    model = ""
    for span, _ in ordered:
        model = text_of(
            _first(span["_attrs"], "gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
        )
        if model:
            break
    root_attrs = root.get("_attrs", {})
    task = text_of(_first(root_attrs, "input.value", "gen_ai.prompt"))
    if not task or task.lstrip()[:1] in ("[", "{"):
        first_user = next((s.content for s in builder.steps if s.role == "user" and s.content), "")
        task = (
            first_user
            or task
            or next((_content(s["_attrs"])[1] for s, _ in ordered if _content(s["_attrs"])[1]), "")
        )
    resource = root.get("_resource", {})
    raw = []
    for span, _ in ordered:
        item = {k: v for k, v in span.items() if not k.startswith("_")}
        if joined.get(span["spanId"]):
            item["logRecords"] = joined[span["spanId"]]
        raw.append(item)
    return TraceRecord(
        external_id=trace_id,
        steps=builder.steps,
        task=task,
        system=text_of(resource.get("service.name")),
        model=model,
        metadata={"root_span": text_of(root.get("name")), "spans": len(spans), "log_records": len(logs)},
        raw=json.loads(json.dumps(raw, default=str)),
        record_no=n,
    )
