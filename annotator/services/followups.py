"""What happens after a trace's annotations changed and committed: enqueue, never compute here.

Called from `annotator.services.annotations.on_trace_annotations_changed` (submit, re-submit, skip) and
after an annotation import. Both follow-ups are idempotent, so running them twice is harmless. Neither
may fail the annotator's save, which has already committed:

- the adjudication check is never lost: with a worker, the traces are collected in a Redis set and one
  task a moment later checks all that arrived meanwhile (`collect_pending`); when the cache cannot take
  them they are sent as a check task of their own, and when the task queue cannot take that (Redis down)
  a small check (one submit) runs here and now; anything left over is found by the periodic
  reconciliation (`annotator.services.jobs.traces_missing_adjudication`);
- the agreement report refresh is a debounced convenience: if it cannot be scheduled, the report page
  sees the changed fingerprint and offers to recompute.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from annotator.models import Annotation, Assignment, Project, QueueOrder
from annotator.services.adjudication import do_check_traces
from annotator.services.enqueue import enqueue, is_eager

log = logging.getLogger(__name__)

_CHUNK = 500
CHECK_TASK = "annotator.adjudication.check_traces"
COLLECT_TASK = "annotator.adjudication.collect"
TRIAGE_TASK = "annotator.triage.refresh_ranks"
# A pending set nobody collected (its collection lost with a worker) is dropped after a day; the periodic
# reconciliation finds its traces from the database.
_PENDING_SECONDS = 24 * 3600
# Up to this many traces are checked inline when the queue is down (a submit is one trace).
_INLINE_FALLBACK = 50


def after_annotations_changed(project_id: int, trace_ids: Iterable[int]) -> None:
    """Check the traces for the adjudication queue and schedule the debounced agreement report refresh.
    Traces the check would leave as they are (see `worth_checking`) are not sent: the first submit of a
    trace with overlap 2 costs the worker nothing. With a worker the traces are collected (`_collect`) and
    checked together a moment later; inline when eager, and sent as a task of their own when the cache
    cannot collect them."""
    ids = sorted(set(trace_ids))
    for start in range(0, len(ids), _CHUNK):
        chunk = worth_checking(project_id, ids[start : start + _CHUNK])
        if chunk and not _collect(project_id, chunk):
            _send_check(project_id, chunk)
    try:
        schedule_report_refresh(project_id)
    except Exception:
        log.exception("agreement report refresh for project %s could not be scheduled", project_id)


def triage_refresh_key(project_id: int) -> str:
    return f"triage-refresh:{project_id}"


def schedule_triage(project_id: int) -> None:
    """Rewrite the project's LLM triage queue ranks (annotator.triage.service.do_refresh_ranks) a moment
    after their inputs changed: an LLM run ended, annotations changed, gold was decided (called after commit).
    One refresh for everything that arrives meanwhile, debounced like the agreement report; nothing under
    trace order. Like the report refresh, it may never fail the save that has committed."""
    try:
        if not Project.objects.filter(pk=project_id).exclude(queue_order=QueueOrder.TRACE).exists():
            return
        if is_eager():
            enqueue(TRIAGE_TASK, project_id, after_commit=False)
            return
        countdown = settings.AGREEMENT_DEBOUNCE_SECONDS
        if cache.add(triage_refresh_key(project_id), "1", timeout=countdown + 300):
            enqueue(TRIAGE_TASK, project_id, countdown=countdown, after_commit=False)
    except Exception:
        log.exception("triage ranks of project %s could not be scheduled for a refresh", project_id)


def worth_checking(project_id: int, trace_ids: list[int]) -> list[int]:
    """The traces among `trace_ids` whose adjudication check can change something: those with at least
    as many submitted annotations as the project's overlap, or with an adjudication item already (which the
    check may re-evaluate or withdraw). `do_check_traces` leaves every other trace untouched: it counts
    fewer annotations than counted here (only active human annotators), so it finds too few, and there is
    no item to withdraw.

    Called after commit, so of two submits that complete a trace at the same moment the later one counts
    both. If the count itself fails, every trace is checked, as before the count existed."""
    if not trace_ids:
        return []
    ids = ", ".join(["%s"] * len(trace_ids))
    # Plain SQL: this runs after every submit, and the ORM's compilation of the same query cost the web
    # process more CPU than the task it saves (bench/bench_annotators.py).
    sql = (
        "SELECT a.trace_id FROM annotator_annotation n "
        "JOIN annotator_assignment a ON a.id = n.assignment_id "
        f"WHERE a.project_id = %s AND a.trace_id IN ({ids}) AND a.purpose = %s AND n.status = %s "
        "GROUP BY a.trace_id HAVING count(*) >= (SELECT overlap FROM annotator_project WHERE id = %s) "
        f"UNION SELECT trace_id FROM annotator_adjudicationitem WHERE project_id = %s AND trace_id IN ({ids})"
    )
    params = [project_id, *trace_ids, Assignment.Purpose.WORK, Annotation.Status.SUBMITTED, project_id]
    params += [project_id, *trace_ids]
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return sorted(row[0] for row in cursor.fetchall())
    except Exception:  # the check itself is idempotent: sending too many is harmless, too few is not
        log.exception(
            "counting the annotations of %d traces in project %s failed", len(trace_ids), project_id
        )
        return trace_ids


def _send_check(project_id: int, trace_ids: list[int]) -> None:
    try:
        enqueue(
            CHECK_TASK,
            project_id,
            trace_ids,
            after_commit=False,  # this runs after commit already
            on_failure=lambda error: _check_inline(project_id, trace_ids),
        )
    except Exception:  # eager: the inline check itself failed; the reconciliation checks again
        log.exception("adjudication check of %d traces in project %s failed", len(trace_ids), project_id)


def pending_key(project_id: int) -> str:
    return f"adjudication-pending:{project_id}"


def collect_key(project_id: int) -> str:
    return f"adjudication-collect:{project_id}"


def _collect(project_id: int, trace_ids: list[int]) -> bool:
    """Add the traces to the project's pending set and make sure a collection (`collect_pending`) is on its
    way, ADJUDICATION_COLLECT_SECONDS from the first addition. A busy project completes many traces a
    second: one check of all of them costs the worker and the database a fraction of one task per trace
    (bench/bench_annotators.py). False when the caller must send the check itself: eager (no worker to
    wait for) or the cache unreachable."""
    if is_eager() or not hasattr(cache, "add_to_set"):
        return False
    if not cache.add_to_set(pending_key(project_id), trace_ids, timeout=_PENDING_SECONDS):
        return False
    countdown = settings.ADJUDICATION_COLLECT_SECONDS
    if cache.add(collect_key(project_id), "1", timeout=countdown + 60):

        def not_sent(error: BaseException) -> None:
            cache.delete(collect_key(project_id))  # the next submit tries again
            _check_inline(project_id, trace_ids)

        try:
            enqueue(COLLECT_TASK, project_id, countdown=countdown, after_commit=False, on_failure=not_sent)
        except Exception:
            log.exception("adjudication checks of project %s could not be collected", project_id)
    return True


def collect_pending(project_id: int) -> int:
    """The collection (a task): send every trace collected for the project since the last collection to
    the check, one task per chunk; returns how many. The debounce key goes first, so a trace added from then
    on schedules the next collection, and a trace added before is taken now."""
    cache.delete(collect_key(project_id))
    trace_ids = cache.take_set(pending_key(project_id)) if hasattr(cache, "take_set") else []
    for start in range(0, len(trace_ids), _CHUNK):
        _send_check(project_id, trace_ids[start : start + _CHUNK])
    return len(trace_ids)


def _check_inline(project_id: int, trace_ids: list[int]) -> None:
    if len(trace_ids) > _INLINE_FALLBACK:
        log.warning("%d traces of project %s wait for the reconciliation", len(trace_ids), project_id)
        return
    try:
        do_check_traces(project_id, trace_ids)
    except Exception:  # the reconciliation finds these traces again
        log.exception("inline adjudication check of project %s failed", project_id)


def refresh_debounce_key(project_id: int) -> str:
    return f"agreement-refresh:{project_id}"


def schedule_report_refresh(project_id: int) -> None:
    """Refresh the project's agreement report and failure signatures after its annotations changed
    (called after commit). Never computes a large report inline; the debounce is described in
    annotator.services.reports.jobs. Enqueued by name, so the submit path never loads the statistics. The LLM
    triage ranks, which read the same labels, are scheduled with it (`schedule_triage`)."""
    schedule_triage(project_id)
    if is_eager():
        # Counting stops past the limit: a submit in a million-annotation project stays cheap.
        limit = settings.AGREEMENT_INLINE_MAX_ANNOTATIONS
        submitted = Annotation.objects.filter(
            assignment__project_id=project_id,
            assignment__purpose=Assignment.Purpose.WORK,
            status=Annotation.Status.SUBMITTED,
        )[: limit + 1].count()
        if submitted <= limit:
            enqueue("annotator.agreement.refresh_reports", project_id, after_commit=False)
        return
    countdown = settings.AGREEMENT_DEBOUNCE_SECONDS
    if cache.add(refresh_debounce_key(project_id), "1", timeout=countdown + 300):
        enqueue("annotator.agreement.refresh_reports", project_id, countdown=countdown, after_commit=False)
