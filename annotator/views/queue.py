"""An annotator's queue: progress per batch, "Start next", drafts, skipped and submitted traces, and the
"My assignments" page that lists and opens any of them."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotator.access import LABEL_ROLES, access_project
from annotator.models import Assignment, Project
from annotator.services.assignment import do_claim_next, do_release_assignment
from annotator.services.calibration import calibration_waiting, gate
from annotator.services.evolution import open_rechecks
from annotator.services.locking import locked_expression
from annotator.services.rounds import rounds_of_annotator
from annotator.triage.service import in_queue_order

DONE = (Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED)
SUBMITTED_PER_PAGE = 25
UP_NEXT = 10


def queue_context(request: HttpRequest, project: Project) -> dict[str, Any]:
    """What the project page shows an annotator about their own work (never anyone else's)."""
    mine = Assignment.objects.filter(project=project, annotator=request.user)
    per_batch = list(
        mine.values("trace__batch__name")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status__in=DONE)))
        .order_by("trace__batch__name")
    )
    total = sum(row["total"] for row in per_batch)
    done = sum(row["done"] for row in per_batch)
    rows = mine.select_related("trace", "annotation").only(
        "id",
        "status",
        "skip_reason",
        "updated_at",
        "trace__id",
        "trace__external_id",
        "trace__task",
        "annotation__id",
        "annotation__updated_at",
        "annotation__submitted_at",
    )
    submitted = Paginator(
        rows.filter(status=Assignment.Status.SUBMITTED)
        .annotate(locked=locked_expression())  # the one lock rule (annotator.services.locking)
        .order_by("-updated_at", "-id"),
        SUBMITTED_PER_PAGE,
    ).get_page(request.GET.get("submitted_page"))
    return {
        "calibration_gate": gate(project, request.user),
        "calibration_waiting": calibration_waiting(project, request.user),
        "calibration_answers": mine.filter(
            purpose=Assignment.Purpose.CALIBRATION, status=Assignment.Status.SUBMITTED
        ).exists(),
        "queue": {
            "total": total,
            "done": done,
            "remaining": total - done,
            "per_batch": per_batch,
            "rechecks": list(open_rechecks(project, request.user)[:200]),
            "rounds": rounds_of_annotator(project, request.user),
            # In the order "Start next" hands them out (the project's queue order, annotator.triage.service):
            # the order only, never why a trace comes first.
            "up_next": list(
                in_queue_order(
                    project, rows.filter(status=Assignment.Status.PENDING, purpose=Assignment.Purpose.WORK)
                )[:UP_NEXT]
            ),
            "drafts": list(in_queue_order(project, rows.filter(status=Assignment.Status.IN_PROGRESS))[:200]),
            "skipped": list(rows.filter(status=Assignment.Status.SKIPPED).order_by("-updated_at")[:200]),
            "submitted": submitted,
        },
    }


@require_POST
def start_next(request: HttpRequest, slug: str) -> HttpResponse:
    """Claim the next free slot (a short reservation, so another tab gets a different one) and open it."""
    project = access_project(request.user, slug, roles=LABEL_ROLES)
    # From the annotation page (`g`): the trace being left is either kept (its reservation stands, so it
    # waits under Drafts) or released back to the queue; either way "next" means another trace.
    leaving = _leaving(request, project)
    if leaving is not None and request.POST.get("then") == "release":
        do_release_assignment(leaving)
    assignment = do_claim_next(project, request.user, exclude=[leaving.pk] if leaving else ())
    if assignment is None and project.archived_at is not None:
        messages.info(request, "This project is archived: it hands out no new traces.")
        return redirect("project-detail", slug)
    held = gate(project, request.user) if assignment is None else None
    if held is not None and held.blocked:
        messages.warning(request, held.reason)
        return redirect("project-detail", slug)
    if assignment is None:
        messages.info(
            request, "Nothing left to start: your queue is empty (drafts open in other tabs stay reserved)."
        )
        return redirect("project-detail", slug)
    return redirect("annotate", slug, assignment.pk)


def _leaving(request: HttpRequest, project: Project) -> Assignment | None:
    try:
        current = int(request.POST.get("current", ""))
    except ValueError:
        return None
    return Assignment.objects.filter(project=project, annotator=request.user, pk=current).first()


MINE_PER_PAGE = 50
# The tabs of "My assignments": which statuses each lists, in the order the page shows them.
MINE_TABS = {
    "todo": ("To do", (Assignment.Status.PENDING,)),
    "drafts": ("Drafts", (Assignment.Status.IN_PROGRESS,)),
    "submitted": ("Submitted", (Assignment.Status.SUBMITTED,)),
    "skipped": ("Skipped", (Assignment.Status.SKIPPED,)),
}


def my_assignments(request: HttpRequest, slug: str) -> HttpResponse:
    """An annotator's own assignments, one status per tab, paginated; any of them opens (not only the one
    "Start next" would hand out). Only their own slots: access.assignments() is scoped to the user."""
    project = access_project(request.user, slug, roles=LABEL_ROLES)
    mine = project.access.assignments()
    counts = mine.aggregate(
        **{key: Count("id", filter=Q(status__in=statuses)) for key, (_, statuses) in MINE_TABS.items()}
    )
    show = request.GET.get("show") if request.GET.get("show") in MINE_TABS else "todo"
    rows = (
        mine.filter(status__in=MINE_TABS[show][1])
        .select_related("trace", "trace__batch", "annotation")
        .only(
            "id",
            "status",
            "purpose",
            "skip_reason",
            "updated_at",
            "trace__external_id",
            "trace__task",
            "trace__batch__name",
            "annotation__updated_at",
            "annotation__submitted_at",
        )
    )
    if show == "submitted":
        rows = rows.annotate(locked=locked_expression()).order_by("-updated_at", "-id")
    elif show == "skipped":
        rows = rows.order_by("-updated_at", "-id")
    else:
        rows = in_queue_order(project, rows)
    page = Paginator(rows, MINE_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "annotator/my_assignments.html",
        {
            "project": project,
            "page": page,
            "show": show,
            "tabs": [(key, label, counts[key]) for key, (label, _) in MINE_TABS.items()],
        },
    )
