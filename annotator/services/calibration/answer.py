"""The gold answer an annotator sees after submitting a calibration item, beside their own, per mode, with
the adjudicator's reasons. Never before submitting (blind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotator.models import Assignment, GoldHistory, GoldLabel, LabelApplication
from annotator.services.calibration.serving import CAL, gold_items
from annotator.services.gold import REASON_CODES
from taxonomy.models import FailureMode

__all__ = ["Feedback", "FeedbackRow", "feedback", "feedback_available"]


@dataclass(frozen=True)
class FeedbackRow:
    code: str
    name: str
    yours: bool
    gold: bool
    your_steps: tuple[int, ...]
    gold_steps: tuple[int, ...]
    source: str  # how the gold was reached ("All annotators agreed", "Adjudicator's own decision", ...)
    reason_code: str
    reason: str  # the reason code in words
    note: str

    @property
    def match(self) -> bool:
        return self.yours == self.gold


@dataclass(frozen=True)
class Feedback:
    rows: tuple[FeedbackRow, ...]
    note: str = ""  # the adjudicator's note on the whole decision
    decided_by: str = ""
    matches: int = 0
    modes: int = 0


def feedback_available(assignment: Assignment) -> bool:
    return assignment.purpose == CAL and assignment.status == Assignment.Status.SUBMITTED


def feedback(assignment: Assignment) -> Feedback | None:
    """The gold answer beside the annotator's own, per mode, with the adjudicator's reasons; None unless
    `assignment` is a submitted calibration slot (the gold never shows before submitting: blind)."""
    if not feedback_available(assignment):
        return None
    project = assignment.project
    item = gold_items(project).filter(trace_id=assignment.trace_id).first()
    if item is None:
        return Feedback(rows=(), note="This trace no longer has gold labels (its adjudication was reopened).")
    modes = list(FailureMode.objects.filter(version=project.taxonomy_version).order_by("order", "id"))
    gold = {label.mode_id: label for label in GoldLabel.objects.filter(item=item)}
    mine = {
        label.mode_id: label
        for label in LabelApplication.objects.filter(
            annotation__assignment=assignment, annotation__status="submitted"
        )
    }
    decision = (
        GoldHistory.objects.filter(item=item, action=GoldHistory.Action.DECIDED)
        .order_by("-at", "-id")
        .select_related("actor")
        .first()
    )
    decided = {d.get("mode"): d for d in (decision.after or {}).get("decisions", [])} if decision else {}
    sources = dict(GoldLabel.Source.choices)
    rows = []
    for mode in modes:
        g, y = gold.get(mode.pk), mine.get(mode.pk)
        d = decided.get(mode.code) or {}
        if g is None and y is None and not d:
            continue
        code = (g.reason_code if g else "") or d.get("reason_code", "")
        if g is not None:
            source = sources.get(g.source, g.source)
        elif d:
            source = "Adjudicator decided: not present"
        else:
            source = "All annotators agreed: not present"
        rows.append(
            FeedbackRow(
                code=mode.code,
                name=mode.name,
                yours=y is not None,
                gold=g is not None,
                your_steps=tuple(_steps(y.evidence if y else [])),
                gold_steps=tuple(_steps(g.evidence if g else [])),
                source=source,
                reason_code=code,
                reason=REASON_CODES.get(code, ""),
                note=(g.note if g else "") or d.get("note", ""),
            )
        )
    n_modes = len(modes)
    mismatches = sum(1 for row in rows if not row.match)
    return Feedback(
        rows=tuple(rows),
        note=decision.note if decision else "",
        decided_by=decision.actor.get_username() if decision and decision.actor else "",
        matches=n_modes - mismatches,
        modes=n_modes,
    )


def _steps(evidence: list[Any]) -> list[int]:
    return sorted({e["step"] for e in evidence if isinstance(e, dict) and isinstance(e.get("step"), int)})
