"""Bring in labels that already exist (a spreadsheet, MAST's human labels, Who&When's attributions).

Imported labels become submitted annotations by imported raters, so agreement can be computed on them at
once. An imported rater is namespaced by its source (the dataset or file), inactive, and never receives work;
a name in a file never becomes a real account unless a staff member maps it explicitly (`rater_map`).
Missing is missing: an annotation exists only where the rater gave a value for at least one mode of the
project's taxonomy (a label in it, "no failure", or per-mode votes not all left out), and "no failure" only
where the rater said so. A record whose labels were all left out (modes the taxonomy lacks, with
--ignore-unknown-modes), or that holds only a note, is "nothing usable": counted, never stored, because an
annotation without labels reads as "every mode not chosen". Votes the source left out stay missing per mode.
All or nothing; an existing different annotation is never overwritten.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotator.models import Annotation, Assignment, LabelApplication, LabelHistory, Membership, Project, Role
from annotator.raters import get_imported_rater, rater_source
from annotator.services.assignment import do_assign
from annotator.services.attribution import attribution_conflicts
from annotator.services.followups import after_annotations_changed
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
    # Records with nothing usable (no label in the taxonomy, no "no failure", every vote left out): no
    # annotation is made for them.
    empty: int = 0
    # Votes the source left out (MAST's NaN), kept as missing on the annotation, per mode.
    missing_votes: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {
            "annotations_created": self.created,
            "annotations_unchanged": self.unchanged,
            "labels": self.labels,
            "users_created": self.users_created,
            "ignored_modes": dict(self.ignored_modes),
            "attribution_conflicts": self.attribution_conflicts,
            "empty_records": self.empty,
            "missing_votes": dict(self.missing_votes),
        }


@dataclass(slots=True)
class IncomingAnnotation:
    trace: Trace
    record: AnnotationRecord
    confidence: int | None = None
    where: str = ""  # "file.jsonl, line 3" for error messages
    source: str = ""  # the dataset or file the labels came from: the namespace of its raters
    # The modes a per-mode-vote source (MAST's file) voted yes or no on for this trace, as the source names
    # them; None for a list of labels (JSONL, Who&When), which chooses among every mode of the taxonomy.
    # The taxonomy's other modes are missing for this rater, never "not chosen" (see `voted_modes`).
    voted: tuple[str, ...] | None = None


class _ModeResolver:
    def __init__(self, project: Project):
        version = project.taxonomy_version
        self.spec = version_to_spec(version)
        self.modes = {mode.code: mode for mode in FailureMode.objects.filter(version=version)}

    def __call__(self, name: str) -> FailureMode | None:
        spec_mode = resolve_mode(self.spec, name)
        return self.modes.get(spec_mode.code) if spec_mode else None


# Label formats whose records vote yes or no on each mode the trace lists (its `failure_modes`).
PER_MODE_VOTE_FORMATS = frozenset({"mast_labelled"})


def voted_modes(fmt: str, trace_data: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """The modes a per-mode-vote file voted on for a trace: the trace's `failure_modes` (its metadata as
    parsed, or its answer key as stored); None for formats that give a list of labels."""
    if fmt not in PER_MODE_VOTE_FORMATS:
        return None
    modes = (trace_data or {}).get("failure_modes")
    return tuple(m for m in modes if isinstance(m, str)) if isinstance(modes, list) else ()


def parse_rater_map(pairs: Iterable[str]) -> dict[str, str]:
    """``["a1=alice", ...]`` -> ``{"a1": "alice"}``; raises LabelImportError naming a malformed pair."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        name, sep, username = pair.partition("=")
        if not sep or not name.strip() or not username.strip():
            raise LabelImportError(f"--map-rater {pair!r}: expected NAME=USERNAME, e.g. a1=alice")
        mapping[name.strip()] = username.strip()
    return mapping


@transaction.atomic
def do_import_annotations(
    project: Project,
    incoming: Iterable[IncomingAnnotation],
    *,
    ignore_unknown_modes: bool = False,
    actor=None,
    rater_map: Mapping[str, str] | None = None,
) -> LabelImportResult:
    """Store each incoming annotation as a submitted annotation; raises LabelImportError (nothing saved).

    When the project counts imported labels toward the overlap, the work is re-planned (`do_assign`): the
    people's untouched slots on traces the imported raters now fill go back.

    Only traces of the project take labels. `rater_map` (name in the file -> username) attributes a rater's
    labels to a real account, which then joins the project as an annotator; only staff (or the operator at
    the command line, `actor` None) may map."""
    resolve = _ModeResolver(project)
    result = LabelImportResult()
    mapped = _mapped_users(rater_map or {}, actor)
    users: dict[tuple[str, str], object] = {}
    touched: set[int] = set()
    items = list(incoming)
    _check_in_project(project, items)
    for item in items:
        labels, unknown = _resolve_labels(item, resolve, ignore_unknown_modes, result)
        missing = _missing_codes(item, resolve, labels)
        if not _gives_a_value(item, labels, missing, resolve):
            # Nothing usable about this taxonomy: no annotation, which would read as "no mode chosen".
            result.empty += 1
            continue
        result.missing_votes.update(missing)
        key = (item.source, item.record.annotator)
        user = users.get(key)
        if user is None:
            user = users[key] = _rater(project, item, mapped, result)
        result.attribution_conflicts += attribution_conflicts(item.trace, item.record.labels, item.where)
        provenance = {
            "source": item.source or rater_source(item.where or "imported"),
            **({"missing_modes": missing} if missing else {}),
            **({"unknown_labels": unknown} if unknown else {}),
            # For the dataset card (annotator.services.provenance): the labels left out here.
            "ignored_labels": [
                label.mode.splitlines()[0][:80] for label in item.record.labels if resolve(label.mode) is None
            ],
        }
        _store(project, item, user, labels, result, actor, provenance=provenance)
        touched.add(item.trace.pk)
    if result.created and project.imported_labels_count_toward_overlap:
        # They fill slots here: people's untouched slots on the traces they now fill go back.
        do_assign(project, trim=True)
    if result.created:
        # Imported annotations count for the adjudication queue and the agreement report, like submits.
        transaction.on_commit(lambda: after_annotations_changed(project.pk, touched))
    return result


def _mapped_users(rater_map: Mapping[str, str], actor) -> dict[str, object]:
    if not rater_map:
        return {}
    if actor is not None and not (actor.is_authenticated and actor.is_staff):
        raise LabelImportError("Only staff may map imported raters to accounts (--map-rater)")
    users = {u.username: u for u in get_user_model().objects.filter(username__in=set(rater_map.values()))}
    unknown = sorted(set(rater_map.values()) - set(users))
    if unknown:
        raise LabelImportError(f"--map-rater: no user {', '.join(map(repr, unknown))}")
    return {name: users[username] for name, username in rater_map.items()}


def _rater(project: Project, item: IncomingAnnotation, mapped: Mapping[str, object], result):
    """The mapped account (enrolled as an annotator: a staff member said so), else the imported rater of the
    source, a member so reports list it, but inactive and of kind imported, so it never receives work."""
    user = mapped.get(item.record.annotator)
    if user is None:
        user, created = get_imported_rater(
            item.source or rater_source(item.where or "imported"), item.record.annotator
        )
        if created:
            result.users_created.append(user.username)
    Membership.objects.get_or_create(project=project, user=user, role=Role.ANNOTATOR)
    return user


def _check_in_project(project: Project, items: list[IncomingAnnotation]) -> None:
    """Labels are stored only for the project's traces (the one definition, Trace.objects.in_project)."""
    ids = {item.trace.pk for item in items}
    inside = set(Trace.objects.in_project(project).filter(pk__in=ids).values_list("pk", flat=True))
    outside = ids - inside
    if not outside:
        return
    rows = Trace.objects.filter(pk__in=sorted(outside)[:10]).values_list("external_id", "batch__name")
    where = "; ".join(f"trace {ext!r} is in batch {batch!r}" for ext, batch in rows)
    raise LabelImportError(
        f"{len(outside)} labelled traces are not in project {project.slug} ({where}); add their batches to "
        "the project first (nothing was imported)"
    )


def _missing_codes(item: IncomingAnnotation, resolve, labels: list) -> list[str]:
    """Taxonomy codes the source gave no value for (and no other vote chose): missing, never "not chosen".
    Those are its missing votes (MAST's NaN) and, for a per-mode-vote source, the modes it did not vote on."""
    chosen = {mode.code for mode, _ in labels}
    codes = set()
    for name in item.record.missing:
        mode = resolve(name)
        if mode is not None:
            codes.add(mode.code)
    if item.voted is not None:
        voted = {mode.code for mode in map(resolve, item.voted) if mode is not None}
        codes |= set(resolve.modes) - voted
    return sorted(codes - chosen)


def _gives_a_value(item: IncomingAnnotation, labels: list, missing: list[str], resolve) -> bool:
    """Whether the record says yes or no to at least one mode of the taxonomy: a label in it, or an explicit
    "no failure" or per-mode votes (a source that lists its missing votes voted on the others) that did not
    leave every mode out. Labels only in modes the taxonomy lacks, a note or an "ambiguous" flag alone say
    nothing about its modes."""
    if labels:
        return True
    record = item.record
    if record.no_failure or record.missing or item.voted is not None:
        return bool(set(resolve.modes) - set(missing))
    return False


# Said the command line's way; a page that offers the option as a checkbox names the checkbox instead
# (annotator/views/imports.py).
UNKNOWN_MODE_HINT = "pass --ignore-unknown-modes to skip such labels"


def _resolve_labels(
    item: IncomingAnnotation, resolve, ignore_unknown: bool, result: LabelImportResult
) -> tuple[list, list[dict]]:
    """(labels in the taxonomy, labels in modes it lacks): the latter are listed in the summary and kept on
    the annotation's provenance, never turned into a verdict."""
    labels = []
    unknown: list[dict] = []
    seen: set[int] = set()
    for label in item.record.labels:
        mode = resolve(label.mode)
        if mode is None:
            if ignore_unknown:
                name = label.mode.splitlines()[0][:80]
                result.ignored_modes[name] += 1
                unknown.append({"mode": name, "steps": list(label.steps)})
                continue
            raise LabelImportError(
                f"{item.where or item.trace.external_id}: annotator {item.record.annotator!r} uses mode "
                f"{label.mode.splitlines()[0]!r}, which is not in taxonomy "
                f"{resolve.spec.slug!r} ({UNKNOWN_MODE_HINT})"
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
    primaries = [mode.code for mode, label in labels if label.primary]
    if len(primaries) > 1:
        # An annotation has at most one primary failure (the database holds it to that): say so, not a 500.
        raise LabelImportError(
            f"{item.where or item.trace.external_id}: annotator {item.record.annotator!r} marks "
            f"{len(primaries)} labels primary ({', '.join(primaries)}); at most one label may be primary"
        )
    return labels, unknown


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
    """Also the LLM rater's way to store its labels (annotator.services.llm.runs, action "llm").

    "No failure" is stored only when the record says so: no labels is not a verdict."""
    record = item.record
    no_failure = record.no_failure and not labels
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
        provenance=provenance or {},
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
