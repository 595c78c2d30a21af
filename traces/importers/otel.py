"""OpenTelemetry traces: spans (and the GenAI log events that carry their messages) to one trace per trace id.

What it reads, in a file or in several files of one import (``parse_files``), in any order and mixed:

- OTLP JSON ``ExportTraceServiceRequest`` documents (``resourceSpans[].scopeSpans[].spans[]``), one per file
  or one per line (what the collector's file exporter writes; a trace's spans may be spread over lines);
- OTLP JSON ``ExportLogsServiceRequest`` documents (``resourceLogs[].scopeLogs[].logRecords[]``): the GenAI
  log events (``gen_ai.user.message``, ``gen_ai.choice``, ...) that instrumentations such as the OpenAI one
  write the message content to, joined to their span by trace id and span id;
- the SDK's ``ConsoleSpanExporter`` and ``ConsoleLogExporter`` output: one JSON object per span or log
  record, concatenated (``context.trace_id``, ``parent_id``, ISO times, flat attributes).

One mapping for all of them and for the live endpoint: :func:`assemble`. Each span is one step, nested under
its parent span's step, depth-first with siblings in start-time order (a parent always precedes its children).
A span that carries chat messages (GenAI log events, ``gen_ai.input/output.messages``, OpenInference
``llm.*_messages``; see ``_otel_messages``) becomes the messages it adds to the conversation: the input
messages not already shown earlier in the trace (the user's question, tool results), then its outputs (the
model's answer, its tool calls), the first output being the span's own step (tokens, duration). Tool spans
(OpenInference TOOL, GenAI ``execute_tool``) are a tool call step whose content is the tool's result.

Grouping by trace id needs every span of the import before a trace is complete (an exporter's batches cut a
trace anywhere), so the spans wait in memory, bounded: one trace's spans by IMPORT_MAX_RECORD_MB and all the
spans waiting by IMPORT_MAX_ARCHIVE_MB.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from . import limits
from ._json import (
    first_char,
    first_line,
    has_key,
    iter_jsonl,
    iter_paths,
    peek,
)
from ._otel_console import looks_like_console, read_console
from ._otel_messages import attributes
from ._otel_steps import trace_record
from ._util import Ctx
from .records import TraceFormatError, TraceRecord

FORMAT = "otel"
LABEL = "OpenTelemetry: OTLP JSON spans and GenAI log events, or console exporter output"

_SPANS = "resourceSpans.item.scopeSpans.item.spans.item"
_RESOURCE = "resourceSpans.item.resource"
_LOGS = "resourceLogs.item.scopeLogs.item.logRecords.item"
_LOG_RESOURCE = "resourceLogs.item.resource"


def sniff(head: bytes, filename: str) -> bool:
    if first_char(head) != "{":
        return False
    if has_key(head, "resourceSpans") or has_key(head, "resourceLogs"):
        obj = first_line(head)
        return obj is None or isinstance(obj, dict)
    return looks_like_console(head)


def assemble(span_docs: Iterable[dict], log_docs: Iterable[dict] = ()) -> Iterator[TraceRecord]:
    """One :class:`TraceRecord` per trace id found in `span_docs`, with the log events of `log_docs` joined.

    `span_docs` are OTLP/JSON ``ExportTraceServiceRequest`` dicts (``{"resourceSpans": [{"resource":
    {"attributes": [...]}, "scopeSpans": [{"scope": {...}, "spans": [...]}]}]}``) and `log_docs` OTLP/JSON
    ``ExportLogsServiceRequest`` dicts (``{"resourceLogs": [{"resource": ..., "scopeLogs": [{"logRecords":
    [...]}]}]}``), as the OTLP/JSON encoding has them: camelCase keys (``traceId``, ``parentSpanId``,
    ``startTimeUnixNano``, ``eventName``), ids as hex strings (any case), 64-bit integers as strings or numbers,
    values as ``AnyValue`` objects (``{"stringValue": ...}``, ``{"kvlistValue": {"values": [...]}}``). A protobuf
    request converted with ``google.protobuf.json_format.MessageToDict`` has this shape as it is: its base64
    ids are recognised by their length and turned into hex (the record's ``external_id`` and ``raw`` hold
    lowercase hex). A document may also hold both ``resourceSpans`` and ``resourceLogs``.

    The spans of one trace may be spread over any number of documents in any order: all documents are read
    before the first trace is yielded, and the traces come in the order their trace ids first appeared. Each
    record's ``external_id`` is the trace id, ``raw`` its spans (the log records joined to a span under the
    span's ``logRecords``), ``record_no`` its 1-based position. Log records are joined to the span with
    their trace id and span id; one with the trace id of a known trace but no (or an unknown) span id goes to
    the trace's root span. Steps, roles, messages, tool calls and results, model and tokens follow the
    conventions listed in this module's doc.

    Raises :class:`TraceFormatError` (a ``ValueError``) naming the document (``record``, 1-based, counting
    span documents then log documents) and field when a span lacks its ``traceId`` or ``spanId`` or a
    document is not an object; when log records belong to traces with no span here (nothing to join them
    to: they are not dropped silently); and when the spans held exceed the limits (see the module doc).
    Nothing is yielded before every document has been read, so an error means no trace was yielded.

    The same span or log record given twice (an exporter's retry) counts once. Pure: no Django, no I/O. The
    records are not yet measured against the row limit: pass them through ``traces.importers.check_size``
    (or ``guarded``) and ``traces.rows.prepare`` before storing them, as the file import does.
    """
    group = _Assembler()
    n = 0
    for n, doc in enumerate(span_docs, start=1):
        group.add_doc(doc, Ctx("", record=n))
    for m, doc in enumerate(log_docs, start=n + 1):
        group.add_doc(doc, Ctx("", record=m))
    yield from group.traces()


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    yield from parse_files([(stream, filename)])


def parse_files(files: Iterable[tuple[BinaryIO, str]]) -> Iterator[TraceRecord]:
    """The traces of several files of one import read as one: a trace's spans and log events may be in any
    of them. With more than one file each record's metadata names the files it came from (``files``), the
    first being where its trace id first appeared."""
    group = _Assembler()
    count = 0
    for stream, filename in files:
        count += 1
        group.source = filename
        _read_file(group, stream, filename)
    if count > 1:
        group.name_files = True
    yield from group.traces()


def _read_file(group: _Assembler, stream: BinaryIO, filename: str) -> None:
    head, stream = peek(stream)
    if not (has_key(head, "resourceSpans") or has_key(head, "resourceLogs")) and looks_like_console(head):
        read_console(group, stream, filename)
        return
    obj = first_line(head)
    if isinstance(obj, dict) and b"\n" in head.strip():
        for line_no, doc in iter_jsonl(stream, filename):
            group.add_doc(doc, Ctx(filename, line=line_no))
        return
    # One document (pretty-printed or not), or documents one a line whose first line is longer than the
    # head (a collector's batch of spans easily is): streamed span by span either way.
    resource: dict = {}
    paths = (_RESOURCE, _SPANS, _LOG_RESOURCE, _LOGS)
    for path, n, value in iter_paths(stream, filename, paths, multiple_values=True):
        if path in (_RESOURCE, _LOG_RESOURCE):
            resource = attributes(value.get("attributes") if isinstance(value, dict) else None)
        elif path == _SPANS:
            group.add_span(value, resource, Ctx(filename, record=n), f"spans[{n - 1}]")
        else:
            group.add_log(value, resource, Ctx(filename, record=n), f"logRecords[{n - 1}]")


_ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
_BASE64_ID = re.compile(r"^(?:[A-Za-z0-9+/]{11}=|[A-Za-z0-9+/]{22}==)$")


def _with_hex_ids(item: dict) -> dict:
    """Ids as lowercase hex, the form OTLP/JSON gives (case-insensitively): also from base64, the form
    protobuf's own JSON (``MessageToDict``) gives, so spans and their log records join whichever wrote them."""
    changed = {}
    for key, size in _ID_BYTES.items():
        value = item.get(key)
        if not isinstance(value, str) or not value:
            continue
        if len(value) == 4 * ((size + 2) // 3) and _BASE64_ID.match(value):
            raw = base64.b64decode(value)
            if len(raw) == size:
                changed[key] = raw.hex()
                continue
        if not value.islower() and not value.isdigit():
            changed[key] = value.lower()
    return {**item, **changed} if changed else item


class _Assembler:
    """Spans and log records of one import, held by trace id until every one has been read."""

    def __init__(self) -> None:
        self.spans: dict[str, list[dict]] = {}
        self.logs: dict[str, list[dict]] = {}  # trace id -> its log records (each with its span id)
        self.first_log: dict[str, Ctx] = {}
        self.held: dict[str, int] = {}  # trace id -> bytes of its spans and logs held
        self.total = 0
        self.limits = limits.current()
        self.source = ""  # the file being read
        self.files: dict[str, list[str]] = {}  # trace id -> the files it came from
        self.name_files = False
        self.digests: set[bytes] = set()  # of every span and log record held

    def add_doc(self, doc: Any, ctx: Ctx) -> None:
        doc = ctx.obj(doc)
        n = 0
        for rs in doc.get("resourceSpans") or []:
            rs = ctx.obj(rs, "resourceSpans[]")
            resource = attributes((rs.get("resource") or {}).get("attributes"))
            for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
                for raw in ctx.obj(ss, "scopeSpans[]").get("spans") or []:
                    self.add_span(raw, resource, ctx, f"spans[{n}]")
                    n += 1
        n = 0
        for rl in doc.get("resourceLogs") or []:
            rl = ctx.obj(rl, "resourceLogs[]")
            resource = attributes((rl.get("resource") or {}).get("attributes"))
            for sl in rl.get("scopeLogs") or rl.get("instrumentationLibraryLogs") or []:
                for raw in ctx.obj(sl, "scopeLogs[]").get("logRecords") or []:
                    self.add_log(raw, resource, ctx, f"logRecords[{n}]")
                    n += 1

    def add_span(self, raw: Any, resource: dict, ctx: Ctx, where: str) -> None:
        s = ctx.obj(raw, where)
        trace_id = ctx.get(s, "traceId", str, f"{where}.traceId", required=True)
        ctx.get(s, "spanId", str, f"{where}.spanId", required=True)
        s = _with_hex_ids(s)
        trace_id = s["traceId"]
        if not self._hold(trace_id, s, ctx):
            return
        span = {**s, "_attrs": attributes(s.get("attributes")), "_resource": resource}
        self.spans.setdefault(trace_id, []).append(span)

    def add_log(self, raw: Any, resource: dict, ctx: Ctx, where: str) -> None:
        record = _with_hex_ids(ctx.obj(raw, where))
        trace_id = record.get("traceId")
        if not isinstance(trace_id, str) or not trace_id.strip("0"):
            raise ctx.error(
                f"{where}.traceId",
                "a log record with no trace id cannot be joined to a span (was it emitted outside a span?)",
            )
        if not self._hold(trace_id, record, ctx):
            return
        self.logs.setdefault(trace_id, []).append(record)
        self.first_log.setdefault(trace_id, ctx)

    def _hold(self, trace_id: str, raw: dict, ctx: Ctx) -> bool:
        """Count `raw` against the limits; False when the import already holds it (an exporter's retry, a
        file imported twice: the same span is one span)."""
        data = limits.dump_json(raw)
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if digest in self.digests:
            return False
        self.digests.add(digest)
        size = len(data)
        held = self.held[trace_id] = self.held.get(trace_id, 0) + size
        self.total += size
        if self.source:
            sources = self.files.setdefault(trace_id, [])
            if self.source not in sources:
                sources.append(self.source)
        if held > self.limits.max_record_bytes:
            raise TraceFormatError(
                f"trace {trace_id}: {limits.record_too_large(held, self.limits)}",
                file=ctx.filename,
                record=ctx.record,
                line=ctx.line,
            )
        if self.total > self.limits.max_archive_bytes:
            raise TraceFormatError(
                f"the spans and log records waiting to be grouped into traces take more than "
                f"{self.limits.max_archive_bytes // limits.MB} MB (limit IMPORT_MAX_ARCHIVE_MB); "
                "import the files in smaller groups of whole traces",
                file=ctx.filename,
                record=ctx.record,
                line=ctx.line,
            )
        return True

    def traces(self) -> Iterator[TraceRecord]:
        orphans = [tid for tid in self.logs if tid not in self.spans]
        if orphans:
            ctx = self.first_log[orphans[0]]
            count = sum(len(self.logs[tid]) for tid in orphans)
            where = "no spans at all" if not self.spans else f"no spans for {len(orphans)} of their traces"
            raise TraceFormatError(
                f"{count} OpenTelemetry log records (GenAI events) have nothing to join: the import holds "
                f"{where} (first: trace {orphans[0]}); import the spans file of the same run together with "
                "the logs file",
                file=ctx.filename,
                record=ctx.record,
                line=ctx.line,
            )
        for n, trace_id in enumerate(list(self.spans), start=1):
            spans = self.spans.pop(trace_id)
            logs = self.logs.pop(trace_id, [])
            files = self.files.pop(trace_id, [])
            self.total -= self.held.pop(trace_id, 0)
            record = trace_record(trace_id, spans, logs, n)
            if self.name_files and files:
                record.metadata["files"] = files
            yield record
