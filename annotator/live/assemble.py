"""The spans (and log records) of one trace, as they were received, to one TraceRecord (no Django).

The one place that turns queued live spans into a trace: everything else (the task, the landing) works with
the TraceRecord it returns. It writes the spans and log records back into one OTLP/JSON document and reads it
with the file importer's OTel mapping (`traces.importers.otel.assemble`: span tree to nested steps,
OpenInference and GenAI attributes and log events to roles, messages, tool calls and results, model, tokens),
so a live trace and the same spans imported from files are the same trace.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from traces.importers import otel
from traces.importers.records import TraceFormatError, TraceRecord

SOURCE = "otlp"


def to_record(spans: Iterable[dict], logs: Iterable[dict] = ()) -> TraceRecord:
    """One trace from its span documents ({"resource", "scope", "span"} as annotator.live.otlp makes them)
    and its log records ({"resource", "scope", "log"}).

    Log records go into the document as `resourceLogs`, next to the spans: GenAI log events
    (`gen_ai.*.message`, `gen_ai.choice`) are joined to their spans by trace and span id."""
    document = {"resourceSpans": _grouped(spans, "span", "spans")}
    log_groups = _grouped(logs, "log", "logRecords")
    if log_groups:
        document["resourceLogs"] = log_groups
    records = list(otel.assemble([document]))
    if len(records) != 1:
        raise TraceFormatError(f"expected the spans of one trace, found {len(records)} traces")
    record = records[0]
    if record.outcome == "unknown":
        record.outcome = _outcome(document)
    return record


def _outcome(document: dict) -> str:
    """A run's outcome from its root span's status, as the SDKs set it: ERROR is a failed run, OK a
    successful one; unset (most spans) stays unknown. (Read here because a project may assign only failed
    live runs; the file importer leaves outcome unknown.)"""
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                if not span.get("parentSpanId"):
                    code = (span.get("status") or {}).get("code")
                    return {
                        "STATUS_CODE_ERROR": "failure",
                        2: "failure",
                        "STATUS_CODE_OK": "success",
                        1: "success",
                    }.get(code, "unknown")
    return "unknown"


def _grouped(items: Iterable[dict], key: str, list_key: str) -> list[dict]:
    """OTLP/JSON's resource > scope > items nesting, rebuilt from flat {"resource", "scope", key} items."""
    resources: dict[bytes, tuple[dict, dict[bytes, tuple[dict, list]]]] = {}
    for item in items:
        resource, scope = item.get("resource") or {}, item.get("scope") or {}
        _, scopes = resources.setdefault(orjson.dumps(resource, option=orjson.OPT_SORT_KEYS), (resource, {}))
        _, members = scopes.setdefault(orjson.dumps(scope, option=orjson.OPT_SORT_KEYS), (scope, []))
        members.append(item[key])
    scope_key = "scopeSpans" if key == "span" else "scopeLogs"
    return [
        {
            "resource": resource,
            scope_key: [{"scope": scope, list_key: members} for scope, members in scopes.values()],
        }
        for resource, scopes in resources.values()
    ]
