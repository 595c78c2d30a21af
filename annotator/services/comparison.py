"""What the adjudication queue compares: a trace's submitted annotations as plain values, the
comparison itself, and the gold snapshot kept in history. Read-only (no writes here), shared by the
queue (`annotator.services.adjudication`), the decisions (`annotator.services.gold`) and the pages."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotator.models import AdjudicationItem, Annotation, GoldLabel, Membership, Project, Role
from annotator.raters import fills_overlap_q
from taxonomy.models import FailureMode

Status = AdjudicationItem.Status
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class ComparedLabel:
    code: str
    primary: bool
    evidence: list[dict[str, Any]]
    note: str = ""

    @property
    def steps(self) -> list[int]:
        return [e["step"] for e in self.evidence if isinstance(e, dict) and isinstance(e.get("step"), int)]


@dataclass
class Compared:
    """One submitted annotation as the queue compares it."""

    annotation_id: int
    version: int
    annotator: str
    no_failure: bool
    ambiguous: bool = False
    confidence: int | None = None
    note: str = ""
    labels: dict[str, ComparedLabel] = field(default_factory=dict)
    # Modes this rater gave no value for (an imported source's missing votes): neither chosen nor not
    # chosen, so they neither agree nor disagree with anyone on those modes.
    missing: frozenset[str] = frozenset()

    @property
    def primary(self) -> str | None:
        return next((code for code, label in self.labels.items() if label.primary), None)


@dataclass(frozen=True)
class ModeFacts:
    code: str
    name: str
    fatal: bool
    order: int


@dataclass(frozen=True)
class Comparison:
    agreed: list[str]  # modes every annotation chose, taxonomy order
    disputed: list[str]  # modes some chose and some did not, taxonomy order
    primary_disputed: bool
    severity: int

    @property
    def is_agreement(self) -> bool:
        return not self.disputed and not self.primary_disputed


def mode_facts(project: Project) -> dict[str, ModeFacts]:
    rows = FailureMode.objects.filter(version=project.taxonomy_version_id).values_list(
        "code", "name", "fatal", "order"
    )
    return {code: ModeFacts(code, name, fatal, order) for code, name, fatal, order in rows}


def compare(
    annotations: Sequence[Compared], modes: dict[str, ModeFacts], *, single_primary: bool
) -> Comparison:
    """Agreement is set equality over modes (a "no failure" annotation is the empty set), plus equal
    primaries in single-primary taxonomies. A mode an annotation has no value for (missing) is compared
    among the annotations that have one."""
    union = set().union(*(set(a.labels) for a in annotations))
    common = agreed_modes(annotations)
    order = lambda code: (modes[code].order if code in modes else 10**6, code)  # noqa: E731
    disputed = sorted(union - common, key=order)
    primaries = {a.primary for a in annotations}
    primary_disputed = single_primary and len(primaries) > 1
    fatal = sum(1 for code in disputed if code in modes and modes[code].fatal)
    if primary_disputed and not fatal and any(p in modes and modes[p].fatal for p in primaries):
        fatal = 1
    severity = 100 * fatal + len(disputed) + int(primary_disputed)
    return Comparison(sorted(common, key=order), disputed, primary_disputed, severity)


def agreed_modes(annotations: Sequence[Compared]) -> set[str]:
    """Modes that every annotation with a value for them chose (missing is neither yes nor no)."""
    chosen = set().union(*(set(a.labels) for a in annotations))
    return {code for code in chosen if all(code in a.labels for a in annotations if code not in a.missing)}


def inputs_fingerprint(annotations: Iterable[Compared]) -> str:
    text = ";".join(f"{a.annotation_id}:{a.version}" for a in annotations)
    return hashlib.sha256(text.encode()).hexdigest()


def eligible_annotator_ids(project: Project) -> set[int]:
    """Whose submitted annotations count towards the overlap: active annotator memberships, never LLM
    raters, and imported raters (inactive accounts) only when the project counts imported labels toward the
    overlap (`annotator.raters.fills_overlap_q`); otherwise they are reference raters, in the agreement
    report but never required, compared or turned into gold here."""
    return set(
        Membership.objects.filter(
            fills_overlap_q(project.imported_labels_count_toward_overlap, "user"),
            project=project,
            role=Role.ANNOTATOR,
            active=True,
        ).values_list("user_id", flat=True)
    )


def load_compared(annotations) -> list[Compared]:
    """Compared values for an Annotation queryset, annotator-username order (two queries)."""
    rows = list(
        annotations.select_related("assignment__annotator")
        .prefetch_related("labels__mode")
        .order_by("assignment__annotator__username", "id")
    )
    return [
        Compared(
            annotation_id=a.pk,
            version=a.version,
            annotator=a.assignment.annotator.username,
            no_failure=a.no_failure,
            ambiguous=a.ambiguous,
            confidence=a.confidence,
            note=a.note,
            labels={
                label.mode.code: ComparedLabel(
                    label.mode.code, label.primary, list(label.evidence or []), label.note
                )
                for label in a.labels.all()
            },
            missing=_missing_modes(a.provenance),
        )
        for a in rows
    ]


def _missing_modes(provenance: Any) -> frozenset[str]:
    """The provenance's "missing_modes" (annotator.services.label_import), tolerating any other shape."""
    missing = provenance.get("missing_modes") if isinstance(provenance, dict) else None
    return (
        frozenset(code for code in missing if isinstance(code, str))
        if isinstance(missing, list)
        else frozenset()
    )


def item_annotations(item: AdjudicationItem) -> list[Compared]:
    """The annotations an item compared, as A, B, ... (their stored order)."""
    found = {c.annotation_id: c for c in load_compared(Annotation.objects.filter(pk__in=item.annotation_ids))}
    return [found[pk] for pk in item.annotation_ids if pk in found]


def merged_evidence(labels: Iterable[ComparedLabel]) -> list[dict[str, Any]]:
    """Evidence of one mode from several annotations: each step once, in step order, first quote kept."""
    by_step: dict[int, dict[str, Any]] = {}
    for label in labels:
        for entry in label.evidence:
            if isinstance(entry, dict) and isinstance(entry.get("step"), int):
                by_step.setdefault(entry["step"], dict(entry))
    return [by_step[step] for step in sorted(by_step)]


def gold_snapshot(item_id: int) -> list[dict[str, Any]]:
    return [
        {
            "mode": code,
            "primary": primary,
            "source": source,
            "evidence": evidence,
            "reason_code": reason,
            "note": note,
        }
        for code, primary, source, evidence, reason, note in GoldLabel.objects.filter(item_id=item_id)
        .order_by("mode__order")
        .values_list("mode__code", "primary", "source", "evidence", "reason_code", "note")
    ]


def is_started(item: AdjudicationItem) -> bool:
    return item.claimed_by_id is not None or item.status == Status.RESOLVED
