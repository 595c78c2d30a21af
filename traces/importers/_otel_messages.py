"""The chat messages an OpenTelemetry LLM span carries, whatever convention wrote them, as OpenAI-style
message dicts (``{role, content, tool_calls: [{id, function: {name, arguments}}], tool_call_id}``) that
``_chat.chat_steps`` turns into steps like every other chat format.

Where the messages can be, most specific first (the first source that has inputs gives the inputs, the
first that has outputs gives the outputs):

- GenAI log events joined to the span (the OpenTelemetry OpenAI instrumentation, ``opentelemetry-
  instrumentation-openai-v2``): ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (inputs) and ``gen_ai.choice`` (outputs), the
  message in the record's body (``content``, ``tool_calls``, ``id``; a choice's in ``message``);
- the same events as span events (the body's fields as event attributes), and the older
  ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events (``gen_ai.prompt`` / ``gen_ai.completion``);
- span attributes ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and ``gen_ai.output.messages``
  (GenAI conventions 1.37+: messages of typed ``parts``: text, tool_call, tool_call_response);
- OpenInference's flattened ``llm.input_messages.<i>.message.*`` and ``llm.output_messages.<i>.message.*``
  (``content`` or ``contents.<j>.message_content.text``, ``tool_calls.<j>.tool_call.function.{name,arguments}``);
- OpenLLMetry's flattened ``gen_ai.prompt.<i>.*`` and ``gen_ai.completion.<i>.*``.
"""

from __future__ import annotations

import re
from typing import Any

from ._util import as_int, maybe_json, text_of

Message = dict[str, Any]

_INPUT_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
GENAI_EVENTS = frozenset([*_INPUT_EVENTS, CHOICE_EVENT])
_INDEXED = re.compile(r"^(\d+)\.(.+)$")


def span_messages(attrs: dict, events: list[dict], logs: list[dict]) -> tuple[list[Message], list[Message]]:
    """(input messages, output messages) of one span; each empty when the span carries none.

    `events` are the span's events and `logs` the log records joined to it, each as ``{"name": event name,
    "body": decoded body or attributes}`` in the order they were emitted."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    for source in (
        lambda: _from_events(logs),
        lambda: _from_events(events),
        lambda: _from_parts(attrs),
        lambda: (_flattened(attrs, "llm.input_messages", _oi), _flattened(attrs, "llm.output_messages", _oi)),
        lambda: (_flattened(attrs, "gen_ai.prompt", _plain), _flattened(attrs, "gen_ai.completion", _plain)),
    ):
        found_in, found_out = source()
        inputs = inputs or found_in
        outputs = outputs or found_out
        if inputs and outputs:
            break
    # Without content capture the events still come, empty: an empty question is no step.
    inputs = [m for m in inputs if m["role"] == "tool" or m.get("tool_calls") or text_of(m.get("content"))]
    return inputs, outputs


def _from_events(events: list[dict]) -> tuple[list[Message], list[Message]]:
    inputs, outputs = [], []
    for event in events:
        name, body = event.get("name"), event.get("body")
        body = body if isinstance(body, dict) else {"content": body}
        if name in _INPUT_EVENTS:
            inputs.append(_message(body, _INPUT_EVENTS[name]))
        elif name == CHOICE_EVENT:
            message = maybe_json(body.get("message"))
            outputs.append(_message(message if isinstance(message, dict) else body, "assistant"))
        elif name == "gen_ai.content.prompt":
            inputs += _message_list(body.get("gen_ai.prompt"))
        elif name == "gen_ai.content.completion":
            outputs += _message_list(body.get("gen_ai.completion"))
    return inputs, outputs


def _message(body: dict, role: str) -> Message:
    message: Message = {"role": str(body.get("role") or role), "content": body.get("content")}
    calls = maybe_json(body.get("tool_calls"))
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [c for c in calls if isinstance(c, dict)]
    if message["role"] == "tool":
        message["tool_call_id"] = text_of(body.get("id") or body.get("tool_call_id"))
    return message


def _message_list(value: Any) -> list[Message]:
    """A JSON list of OpenAI-style messages (what older instrumentations put in one attribute)."""
    value = maybe_json(value)
    if isinstance(value, list) and all(isinstance(m, dict) and "role" in m for m in value):
        return [_message(m, str(m["role"])) for m in value]
    return []


def _from_parts(attrs: dict) -> tuple[list[Message], list[Message]]:
    inputs: list[Message] = []
    system = maybe_json(attrs.get("gen_ai.system_instructions"))
    if isinstance(system, list) and system:
        inputs.append({"role": "system", "content": _parts_text(system)})
    return inputs + _parts_messages(attrs.get("gen_ai.input.messages")), _parts_messages(
        attrs.get("gen_ai.output.messages")
    )


def _parts_messages(value: Any) -> list[Message]:
    value = maybe_json(value)
    if not isinstance(value, list):
        return []
    out: list[Message] = []
    for m in value:
        if not isinstance(m, dict):
            continue
        parts = m.get("parts")
        if not isinstance(parts, list):  # an OpenAI-style message in the same attribute
            out.append(_message(m, str(m.get("role") or "user")))
            continue
        role = str(m.get("role") or "user")
        calls = [
            {"id": p.get("id"), "function": {"name": p.get("name"), "arguments": p.get("arguments")}}
            for p in parts
            if isinstance(p, dict) and p.get("type") == "tool_call"
        ]
        for p in parts:
            if isinstance(p, dict) and p.get("type") == "tool_call_response":
                out.append(
                    {"role": "tool", "content": p.get("response"), "tool_call_id": text_of(p.get("id"))}
                )
        text = _parts_text(parts)
        if text or calls or not parts:
            message: Message = {"role": role, "content": text}
            if calls:
                message["tool_calls"] = calls
            if m.get("name"):
                message["name"] = m["name"]
            out.append(message)
    return out


def _parts_text(parts: list) -> str:
    texts = []
    for p in parts:
        if isinstance(p, dict):
            if p.get("type") in ("tool_call", "tool_call_response"):
                continue
            texts.append(text_of(p.get("content") if "content" in p else p))
        else:
            texts.append(text_of(p))
    return "\n".join(t for t in texts if t)


def _flattened(attrs: dict, prefix: str, shape) -> list[Message]:
    """Messages flattened into ``<prefix>.<i>.<field>`` attributes, in index order."""
    dotted = prefix + "."
    fields: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(dotted):
            m = _INDEXED.match(key[len(dotted) :])
            if m:
                fields.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [message for _, f in sorted(fields.items()) if (message := shape(f))]


def _oi(f: dict) -> Message | None:
    """One OpenInference message: ``message.role``, ``message.content`` or ``message.contents.<j>...``,
    ``message.tool_calls.<j>.tool_call.*``, ``message.tool_call_id``."""
    role = f.get("message.role")
    content = f.get("message.content")
    if content is None:
        texts = [v for k, v in sorted(f.items()) if k.startswith("message.contents.") and k.endswith(".text")]
        content = "\n".join(text_of(t) for t in texts) if texts else None
    calls = _indexed_calls(f, "message.tool_calls.", "tool_call.")
    if role is None and content is None and not calls:
        return None
    message: Message = {"role": str(role or "assistant"), "content": content}
    if calls:
        message["tool_calls"] = calls
    if f.get("message.tool_call_id"):
        message["tool_call_id"] = text_of(f["message.tool_call_id"])
    if f.get("message.name"):
        message["name"] = f["message.name"]
    return message


def _plain(f: dict) -> Message | None:
    """One OpenLLMetry message: ``role``, ``content``, ``tool_calls.<j>.{id,name,arguments}``,
    ``tool_call_id``."""
    if "role" not in f and "content" not in f:
        return None
    message: Message = {"role": str(f.get("role") or "assistant"), "content": f.get("content")}
    calls = _indexed_calls(f, "tool_calls.", "")
    if calls:
        message["tool_calls"] = calls
    if f.get("tool_call_id"):
        message["tool_call_id"] = text_of(f["tool_call_id"])
    return message


def _indexed_calls(f: dict, prefix: str, inner: str) -> list[dict]:
    calls: dict[int, dict[str, Any]] = {}
    for key, value in f.items():
        if key.startswith(prefix):
            m = _INDEXED.match(key[len(prefix) :])
            if m:
                calls.setdefault(int(m.group(1)), {})[m.group(2).removeprefix(inner)] = value
    return [
        {
            "id": c.get("id"),
            "function": {
                "name": c.get("function.name", c.get("name")),
                "arguments": c.get("function.arguments", c.get("arguments")),
            },
        }
        for _, c in sorted(calls.items())
    ]


def message_key(m: Message) -> tuple:
    """What makes two messages the same one (a history resent with every call of a conversation)."""
    calls = tuple(text_of(c.get("id")) or text_of(c.get("function")) for c in m.get("tool_calls") or [])
    return (m.get("role"), text_of(m.get("content")).strip(), calls, m.get("tool_call_id") or "")


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


_ANY_VALUE_KEYS = frozenset(
    ["stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"]
)


def body_value(v: Any) -> Any:
    """A log record's body: an OTLP ``AnyValue``, or a plain value (the console exporter's)."""
    if isinstance(v, dict) and len(v) == 1 and next(iter(v)) in _ANY_VALUE_KEYS:
        return _value(v)
    return v


def attributes(attrs: Any) -> dict:
    if isinstance(attrs, dict):  # already flattened (the console exporter, some SDK dumps)
        return attrs
    out = {}
    for a in attrs or []:
        if isinstance(a, dict) and "key" in a:
            out[a["key"]] = _value(a.get("value"))
    return out
