"""The lock rule: when a submitted annotation can no longer change.

A submitted annotation is editable until its trace's round closes: once the trace has an AdjudicationItem (its
required annotations are all in, whether they agree or not), its submitted annotations are frozen, unless a
re-check (codebook evolution) asks the annotator to look again. The rule must not depend on the item's status:
a lock that came only with a disagreement would tell a blind annotator that the other annotator disagreed.
The annotation verbs (`annotator.services.annotations`), the queue and the API all ask it here.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from annotator.models import AdjudicationItem, Assignment, ModeRecheck

LOCKED_MESSAGE = (
    "Every required annotation of this trace is in (agreement and adjudication work from them), "
    "so your submitted annotation can no longer change"
)


def round_closed() -> Exists:
    return Exists(AdjudicationItem.objects.filter(project=OuterRef("project_id"), trace=OuterRef("trace_id")))


def open_recheck() -> Exists:
    return Exists(ModeRecheck.objects.filter(annotation__assignment=OuterRef("pk"), resolved_at__isnull=True))


def locked_expression() -> Exists:
    """The lock rule as an expression on Assignment rows (the queue annotates its list with it): the
    trace's round has closed (it has an adjudication item, in any status, so nothing tells who disagreed)
    and no re-check asks this annotator to look again (codebook evolution). Only submitted slots lock."""
    return round_closed() & ~open_recheck()


def is_locked(assignment: Assignment) -> bool:
    """True when the assignment's annotation is submitted and frozen (`locked_expression`). Depends on
    nothing the other annotators chose."""
    if assignment.status != Assignment.Status.SUBMITTED:
        return False
    return bool(
        Assignment.objects.filter(pk=assignment.pk)
        .annotate(locked=locked_expression())
        .values_list("locked", flat=True)
        .first()
    )
