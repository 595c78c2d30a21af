"""Deleting queued spans and log records that can no longer rebuild their trace (run by the periodic sweep).

A live trace's spans are kept after assembly so that a late span can rebuild it; once someone has started
labelling it, late spans are held instead (annotator.live.assembly), so its consumed (ASSEMBLED) spans and
log records serve nothing and are deleted. Consumed spans of an unlabelled trace are deleted too once its
last span is older than OTLP_KEEP_SPANS_DAYS; a span arriving later for such a trace is held and reported
like one after labelling (the assembly holds late spans of a stored trace with no consumed span left),
never allowed to replace the trace with itself alone. HELD rows are never deleted: the owner's page lists
them. A trace with spans or logs still waiting (its quiet window) is left alone until it is assembled.

Bounded per run: at most TIDY_TRACES live traces, CHUNK_TRACES per transaction, each under the project's
row lock that the assembly also takes, so a trace is never tidied while it is being assembled.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotator.models import Annotation, LiveTrace, PendingLog, PendingSpan, Project

TIDY_TRACES = 5000  # live traces tidied per run; the next sweep goes on
CHUNK_TRACES = 200  # per transaction: short locks, bounded statements

_CONSUMED = PendingSpan.State.ASSEMBLED


def _candidates(now: datetime):
    """Live traces whose consumed spans may go: labelling has started, or the last span is older than
    OTLP_KEEP_SPANS_DAYS; none with spans or logs still waiting."""
    cutoff = now - timedelta(days=settings.OTLP_KEEP_SPANS_DAYS)

    def rows(model, state):
        return model.objects.filter(
            project_id=OuterRef("project_id"), trace_id=OuterRef("otlp_trace_id"), state=state
        )

    labelled = Annotation.objects.filter(assignment__trace_id=OuterRef("trace_id"))
    # Driven by the consumed spans (a semi-join the planner can run from that shrinking set). Consumed log
    # records never outlive their trace's consumed spans: delete_consumed deletes both together.
    return (
        LiveTrace.objects.filter(Exists(rows(PendingSpan, _CONSUMED)))
        .filter(Q(Exists(labelled)) | Q(last_received_at__lt=cutoff))
        .exclude(Exists(rows(PendingSpan, PendingSpan.State.PENDING)))
        .exclude(Exists(rows(PendingLog, PendingLog.State.PENDING)))
    )


def tidy_candidates(now: datetime | None = None, limit: int = TIDY_TRACES) -> list[tuple[int, str]]:
    """(project id, trace id) of up to `limit` live traces whose consumed spans and logs may go."""
    rows = _candidates(now or timezone.now()).order_by("pk").values_list("project_id", "otlp_trace_id")
    return list(rows[:limit])


def do_tidy(now: datetime | None = None, limit: int = TIDY_TRACES) -> int:
    """Delete the consumed spans and log records of up to `limit` live traces (tidy_candidates); returns
    how many spans and log records were deleted."""
    now = now or timezone.now()
    by_project: dict[int, list[str]] = {}
    for project_id, trace_id in tidy_candidates(now, limit):
        by_project.setdefault(project_id, []).append(trace_id)
    deleted = 0
    for project_id, trace_ids in sorted(by_project.items()):
        for start in range(0, len(trace_ids), CHUNK_TRACES):
            deleted += _tidy_chunk(project_id, trace_ids[start : start + CHUNK_TRACES], now)
    return deleted


def _tidy_chunk(project_id: int, trace_ids: list[str], now: datetime) -> int:
    with transaction.atomic():
        if not Project.objects.select_for_update().filter(pk=project_id).exists():
            return 0
        # Asked again under the lock: since the candidates were read, spans may have arrived (a trace
        # waiting again) or extended a trace (its last span recent again); those are left alone.
        ready = list(
            _candidates(now)
            .filter(project_id=project_id, otlp_trace_id__in=trace_ids)
            .values_list("otlp_trace_id", flat=True)
        )
        return delete_consumed(project_id, ready)


def delete_consumed(project_id: int, trace_ids: list[str]) -> int:
    """Delete the consumed (ASSEMBLED) spans and log records of these traces of a project; held and pending
    ones stay. The caller holds the project's row lock."""
    if not trace_ids:
        return 0
    spans, _ = PendingSpan.objects.filter(
        project_id=project_id, trace_id__in=trace_ids, state=_CONSUMED
    ).delete()
    logs, _ = PendingLog.objects.filter(
        project_id=project_id, trace_id__in=trace_ids, state=PendingLog.State.ASSEMBLED
    ).delete()
    return spans + logs
