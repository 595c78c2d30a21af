"""OpenHands event streams: a JSON array of events, each either an action or an observation
(``id``, ``timestamp``, ``source``, ``action``|``observation``, ``args``, ``cause``, ``message``,
``content``, ``extras``, ``tool_call_metadata``).

One event is one step so that step indices line up with the source. Actions become
``message`` (message/finish), ``reasoning`` (think) or ``tool_call``; observations become
``tool_result`` when they answer a tool call, else ``observation`` (``error`` for error
observations), with ``parent`` = the step whose event id equals ``cause``. Events are
streamed with ijson; the whole file is one trace.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any, BinaryIO

from ._json import first_char, has_key, iter_array
from ._util import Ctx, as_int, compact, text_of
from .records import TOOL_AGENT, StepRecord, TraceRecord

FORMAT = "openhands"
LABEL = "OpenHands event stream (trajectory JSON)"

_MESSAGE_ACTIONS = ("message", "finish", "reject")
_ROLE = {"user": "user", "agent": "assistant", "environment": ""}


def sniff(head: bytes, filename: str) -> bool:
    if first_char(head) != "[":
        return False
    source = re.search(rb'(?<![\\\w])"source"\s*:\s*"(agent|user|environment)"', head)
    return bool(source) and (has_key(head, "action") or has_key(head, "observation")) and has_key(head, "id")


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    steps: list[StepRecord] = []
    by_event: dict[Any, int] = {}
    seen_responses: set[str] = set()
    events: list[Any] = []
    model = ""
    task = ""
    for n, raw in iter_array(stream, filename):
        ctx = Ctx(filename, record=1)
        e = ctx.obj(raw, f"[{n - 1}]")
        events.append(raw)
        step, resp_model, tokens_key = _step(e, ctx, n - 1, by_event)
        tcm = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else {}
        resp = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else {}
        if tokens_key and tokens_key not in seen_responses:
            # Several events can share one LLM response: count its usage once.
            seen_responses.add(tokens_key)
            usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
            step.tokens = as_int(usage.get("total_tokens"))
        model = model or resp_model
        if not task and e.get("source") == "user" and e.get("action") == "message":
            task = step.content
        if e.get("id") is not None:
            by_event[e["id"]] = len(steps)
        steps.append(step)
    if not events:
        raise Ctx(filename, record=1).error("", "no events in the file")
    yield TraceRecord(
        external_id=PurePath(filename).stem,
        steps=steps,
        task=task,
        system="OpenHands",
        model=model,
        metadata=compact({"events": len(events)}),
        raw=events,
        record_no=1,
    )


def _step(e: dict, ctx: Ctx, i: int, by_event: dict) -> tuple[StepRecord, str, str]:
    path = f"[{i}]"
    source = ctx.text(e, "source", f"{path}.source")
    ts = e.get("timestamp") if isinstance(e.get("timestamp"), str) else None
    args = ctx.get(e, "args", dict, f"{path}.args") or {}
    tcm = ctx.get(e, "tool_call_metadata", dict, f"{path}.tool_call_metadata") or {}
    resp = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else {}
    model = resp.get("model") if isinstance(resp.get("model"), str) else ""
    tokens_key = str(resp.get("id") or "")
    call_id = str(tcm.get("tool_call_id") or "")
    message = text_of(e.get("message"))
    role = _ROLE.get(source, "")
    if "action" in e:
        action = ctx.text(e, "action", f"{path}.action", required=True)
        thought = text_of(args.get("thought"))
        if action in _MESSAGE_ACTIONS:
            body = text_of(args.get("content")) or text_of(
                args.get("outputs", {}).get("content") if isinstance(args.get("outputs"), dict) else ""
            )
            content = body or message or thought
            return (
                StepRecord(kind="message", content=content, agent=source, role=role, timestamp=ts),
                model,
                tokens_key,
            )
        if action == "think":
            return (
                StepRecord(
                    kind="reasoning", content=thought or message, agent=source, role=role, timestamp=ts
                ),
                model,
                tokens_key,
            )
        tool_args = {k: v for k, v in args.items() if k != "thought"}
        step = StepRecord(
            kind="tool_call",
            content=thought or message,
            agent=source,
            role=role,
            tool_name=str(tcm.get("function_name") or action),
            tool_args=tool_args,
            tool_call_id=call_id,
            timestamp=ts,
        )
        return step, model, tokens_key
    if "observation" not in e:
        raise ctx.error(path, "expected an event with an 'action' or an 'observation'")
    obs = text_of(e.get("observation"))
    cause = e.get("cause")
    parent = by_event.get(cause) if cause is not None else None
    if obs == "error" or (isinstance(e.get("extras"), dict) and e["extras"].get("error_id")):
        kind = "error"
    elif call_id:
        kind = "tool_result"
    else:
        kind = "observation"
    step = StepRecord(
        kind=kind,
        content=text_of(e.get("content")) or message,
        agent=TOOL_AGENT if call_id else source,
        role="tool" if call_id else role,
        tool_name=str(tcm.get("function_name") or (obs if obs != "null" else "")),
        tool_call_id=call_id,
        timestamp=ts,
        parent=parent,
    )
    # The response that triggered the call was already counted on the action.
    return step, model, ""
