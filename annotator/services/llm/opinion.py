"""What an annotator may see of the LLM raters' labels: nothing, until they have submitted their own.

Blind annotation is the point of measuring the model like a human: an annotator who saw the model's
labels first would agree with it more, and the kappa would flatter the model. So the rule, kept only here
(the annotate page's template tag and the API endpoint both call `llm_opinions_for`):

- the project must switch it on (`LLMConfig.show_to_annotators`, off by default);
- the assignment (the annotator's own; access is checked by the caller through annotator.access) must be
  submitted, with a submitted annotation.

Owners and adjudicators see every annotation, LLM ones included, on the review pages as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotator.models import Annotation, Assignment, LLMConfig


@dataclass(frozen=True)
class OpinionLabel:
    code: str
    name: str
    primary: bool
    steps: tuple[int, ...]
    reason: str


@dataclass(frozen=True)
class Opinion:
    rater: str
    note: str
    no_failure: bool
    labels: tuple[OpinionLabel, ...]


def may_see_llm_labels(assignment: Assignment) -> bool:
    """The blindness rule (see the module docstring)."""
    if assignment.status != Assignment.Status.SUBMITTED:
        return False
    submitted = Annotation.objects.filter(assignment=assignment, status=Annotation.Status.SUBMITTED).exists()
    if not submitted:
        return False
    return LLMConfig.objects.filter(project_id=assignment.project_id, show_to_annotators=True).exists()


def llm_opinions_for(assignment: Assignment) -> list[Opinion] | None:
    """The LLM raters' labels of the assignment's trace, or None when the annotator may not see them yet."""
    if not may_see_llm_labels(assignment):
        return None
    annotations = (
        Annotation.objects.llm()
        .filter(
            assignment__project_id=assignment.project_id,
            assignment__trace_id=assignment.trace_id,
            status=Annotation.Status.SUBMITTED,
        )
        .select_related("assignment__annotator")
        .prefetch_related("labels__mode")
        .order_by("assignment__annotator__username")
    )
    return [
        Opinion(
            rater=annotation.assignment.annotator.username,
            note=annotation.note,
            no_failure=annotation.no_failure,
            labels=tuple(
                OpinionLabel(
                    label.mode.code, label.mode.name, label.primary, tuple(label.evidence_steps), label.note
                )
                for label in annotation.labels.all()
            ),
        )
        for annotation in annotations
    ]
