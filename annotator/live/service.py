"""Live traces: accept spans from a project's OTLP endpoint, and assemble finished traces off the request path.

Accepting (`do_accept_spans`) stores the spans in one bulk insert and queues the assembly task in the same
transaction: when the broker cannot take the message (Redis down) the insert is rolled back and the caller
answers 503 with Retry-After, so a request is either wholly queued or not at all, and the exporter, which
retries 503, sends it again once Redis is back. A span sent twice (an exporter's retry, the same run sent
again) is stored once (unique per project, trace and span id).

Assembling (`do_assemble_due`, the task `annotator.live.assemble`) takes the traces of a project whose root
span has ended and that have been quiet for OTLP_TRACE_QUIET_SECONDS (without a worker, tasks run inline:
then a trace is assembled as soon as its root span has arrived and later spans extend it), turns their spans
into one trace each (annotator.live.assemble.to_record) and lands it in the project's batch of the day.
A span of a trace already stored extends that trace while nobody has started labelling it; afterwards it is
kept (PendingSpan.State.HELD), counted on the LiveTrace and shown to the owner, never merged into labelled
work. The periodic `annotator.live.sweep` assembles whatever a lost task left behind.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

import orjson
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Max, Min, Q
from django.utils import timezone

from annotator.live.assemble import to_record
from annotator.models import Annotation, LiveSettings, LiveTrace, PendingLog, PendingSpan, Project
from annotator.search.indexing import schedule_indexing
from annotator.services.assignment import do_assign
from annotator.services.enqueue import enqueue, is_eager
from traces import chunks
from traces.answer_key import answer_key_of, public_metadata
from traces.importers.records import TraceFormatError, TraceRecord
from traces.models import Batch, Outcome, Step, Trace
from traces.rows import prepare

log = logging.getLogger(__name__)

ASSEMBLE_TASK = "annotator.live.assemble"
FORMAT = "otel"
BATCH_SOURCE = "OTLP endpoint (live)"


class QueueUnavailable(Exception):
    """The task queue (Redis) could not take the work: nothing was stored; the client should retry."""


class QueueFull(Exception):
    """Too many spans of the project are waiting for assembly: the client should retry later."""


@dataclass(frozen=True, slots=True)
class Landed:
    trace: Trace
    new: bool


def batch_name(day: datetime) -> str:
    """The batch of a project's live traces of one (UTC) day, named so a person recognises it."""
    return f"Live {day:%Y-%m-%d}"


def do_accept_spans(project: Project, items: list[dict]) -> int:
    """Store `items` (span documents from annotator.live.otlp) for `project` and queue their assembly;
    returns how many were new. Raises QueueFull or QueueUnavailable (nothing stored) for a 429 / 503."""
    if not items:
        return 0
    waiting = PendingSpan.objects.filter(project=project, state=PendingSpan.State.PENDING).count()
    if waiting + len(items) > settings.OTLP_MAX_PENDING_SPANS:
        raise QueueFull(f"{waiting} spans of this project are waiting to be assembled")
    now = timezone.now()
    rows = [_span_values(project.pk, item, now) for item in items]
    with transaction.atomic():
        created = _insert(rows)
        _queue_assembly(project)
    return created


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
    """One INSERT ... ON CONFLICT DO NOTHING per 500 spans on PostgreSQL, each body sent as JSON text
    (bulk_create's array parameters escaped every body in Python: most of a request's time); bulk_create
    elsewhere. Returns how many spans were new (a span already stored is skipped)."""
    if connection.vendor != "postgresql":
        spans = [PendingSpan(**dict(zip(_COLUMNS, row, strict=True))) for row in rows]
        return len(PendingSpan.objects.bulk_create(spans, ignore_conflicts=True, batch_size=_SQL_ROWS))
    table = PendingSpan._meta.db_table
    one = "(%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s)"
    added = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), _SQL_ROWS):
            part = rows[start : start + _SQL_ROWS]
            params = [
                value if i != 7 else orjson.dumps(value).decode()
                for row in part
                for i, value in enumerate(row)
            ]
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(_COLUMNS)}) VALUES {', '.join([one] * len(part))} "
                "ON CONFLICT DO NOTHING",
                params,
            )
            added += cursor.rowcount
    return added


def do_accept_logs(project: Project, items: list[dict]) -> int:
    """Store log records (GenAI message events) with their trace's spans; queued like spans."""
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


# Assembly ----------------------------------------------------------------------------------------------------


def due_trace_ids(project_id: int, now: datetime | None = None) -> list[str]:
    """Trace ids of the project with pending spans that are ready: root ended and quiet, or already stored
    (late spans), or waiting longer than OTLP_TRACE_ABANDON_SECONDS for a root that never came."""
    now = now or timezone.now()
    quiet = 0 if is_eager() else settings.OTLP_TRACE_QUIET_SECONDS
    rows = (
        PendingSpan.objects.filter(project_id=project_id, state=PendingSpan.State.PENDING)
        .values("trace_id")
        .annotate(
            last=Max("received_at"),
            first=Min("received_at"),
            roots=Count("pk", filter=Q(parent_span_id="", end_ns__isnull=False)),
        )
    )
    stored = set(
        LiveTrace.objects.filter(
            project_id=project_id, otlp_trace_id__in=[row["trace_id"] for row in rows]
        ).values_list("otlp_trace_id", flat=True)
    )
    due = []
    for row in rows:
        quiet_now = row["last"] <= now - timedelta(seconds=quiet)
        abandoned = row["first"] <= now - timedelta(seconds=settings.OTLP_TRACE_ABANDON_SECONDS)
        if (quiet_now and (row["roots"] or row["trace_id"] in stored)) or abandoned:
            due.append(row["trace_id"])
    return due


def do_assemble_due(project_id: int, now: datetime | None = None) -> int:
    """Assemble every due trace of the project; returns how many traces were stored or extended.
    Idempotent: the project row is locked while it runs, and spans already assembled are not read twice."""
    assigned_new = False
    done = 0
    with transaction.atomic():
        project = Project.objects.select_for_update().filter(pk=project_id).first()
        if project is None:
            return 0
        choice = LiveSettings.objects.filter(project=project).first() or LiveSettings(project=project)
        for trace_id in due_trace_ids(project_id, now):
            outcome = _assemble_one(project, trace_id, choice)
            if outcome is None:
                continue
            done += 1
            assigned_new |= outcome
        if done:
            schedule_indexing()
            if assigned_new:
                do_assign(project)
    return done


def _assemble_one(project: Project, trace_id: str, choice: LiveSettings) -> bool | None:
    """One trace id: stored, extended or its new spans held. Returns whether a new trace was chosen for
    labelling (True), something else changed (False), or nothing did (None)."""
    pending = list(
        PendingSpan.objects.filter(project=project, trace_id=trace_id, state=PendingSpan.State.PENDING)
    )
    if not pending:
        return None
    now = timezone.now()
    live = LiveTrace.objects.select_for_update().filter(project=project, otlp_trace_id=trace_id).first()
    if live is not None and Annotation.objects.filter(assignment__trace_id=live.trace_id).exists():
        PendingSpan.objects.filter(pk__in=[s.pk for s in pending]).update(state=PendingSpan.State.HELD)
        LiveTrace.objects.filter(pk=live.pk).update(
            held_spans=F("held_spans") + len(pending), last_received_at=now
        )
        log.info(
            "live trace %s of %s: %d late spans held (labelling started)", trace_id, project, len(pending)
        )
        return False
    spans = list(
        PendingSpan.objects.filter(project=project, trace_id=trace_id)
        .exclude(state=PendingSpan.State.HELD)
        .order_by("start_ns", "pk")
        .values_list("body", flat=True)
    )
    logs = PendingLog.objects.filter(project=project, trace_id=trace_id).values_list("body", flat=True)
    try:
        record = to_record(spans, logs)
    except TraceFormatError as error:
        # Spans that cannot make a trace are kept (held) and counted, never dropped in silence.
        log.warning("live trace %s of %s cannot be assembled: %s", trace_id, project, error)
        PendingSpan.objects.filter(pk__in=[s.pk for s in pending]).update(state=PendingSpan.State.HELD)
        return False
    first = min(s.received_at for s in pending)
    record.metadata["live"] = {"received_at": first.isoformat(), "spans": len(spans)}
    PendingSpan.objects.filter(pk__in=[s.pk for s in pending]).update(state=PendingSpan.State.ASSEMBLED)
    if live is not None:
        _replace(live.trace, record)
        LiveTrace.objects.filter(pk=live.pk).update(spans=len(spans), last_received_at=now, assembled_at=now)
        return False
    landed = _land(project, record)
    chosen = _chosen(choice, landed.trace)
    LiveTrace.objects.create(
        project=project,
        otlp_trace_id=trace_id,
        trace=landed.trace,
        first_received_at=first,
        last_received_at=max(s.received_at for s in pending),
        assembled_at=now,
        spans=len(spans),
        unassigned=not chosen,
    )
    return chosen and landed.new


def _land(project: Project, record: TraceRecord) -> Landed:
    """Store `record` in the project's batch of the day, or find the project's trace with the same content
    (the same run sent again under another trace id is one trace)."""
    prepared = prepare(record, FORMAT, "live spans", copy_text=False, keep_annotations=False)
    same = Trace.objects.in_project(project).filter(content_hash=prepared.digest).first()
    if same is not None:
        return Landed(trace=same, new=False)
    batch = _day_batch(project)
    [trace_id] = chunks.bulk_chunk(batch, [(prepared, FORMAT)])
    Batch.objects.filter(pk=batch.pk).update(
        trace_count=F("trace_count") + 1, step_count=F("step_count") + prepared.step_count
    )
    return Landed(trace=Trace.objects.get(pk=trace_id), new=True)


def _day_batch(project: Project) -> Batch:
    name = batch_name(timezone.now())
    batch = project.batches.filter(name=name, source=BATCH_SOURCE).order_by("pk").first()
    if batch is None:
        batch = Batch.objects.create(name=name, source=BATCH_SOURCE, format=FORMAT)
        project.batches.add(batch)
    return batch


def _replace(trace: Trace, record: TraceRecord) -> None:
    """The stored trace's content becomes `record`'s (late spans before anyone labels it)."""
    prepared = prepare(record, FORMAT, "live spans", copy_text=False, keep_annotations=False)
    old_steps = trace.step_count
    Step.objects.filter(trace=trace).delete()
    Step.objects.bulk_create(
        [Step(trace=trace, **dict(zip(Step.DATA_FIELDS, values, strict=True))) for values in prepared.steps],
        batch_size=2000,
    )
    Trace.objects.filter(pk=trace.pk).update(
        content_hash=prepared.digest,
        task=record.task,
        system=record.system[:120],
        model=record.model[:120],
        outcome=record.outcome,
        score=record.score,
        metadata=public_metadata(record.metadata),
        answer_key=answer_key_of(record.metadata),
        raw=record.raw,
        step_count=prepared.step_count,
    )
    Batch.objects.filter(pk=trace.batch_id).update(
        step_count=F("step_count") + prepared.step_count - old_steps
    )


def _chosen(choice: LiveSettings, trace: Trace) -> bool:
    """Whether the project's live settings give this trace annotators."""
    if choice.assign == LiveSettings.Assign.ALL:
        return True
    if choice.assign == LiveSettings.Assign.FAILURES:
        return trace.outcome == Outcome.FAILURE
    if choice.assign == LiveSettings.Assign.SAMPLE:
        return random.random() < choice.sample_rate
    return False


def do_sweep() -> int:
    """Assemble the due traces of every project with pending spans (the periodic safety net)."""
    projects = (
        PendingSpan.objects.filter(state=PendingSpan.State.PENDING)
        .values_list("project_id", flat=True)
        .distinct()
    )
    return sum(do_assemble_due(project_id) for project_id in list(projects))


def arrivals(project: Project, trace_ids: list[int]) -> dict[int, datetime]:
    """When each of `trace_ids` that came in live first arrived (the trace list's "live" badge)."""
    rows = LiveTrace.objects.filter(project=project, trace_id__in=trace_ids)
    return dict(rows.values_list("trace_id", "first_received_at"))


# What the project page shows -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LiveStatus:
    pending_spans: int
    pending_traces: int
    recent_spans: list[PendingSpan]
    held: list[LiveTrace]
    traces_today: int


def live_status(project: Project, *, recent: int = 10) -> LiveStatus:
    pending = PendingSpan.objects.filter(project=project, state=PendingSpan.State.PENDING)
    counts = pending.aggregate(spans=Count("pk"), traces=Count("trace_id", distinct=True))
    return LiveStatus(
        pending_spans=counts["spans"],
        pending_traces=counts["traces"],
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
