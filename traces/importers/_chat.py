"""Chat-message to step conversion shared by OpenAI-style sources.

OpenAI chat, tau-bench, tau2-bench and Inspect AI all log chat messages with small dialect
differences (where the tool name lives, whether arguments are a JSON string or an object,
reasoning blocks). One converter keeps the step mapping identical across them.
"""

from __future__ import annotations

from typing import Any

from ._util import Ctx, as_int, maybe_json, text_of
from .records import TOOL_AGENT, StepRecord

_ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "function": "tool",
    "developer": "system",
    "ipython": "tool",
}
_REASONING_TYPES = ("reasoning", "thinking", "redacted_thinking")


def tool_call_parts(tc: dict) -> tuple[str, Any, str]:
    """(name, args, id) for OpenAI ``{function: {name, arguments}}``, Inspect ``{function: "name",
    arguments}`` and tau2 ``{name, arguments}`` tool calls."""
    fn = tc.get("function")
    if isinstance(fn, dict):
        name, args = fn.get("name"), fn.get("arguments")
    else:
        name, args = (fn if isinstance(fn, str) else tc.get("name")), tc.get("arguments")
    if args is None:
        args = tc.get("args", tc.get("input"))
    return str(name or ""), maybe_json(args), str(tc.get("id") or tc.get("call_id") or "")


def _usage_tokens(m: dict) -> int | None:
    usage = m.get("usage")
    if not isinstance(usage, dict):
        return None
    total = as_int(usage.get("total_tokens"))
    if total is not None:
        return total
    parts = [
        as_int(usage.get(k)) for k in ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens")
    ]
    return sum(p for p in parts if p is not None) or None


def _split_content(content: Any) -> tuple[str, list[str]]:
    """Separate reasoning blocks from the visible text of a message's content."""
    if not isinstance(content, list):
        return text_of(content), []
    text: list[str] = []
    reasoning: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") in _REASONING_TYPES:
            r = block.get("reasoning", block.get("thinking", block.get("summary", "")))
            if r in (None, "") and block.get("redacted"):
                r = "[redacted reasoning]"
            reasoning.append(text_of(r))
        else:
            t = text_of(block)
            if t:
                text.append(t)
    return "\n".join(text), reasoning


def chat_steps(messages: Any, ctx: Ctx, path: str = "messages") -> list[StepRecord]:
    """Convert a chat message list to steps; tool results point (``parent``) at their call."""
    if not isinstance(messages, list):
        raise ctx.error(path, f"expected a list of messages, got {type(messages).__name__}")
    steps: list[StepRecord] = []
    call_index: dict[str, int] = {}  # tool call id -> index of its tool_call step
    for i, m in enumerate(messages):
        role = m.get("role") if type(m) is dict else None
        if type(role) is not str:  # the checked path names the field (the plain case skips its f-strings)
            mpath = f"{path}[{i}]"
            m = ctx.obj(m, mpath)
            role = ctx.get(m, "role", str, f"{mpath}.role", required=True)
        role = _ROLE_ALIASES.get(role, role)
        agent = m.get("name") if isinstance(m.get("name"), str) and role != "tool" else ""
        agent = agent or role
        ts = m.get("timestamp") if isinstance(m.get("timestamp"), str) else None
        tokens = _usage_tokens(m)
        text, reasoning = _split_content(m.get("content"))
        for key in ("reasoning_content", "reasoning"):
            if isinstance(m.get(key), str) and m[key].strip():
                reasoning.insert(0, m[key])
        for r in reasoning:
            steps.append(StepRecord(kind="reasoning", content=r, agent=agent, role=role, timestamp=ts))
        if role == "tool":
            call_id = str(m.get("tool_call_id") or m.get("id") or "")
            parent = call_index.get(call_id)
            # tau2-bench (and others) name the tool only on the call: take it from there.
            name = (
                m.get("name") or m.get("function") or (steps[parent].tool_name if parent is not None else "")
            )
            err = m.get("error")
            kind = "error" if err else "tool_result"
            if isinstance(err, dict) and not text:
                text = text_of(err.get("message") or err)
            steps.append(
                StepRecord(
                    kind=kind,
                    content=text,
                    agent=TOOL_AGENT,
                    role="tool",
                    tool_name=str(name),
                    tool_call_id=call_id,
                    timestamp=ts,
                    parent=parent,
                )
            )
            continue
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):
            raise ctx.error(f"{path}[{i}].tool_calls", f"expected a list, got {type(calls).__name__}")
        legacy = m.get("function_call")
        if isinstance(legacy, dict):
            calls = [*calls, {"function": legacy}]
        if text or not calls:
            steps.append(
                StepRecord(kind="message", content=text, agent=agent, role=role, timestamp=ts, tokens=tokens)
            )
            tokens = None  # count a response's usage once
        for j, tc in enumerate(calls):
            if type(tc) is not dict:
                tc = ctx.obj(tc, f"{path}[{i}].tool_calls[{j}]")
            name, args, call_id = tool_call_parts(tc)
            if call_id:
                call_index[call_id] = len(steps)
            steps.append(
                StepRecord(
                    kind="tool_call",
                    content="",
                    agent=agent,
                    role=role,
                    tool_name=name,
                    tool_args=args,
                    tool_call_id=call_id,
                    timestamp=ts,
                    tokens=tokens,
                )
            )
            tokens = None
    return steps


def first_text(messages: Any, role: str = "user") -> str:
    """Text of the first message with ``role``: the usual stand-in for the task statement."""
    if isinstance(messages, list):
        for m in messages:
            if isinstance(m, dict) and m.get("role") == role:
                return text_of(m.get("content"))
    return ""
