"""Assignment verbs: plan who labels what (the pure strategy), add and remove annotators, claim the next slot.

`do_assign(project)` is the one bridge between `annotator.assignment_strategy` and the database; imports
call it after attaching a batch, the member page after adding an annotator, the CLI after creating a project.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotator.assignment_strategy import plan_assignments
from annotator.models import Assignment, LiveTrace, Membership, Project, QueueOrder, Role, TriageRank
from annotator.raters import fills_overlap_q, receives_work_q
from annotator.services.calibration import next_calibration, uses_calibration
from traces.models import Batch, Trace

log = logging.getLogger(__name__)

_CHUNK = 2000


def annotator_ids(project: Project) -> list[int]:
    """Candidates for new work: active annotator memberships of people who sign in (imported labellers and
    LLM raters keep their labels but never receive new traces; annotator.raters decides)."""
    return sorted(
        set(
            Membership.objects.filter(
                receives_work_q("user"), project=project, role=Role.ANNOTATOR, active=True
            ).values_list("user_id", flat=True)
        )
    )


def _free(now: datetime) -> Q:
    return Q(reserved_until__isnull=True) | Q(reserved_until__lt=now)


def do_assign(project: Project, *, trim: bool = False) -> int:
    """Give every trace of the project's batches `project.overlap` annotators; returns how many
    assignments were created.

    Who fills a slot is `annotator.raters.fills_overlap_q`: LLM raters never, imported raters only when the
    project's `imported_labels_count_toward_overlap` is on. `trim` also drops untouched slots of traces
    that hold more than the overlap (after that setting is switched on, the people's untouched slots on
    traces the imported labels fill go back); submitted, skipped, drafted or reserved work never moves.

    Idempotent and incremental: existing assignments stay; only untouched ones (pending, no annotation,
    not reserved) may move to another annotator to even out the load, e.g. when someone joins late.
    Locks the project row, so concurrent calls (an import, an owner adding a member) run one after the
    other; the rows it moves are locked too, so a concurrent claim skips them.
    """
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).values_list("pk").first()
        now = timezone.now()
        # Live traces the project's live settings leave out (only failures, a sample) get no annotators.
        held_live = LiveTrace.objects.filter(project=project, unassigned=True).values("trace_id")
        trace_ids = list(
            Trace.objects.in_project(project)
            .exclude(pk__in=held_live)
            .order_by("id")
            .values_list("id", flat=True)
        )
        # LLM raters' slots (and imported raters' unless the project counts them) are not human overlap:
        # they neither fill a trace's `overlap` nor ever move.
        # Gold calibration slots are neither overlap nor movable: the plan never sees them.
        rows = list(
            Assignment.objects.work()
            .filter(project=project)
            .filter(fills_overlap_q(project.imported_labels_count_toward_overlap, "annotator"))
            .values_list(
                "id",
                "trace_id",
                "annotator_id",
                "status",
                "reserved_until",
                "annotation__id",
                "calibration_round",
            )
        )
        existing = [(trace, annotator) for _, trace, annotator, *_ in rows]
        ids = {(trace, annotator): pk for pk, trace, annotator, *_ in rows}
        movable = [
            (trace, annotator)
            for _, trace, annotator, status, reserved, annotation, calibration_round in rows
            if status == Assignment.Status.PENDING
            and annotation is None
            and calibration_round is None
            and (reserved is None or reserved < now)
        ]
        # Someone who saw a trace's gold as a calibration item can never label it for real (one slot per
        # trace and annotator): the plan must choose someone else rather than lose the slot.
        calibrated = Assignment.objects.filter(project=project, purpose=Assignment.Purpose.CALIBRATION)
        plan = plan_assignments(
            trace_ids,
            annotator_ids(project),
            project.overlap,
            existing,
            movable,
            unavailable=calibrated.values_list("trace_id", "annotator_id"),
            trim=trim,
        )
        failed = _remove_movable([(ids[(s.trace_id, s.annotator_id)], s.trace_id) for s in plan.remove], now)
        new = []
        for slot in plan.add:
            if failed[slot.trace_id] > 0:
                # The slot it replaced was claimed meanwhile: the trace keeps its old annotator instead.
                failed[slot.trace_id] -= 1
                continue
            new.append(Assignment(project=project, trace_id=slot.trace_id, annotator_id=slot.annotator_id))
        Assignment.objects.bulk_create(new, batch_size=_CHUNK, ignore_conflicts=True)
    if new or plan.remove:
        log.info("project %s: %d assignments created, %d moved", project.slug, len(new), len(plan.remove))
    return len(new)


def _remove_movable(rows: list[tuple[int, int]], now: datetime) -> Counter[int]:
    """Delete the planned moves ((id, trace) pairs) that are still untouched; returns, per trace, how many
    could not go because someone opened or claimed them since the plan was made."""
    failed: Counter[int] = Counter()
    for start in range(0, len(rows), _CHUNK):
        chunk = dict(rows[start : start + _CHUNK])
        deletable = set(
            Assignment.objects.select_for_update(of=("self",))
            .filter(pk__in=list(chunk), status=Assignment.Status.PENDING, annotation__isnull=True)
            .filter(_free(now))
            .values_list("pk", flat=True)
        )
        Assignment.objects.filter(pk__in=deletable).delete()
        failed.update(trace for pk, trace in chunk.items() if pk not in deletable)
    return failed


def do_remove_annotator(project: Project, user) -> int:
    """Take `user` off the project's annotation work; returns how many slots went to others.

    Their submitted and skipped work stays (it is finished and may already be in agreement reports);
    their unfinished assignments (to do, and drafts, which are discarded) are deleted and re-planned.
    The membership is deactivated, never deleted, so the history keeps its actor.
    """
    with transaction.atomic():
        Membership.objects.filter(project=project, user=user, role=Role.ANNOTATOR).update(active=False)
        unfinished = Assignment.objects.open_for(user).filter(project=project)
        count = len(list(unfinished.values_list("pk", flat=True)))
        unfinished.delete()
        created = do_assign(project)
    log.info("project %s: %s removed, %d unfinished slots re-planned", project.slug, user, count)
    return created


def do_add_member(project: Project, user, role: str) -> int:
    """Add (or re-activate) `user` with `role`; annotators get work at once. Returns new assignments."""
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(project=project, user=user, role=role)
        if not created and not membership.active:
            Membership.objects.filter(pk=membership.pk).update(active=True)
        return do_assign(project) if role == Role.ANNOTATOR else 0


def do_claim_next(
    project: Project, user, *, now: datetime | None = None, exclude: Iterable[int] = ()
) -> Assignment | None:
    """Reserve the annotator's next open slot (queue order: the project's `queue_order`, annotator.services.
    triage: trace then id by default, else the trace's triage rank first) for
    `project.reservation_minutes`; None when nothing is free.

    Gold calibration comes first (annotator.services.calibration): an open calibration slot, or a new one
    when the qualification set or the mix-in rate asks for it; an annotator held back by the qualification
    gate gets no real work (None).
    Slots are per annotator; the reservation keeps two tabs, devices or retried clicks of the same person
    from working on one slot, and an abandoned claim frees itself when it expires.
    Locks: real work is claimed by one statement (`_reserve_next`), which picks and reserves the slot at
    once; concurrent claims pass each other by.
    """
    if project.archived_at is not None:
        return None  # an archived project hands out no new work (drafts already open stay editable)
    now = now or timezone.now()
    until = now + timedelta(minutes=project.reservation_minutes)
    exclude = list(exclude)  # e.g. the trace the annotator is leaving: "next" means another one
    if uses_calibration(project):
        with transaction.atomic():
            calibration, held = next_calibration(project, user, now=now, until=until, exclude=exclude)
        if calibration is not None:
            return calibration
        if held.blocked:
            return None
    return _reserve_next(project, user, now=now, until=until, exclude=exclude)


# The columns a claimed slot is read back with (the rest load on first use, as with `.only()`).
_CLAIMED = ("id", "project_id", "trace_id", "annotator_id", "status", "skip_reason", "purpose")


def _reserve_next(
    project: Project, user, *, now: datetime, until: datetime, exclude: list[int]
) -> Assignment | None:
    """Pick and reserve the next free work slot of `user` in one UPDATE ... RETURNING.

    The slot is chosen by a sub-SELECT (the queue order of `Assignment.objects.open_for(user).work()`)
    that on PostgreSQL locks it FOR UPDATE SKIP LOCKED, so concurrent claims never wait for each other or
    take the same row, and a row changed meanwhile is re-checked against the conditions. SQLite has no row
    locks but runs one writing statement at a time, so the statement alone decides there too. One round
    trip, no transaction to open: the claim is the busiest write of the app (bench/bench_annotators.py).
    The slot's trace (name, batch) comes in a second small read, for the caller's answer."""
    ops = connection.ops
    # Under an LLM triage order (annotator.triage.service) the slot's trace rank comes first, unranked
    # traces last; under trace order the statement stays as it always was.
    ranked = project.queue_order != QueueOrder.TRACE
    skip = connection.features.has_select_for_update_skip_locked
    lock = (" FOR UPDATE OF a SKIP LOCKED" if ranked else " FOR UPDATE SKIP LOCKED") if skip else ""
    leaving = f" AND a.id NOT IN ({', '.join(['%s'] * len(exclude))})" if exclude else ""
    free = "(reserved_until IS NULL OR reserved_until < %s)"
    open_statuses = ", ".join(["%s"] * len(Assignment.OPEN_STATUSES))
    join, order = "", "a.trace_id, a.id"
    if ranked:
        join = " LEFT JOIN annotator_triagerank r ON r.project_id = a.project_id AND r.trace_id = a.trace_id"
        order = f"COALESCE(r.rank, {TriageRank.UNRANKED}), a.trace_id, a.id"
    sql = (
        "UPDATE annotator_assignment SET reserved_until = %s, updated_at = %s "
        f"WHERE id = (SELECT a.id FROM annotator_assignment a{join} "
        f"WHERE a.project_id = %s AND a.annotator_id = %s AND a.status IN ({open_statuses}) "
        f"AND a.purpose = %s AND (a.reserved_until IS NULL OR a.reserved_until < %s)"
        f"{leaving} ORDER BY {order} LIMIT 1{lock}) AND {free} "
        f"RETURNING {', '.join(_CLAIMED)}"
    )
    at, expiry = ops.adapt_datetimefield_value(now), ops.adapt_datetimefield_value(until)
    params = [expiry, at, project.pk, user.pk, *Assignment.OPEN_STATUSES, Assignment.Purpose.WORK, at]
    params += [*exclude, at]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        if row is None:
            return None
        claimed = _loaded(Assignment, dict(zip(_CLAIMED, row, strict=True)))
        cursor.execute(
            "SELECT t.external_id, t.batch_id, b.name FROM traces_trace t "
            "JOIN traces_batch b ON b.id = t.batch_id WHERE t.id = %s",
            [claimed.trace_id],
        )
        trace_row = cursor.fetchone()
    if trace_row is None:
        return None  # the trace was deleted just now, and its slots with it
    external_id, batch_id, batch_name = trace_row
    claimed.reserved_until, claimed.updated_at = until, now
    # Only the trace's name and batch: never its raw record, metadata or answer key (they load on use).
    claimed.trace = _loaded(Trace, {"id": claimed.trace_id, "external_id": external_id, "batch_id": batch_id})
    claimed.trace.batch = _loaded(Batch, {"id": batch_id, "name": batch_name})
    claimed.project = project
    return claimed


def _loaded(model, values: dict):
    """An instance of `model` as the database holds it, from some of its columns (`.only()` would give the
    same); the others load on first use."""
    fields = [f.attname for f in model._meta.concrete_fields if f.attname in values]
    return model.from_db(connection.alias, fields, [values[name] for name in fields])


def do_release_assignment(assignment: Assignment) -> None:
    """Give an open slot back to the queue (its draft, if any, stays): "Start next" may offer it again, and
    re-balancing may move it to another annotator while nobody holds it."""
    Assignment.objects.filter(pk=assignment.pk, status__in=Assignment.OPEN_STATUSES).update(
        reserved_until=None, updated_at=timezone.now()
    )


def extend_reservation(assignment: Assignment) -> None:
    """Opening one's own slot (from the queue or a link) holds it, so "next" in another tab skips it."""
    until = timezone.now() + timedelta(minutes=assignment.project.reservation_minutes)
    Assignment.objects.filter(pk=assignment.pk, status__in=Assignment.OPEN_STATUSES).update(
        reserved_until=until
    )
