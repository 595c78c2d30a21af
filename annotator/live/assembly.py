"""Assembling live traces off the request path: queued spans of finished traces become stored traces.

`do_assemble_due` (the task `annotator.live.assemble`) takes the traces of a project whose root span has ended
and that have been quiet for OTLP_TRACE_QUIET_SECONDS (without a worker, tasks run inline: then a trace is
assembled as soon as its root span has arrived, and later spans extend it), turns the spans of each into one
trace (annotator.live.assemble.to_record) and lands it in the project's batch of the day. Traces are handled
a chunk at a time, with a few queries and one bulk insert per chunk, not a round of queries per trace.

A span of a trace already stored extends that trace while nobody has started labelling it; afterwards it is
kept (PendingSpan.State.HELD), counted on the LiveTrace and shown to the owner, never merged into labelled
work; so is one of a trace whose consumed spans were deleted after OTLP_KEEP_SPANS_DAYS. A run whose content
equals a trace the project holds is that trace (content identity). The periodic `annotator.live.sweep`
assembles whatever a lost task left behind and deletes spans that can rebuild nothing (annotator.live.tidy).
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from datetime import datetime, timedelta

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Max, Min, Q
from django.utils import timezone

from annotator.live.assemble import to_record
from annotator.live.service import do_read_batches
from annotator.live.tidy import delete_consumed, do_tidy
from annotator.models import (
    Annotation,
    LiveSettings,
    LiveTrace,
    PendingLog,
    PendingSpan,
    Project,
    SpanBatch,
)
from annotator.search.indexing import schedule_indexing
from annotator.services.assignment import do_assign
from annotator.services.enqueue import is_eager
from traces import chunks
from traces.answer_key import answer_key_of, public_metadata
from traces.importers.records import TraceFormatError, TraceRecord
from traces.models import Batch, Outcome, Step, Trace
from traces.rows import Prepared, prepare

log = logging.getLogger(__name__)

FORMAT = "otel"
BATCH_SOURCE = "OTLP endpoint (live)"
CHUNK_TRACES = 200  # traces per round of queries: bounded memory, short statements
_NAME = "live spans"  # what an error about the spans names (a request has no file)


def batch_name(day: datetime) -> str:
    """The batch of a project's live traces of one (UTC) day, named so a person recognises it."""
    return f"Live {day:%Y-%m-%d}"


def due_trace_ids(project_id: int, now: datetime | None = None) -> list[str]:
    """Trace ids of the project with pending spans that are ready: root ended and quiet, or already stored
    (late spans), or waiting longer than OTLP_TRACE_ABANDON_SECONDS for a root that never came."""
    now = now or timezone.now()
    quiet = 0 if is_eager() else settings.OTLP_TRACE_QUIET_SECONDS
    rows = list(
        PendingSpan.objects.filter(project_id=project_id, state=PendingSpan.State.PENDING)
        .values("trace_id")
        .annotate(
            last=Max("received_at"),
            first=Min("received_at"),
            roots=Count("pk", filter=Q(parent_span_id="", end_ns__isnull=False)),
        )
    )
    # Log records of a trace already stored (late logs) make it due like late spans; others wait for
    # their spans, which bring them into the trace's first assembly.
    logs = dict(
        PendingLog.objects.filter(project_id=project_id, state=PendingLog.State.PENDING)
        .values("trace_id")
        .annotate(last=Max("received_at"))
        .values_list("trace_id", "last")
    )
    stored = set(
        LiveTrace.objects.filter(
            project_id=project_id, otlp_trace_id__in=[row["trace_id"] for row in rows] + list(logs)
        ).values_list("otlp_trace_id", flat=True)
    )
    quiet_since = now - timedelta(seconds=quiet)
    abandoned_since = now - timedelta(seconds=settings.OTLP_TRACE_ABANDON_SECONDS)
    due = [
        row["trace_id"]
        for row in rows
        if (row["last"] <= quiet_since and (row["roots"] or row["trace_id"] in stored))
        or row["first"] <= abandoned_since
    ]
    spanned = {row["trace_id"] for row in rows}
    due += [
        trace_id
        for trace_id, last in logs.items()
        if trace_id in stored and trace_id not in spanned and last <= quiet_since
    ]
    return due


def do_assemble_due(project_id: int, now: datetime | None = None) -> int:
    """Assemble every due trace of the project; returns how many traces were stored, extended or had late
    spans held. Idempotent: the project row is locked while it runs, and assembled spans are not read twice."""
    done = 0
    assign = False
    with transaction.atomic():
        project = Project.objects.select_for_update().filter(pk=project_id).first()
        if project is None:
            return 0
        choice = LiveSettings.objects.filter(project=project).first() or LiveSettings(project=project)
        do_read_batches(project)
        due = due_trace_ids(project_id, now)
        for start in range(0, len(due), CHUNK_TRACES):
            changed, chosen = _assemble_chunk(project, due[start : start + CHUNK_TRACES], choice)
            done += changed
            assign |= chosen
        if done:
            schedule_indexing()
            if assign:
                do_assign(project)
    return done


def _assemble_chunk(project: Project, trace_ids: list[str], choice: LiveSettings) -> tuple[int, bool]:
    """One chunk of due trace ids: (how many changed, whether a new trace was chosen for labelling)."""
    now = timezone.now()
    pending: dict[str, list[tuple[int, datetime]]] = defaultdict(list)
    for trace_id in trace_ids:
        pending[trace_id] = []  # a stored trace with late log records may have no pending span
    for pk, trace_id, received in PendingSpan.objects.filter(
        project=project, trace_id__in=trace_ids, state=PendingSpan.State.PENDING
    ).values_list("pk", "trace_id", "received_at"):
        pending[trace_id].append((pk, received))
    lives = {
        live.otlp_trace_id: live
        for live in LiveTrace.objects.select_for_update().filter(
            project=project, otlp_trace_id__in=list(pending)
        )
    }
    labelled = set(
        Annotation.objects.filter(
            assignment__trace_id__in=[live.trace_id for live in lives.values()]
        ).values_list("assignment__trace_id", flat=True)
    )
    # A stored trace whose consumed spans were deleted (annotator.live.tidy: retention) cannot be rebuilt:
    # late spans would replace it with themselves alone, so they are held as after labelling.
    kept = set(
        PendingSpan.objects.filter(
            project=project, trace_id__in=list(lives), state=PendingSpan.State.ASSEMBLED
        ).values_list("trace_id", flat=True)
    )
    held = [trace_id for trace_id, live in lives.items() if live.trace_id in labelled or trace_id not in kept]
    # Labelling started: the consumed spans can rebuild nothing any more (the held ones stay, listed).
    delete_consumed(project.pk, [trace_id for trace_id in held if lives[trace_id].trace_id in labelled])
    for trace_id in held:
        _hold(project, trace_id, pending[trace_id])
        LiveTrace.objects.filter(pk=lives[trace_id].pk).update(
            held_spans=F("held_spans") + len(pending[trace_id]), last_received_at=now
        )
        log.info("live trace %s of %s: late spans or logs held (labelling started)", trace_id, project)
    todo = [trace_id for trace_id in pending if trace_id not in held]
    records = _records(project, todo, pending, lives)
    for trace_id in set(todo) - set(records):
        # spans that cannot make a trace: kept and counted, never dropped
        _hold(project, trace_id, pending[trace_id])
    for trace_id, record in records.items():
        if trace_id in lives:
            _replace(lives[trace_id].trace, record)
            LiveTrace.objects.filter(pk=lives[trace_id].pk).update(
                spans=record.metadata["live"]["spans"], last_received_at=now, assembled_at=now
            )
    chosen_new = _land_new(
        project, {t: r for t, r in records.items() if t not in lives}, pending, choice, now
    )
    PendingSpan.objects.filter(pk__in=[pk for trace_id in records for pk, _ in pending[trace_id]]).update(
        state=PendingSpan.State.ASSEMBLED
    )
    PendingLog.objects.filter(
        project=project, trace_id__in=list(records), state=PendingLog.State.PENDING
    ).update(state=PendingLog.State.ASSEMBLED)
    return len(records) + len(held), chosen_new


def _hold(project: Project, trace_id: str, spans: list[tuple[int, datetime]]) -> None:
    """Keep a trace's pending spans and log records out of it (HELD)."""
    PendingSpan.objects.filter(pk__in=[pk for pk, _ in spans]).update(state=PendingSpan.State.HELD)
    PendingLog.objects.filter(project=project, trace_id=trace_id, state=PendingLog.State.PENDING).update(
        state=PendingLog.State.HELD
    )


def _records(
    project: Project,
    trace_ids: list[str],
    pending: dict[str, list[tuple[int, datetime]]],
    lives: dict[str, LiveTrace],
) -> dict[str, TraceRecord]:
    """Each trace id's record, from all its spans and log records that are not held."""
    spans: dict[str, list[dict]] = defaultdict(list)
    for trace_id, body in (
        PendingSpan.objects.filter(project=project, trace_id__in=trace_ids)
        .exclude(state=PendingSpan.State.HELD)
        .order_by("trace_id", "start_ns", "pk")
        .values_list("trace_id", "body")
    ):
        spans[trace_id].append(orjson.loads(body))
    logs: dict[str, list[dict]] = defaultdict(list)
    for trace_id, body in (
        PendingLog.objects.filter(project=project, trace_id__in=trace_ids)
        .exclude(state=PendingLog.State.HELD)
        .order_by("pk")
        .values_list("trace_id", "body")
    ):
        logs[trace_id].append(body)
    records = {}
    for trace_id in trace_ids:
        try:
            record = to_record(spans[trace_id], logs[trace_id])
        except TraceFormatError as error:
            log.warning("live trace %s of %s cannot be assembled: %s", trace_id, project, error)
            continue
        live = lives.get(trace_id)
        first = live.first_received_at if live else min(received for _, received in pending[trace_id])
        record.metadata["live"] = {"received_at": first.isoformat(), "spans": len(spans[trace_id])}
        records[trace_id] = record
    return records


def _land_new(
    project: Project,
    records: dict[str, TraceRecord],
    pending: dict[str, list[tuple[int, datetime]]],
    choice: LiveSettings,
    now: datetime,
) -> bool:
    """Store the traces seen for the first time in the batch of the day (one bulk insert), or point them at
    the project's trace with the same content; returns whether one chosen for labelling was stored."""
    if not records:
        return False
    prepared: dict[str, Prepared] = {
        trace_id: prepare(record, FORMAT, _NAME, copy_text=False, keep_annotations=False)
        for trace_id, record in records.items()
    }
    same = dict(
        Trace.objects.in_project(project)
        .filter(content_hash__in=[item.digest for item in prepared.values()])
        .values_list("content_hash", "pk")
    )
    new = [trace_id for trace_id, item in prepared.items() if item.digest not in same]
    stored: dict[str, int] = {}
    if new:
        batch = _day_batch(project)
        ids = chunks.bulk_chunk(batch, [(prepared[trace_id], FORMAT) for trace_id in new])
        stored = dict(zip(new, ids, strict=True))
        Batch.objects.filter(pk=batch.pk).update(
            trace_count=F("trace_count") + len(new),
            step_count=F("step_count") + sum(prepared[trace_id].step_count for trace_id in new),
        )
    chosen_new = False
    rows = []
    for trace_id, record in records.items():
        chosen = _chosen(choice, record.outcome)
        chosen_new |= chosen and trace_id in stored
        received = [at for _, at in pending[trace_id]]
        rows.append(
            LiveTrace(
                project=project,
                otlp_trace_id=trace_id,
                trace_id=stored.get(trace_id) or same[prepared[trace_id].digest],
                first_received_at=min(received),
                last_received_at=max(received),
                assembled_at=now,
                spans=record.metadata["live"]["spans"],
                unassigned=not chosen,
            )
        )
    LiveTrace.objects.bulk_create(rows)
    return chosen_new


def _day_batch(project: Project) -> Batch:
    name = batch_name(timezone.now())
    batch = project.batches.filter(name=name, source=BATCH_SOURCE).order_by("pk").first()
    if batch is None:
        batch = Batch.objects.create(name=name, source=BATCH_SOURCE, format=FORMAT)
        project.batches.add(batch)
    return batch


def _replace(trace: Trace, record: TraceRecord) -> None:
    """The stored trace's content becomes `record`'s (late spans before anyone labels it)."""
    prepared = prepare(record, FORMAT, _NAME, copy_text=False, keep_annotations=False)
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


def _chosen(choice: LiveSettings, outcome: str) -> bool:
    """Whether the project's live settings give a trace with this outcome annotators."""
    if choice.assign == LiveSettings.Assign.ALL:
        return True
    if choice.assign == LiveSettings.Assign.FAILURES:
        return outcome == Outcome.FAILURE
    if choice.assign == LiveSettings.Assign.SAMPLE:
        return random.random() < choice.sample_rate
    return False


def do_sweep() -> int:
    """Assemble the due traces of every project with pending spans or unread requests (the periodic safety
    net), then delete the queued spans and logs that can no longer rebuild a trace (annotator.live.tidy);
    returns how many traces were assembled."""
    projects = set(
        PendingSpan.objects.filter(state=PendingSpan.State.PENDING)
        .values_list("project_id", flat=True)
        .order_by()
        .distinct()
    )
    projects |= set(SpanBatch.objects.values_list("project_id", flat=True).order_by().distinct())
    done = sum(do_assemble_due(project_id) for project_id in sorted(projects))
    do_tidy()
    return done
