"""The adjudication queue: compare a trace's annotations, queue disagreements, claim items, reopen them.

Rules kept here (and only here; the pages and the API call these verbs):

- A trace is checked once its required annotations are in: at least `project.overlap` submitted
  annotations by annotators with an active annotator membership (imported annotators count; LLM raters,
  raters of kind llm, see annotator.raters, never do). All of those annotations are compared, shown as A, B, ... in
  annotator-username order.
- Full agreement (same set of modes; in single-primary taxonomies also the same primary) becomes gold at
  once: an item with status "agreed" and GoldLabel rows with source "agreed". Any disagreement queues
  the trace (status "open") with `disputed` = the modes someone chose and someone did not, and a
  `severity` that orders the queue: 100 per disputed fatal mode + 1 per disputed mode (+1 if the
  primary differs), so fatal disputes come first, then the most disputed traces.
- Idempotent: each item stores a fingerprint of the annotations it compared (ids and versions);
  re-checking unchanged input writes nothing. A new annotation (a slot submitted late) re-evaluates the
  item as long as adjudication has not started. Started = claimed once (claimed_by is set, even if the
  claim expired) or resolved. Submitted annotations stop being editable as soon as the item exists,
  whatever its status (`annotator.services.locking.is_locked`), so the lock tells an annotator nothing
  about what the others chose.
- Claims are expiring locks (`claimed_until`, the project's reservation minutes). The next item is
  taken with `select_for_update(skip_locked=True)` on PostgreSQL, and every claim is a conditional
  UPDATE on the item's version, which also keeps SQLite (no row locks) correct. Releasing a claim
  expires it but keeps `claimed_by`.
- Gold history: every automatic agreement, re-evaluation, decision and reopening is a GoldHistory row.
  Decisions themselves live in `annotator.services.gold`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from annotator.models import AdjudicationItem, Annotation, GoldHistory, GoldLabel, Project
from annotator.services.comparison import (
    Compared,
    Comparison,
    ModeFacts,
    compare,
    eligible_annotator_ids,
    gold_snapshot,
    inputs_fingerprint,
    is_started,
    load_compared,
    merged_evidence,
    mode_facts,
)
from taxonomy.models import FailureMode

log = logging.getLogger(__name__)

Status = AdjudicationItem.Status
_CHUNK = 500
_CLAIM_ATTEMPTS = 20


class AdjudicationError(Exception):
    def __init__(self, messages: list[str] | str):
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("; ".join(self.messages))


class AdjudicationInvalid(AdjudicationError):
    """The decision itself is incomplete or inconsistent (shown next to the form; nothing saved)."""


class AdjudicationConflict(AdjudicationError):
    """Someone else changed or holds the item since this form was loaded (HTTP 409). Carries the current
    item so the page can say who and what, and the caller echoes the user's own input back."""

    def __init__(self, message: str, item: AdjudicationItem):
        self.item = item
        super().__init__(message)


# --- checking traces -------------------------------------------------------------------------------


def do_check_trace(project_id: int, trace_id: int) -> AdjudicationItem | None:
    """Check one trace (see the module rules); returns its item, if it has one."""
    do_check_traces(project_id, [trace_id])
    return AdjudicationItem.objects.filter(project_id=project_id, trace_id=trace_id).first()


def do_check_traces(project_id: int, trace_ids: Iterable[int]) -> int:
    """Check many traces (after an import), in chunks; returns how many items were created or changed.

    Locks the project row per chunk so two checks of the same trace (two submits a moment apart) run one
    after the other instead of racing to create its item."""
    project = Project.objects.select_related("taxonomy_version").filter(pk=project_id).first()
    if project is None:
        return 0
    ids = sorted(set(trace_ids))
    modes = mode_facts(project)
    changed = 0
    for start in range(0, len(ids), _CHUNK):
        with transaction.atomic():
            Project.objects.select_for_update().filter(pk=project.pk).values_list("pk").first()
            changed += _check_chunk(project, ids[start : start + _CHUNK], modes)
    return changed


def _check_chunk(project: Project, trace_ids: list[int], modes: dict[str, ModeFacts]) -> int:
    eligible = eligible_annotator_ids(project)
    submitted = (
        Annotation.objects.in_project(project)
        .filter(
            assignment__trace_id__in=trace_ids,
            assignment__annotator_id__in=eligible,
            status=Annotation.Status.SUBMITTED,
        )
        .annotate(trace_id=F("assignment__trace_id"))
    )
    by_trace: dict[int, list[Compared]] = {}
    trace_of = dict(submitted.values_list("id", "trace_id"))
    for compared in load_compared(submitted):
        trace_id = trace_of.get(compared.annotation_id)
        if trace_id is None:
            continue  # submitted between the two reads: its own follow-up check will see it
        by_trace.setdefault(trace_id, []).append(compared)
    items = {
        item.trace_id: item
        for item in AdjudicationItem.objects.filter(project=project, trace_id__in=trace_ids)
    }
    single = not project.taxonomy_version.is_multi_label
    changed = 0
    for trace_id in trace_ids:
        annotations = by_trace.get(trace_id, [])
        item = items.get(trace_id)
        if item is not None and is_started(item):
            continue  # decided or being decided: the annotations are locked, the gold is the adjudicator's
        if len(annotations) < project.overlap:
            if item is not None:
                _withdraw(item)
                changed += 1
            continue
        fingerprint = inputs_fingerprint(annotations)
        if item is not None and item.inputs_fingerprint == fingerprint:
            continue
        comparison = compare(annotations, modes, single_primary=single)
        if _apply(project, trace_id, item, annotations, comparison, fingerprint, modes):
            changed += 1
    return changed


def _apply(
    project: Project,
    trace_id: int,
    item: AdjudicationItem | None,
    annotations: list[Compared],
    comparison: Comparison,
    fingerprint: str,
    modes: dict[str, ModeFacts],
) -> bool:
    fields = {
        "status": Status.AGREED if comparison.is_agreement else Status.OPEN,
        "severity": 0 if comparison.is_agreement else comparison.severity,
        "disputed": comparison.disputed,
        "primary_disputed": comparison.primary_disputed,
        "annotation_ids": [a.annotation_id for a in annotations],
        "inputs_fingerprint": fingerprint,
    }
    before = None
    if item is None:
        item = AdjudicationItem.objects.create(project=project, trace_id=trace_id, **fields)
        action = GoldHistory.Action.AGREED if comparison.is_agreement else GoldHistory.Action.QUEUED
    else:
        before = gold_snapshot(item.pk)
        # Guarded on the version and "not claimed": an adjudicator who claimed it a moment ago wins.
        updated = (
            AdjudicationItem.objects.filter(pk=item.pk, version=item.version, claimed_by__isnull=True)
            .exclude(status=Status.RESOLVED)
            .update(version=F("version") + 1, updated_at=timezone.now(), **fields)
        )
        if not updated:
            return False
        GoldLabel.objects.filter(item=item).delete()
        action = GoldHistory.Action.REEVALUATED
    if comparison.is_agreement:
        GoldLabel.objects.bulk_create(_agreed_gold(item, annotations, comparison.agreed, modes))
    GoldHistory.objects.create(
        project=project,
        trace_id=trace_id,
        item=item,
        action=action,
        before=before,
        after={"status": fields["status"], "disputed": comparison.disputed, "gold": gold_snapshot(item.pk)},
    )
    return True


def _agreed_gold(
    item: AdjudicationItem, annotations: list[Compared], codes: list[str], modes: dict[str, ModeFacts]
) -> list[GoldLabel]:
    ids = dict(
        FailureMode.objects.filter(version=item.project.taxonomy_version_id, code__in=codes).values_list(
            "code", "id"
        )
    )
    primary = annotations[0].primary if annotations else None
    return [
        GoldLabel(
            item=item,
            mode_id=ids[code],
            primary=code == primary,
            evidence=merged_evidence(a.labels[code] for a in annotations if code in a.labels),
            source=GoldLabel.Source.AGREED,
        )
        for code in codes
    ]


def _withdraw(item: AdjudicationItem) -> None:
    """The trace no longer has enough annotations (one was withdrawn before adjudication started)."""
    GoldHistory.objects.create(
        project_id=item.project_id,
        trace_id=item.trace_id,
        item=None,
        action=GoldHistory.Action.WITHDRAWN,
        before=gold_snapshot(item.pk),
        after=None,
    )
    item.delete()


# --- claiming ---------------------------------------------------------------------------------------


def _claim_minutes(project: Project) -> timedelta:
    return timedelta(minutes=project.reservation_minutes or 30)


def _free(now) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)


def do_claim_next(
    project: Project, user, *, items: QuerySet[AdjudicationItem] | None = None
) -> AdjudicationItem | None:
    """The user's current claim, or the most severe open item nobody holds, claimed for them (None when
    the queue is empty). `items`: the items this user may open (annotator.access; it leaves out traces
    they are still annotating). See the module docstring for the locking."""
    now = timezone.now()
    scope = AdjudicationItem.objects.all() if items is None else items
    open_items = scope.filter(project=project, status=Status.OPEN)
    mine = open_items.filter(claimed_by=user, claimed_until__gt=now).in_list_order(Status.OPEN).first()
    if mine is not None:
        return mine
    for _ in range(_CLAIM_ATTEMPTS):
        with transaction.atomic():
            candidates = open_items.filter(_free(now)).in_list_order(Status.OPEN)
            if connection.features.has_select_for_update_skip_locked:
                candidates = candidates.select_for_update(skip_locked=True)
            candidate = candidates.only("id", "version").first()
            if candidate is None:
                return None
            if _take(candidate, user, now, project):
                return AdjudicationItem.objects.get(pk=candidate.pk)
    return None


def _take(item: AdjudicationItem, user, now, project: Project) -> bool:
    """The conditional UPDATE every claim goes through: same version, still open, free or already mine."""
    return bool(
        AdjudicationItem.objects.filter(pk=item.pk, version=item.version, status=Status.OPEN)
        .filter(_free(now) | Q(claimed_by=user))
        .update(
            claimed_by=user,
            claimed_until=now + _claim_minutes(project),
            version=F("version") + 1,
            updated_at=now,
        )
    )


def do_claim(item: AdjudicationItem, user, *, base_version: int) -> AdjudicationItem:
    """Claim this item (from its page). Raises AdjudicationConflict if someone else holds it or it
    changed since the page was loaded."""
    now = timezone.now()
    item = AdjudicationItem.objects.select_related("claimed_by", "project").get(pk=item.pk)
    if item.status != Status.OPEN:
        raise AdjudicationConflict(
            f"This item is {item.get_status_display().lower()}; there is nothing to claim", item
        )
    if item.claimed_by_id not in (None, user.pk) and item.claimed_until and item.claimed_until > now:
        raise AdjudicationConflict(f"{item.claimed_by.username} is deciding this item", item)
    if item.version != base_version or not _take(item, user, now, item.project):
        item.refresh_from_db()
        raise AdjudicationConflict("This item changed since you opened it; look again before claiming", item)
    item.refresh_from_db()
    return item


def do_release(item: AdjudicationItem, user) -> None:
    """Give a claim back: it expires now (claimed_by is kept: adjudication of the trace has started)."""
    AdjudicationItem.objects.filter(pk=item.pk, claimed_by=user, status=Status.OPEN).update(
        claimed_until=timezone.now(), version=F("version") + 1
    )


def do_reopen(item: AdjudicationItem, *, actor, base_version: int, note: str = "") -> AdjudicationItem:
    """Reopen a resolved item: its gold labels are removed (kept in GoldHistory) and it is claimed by
    `actor` to decide again. Raises AdjudicationInvalid for an item that is not resolved and
    AdjudicationConflict when it changed since `base_version`."""
    now = timezone.now()
    with transaction.atomic():
        current = (
            AdjudicationItem.objects.select_for_update(of=("self",)).select_related("project").get(pk=item.pk)
        )
        if current.status != Status.RESOLVED:
            raise AdjudicationInvalid("Only a decided item can be reopened")
        before = gold_snapshot(current.pk)
        updated = AdjudicationItem.objects.filter(
            pk=current.pk, version=base_version, status=Status.RESOLVED
        ).update(
            status=Status.OPEN,
            claimed_by=actor,
            claimed_until=now + _claim_minutes(current.project),
            resolved_by=None,
            resolved_at=None,
            version=F("version") + 1,
            updated_at=now,
        )
        if not updated:
            raise AdjudicationConflict("This item changed since you opened it; nothing was reopened", current)
        GoldLabel.objects.filter(item=current).delete()
        GoldHistory.objects.create(
            project_id=current.project_id,
            trace_id=current.trace_id,
            item=current,
            actor=actor,
            action=GoldHistory.Action.REOPENED,
            before=before,
            after=None,
            note=note.strip(),
        )
    current.refresh_from_db()
    return current


def queue_counts(project: Project) -> dict[str, int]:
    """Open (of which actively claimed), resolved and agreed items, in one query."""
    now = timezone.now()
    return AdjudicationItem.objects.filter(project=project).aggregate(
        open=Count("id", filter=Q(status=Status.OPEN)),
        claimed=Count("id", filter=Q(status=Status.OPEN, claimed_until__gt=now)),
        resolved=Count("id", filter=Q(status=Status.RESOLVED)),
        agreed=Count("id", filter=Q(status=Status.AGREED)),
    )
