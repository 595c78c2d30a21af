"""Bring in labels that already exist (a spreadsheet, MAST's human labels, Who&When's attributions).

Imported labels become submitted annotations by (usually inactive) imported users, so agreement can be
computed on them at once. All or nothing; an existing different annotation is never overwritten.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotator.models import Annotation, Assignment, LabelApplication, LabelHistory, Membership, Project, Role
from annotator.services.attribution import attribution_conflicts
from taxonomy.models import FailureMode
from taxonomy.schema import resolve_mode
from taxonomy.services import version_to_spec
from traces.importers.records import AnnotationRecord
from traces.models import Trace


class LabelImportError(ValueError):
    """Names the trace and annotator (and line when known) so the file can be fixed."""


@dataclass
class LabelImportResult:
    created: int = 0
    unchanged: int = 0
    labels: int = 0
    users_created: list[str] = field(default_factory=list)
    ignored_modes: Counter = field(default_factory=Counter)
    # Records whose attributed agent is not the agent of the attributed step (annotator.services.attribution).
    attribution_conflicts: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "annotations_created": self.created,
            "annotations_unchanged": self.unchanged,
            "labels": self.labels,
            "users_created": self.users_created,
            "ignored_modes": dict(self.ignored_modes),
            "attribution_conflicts": self.attribution_conflicts,
        }


@dataclass(slots=True)
class IncomingAnnotation:
    trace: Trace
    record: AnnotationRecord
    confidence: int | None = None
    where: str = ""  # "file.jsonl, line 3" for error messages


class _ModeResolver:
    def __init__(self, project: Project):
        version = project.taxonomy_version
        self.spec = version_to_spec(version)
        self.modes = {mode.code: mode for mode in FailureMode.objects.filter(version=version)}

    def __call__(self, name: str) -> FailureMode | None:
        spec_mode = resolve_mode(self.spec, name)
        return self.modes.get(spec_mode.code) if spec_mode else None


def imported_username(name: str) -> str:
    cleaned = re.sub(r"[^\w.@+-]+", "-", name.strip()).strip("-")[:140]
    return cleaned or "imported"


@transaction.atomic
def do_import_annotations(
    project: Project,
    incoming: Iterable[IncomingAnnotation],
    *,
    ignore_unknown_modes: bool = False,
    actor=None,
) -> LabelImportResult:
    """Store each incoming annotation as a submitted annotation; raises LabelImportError (nothing saved)."""
    resolve = _ModeResolver(project)
    result = LabelImportResult()
    users: dict[str, object] = {}
    touched: set[int] = set()
    for item in incoming:
        user = users.get(item.record.annotator)
        if user is None:
            user = users[item.record.annotator] = _imported_user(project, item.record.annotator, result)
        labels = _resolve_labels(item, resolve, ignore_unknown_modes, result)
        result.attribution_conflicts += attribution_conflicts(item.trace, item.record.labels, item.where)
        # Provenance for the dataset card (annotator.services.provenance): the labels left out here.
        ignored = [
            label.mode.splitlines()[0][:80] for label in item.record.labels if resolve(label.mode) is None
        ]
        _store(project, item, user, labels, result, actor, provenance={"ignored_labels": ignored})
        touched.add(item.trace.pk)
    if result.created:
        # Imported annotations count for the adjudication queue and the agreement report, like submits.
        from annotator.services.followups import after_annotations_changed

        transaction.on_commit(lambda: after_annotations_changed(project.pk, touched))
    return result


def _imported_user(project: Project, name: str, result: LabelImportResult):
    User = get_user_model()
    username = imported_username(name)
    user = User.objects.filter(username=username).first()
    if user is None:
        user = User(username=username, is_active=False)
        user.set_unusable_password()
        user.save()
        result.users_created.append(username)
    Membership.objects.get_or_create(project=project, user=user, role=Role.ANNOTATOR)
    return user


def _resolve_labels(
    item: IncomingAnnotation, resolve, ignore_unknown: bool, result: LabelImportResult
) -> list:
    labels = []
    seen: set[int] = set()
    for label in item.record.labels:
        mode = resolve(label.mode)
        if mode is None:
            if ignore_unknown:
                result.ignored_modes[label.mode.splitlines()[0][:80]] += 1
                continue
            raise LabelImportError(
                f"{item.where or item.trace.external_id}: annotator {item.record.annotator!r} uses mode "
                f"{label.mode.splitlines()[0]!r}, which is not in taxonomy "
                f"{resolve.spec.slug!r} (pass --ignore-unknown-modes to skip such labels)"
            )
        for step in label.steps:
            if not 0 <= step < item.trace.step_count:
                raise LabelImportError(
                    f"{item.where or item.trace.external_id}: evidence step {step} does not exist "
                    f"(the trace has {item.trace.step_count} steps, numbered from 0)"
                )
        if mode.pk in seen:
            continue
        seen.add(mode.pk)
        labels.append((mode, label))
    return labels


def _snapshot(no_failure: bool, ambiguous: bool, note: str, labels: list[tuple]) -> dict:
    return {
        "no_failure": no_failure,
        "ambiguous": ambiguous,
        "note": note,
        "labels": sorted(
            (
                {
                    "mode": mode.code,
                    "primary": label.primary,
                    "steps": sorted(label.steps),
                    "note": label.note,
                }
                for mode, label in labels
            ),
            key=lambda entry: entry["mode"],
        ),
    }


def _existing_snapshot(annotation: Annotation) -> dict:
    return {
        "no_failure": annotation.no_failure,
        "ambiguous": annotation.ambiguous,
        "note": annotation.note,
        "labels": sorted(
            (
                {
                    "mode": la.mode.code,
                    "primary": la.primary,
                    "steps": sorted(la.evidence_steps),
                    "note": la.note,
                }
                for la in annotation.labels.select_related("mode")
            ),
            key=lambda entry: entry["mode"],
        ),
    }


def _store(
    project,
    item: IncomingAnnotation,
    user,
    labels,
    result: LabelImportResult,
    actor,
    *,
    action: str = "imported",
    provenance: dict | None = None,
) -> Annotation:
    """Also the LLM rater's way to store its labels (annotator.services.llm_runs, action "llm")."""
    record = item.record
    no_failure = record.no_failure or not labels
    snapshot = _snapshot(no_failure, record.ambiguous, record.note, labels)
    assignment, _ = Assignment.objects.get_or_create(project=project, trace=item.trace, annotator=user)
    existing = Annotation.objects.filter(assignment=assignment).first()
    if existing is not None:
        if existing.status == Annotation.Status.SUBMITTED and _existing_snapshot(existing) == snapshot:
            result.unchanged += 1
            return existing
        raise LabelImportError(
            f"{item.where or item.trace.external_id}: {user.username} already has a different annotation of "
            f"trace {item.trace.external_id!r}; it is never overwritten by an import (nothing was imported)"
        )
    now = timezone.now()
    annotation = Annotation.objects.create(
        assignment=assignment,
        status=Annotation.Status.SUBMITTED,
        no_failure=no_failure,
        ambiguous=record.ambiguous,
        confidence=item.confidence,
        note=record.note,
        submitted_at=now,
    )
    LabelApplication.objects.bulk_create(
        LabelApplication(
            annotation=annotation,
            mode=mode,
            primary=label.primary,
            evidence=[{"step": step} for step in label.steps],
            note=label.note,
            attribution=label.attribution or {},
        )
        for mode, label in labels
    )
    Assignment.objects.filter(pk=assignment.pk).update(
        status=Assignment.Status.SUBMITTED, reserved_until=None
    )
    LabelHistory.objects.create(
        annotation=annotation,
        actor=actor,
        action=action,
        before=None,
        after={**snapshot, **(provenance or {})},
    )
    result.created += 1
    result.labels += len(labels)
    return annotation
