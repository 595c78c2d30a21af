"""The OpenTelemetry SDK's console exporters (``ConsoleSpanExporter``, ``ConsoleLogExporter``) write each span
or log record as a pretty-printed JSON object of their own shape: ``context.trace_id`` as ``0x``-prefixed hex,
``parent_id``, ISO 8601 times, flat ``attributes``, ``status.status_code``. Converted here to the OTLP/JSON
shape, so they go through the same mapping as the collector's files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

import ijson

from . import limits
from ._json import NanFilter, _json_error, has_key, not_utf8
from ._util import Ctx
from .records import TraceFormatError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def looks_like_console(head: bytes) -> bool:
    """A console span (``context`` with ``trace_id`` and ``span_id``, ``parent_id``, ``start_time``,
    ``end_time``) or log record (``body``, ``trace_id``, ``span_id``, ``severity_number``,
    ``observed_timestamp``)."""
    if not has_key(head, "trace_id", "span_id"):
        return False
    return has_key(head, "context", "parent_id", "start_time", "end_time") or has_key(
        head, "body", "severity_number", "observed_timestamp"
    )


def _hex(value: Any) -> str:
    text = str(value or "")
    return text[2:] if text.startswith("0x") else text


def _nanos(value: Any) -> str | None:
    """ISO time (the SDK writes microseconds and a Z) as OTLP's decimal nanoseconds."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return str((moment - _EPOCH) // timedelta(microseconds=1) * 1000)


def _resource(obj: dict) -> dict:
    resource = obj.get("resource")
    attrs = resource.get("attributes") if isinstance(resource, dict) else None
    return attrs if isinstance(attrs, dict) else {}


def console_span(obj: dict, ctx: Ctx) -> tuple[dict, dict]:
    """(the span in OTLP/JSON shape, its resource's attributes)."""
    context = ctx.obj(obj.get("context"), "context")
    trace_id = ctx.get(context, "trace_id", str, "context.trace_id", required=True)
    span_id = ctx.get(context, "span_id", str, "context.span_id", required=True)
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    code = str(status.get("status_code") or "UNSET")
    span = {
        "traceId": _hex(trace_id),
        "spanId": _hex(span_id),
        "name": obj.get("name"),
        "kind": obj.get("kind"),
        "startTimeUnixNano": _nanos(obj.get("start_time")),
        "endTimeUnixNano": _nanos(obj.get("end_time")),
        "attributes": obj.get("attributes") if isinstance(obj.get("attributes"), dict) else {},
        "events": [
            {
                "name": e.get("name"),
                "timeUnixNano": _nanos(e.get("timestamp")),
                "attributes": e.get("attributes"),
            }
            for e in obj.get("events") or []
            if isinstance(e, dict)
        ],
        "status": {"code": f"STATUS_CODE_{code}", "message": status.get("description") or ""},
    }
    if obj.get("parent_id"):
        span["parentSpanId"] = _hex(obj["parent_id"])
    return span, _resource(obj)


def console_log(obj: dict, ctx: Ctx) -> tuple[dict, dict]:
    """(the log record in OTLP/JSON shape, its resource's attributes)."""
    attrs = obj.get("attributes") if isinstance(obj.get("attributes"), dict) else {}
    record = {
        "traceId": _hex(obj.get("trace_id")),
        "spanId": _hex(obj.get("span_id")),
        "timeUnixNano": _nanos(obj.get("timestamp")),
        "eventName": obj.get("event_name") or attrs.get("event.name"),
        "body": obj.get("body"),
        "attributes": attrs,
    }
    return record, _resource(obj)


def read_console(group: Any, stream: BinaryIO, filename: str) -> None:
    """Concatenated JSON objects (pretty-printed, usually one after another on new lines), each span or log
    record handed to `group` (the otel module's assembler)."""
    n = 0
    try:
        for n, obj in enumerate(ijson.items(NanFilter(stream), "", multiple_values=True, use_float=True), 1):
            ctx = Ctx(filename, record=n)
            obj = ctx.obj(obj)
            if "context" in obj:
                span, resource = console_span(obj, ctx)
                group.add_span(span, resource, ctx, "span")
            else:
                log, resource = console_log(obj, ctx)
                group.add_log(log, resource, ctx, "log record")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(not_utf8(exc), file=filename, record=n + 1) from None
    except (ijson.JSONError, limits.LimitExceeded) as exc:
        raise _json_error(exc, filename, n + 1) from None
