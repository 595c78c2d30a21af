"""OpenAI Codex CLI rollout files (``~/.codex/sessions/.../rollout-*.jsonl``): one session per
file, lines ``{"timestamp", "type": "session_meta"|"response_item"|"event_msg"|"turn_context",
"payload": {...}}``.

``response_item`` payloads are the model-visible transcript and become the steps (message,
reasoning summary, function/custom/local-shell calls and their outputs, linked by
``call_id``). ``event_msg`` lines mostly duplicate them for the UI, so only token counts and
errors are taken from them. Older rollouts without the ``payload`` wrapper are accepted too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any, BinaryIO

from ._json import first_char, first_line, iter_jsonl
from ._util import Ctx, as_int, compact, maybe_json, text_of
from .records import TOOL_AGENT, StepRecord, TraceRecord

FORMAT = "codex"
LABEL = "OpenAI Codex CLI rollout (JSONL)"

_LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_LINE_START = re.compile(
    rb'\s*\{"timestamp":\s*"[^"]*",\s*"type":\s*"(session_meta|response_item|turn_context)"'
)
_ITEM_TYPES = (
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
)
# Codex injects these as user messages; they are context, not the user's task.
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md")


def sniff(head: bytes, filename: str) -> bool:
    if first_char(head) != "{":
        return False
    obj = first_line(head)
    if not isinstance(obj, dict):
        # First line longer than the head (huge instructions): rely on the fixed key order.
        return bool(_LINE_START.match(head))
    return obj.get("type") in _LINE_TYPES and isinstance(obj.get("payload"), dict)


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    steps: list[StepRecord] = []
    calls: dict[str, int] = {}
    meta: dict[str, Any] = {}
    session_id = ""
    model = ""
    task = ""
    lines: list[Any] = []
    for line_no, obj in iter_jsonl(stream, filename):
        lines.append(obj)
        ctx = Ctx(filename, line=line_no)
        d = ctx.obj(obj)
        kind = d.get("type")
        payload = d.get("payload")
        if payload is None and kind in _ITEM_TYPES:
            kind, payload = "response_item", d  # legacy rollout: items are top-level lines
        elif payload is None and "id" in d and "instructions" in d:
            kind, payload = "session_meta", d
        elif payload is None:
            continue  # legacy {"record_type": "state"} lines
        payload = ctx.obj(payload, "payload")
        ts = d.get("timestamp") if isinstance(d.get("timestamp"), str) else None
        if kind == "session_meta":
            session_id = text_of(payload.get("id")) or session_id
            meta.update(
                compact({k: payload.get(k) for k in ("cwd", "originator", "cli_version", "git", "source")})
            )
        elif kind == "turn_context":
            model = text_of(payload.get("model")) or model
        elif kind == "event_msg":
            if payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
                usage = payload["info"].get("total_token_usage")
                if isinstance(usage, dict):
                    meta["total_tokens"] = as_int(usage.get("total_tokens"))
            elif payload.get("type") in ("error", "stream_error"):
                steps.append(
                    StepRecord(
                        kind="error", content=text_of(payload.get("message")), agent="codex", timestamp=ts
                    )
                )
        elif kind == "response_item":
            step = _item(payload, ctx, ts, calls, len(steps))
            if step is not None and step.role == "tool" and step.parent is not None:
                step.tool_name = step.tool_name or steps[step.parent].tool_name  # outputs name no tool
            if step is not None:
                if (
                    not task
                    and step.role == "user"
                    and not step.content.lstrip().startswith(_CONTEXT_PREFIXES)
                ):
                    task = step.content
                steps.append(step)
    if not lines:
        raise Ctx(filename, record=1).error("", "empty rollout file")
    yield TraceRecord(
        external_id=session_id or PurePath(filename).stem,
        steps=steps,
        task=task,
        system="Codex CLI",
        model=model,
        metadata=meta,
        raw=lines,
        record_no=1,
    )


def _item(p: dict, ctx: Ctx, ts: str | None, calls: dict[str, int], index: int) -> StepRecord | None:
    t = p.get("type")
    call_id = text_of(p.get("call_id") or p.get("id"))
    if t == "message":
        role = ctx.text(p, "role", "payload.role", required=True)
        agent = "codex" if role == "assistant" else role
        return StepRecord(
            kind="message", content=text_of(p.get("content")), agent=agent, role=role, timestamp=ts
        )
    if t == "reasoning":
        text = text_of(p.get("summary")) or text_of(p.get("content"))
        return StepRecord(kind="reasoning", content=text, agent="codex", role="assistant", timestamp=ts)
    if t in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        name = text_of(p.get("name")) or t.removesuffix("_call")
        args = p.get("arguments", p.get("input", p.get("action")))
        calls[call_id] = index
        return StepRecord(
            kind="tool_call",
            agent="codex",
            role="assistant",
            tool_name=name,
            tool_args=maybe_json(args),
            tool_call_id=call_id,
            timestamp=ts,
        )
    if t in ("function_call_output", "custom_tool_call_output"):
        out = p.get("output")
        out = maybe_json(out) if isinstance(out, str) else out
        content = text_of(out.get("output", out.get("content"))) if isinstance(out, dict) else text_of(out)
        exit_code = None
        if isinstance(out, dict) and isinstance(out.get("metadata"), dict):
            exit_code = out["metadata"].get("exit_code")
        parent = calls.get(call_id)
        return StepRecord(
            kind="error" if exit_code not in (None, 0) else "tool_result",
            content=content,
            agent=TOOL_AGENT,
            role="tool",
            tool_call_id=call_id,
            timestamp=ts,
            parent=parent,
        )
    return None
