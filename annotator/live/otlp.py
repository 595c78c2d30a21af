"""OTLP/HTTP request bodies to plain span and log documents, bounded as they are decoded (no Django).

Both encodings go through one path: a protobuf body is parsed by `opentelemetry-proto`'s generated classes,
a JSON body is read into the same classes with protobuf's `json_format` (after its hex ids are turned into
the base64 that the protobuf JSON mapping expects for bytes). The request path checks the spans on the
parsed message and keeps the accepted ones as one protobuf request (`parse_traces`); the assembly task turns
that into OTLP/JSON, one dict per span (`span_items`: camelCase keys, hex ids, as `traces.importers.otel`
reads files), with its resource and scope. Log records are few and go to OTLP/JSON at once (`parse_logs`).

Limits (`traces.importers.limits`, the IMPORT_MAX_* settings) apply as in a file import: the request body is
one record (IMPORT_MAX_RECORD_MB, compressed and decoded, and the IMPORT_MAX_ZIP_RATIO against gzip bombs),
a JSON body nests at most IMPORT_MAX_DEPTH, an attribute value is at most IMPORT_MAX_VALUE_MB and a span's
parent chain within one request at most IMPORT_MAX_DEPTH long. A span that breaks a per-span rule is
rejected alone (OTLP's partial success); a body that breaks a per-request rule is refused whole.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from traces.importers import limits

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


class BadRequest(ValueError):
    """Not an OTLP request (400)."""


class TooLarge(ValueError):
    """Over a size limit (413)."""


@dataclass(slots=True)
class Decoded:
    """What a request carried: its accepted spans as one protobuf request (`body`) or its log record
    documents (`items`), how many were accepted, and those rejected with why."""

    items: list[dict] = field(default_factory=list)
    body: bytes = b""
    count: int = 0
    trace_ids: set[str] = field(default_factory=set)  # of the accepted spans (hex)
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if reason not in self.reasons and len(self.reasons) < 5:
            self.reasons.append(reason)

    @property
    def message(self) -> str:
        return "; ".join(self.reasons)


def media_type(content_type: str) -> str:
    """`application/json` or `application/x-protobuf` (parameters dropped), else BadRequest."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind not in (PROTOBUF, JSON):
        raise BadRequest(f"Content-Type must be {PROTOBUF} or {JSON}, not {kind or 'none'!r}")
    return kind


def inflate(body: bytes, content_encoding: str, bounds: limits.Limits | None = None) -> bytes:
    """The body without its gzip (or deflate) encoding, stopped as soon as it decodes past the limits."""
    bounds = bounds or limits.current()
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate"):
        raise BadRequest(f"Content-Encoding {encoding!r} is not supported (gzip or none)")
    # The decoded body is one record: IMPORT_MAX_RECORD_MB caps it, whatever IMPORT_MAX_ARCHIVE_MB says.
    budget = limits.DecodeBudget(
        replace(bounds, max_archive_bytes=bounds.max_record_bytes), container="the request body"
    )
    decoder = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    parts: list[bytes] = []
    size = 0
    data = body
    try:
        while data:
            chunk = decoder.decompress(data, 1 << 20)
            size += len(chunk)
            parts.append(chunk)
            _check_budget(budget, size, len(body))
            data = decoder.unconsumed_tail
        tail = decoder.flush()
    except zlib.error as error:
        raise BadRequest(f"the body is not valid {encoding} data ({error})") from None
    size += len(tail)
    parts.append(tail)
    _check_budget(budget, size, len(body))
    if not decoder.eof:
        raise BadRequest(f"the {encoding} body is truncated")
    return b"".join(parts)


def _check_budget(budget: limits.DecodeBudget, decoded: int, compressed: int) -> None:
    try:
        budget.check(decoded, compressed, "the request body")
    except limits.LimitExceeded as error:
        raise TooLarge(str(error)) from None


def parse_traces(data: bytes, kind: str, bounds: limits.Limits | None = None) -> Decoded:
    """The accepted spans of an ExportTraceServiceRequest, kept as one protobuf request (`Decoded.body`):
    every bound is checked here, on the parsed message, and the conversion to OTLP/JSON documents
    (`span_items`) is left to the assembly task, off the request path."""
    bounds = bounds or limits.current()
    request = _parse(data, kind, ExportTraceServiceRequest(), bounds)
    out = Decoded()
    tree: dict[bytes, bytes] = {}
    kept: list[tuple[tuple[int, int, int], bytes, bytes]] = []  # (where the span is, span id, trace id)
    dropped: list[tuple[int, int, int]] = []  # (resource, scope, span) indexes
    for r, rs in enumerate(request.resource_spans):
        shared_nul = _nul_attrs(rs.resource.attributes)
        for s, ss in enumerate(rs.scope_spans):
            scope_nul = shared_nul or _nul_scope(ss.scope)
            for index, span in enumerate(ss.spans):
                reason = _span_problem(span, bounds) or (_UNSTORABLE if scope_nul or _span_nul(span) else "")
                if reason:
                    out.reject(reason)
                    dropped.append((r, s, index))
                    continue
                tree[span.span_id] = span.parent_span_id
                kept.append(((r, s, index), span.span_id, span.trace_id))
    trace_ids: set[bytes] = set()
    for where, span_id, trace_id in kept:
        if _depth(span_id, tree, bounds.max_depth) > bounds.max_depth:
            out.reject(f"span tree deeper than {bounds.max_depth} levels (limit IMPORT_MAX_DEPTH)")
            dropped.append(where)
            continue
        out.count += 1
        trace_ids.add(trace_id)
    out.trace_ids = {trace_id.hex() for trace_id in trace_ids}
    if not dropped and kind == PROTOBUF:
        out.body = data  # already the protobuf request, exactly as received
        return out
    # Highest index first, so that deleting a span does not move the others still to delete.
    for r, s, index in sorted(dropped, reverse=True):
        del request.resource_spans[r].scope_spans[s].spans[index]
    out.body = request.SerializeToString()
    return out


def span_items(body: bytes) -> list[dict]:
    """The spans of an accepted request (`Decoded.body`), each as {"resource", "scope", "span"} (OTLP/JSON,
    camelCase keys, hex ids, as `traces.importers.otel` reads files)."""
    request = ExportTraceServiceRequest.FromString(body)
    items: list[dict] = []
    for rs in request.resource_spans:
        resource = _dict(rs.resource) if rs.HasField("resource") else {}
        for ss in rs.scope_spans:
            scope = _dict(ss.scope) if ss.HasField("scope") else {}
            items.extend({"resource": resource, "scope": scope, "span": span_doc(span)} for span in ss.spans)
    return items


def parse_logs(data: bytes, kind: str, bounds: limits.Limits | None = None) -> Decoded:
    """The log records of an ExportLogsServiceRequest, each as {"resource", "scope", "log"} (OTLP/JSON)."""
    bounds = bounds or limits.current()
    request = _parse(data, kind, ExportLogsServiceRequest(), bounds)
    out = Decoded()
    for rl in request.resource_logs:
        resource = _dict(rl.resource) if rl.HasField("resource") else {}
        for sl in rl.scope_logs:
            scope = _dict(sl.scope) if sl.HasField("scope") else {}
            for record in sl.log_records:
                if len(record.trace_id) != 16 or len(record.span_id) != 8:
                    out.reject("a log record without a valid traceId and spanId cannot join a span")
                    continue
                if _too_long(record.body, bounds) or any(
                    _too_long(a.value, bounds) for a in record.attributes
                ):
                    out.reject(_value_message(bounds))
                    continue
                doc = _dict(record)
                _hex_ids(doc)
                if not _storable(doc):
                    out.reject(_UNSTORABLE)
                    continue
                out.items.append({"resource": resource, "scope": scope, "log": doc})
    out.count = len(out.items)
    return out


def _parse(data: bytes, kind: str, message: Message, bounds: limits.Limits) -> Any:
    if kind == PROTOBUF:
        try:
            message.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError) as error:
            raise BadRequest(f"the body is not an OTLP protobuf message ({error or 'undecodable'})") from None
        return message
    try:
        limits.check_json_bytes(data, bounds)
        document = json.loads(data)
    except limits.LimitExceeded as error:
        raise TooLarge(str(error)) from None
    except (ValueError, RecursionError) as error:
        raise BadRequest(f"the body is not JSON ({error})") from None
    if not isinstance(document, dict):
        raise BadRequest("the body is not an OTLP JSON object")
    _base64_ids(document)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as error:
        raise BadRequest(f"the body is not an OTLP JSON message ({error})") from None
    return message


# \u0000 in JSON text, unless its backslash is itself escaped (then it is the literal text "\u0000").
_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_UNSTORABLE = "a value holds a NUL character or a lone surrogate, which text here cannot hold"


def _storable(doc: dict) -> bool:
    """Whether the database can hold every string of `doc` (PostgreSQL text and jsonb refuse NUL)."""
    try:
        text = orjson.dumps(doc)
        return b"\\u0000" not in text or _NUL.search(text) is None
    except TypeError:  # orjson refuses a lone surrogate
        return False


def _span_nul(span: Any) -> bool:
    """Whether a string of the span holds a NUL character (the same strings `span_doc` writes out)."""
    return (
        "\0" in span.name
        or "\0" in span.trace_state
        or "\0" in span.status.message
        or _nul_attrs(span.attributes)
        or any("\0" in event.name or _nul_attrs(event.attributes) for event in span.events)
        or any("\0" in link.trace_state or _nul_attrs(link.attributes) for link in span.links)
    )


def _nul_scope(scope: Any) -> bool:
    return "\0" in scope.name or "\0" in scope.version or _nul_attrs(scope.attributes)


def _nul_attrs(attributes: Any) -> bool:
    return any("\0" in kv.key or _nul_value(kv.value) for kv in attributes)


def _nul_value(value: Any) -> bool:
    which = value.WhichOneof("value")
    if which == "string_value":
        return "\0" in value.string_value
    if which == "array_value":
        return any(_nul_value(item) for item in value.array_value.values)
    if which == "kvlist_value":
        return _nul_attrs(value.kvlist_value.values)
    return False


def span_doc(span: Any) -> dict:
    """A Span as OTLP/JSON: what `json_format.MessageToDict` and hex ids give (camelCase, fields at their
    default left out, 64-bit integers as strings, enums by name), written out by hand because this runs
    for every span of every request and is several times faster than the generic walk."""
    doc: dict[str, Any] = {"traceId": span.trace_id.hex(), "spanId": span.span_id.hex()}
    if span.trace_state:
        doc["traceState"] = span.trace_state
    if span.parent_span_id:
        doc["parentSpanId"] = span.parent_span_id.hex()
    if span.flags:
        doc["flags"] = span.flags
    if span.name:
        doc["name"] = span.name
    if span.kind:
        doc["kind"] = _SPAN_KINDS.get(span.kind, span.kind)
    if span.start_time_unix_nano:
        doc["startTimeUnixNano"] = str(span.start_time_unix_nano)
    if span.end_time_unix_nano:
        doc["endTimeUnixNano"] = str(span.end_time_unix_nano)
    if span.attributes:
        doc["attributes"] = _attributes(span.attributes)
    if span.dropped_attributes_count:
        doc["droppedAttributesCount"] = span.dropped_attributes_count
    if span.events:
        doc["events"] = [_event(event) for event in span.events]
    if span.dropped_events_count:
        doc["droppedEventsCount"] = span.dropped_events_count
    if span.links:
        doc["links"] = [_link(link) for link in span.links]
    if span.dropped_links_count:
        doc["droppedLinksCount"] = span.dropped_links_count
    if span.HasField("status"):
        status: dict[str, Any] = {}
        if span.status.message:
            status["message"] = span.status.message
        if span.status.code:
            status["code"] = _STATUS_CODES.get(span.status.code, span.status.code)
        doc["status"] = status
    return doc


_SPAN_KINDS = {
    1: "SPAN_KIND_INTERNAL",
    2: "SPAN_KIND_SERVER",
    3: "SPAN_KIND_CLIENT",
    4: "SPAN_KIND_PRODUCER",
    5: "SPAN_KIND_CONSUMER",
}
_STATUS_CODES = {1: "STATUS_CODE_OK", 2: "STATUS_CODE_ERROR"}


def _event(event: Any) -> dict:
    doc: dict[str, Any] = {}
    if event.time_unix_nano:
        doc["timeUnixNano"] = str(event.time_unix_nano)
    if event.name:
        doc["name"] = event.name
    if event.attributes:
        doc["attributes"] = _attributes(event.attributes)
    if event.dropped_attributes_count:
        doc["droppedAttributesCount"] = event.dropped_attributes_count
    return doc


def _link(link: Any) -> dict:
    doc: dict[str, Any] = {"traceId": link.trace_id.hex(), "spanId": link.span_id.hex()}
    if link.trace_state:
        doc["traceState"] = link.trace_state
    if link.attributes:
        doc["attributes"] = _attributes(link.attributes)
    if link.dropped_attributes_count:
        doc["droppedAttributesCount"] = link.dropped_attributes_count
    if link.flags:
        doc["flags"] = link.flags
    return doc


def _attributes(attributes: Any) -> list[dict]:
    return [{"key": kv.key, "value": _any_value(kv.value)} for kv in attributes]


def _any_value(value: Any) -> dict:
    which = value.WhichOneof("value")
    if which is None:
        return {}
    if which == "string_value":
        return {"stringValue": value.string_value}
    if which == "int_value":
        return {"intValue": str(value.int_value)}
    if which == "bool_value":
        return {"boolValue": value.bool_value}
    if which == "double_value":
        return {"doubleValue": value.double_value}
    if which == "array_value":
        return {"arrayValue": {"values": [_any_value(v) for v in value.array_value.values]}}
    if which == "kvlist_value":
        return {"kvlistValue": {"values": _attributes(value.kvlist_value.values)}}
    if which == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode()}
    return _dict(value)


def _dict(message: Message) -> dict:
    return json_format.MessageToDict(message, preserving_proto_field_name=False)


def _span_problem(span: Any, bounds: limits.Limits) -> str:
    if len(span.trace_id) != 16 or not any(span.trace_id):
        return "span without a valid traceId (16 bytes, not all zero)"
    if len(span.span_id) != 8 or not any(span.span_id):
        return "span without a valid spanId (8 bytes, not all zero)"
    if span.parent_span_id and len(span.parent_span_id) != 8:
        return "span whose parentSpanId is not 8 bytes"
    if len(span.name.encode()) > bounds.max_value_bytes or any(
        _too_long(a.value, bounds) for a in span.attributes
    ):
        return _value_message(bounds)
    for event in span.events:
        if any(_too_long(a.value, bounds) for a in event.attributes):
            return _value_message(bounds)
    return ""


def _value_message(bounds: limits.Limits) -> str:
    return f"an attribute value is longer than {bounds.max_value_bytes} bytes (limit IMPORT_MAX_VALUE_MB)"


def _too_long(value: Any, bounds: limits.Limits) -> bool:
    """An AnyValue (or any message) whose encoding is larger than one value may be."""
    return value.ByteSize() > bounds.max_value_bytes


def _depth(span_id: str, tree: dict[str, str], cap: int) -> int:
    depth, seen = 1, {span_id}
    parent = tree.get(span_id, "")
    while parent and parent in tree and depth <= cap:
        if parent in seen:  # a cycle: the tree is not a tree
            return cap + 1
        seen.add(parent)
        depth += 1
        parent = tree[parent]
    return depth


def _hex_ids(node: Any) -> None:
    """protobuf's JSON writes bytes as base64; OTLP/JSON writes trace and span ids as hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex() if value else ""
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def _base64_ids(node: Any) -> None:
    """The reverse, before json_format reads OTLP/JSON: hex ids to the base64 it expects for bytes."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode() if value else ""
                except ValueError:
                    raise BadRequest(f"{key} {value[:40]!r} is not hex") from None
            else:
                _base64_ids(value)
    elif isinstance(node, list):
        for item in node:
            _base64_ids(item)


def trace_response(kind: str, rejected: int = 0, message: str = "") -> bytes:
    """An ExportTraceServiceResponse in the request's encoding (partial_success only when spans were
    rejected, as the specification asks)."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    return _encode(response, kind)


def logs_response(kind: str, rejected: int = 0, message: str = "") -> bytes:
    response = ExportLogsServiceResponse()
    if rejected or message:
        response.partial_success.rejected_log_records = rejected
        response.partial_success.error_message = message
    return _encode(response, kind)


def status_body(kind: str, code: int, message: str) -> bytes:
    """A google.rpc.Status, the body the OTLP/HTTP specification gives failed requests."""
    from google.rpc.status_pb2 import Status

    return _encode(Status(code=code, message=message), kind)


def _encode(message: Message, kind: str) -> bytes:
    if kind == JSON:
        return json.dumps(json_format.MessageToDict(message)).encode()
    return message.SerializeToString()
