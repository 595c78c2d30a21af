"""An adjudicator's decision on one queued trace, and the gold labels it produces.

A decision names, for every disputed mode, whose answer to take -- annotator A's, B's (or C's, ...),
or the adjudicator's own ("present" with optional evidence steps, or "absent") -- with a reason code
from a small fixed list and an optional note. In single-primary taxonomies it also names the gold
primary label. Modes every annotator chose carry over as gold with source "agreed".

Gold is a separate layer: raw annotations are never changed. GoldLabel rows are the gold label set
(modes present); a "not present" decision leaves no row, so the full decision, with its reasons, is
kept in the GoldHistory row of the decision. Accepting annotator C or later is stored as source
"adjudicator" (the model names A and B only); the history says whose answer it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotator.models import AdjudicationItem, GoldHistory, GoldLabel
from annotator.services.adjudication import AdjudicationConflict, AdjudicationInvalid
from annotator.services.comparison import (
    LETTERS,
    Compared,
    agreed_modes,
    gold_snapshot,
    inputs_fingerprint,
    item_annotations,
    merged_evidence,
)
from annotator.services.followups import schedule_triage
from taxonomy.models import FailureMode
from traces.models import Trace

REASON_CODES = {
    "evidence": "The trace shows it (evidence cited)",
    "no_evidence": "Nothing in the trace supports it",
    "guideline": "The guidelines decide it",
    "definition": "The mode's definition decides it",
    "misread": "An annotator misread the trace",
    "other": "Other (say why in the note)",
}
OWN_CHOICES = ("present", "absent")
MAX_NOTE = 5_000
MAX_STEPS = 50


@dataclass(frozen=True)
class ModeDecision:
    mode: str
    choice: str  # "a", "b", ... (accept that annotator's answer) or "present" / "absent" (own)
    steps: tuple[int, ...] = ()
    reason_code: str = ""
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "choice": self.choice,
            "steps": list(self.steps),
            "reason_code": self.reason_code,
            "note": self.note,
        }


@dataclass(frozen=True)
class Decision:
    modes: tuple[ModeDecision, ...] = ()
    primary: str = ""  # gold primary mode code (single-primary taxonomies); "" = none
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "decisions": [d.as_json() for d in self.modes],
            "primary": self.primary or None,
            "note": self.note,
        }

    def for_mode(self, code: str) -> ModeDecision | None:
        return next((d for d in self.modes if d.mode == code), None)


def _steps(value: Any, code: str) -> tuple[int, ...]:
    if isinstance(value, str):
        value = [part for part in value.replace(";", ",").replace(" ", ",").split(",") if part]
    if not isinstance(value, list | tuple):
        raise AdjudicationInvalid(f"{code}: steps must be a list of step numbers")
    try:
        steps = tuple(sorted({int(v) for v in value}))
    except (TypeError, ValueError, OverflowError):
        raise AdjudicationInvalid(f"{code}: steps must be whole numbers, e.g. 3, 7") from None
    if len(steps) > MAX_STEPS:
        raise AdjudicationInvalid(f"{code}: at most {MAX_STEPS} evidence steps")
    return steps


def decision_from_form(item: AdjudicationItem, data: Mapping[str, Any]) -> Decision:
    """The page's form: `choice-<code>`, `steps-<code>`, `reason-<code>`, `note-<code>` per disputed mode,
    plus `primary` and `note`. Shape only; `do_decide` validates the content."""
    modes = []
    for code in item.disputed:
        modes.append(
            ModeDecision(
                mode=code,
                choice=str(data.get(f"choice-{code}", "")).strip(),
                steps=_steps(str(data.get(f"steps-{code}", "")), code),
                reason_code=str(data.get(f"reason-{code}", "")).strip(),
                note=str(data.get(f"note-{code}", "")).strip()[:MAX_NOTE],
            )
        )
    return Decision(
        tuple(modes), str(data.get("primary", "") or "").strip(), str(data.get("note", "")).strip()[:MAX_NOTE]
    )


def decision_from_json(data: Mapping[str, Any]) -> Decision:
    """The API's body: {"decisions": [{"mode", "choice", "steps", "reason_code", "note"}], "primary", "note"}."""
    raw = data.get("decisions", [])
    if not isinstance(raw, list) or not all(isinstance(d, dict) for d in raw):
        raise AdjudicationInvalid("decisions must be a list of objects")
    modes = tuple(
        ModeDecision(
            mode=str(d.get("mode", "")),
            choice=str(d.get("choice", "")).strip().lower(),
            steps=_steps(d.get("steps") or [], str(d.get("mode", ""))),
            reason_code=str(d.get("reason_code", "")).strip(),
            note=str(d.get("note", "") or "").strip()[:MAX_NOTE],
        )
        for d in raw
    )
    return Decision(
        modes, str(data.get("primary") or "").strip(), str(data.get("note", "") or "").strip()[:MAX_NOTE]
    )


def _source(index: int) -> str:
    return {0: GoldLabel.Source.ACCEPT_A, 1: GoldLabel.Source.ACCEPT_B}.get(
        index, GoldLabel.Source.ADJUDICATOR
    )


def resolve_gold(
    item: AdjudicationItem,
    annotations: list[Compared],
    decision: Decision,
    *,
    single_primary: bool,
    step_count: int,
) -> dict[str, dict[str, Any]]:
    """The gold label set (mode code -> GoldLabel fields) the decision yields; AdjudicationInvalid lists
    every problem at once."""
    errors: list[str] = []
    disputed = list(item.disputed)
    decided = {d.mode: d for d in decision.modes}
    errors += [f"{code} is not disputed on this trace" for code in decided if code not in disputed]
    common = agreed_modes(annotations)  # missing votes neither agree nor disagree
    gold: dict[str, dict[str, Any]] = {
        code: {
            "source": GoldLabel.Source.AGREED,
            "evidence": merged_evidence(a.labels[code] for a in annotations if code in a.labels),
            "reason_code": "",
            "note": "",
        }
        for code in common
        if code not in disputed
    }
    letters = [letter.lower() for letter in LETTERS[: len(annotations)]]
    for code in disputed:
        d = decided.get(code)
        if d is None or not d.choice:
            errors.append(f"Decide {code}: accept an annotator's answer or give your own")
            continue
        if d.reason_code not in REASON_CODES:
            errors.append(f"{code}: choose a reason")
        elif d.reason_code == "other" and not d.note:
            errors.append(f"{code}: say why in the note (reason “other”)")
        if d.choice in letters:
            k = letters.index(d.choice)
            label = annotations[k].labels.get(code)
            if label is not None:
                gold[code] = {
                    "source": _source(k),
                    "evidence": list(label.evidence),
                    "reason_code": d.reason_code,
                    "note": d.note,
                }
        elif d.choice == "present":
            bad = [s for s in d.steps if not 0 <= s < step_count]
            if bad:
                errors.append(
                    f"{code}: step {bad[0]} is not in this trace (it has {step_count} steps, from 0)"
                )
            gold[code] = {
                "source": GoldLabel.Source.ADJUDICATOR,
                "evidence": [{"step": s} for s in d.steps],
                "reason_code": d.reason_code,
                "note": d.note,
            }
        elif d.choice != "absent":
            errors.append(
                f"{code}: “{d.choice}” is not a choice (use {', '.join(letters)}, present or absent)"
            )
    primary = decision.primary
    if single_primary and gold:
        if not primary and not item.primary_disputed and annotations:
            primary = annotations[0].primary or ""
        if not primary:
            errors.append("Choose the primary failure mode of the gold labels")
        elif primary not in gold:
            errors.append(f"The primary label {primary} must be one of the gold labels")
    for code, fields in gold.items():
        fields["primary"] = single_primary and code == primary
    if errors:
        raise AdjudicationInvalid(errors)
    return gold


def do_decide(item: AdjudicationItem, decision: Decision, *, actor, base_version: int) -> AdjudicationItem:
    """Resolve an open item with `decision`, as `actor`, if nobody changed it since `base_version`.

    Preconditions: `actor` may adjudicate in the item's project (checked by the caller through
    annotator.access). Locks the item row (PostgreSQL); the write itself is a conditional UPDATE on
    the version, so on SQLite too exactly one of two concurrent saves wins. Raises AdjudicationConflict
    (stale version, another adjudicator's live claim, or annotations that changed under the form) and
    AdjudicationInvalid; in both cases nothing changed. An unclaimed item is claimed by the save."""
    now = timezone.now()
    with transaction.atomic():
        current = (
            AdjudicationItem.objects.select_for_update(of=("self",))
            .select_related("project__taxonomy_version")
            .get(pk=item.pk)
        )
        _check_can_decide(current, actor, base_version, now)
        annotations = item_annotations(current)
        if inputs_fingerprint(annotations) != current.inputs_fingerprint:
            raise AdjudicationConflict("An annotation of this trace changed; reload to see it", current)
        step_count = (
            Trace.objects.filter(pk=current.trace_id).values_list("step_count", flat=True).first() or 0
        )
        single = not current.project.taxonomy_version.is_multi_label
        gold = resolve_gold(current, annotations, decision, single_primary=single, step_count=step_count)
        won = AdjudicationItem.objects.filter(
            pk=current.pk, version=base_version, status=AdjudicationItem.Status.OPEN
        ).update(
            status=AdjudicationItem.Status.RESOLVED,
            version=F("version") + 1,
            resolved_by=actor,
            resolved_at=now,
            note=decision.note,
            claimed_by=actor,
            claimed_until=now,  # the claim ends with the decision; claimed_by stays (adjudication started)
            updated_at=now,
        )
        if not won:
            current.refresh_from_db()
            raise AdjudicationConflict(_stale_message(current), current)
        before = gold_snapshot(current.pk)
        GoldLabel.objects.filter(item=current).delete()
        mode_ids = dict(
            FailureMode.objects.filter(
                version=current.project.taxonomy_version_id, code__in=gold
            ).values_list("code", "id")
        )
        GoldLabel.objects.bulk_create(
            GoldLabel(item=current, mode_id=mode_ids[code], decided_by=actor, **fields)
            for code, fields in gold.items()
        )
        annotators = {letter: a.annotator for letter, a in zip(LETTERS.lower(), annotations, strict=False)}
        GoldHistory.objects.create(
            project_id=current.project_id,
            trace_id=current.trace_id,
            item=current,
            actor=actor,
            action=GoldHistory.Action.DECIDED,
            before=before,
            after={"gold": gold_snapshot(current.pk), **decision.as_json(), "annotators": annotators},
            note=decision.note,
        )
        # Gold changed: the LLM triage ranks that compare the model with gold follow (debounced).
        transaction.on_commit(lambda: schedule_triage(current.project_id))
    current.refresh_from_db()
    return current


def _check_can_decide(current: AdjudicationItem, actor, base_version: int, now) -> None:
    if current.version != base_version:
        raise AdjudicationConflict(_stale_message(current), current)
    if current.status != AdjudicationItem.Status.OPEN:
        raise AdjudicationConflict(f"This item is already {current.get_status_display().lower()}", current)
    held_by_other = current.claimed_by_id not in (None, actor.pk)
    if held_by_other and current.claimed_until and current.claimed_until > now:
        raise AdjudicationConflict(
            f"{current.claimed_by.username} is deciding this item (claimed until {current.claimed_until:%H:%M} UTC)",
            current,
        )


def _stale_message(current: AdjudicationItem) -> str:
    if current.status == AdjudicationItem.Status.RESOLVED and current.resolved_by_id:
        who = current.resolved_by.username if current.resolved_by else "another adjudicator"
        return f"{who} decided this item while you were working on it. Your decisions are kept below; nothing was saved."
    return (
        "This item changed since you opened it (someone claimed, decided or reopened it). Nothing was saved."
    )
