"""Annotation verbs: save a draft, submit, skip. Each runs in one transaction and writes LabelHistory.

Rules kept here (and only here, so the page and the API agree):

- Optimistic concurrency: every save names the `Annotation.version` it was based on (0 when there was no
  annotation yet); a stale save raises StaleAnnotation and changes nothing, so two tabs never silently
  overwrite each other.
- A submitted annotation is editable until the trace's round closes: once the trace has an
  AdjudicationItem (its required annotations are all in, whether they agree or not), submitted annotations
  of it no longer change (the lock rule, `annotator.services.locking`). The rule must not depend on the
  item's status: a lock that came only with a disagreement (claimed or resolved items) told a blind
  annotator that the other annotator disagreed. Slots not yet submitted (a third annotator's, a skipped one) stay open; their
  submission re-evaluates an item that is not resolved.
- A submitted annotation is changed by submitting again (validated in full), never by a draft save, so
  an autosave cannot silently withdraw a submission from the agreement statistics.
- Every change is kept in LabelHistory with before/after snapshots, the actor and the action.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotator import prepared
from annotator.models import (
    Annotation,
    Assignment,
    LabelApplication,
    LabelHistory,
    ModeRecheck,
    Project,
)
from annotator.prepared import PreparedQuery
from annotator.services.calibration import gate
from annotator.services.followups import after_annotations_changed
from annotator.services.locking import LOCKED_MESSAGE, open_recheck, round_closed
from annotator.services.payload import AnnotationPayload
from taxonomy.models import FailureMode
from traces.models import Step

log = logging.getLogger(__name__)


class AnnotationError(Exception):
    """Base of the errors a save can end with; `messages` are shown to the user as they are."""

    def __init__(self, messages: list[str] | str):
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("; ".join(self.messages))


class AnnotationInvalid(AnnotationError):
    pass


class AnnotationLocked(AnnotationError):
    pass


class StaleAnnotation(AnnotationError):
    """Someone (another tab) saved since this form was loaded; carries what is stored now."""

    def __init__(self, current_version: int, payload: AnnotationPayload | None):
        self.current_version = current_version
        self.payload = payload
        super().__init__(
            "This annotation was changed in another tab or window since you opened it "
            f"(it is now at version {current_version}). Nothing was saved."
        )


def snapshot(
    annotation: Annotation | None,
    assignment: Assignment,
    labels: Iterable[LabelApplication] | None = None,
) -> dict[str, Any] | None:
    """The annotation as plain JSON, for history and for comparing before/after. `labels`: the
    annotation's labels (with their modes) when the caller holds them already, else they are read."""
    if annotation is None:
        return None
    if labels is None:
        labels = _LABELS.objects(annotation=annotation.pk)
    labels = [
        {"mode": label.mode.code, "primary": label.primary, "evidence": label.evidence, "note": label.note}
        for label in sorted(labels, key=_label_order)
    ]
    return {
        "status": annotation.status,
        "assignment_status": assignment.status,
        "skip_reason": assignment.skip_reason,
        "no_failure": annotation.no_failure,
        "ambiguous": annotation.ambiguous,
        "confidence": annotation.confidence,
        "note": annotation.note,
        "labels": labels,
    }


# Read before every re-save (compiled once per connection, annotator.prepared).
_LABELS = PreparedQuery(
    lambda annotation: (
        LabelApplication.objects.filter(annotation_id=annotation)
        .select_related("mode")
        .order_by("mode__order", "mode_id")
    ),
    annotation=int,
)


def _label_order(label: LabelApplication) -> tuple[int, int]:
    return (label.mode.order, label.mode_id)


def check_payload(
    assignment: Assignment,
    payload: AnnotationPayload,
    *,
    submitting: bool,
    modes: Mapping[str, FailureMode] | None = None,
) -> dict[str, FailureMode]:
    """Validate against the project's taxonomy version and the trace; returns the modes by code.
    `modes`: the payload's modes when the caller has looked them up already (the API's body check).

    Drafts may be incomplete; a submission must say something (labels, or "no failure observed", not
    both) and, in single-primary taxonomies, name exactly one primary label.
    """
    version = assignment.project.taxonomy_version
    errors: list[str] = []
    if modes is None:
        modes = FailureMode.objects.filter(version=version, code__in=payload.codes)
    else:
        modes = modes.values()
    modes = {mode.code: mode for mode in modes if mode.version_id == version.pk}
    taxonomy = f"{version.taxonomy.name} v{version.number}"
    seen: set[str] = set()
    for code in payload.codes:
        if code not in modes:
            errors.append(f"“{code}” is not a failure mode of {taxonomy}")
        if code in seen:
            errors.append(f"{code} is chosen twice")
        seen.add(code)
    primaries = [label.mode for label in payload.labels if label.primary]
    if not version.is_multi_label:
        if len(primaries) > 1:
            errors.append(f"Choose one primary failure mode, not {len(primaries)} ({', '.join(primaries)})")
        if submitting and payload.labels and not primaries:
            errors.append("Choose which failure mode is the primary one")
    if payload.confidence is not None and not 1 <= payload.confidence <= 5:
        errors.append("Confidence must be from 1 to 5")
    errors += _missing_steps(assignment.trace_id, payload, getattr(assignment, "trace_step_count", None))
    if submitting and not payload.labels and not payload.no_failure:
        errors.append("Choose at least one failure mode, or mark “No failure observed”")
    if submitting and payload.labels and payload.no_failure:
        errors.append("Choose either failure modes or “No failure observed”, not both")
    if errors:
        raise AnnotationInvalid(errors)
    return modes


def _missing_steps(trace_id: int, payload: AnnotationPayload, step_count: int | None = None) -> list[str]:
    """The evidence steps that are not steps of the trace. An import numbers a trace's steps 0 to
    step_count - 1, so with `step_count` known (read under the save's lock) steps in that range need no
    query; only others are looked up, so a trace written some other way still has the last word."""
    wanted = {item.step for label in payload.labels for item in label.evidence}
    if step_count is not None:
        wanted = {step for step in wanted if not 0 <= step < step_count}
    if not wanted:
        return []
    found = set(
        Step.objects.filter(trace_id=trace_id, index__in=wanted).order_by().values_list("index", flat=True)
    )
    return [f"Step {step} is not in this trace" for step in sorted(wanted - found)]


def do_save_draft(
    assignment: Assignment,
    payload: AnnotationPayload,
    *,
    actor,
    base_version: int,
    modes: Mapping[str, FailureMode] | None = None,
) -> Annotation:
    """Store the payload as the assignment's draft. Preconditions: `actor` may write this assignment
    (checked by the caller through annotator.access); the annotation is not submitted; the trace is not
    locked by adjudication. Locks the assignment row; raises StaleAnnotation, AnnotationLocked or
    AnnotationInvalid, in which case nothing changed. `modes`: see check_payload.

    The returned annotation carries its assignment and its labels (with their modes), so a caller can
    show them without reading them again."""
    return _write(assignment, payload, actor=actor, base_version=base_version, submit=False, modes=modes)


def do_submit_annotation(
    assignment: Assignment,
    payload: AnnotationPayload,
    *,
    actor,
    base_version: int,
    modes: Mapping[str, FailureMode] | None = None,
) -> Annotation:
    """Submit (or re-submit an edited) annotation: validated in full, status submitted, reservation
    released. Same preconditions, locks, errors and result as do_save_draft. After commit, calls
    on_trace_annotations_changed so adjudication and agreement can react.

    The returned annotation's assignment also carries `locked_after_save`: `is_locked` as of this save,
    read under the lock, for the caller's answer (a later change of the round is not reflected in it)."""
    return _write(assignment, payload, actor=actor, base_version=base_version, submit=True, modes=modes)


def _write(
    assignment: Assignment,
    payload: AnnotationPayload,
    *,
    actor,
    base_version: int,
    submit: bool,
    modes: Mapping[str, FailureMode] | None,
) -> Annotation:
    project = assignment.project
    try:
        with transaction.atomic():
            assignment = _lock(assignment)
            _check_taxonomy_unchanged(project)
            annotation = _annotation_of(assignment)
            current = annotation.version if annotation else 0
            if base_version != current:
                raise StaleAnnotation(current, payload)
            if assignment.status == Assignment.Status.SUBMITTED and _locked_now(assignment):
                raise AnnotationLocked(LOCKED_MESSAGE)
            _check_gate(assignment, actor)
            if not submit and annotation and annotation.status == Annotation.Status.SUBMITTED:
                raise AnnotationInvalid("This annotation is submitted: to change it, submit it again")
            modes = check_payload(assignment, payload, submitting=submit, modes=modes)
            existed = annotation is not None
            before = snapshot(annotation, assignment)
            annotation, labels = _store(assignment, annotation, payload, modes, current, submit=submit)
            status = Assignment.Status.SUBMITTED if submit else Assignment.Status.IN_PROGRESS
            reserved_until = None if submit else assignment.reserved_until
            # The hot writes are sent as statements built once (annotator.prepared), as the ORM writes them.
            prepared.update(
                Assignment, assignment.pk, status=status, skip_reason="", reserved_until=reserved_until
            )
            assignment.status, assignment.skip_reason = status, ""
            assignment.reserved_until = reserved_until
            annotation.assignment = assignment
            after = snapshot(annotation, assignment, labels)
            if before != after:
                action = _action(before, submit)
                history = LabelHistory(
                    annotation=annotation, actor=actor, action=action, before=before, after=after
                )
                prepared.insert([history])
            if submit:
                if existed and assignment.open_recheck:
                    # Submitting again is how an annotator answers "re-check FM-x on this trace" (a
                    # re-check names an annotation that exists, so a new one has none).
                    ModeRecheck.objects.filter(annotation=annotation, resolved_at__isnull=True).update(
                        resolved_at=timezone.now()
                    )
                # Answered: no re-check keeps it open, so the submitted annotation is frozen exactly when
                # the trace's round has closed.
                assignment.locked_after_save = assignment.round_closed
                if assignment.purpose == Assignment.Purpose.WORK:
                    _notify_on_commit(project.pk, assignment.trace_id)
    except IntegrityError:
        # Two first saves raced to create the annotation (no row lock on SQLite): the loser is stale.
        current = Annotation.objects.filter(assignment=assignment).values_list("version", flat=True).first()
        raise StaleAnnotation(current or 0, payload) from None
    return annotation


TAXONOMY_CHANGED = (
    "The project moved to a new taxonomy version while this page was open; reload it to label with the "
    "new modes (your labels were carried over)"
)


def _check_taxonomy_unchanged(project) -> None:
    """Under the assignment lock: a taxonomy migration locks every assignment of the project, so a save
    that started before it either commits first (and is migrated) or sees the new version here."""
    current = _TAXONOMY_VERSION.objects(pk=project.pk)
    if not current or current[0].taxonomy_version_id != project.taxonomy_version_id:
        raise AnnotationInvalid(TAXONOMY_CHANGED)


def _check_gate(assignment: Assignment, actor) -> None:
    """Real work waits while the annotator has not passed the project's gold qualification (the reason
    is shown); calibration items themselves are always open."""
    if assignment.purpose != Assignment.Purpose.WORK:
        return
    state = gate(assignment.project, assignment.annotator if actor is None else actor)
    if state.blocked:
        raise AnnotationLocked(state.reason)


# The save's other reads, compiled once per connection (annotator.prepared): they run on every draft and submit.
_LOCK = PreparedQuery(
    lambda pk, project, annotator: (
        Assignment.objects.select_for_update(of=("self",))
        .filter(pk=pk, project_id=project, annotator_id=annotator)
        .select_related("annotation")
        .annotate(
            round_closed=round_closed(),
            open_recheck=open_recheck(),
            trace_step_count=F("trace__step_count"),
        )
    ),
    pk=int,
    project=int,
    annotator=int,
)
_TAXONOMY_VERSION = PreparedQuery(
    lambda pk: Project.objects.filter(pk=pk).only("taxonomy_version_id").order_by(), pk=int
)


def _lock(assignment: Assignment) -> Assignment:
    """The assignment row, locked, read with its annotation (if any), the two facts of the lock rule
    (`round_closed`, `open_recheck`) and its trace's step count (for the evidence check) in one query.

    The read keeps to `assignment`'s project and annotator, so an unread reference to someone's assignment
    (`ProjectAccess.assignment_to_lock`) names nothing of anyone else's: Assignment.DoesNotExist.

    Only the assignment row is locked. On PostgreSQL a save that waited for the lock still sees the
    annotation as it was when its statement started; the conditional UPDATE in `_store` (and the unique
    annotation per assignment) then refuse it as stale, exactly as where row locks do not exist (SQLite)."""
    found = _LOCK.objects(pk=assignment.pk, project=assignment.project_id, annotator=assignment.annotator_id)
    if not found:
        raise Assignment.DoesNotExist("Assignment matching query does not exist.")
    locked = found[0]
    locked.project = assignment.project
    return locked


def _annotation_of(assignment: Assignment) -> Annotation | None:
    try:
        return assignment.annotation
    except Annotation.DoesNotExist:
        return None


def _locked_now(assignment: Assignment) -> bool:
    """`is_locked` from the facts `_lock` read (the assignment is submitted)."""
    return bool(assignment.round_closed and not assignment.open_recheck)


def _action(before: dict | None, submit: bool) -> str:
    if not submit:
        return "create" if before is None else "draft"
    return "edit" if before and before["status"] == Annotation.Status.SUBMITTED else "submit"


def _store(
    assignment: Assignment,
    annotation: Annotation | None,
    payload: AnnotationPayload,
    modes: dict[str, FailureMode],
    current: int,
    *,
    submit: bool,
) -> tuple[Annotation, list[LabelApplication]]:
    """Write the annotation row and replace its labels; returns both as stored, without reading them
    back (the conditional UPDATE ran under the assignment's row lock, so the row is what it wrote)."""
    now = timezone.now()
    multi = assignment.project.taxonomy_version.is_multi_label
    fields = {
        "status": Annotation.Status.SUBMITTED if submit else Annotation.Status.DRAFT,
        "no_failure": payload.no_failure,
        "ambiguous": payload.ambiguous,
        "confidence": payload.confidence,
        "note": payload.note,
    }
    if submit:
        fields["submitted_at"] = now
    if annotation is None:
        annotation = Annotation(
            assignment=assignment, version=1, time_spent_seconds=payload.elapsed_seconds, **fields
        )
        prepared.insert([annotation])
    else:
        # The conditional UPDATE is the concurrency guard where row locks do not exist (SQLite).
        changed = prepared.update(
            Annotation,
            annotation.pk,
            where={"version": current},
            add={"version": 1, "time_spent_seconds": payload.elapsed_seconds},
            updated_at=now,
            **fields,
        )
        if not changed:
            version = Annotation.objects.filter(pk=annotation.pk).values_list("version", flat=True).first()
            raise StaleAnnotation(version or 0, payload)
        for name, value in fields.items():
            setattr(annotation, name, value)
        annotation.version = current + 1
        annotation.time_spent_seconds += payload.elapsed_seconds
        annotation.updated_at = now
        prepared.delete(LabelApplication, annotation=annotation.pk)
    labels = [
        LabelApplication(
            annotation=annotation,
            mode=modes[label.mode],
            primary=label.primary and not multi,
            evidence=[item.as_json() for item in label.evidence],
            note=label.note,
        )
        for label in payload.labels
    ]
    prepared.insert(labels)
    labels.sort(key=_label_order)
    _hold_labels(annotation, labels)
    return annotation, labels


def _hold_labels(annotation: Annotation, labels: list[LabelApplication]) -> None:
    """Leave the stored labels on the annotation as prefetch_related("labels") would: its caller reads
    `annotation.labels.all()` from memory; anything narrower (a filter) queries as usual."""
    queryset = annotation.labels.all()
    queryset._result_cache = labels
    queryset._prefetch_done = True
    annotation._prefetched_objects_cache = {"labels": queryset}


def do_skip(assignment: Assignment, reason: str, *, actor) -> Assignment:
    """Set the assignment aside with a reason (kept, shown in the queue; it can be reopened by saving).

    Preconditions: as for do_save_draft; a submitted annotation cannot be skipped. Locks the assignment
    row. The draft, if any, is kept. Calls on_trace_annotations_changed after commit, since a skip
    changes which annotations of the trace will ever arrive.
    """
    reason = (reason or "").strip()
    if not reason:
        raise AnnotationInvalid("Say why you skip this trace (it helps the project owner fix the data)")
    if len(reason) > 2_000:
        raise AnnotationInvalid("Keep the reason under 2,000 characters")
    project = assignment.project
    with transaction.atomic():
        assignment = _lock(assignment)
        if assignment.status == Assignment.Status.SUBMITTED:
            raise AnnotationInvalid("This trace is submitted; change the annotation instead of skipping it")
        annotation, _ = Annotation.objects.get_or_create(assignment=assignment, defaults={"version": 1})
        before = snapshot(annotation, assignment)
        Assignment.objects.filter(pk=assignment.pk).update(
            status=Assignment.Status.SKIPPED, skip_reason=reason, reserved_until=None
        )
        Annotation.objects.filter(pk=annotation.pk).update(version=F("version") + 1)
        assignment.status, assignment.skip_reason, assignment.reserved_until = (
            Assignment.Status.SKIPPED,
            reason,
            None,
        )
        annotation.refresh_from_db()
        LabelHistory.objects.create(
            annotation=annotation,
            actor=actor,
            action="skip",
            before=before,
            after=snapshot(annotation, assignment),
        )
        if assignment.purpose == Assignment.Purpose.WORK:
            _notify_on_commit(project.pk, assignment.trace_id)
    return assignment


def _notify_on_commit(project_id: int, trace_id: int) -> None:
    # Looked up at commit time (not bound now), so the adjudication code can wrap or replace the hook.
    transaction.on_commit(lambda: on_trace_annotations_changed(project_id, trace_id))


def on_trace_annotations_changed(project_id: int, trace_id: int) -> None:
    """The single hook run after a trace's annotations changed (submit, re-submit, skip) and committed.

    This is where follow-up work plugs in: the adjudication queue (enter the trace once all its required
    annotations are submitted and they disagree) and the debounced agreement report, both enqueued by
    `annotator.services.followups` (cheap: enqueue, do not compute). Do not call them from anywhere else.
    """
    log.debug("annotations changed for trace %s in project %s", trace_id, project_id)
    after_annotations_changed(project_id, [trace_id])
