"""Live traces: accept spans from a project's OTLP endpoint (assembly: annotator.live.assembly).

Accepting (`do_accept_spans`) stores the request's accepted spans as one row (a SpanBatch: the validated
protobuf request) and queues the assembly task in the same transaction: when the broker cannot take the
message (Redis down) the insert is rolled back and the caller answers 503 with Retry-After, so a request is
either wholly queued or not at all, and the exporter, which retries 503, sends it again once Redis is back.
The task first reads the batches into one PendingSpan row per span (`do_read_batches`: the conversion to
OTLP/JSON and the 512-row insert, off the request path). A span sent twice (an exporter's retry, the same
run sent again) is stored once (unique per project, trace and span id).

What the project page shows of it (`live_status`, `arrivals`) is here too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

import orjson
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from annotator.live import otlp
from annotator.models import LiveSettings, LiveTrace, PendingLog, PendingSpan, Project, SpanBatch
from annotator.services.enqueue import enqueue, is_eager

log = logging.getLogger(__name__)

ASSEMBLE_TASK = "annotator.live.assemble"


class QueueUnavailable(Exception):
    """The task queue (Redis) could not take the work: nothing was stored; the client should retry."""


class QueueFull(Exception):
    """Too many spans of the project are waiting for assembly: the client should retry later."""


def do_accept_spans(project: Project, decoded: otlp.Decoded) -> int:
    """Store a request's accepted spans (`otlp.parse_traces`) for `project` as one row and queue their
    assembly; returns how many spans were queued. Raises QueueFull or QueueUnavailable (nothing stored) for
    a 429 / 503."""
    if not decoded.count:
        return 0
    waiting = _waiting_spans(project)
    if waiting + decoded.count > settings.OTLP_MAX_PENDING_SPANS:
        raise QueueFull(f"{waiting} spans of this project are waiting to be assembled")
    with transaction.atomic():
        SpanBatch.objects.create(
            project=project,
            body=decoded.body,
            spans=decoded.count,
            trace_ids=" ".join(sorted(decoded.trace_ids)),
            received_at=timezone.now(),
        )
        _queue_assembly(project)
    return decoded.count


def _waiting_spans(project: Project) -> int:
    """Spans of the project not yet assembled: those read into rows and those still in their request."""
    pending = PendingSpan.objects.filter(project=project, state=PendingSpan.State.PENDING).count()
    unread = SpanBatch.objects.filter(project=project).aggregate(n=Sum("spans"))["n"] or 0
    return pending + unread


def do_read_batches(project: Project) -> int:
    """Read the project's queued requests (SpanBatch) into one PendingSpan row per span, each received when
    its request was, and delete them; returns how many spans were new. The caller holds the project's lock
    (annotator.live.assembly), so two tasks do not read one batch twice."""
    added = 0
    pks = list(SpanBatch.objects.filter(project=project).order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pks), _READ_BATCHES):  # a few requests' bodies in memory at a time
        part = pks[start : start + _READ_BATCHES]
        with transaction.atomic():
            for batch in SpanBatch.objects.filter(pk__in=part).order_by("pk"):
                items = otlp.span_items(bytes(batch.body))
                added += _insert([_span_values(project.pk, item, batch.received_at) for item in items])
            SpanBatch.objects.filter(pk__in=part).delete()
    return added


_READ_BATCHES = 20


_COLUMNS = (
    "project_id",
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "start_ns",
    "end_ns",
    "body",
    "received_at",
    "state",
)
_SQL_ROWS = 500


def _insert(rows: list[tuple]) -> int:
    """One INSERT ... ON CONFLICT DO NOTHING per 500 spans on PostgreSQL (bulk_create's array parameters
    cost more than the rows); bulk_create elsewhere. Returns how many spans were new (a span already stored
    is skipped)."""
    rows = [(*row[:7], orjson.dumps(row[7]), *row[8:]) for row in rows]
    if connection.vendor != "postgresql":
        spans = [PendingSpan(**dict(zip(_COLUMNS, row, strict=True))) for row in rows]
        return len(PendingSpan.objects.bulk_create(spans, ignore_conflicts=True, batch_size=_SQL_ROWS))
    table = PendingSpan._meta.db_table
    one = f"({', '.join(['%s'] * len(_COLUMNS))})"
    added = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), _SQL_ROWS):
            part = rows[start : start + _SQL_ROWS]
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(_COLUMNS)}) VALUES {', '.join([one] * len(part))} "
                "ON CONFLICT DO NOTHING",
                [value for row in part for value in row],
            )
            added += cursor.rowcount
    return added


def do_accept_logs(project: Project, decoded: otlp.Decoded) -> int:
    """Store log records (GenAI message events, `otlp.parse_logs`) with their trace's spans; queued like
    spans."""
    items = decoded.items
    if not items:
        return 0
    now = timezone.now()
    rows = [
        PendingLog(
            project=project,
            trace_id=item["log"]["traceId"],
            span_id=item["log"]["spanId"],
            body=item,
            received_at=now,
        )
        for item in items
    ]
    with transaction.atomic():
        PendingLog.objects.bulk_create(rows, batch_size=1000)
        _queue_assembly(project)
    return len(rows)


def _span_values(project_id: int, item: dict, now: datetime) -> tuple:
    """A PendingSpan row's values in _COLUMNS order."""
    span = item["span"]
    return (
        project_id,
        span["traceId"],
        span["spanId"],
        span.get("parentSpanId", ""),
        str(span.get("name", ""))[:200],
        _nanos(span.get("startTimeUnixNano")),
        _nanos(span.get("endTimeUnixNano")),
        item,
        now,
        PendingSpan.State.PENDING,
    )


def _nanos(value) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if 0 < n < 2**63 else None


def _queue_assembly(project: Project) -> None:
    """Send the assembly task inside the caller's transaction: if the broker refuses it, the transaction
    rolls back (QueueUnavailable) and the request stored nothing."""
    failure: list[BaseException] = []
    countdown = None if is_eager() else settings.OTLP_TRACE_QUIET_SECONDS + 1
    enqueue(ASSEMBLE_TASK, project.pk, countdown=countdown, after_commit=False, on_failure=failure.append)
    if failure:
        raise QueueUnavailable(str(failure[0]))


def arrivals(project: Project, trace_ids: list[int]) -> dict[int, datetime]:
    """When each of `trace_ids` that came in live first arrived (the trace list's "live" badge)."""
    rows = LiveTrace.objects.filter(project=project, trace_id__in=trace_ids)
    return dict(rows.values_list("trace_id", "first_received_at"))


# What the project page shows -----------------------------------------------------------------------------


_COUNTED_BATCHES = 100


@dataclass(frozen=True, slots=True)
class LiveStatus:
    pending_spans: int
    pending_traces: int
    recent_spans: list[PendingSpan]
    held: list[LiveTrace]
    traces_today: int


def live_status(project: Project, *, recent: int = 10) -> LiveStatus:
    pending = PendingSpan.objects.filter(project=project, state=PendingSpan.State.PENDING)
    unread = SpanBatch.objects.filter(project=project)
    unread_spans = unread.aggregate(n=Sum("spans"))["n"] or 0
    # The traces of spans still in their request (not read by the task yet), each counted once with the
    # spans of it already read; past a backlog of _COUNTED_BATCHES requests, those of the oldest only.
    unread_traces: set[str] = set()
    for trace_ids in unread.order_by("pk").values_list("trace_ids", flat=True)[:_COUNTED_BATCHES]:
        unread_traces.update(trace_ids.split())
    read = pending.exclude(trace_id__in=unread_traces) if unread_traces else pending
    return LiveStatus(
        pending_spans=pending.count() + unread_spans,
        pending_traces=read.aggregate(n=Count("trace_id", distinct=True))["n"] + len(unread_traces),
        recent_spans=list(
            PendingSpan.objects.filter(project=project)
            .only("trace_id", "span_id", "name", "received_at", "state", "parent_span_id")
            .order_by("-received_at", "-pk")[:recent]
        ),
        held=list(
            LiveTrace.objects.filter(project=project, held_spans__gt=0)
            .select_related("trace")
            .order_by("-last_received_at")[:recent]
        ),
        traces_today=LiveTrace.objects.filter(
            project=project, assembled_at__date=timezone.now().date()
        ).count(),
    )


def live_settings(project: Project) -> LiveSettings:
    """The project's live settings (the defaults until an owner saves some)."""
    return LiveSettings.objects.filter(project=project).first() or LiveSettings(project=project)


def do_save_live_settings(project: Project, *, assign: str, sample_rate: float) -> LiveSettings:
    """Save which live traces get annotators (checked by the caller: a LiveSettings.Assign value, a rate in
    [0, 1]); applies to traces assembled from now on."""
    choice, _ = LiveSettings.objects.update_or_create(
        project=project, defaults={"assign": assign, "sample_rate": sample_rate}
    )
    return choice


@dataclass(frozen=True, slots=True)
class HeldCounts:
    traces: int
    spans: int


def held_counts(project: Project) -> HeldCounts:
    """Live traces with late spans kept apart (after labelling started), and how many spans in all."""
    row = LiveTrace.objects.filter(project=project, held_spans__gt=0).aggregate(
        traces=Count("pk"), spans=Sum("held_spans")
    )
    return HeldCounts(traces=row["traces"], spans=row["spans"] or 0)
