"""The annotation page: the step viewer composed with the labelling panel, and its three verbs.

Autosave (htmx) and submit answer with `annotator/partials/_save_status.html` (swap target `#save-status`):
200 saved, 422 invalid (messages), 409 stale or locked (the user's payload is echoed back, nothing is lost).
Without JavaScript, submit and skip are plain form posts that redirect (or re-render the page on errors).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from annotator.access import access_assignment
from annotator.models import Annotation, Assignment, LabelHistory, ModeRecheck
from annotator.services.annotations import (
    AnnotationInvalid,
    AnnotationLocked,
    StaleAnnotation,
    do_save_draft,
    do_skip,
    do_submit_annotation,
)
from annotator.services.assignment import do_claim_next, extend_reservation
from annotator.services.calibration import feedback as calibration_feedback
from annotator.services.calibration import gate
from annotator.services.locking import is_locked
from annotator.services.payload import AnnotationPayload, PayloadError, payload_from_form, version_from
from annotator.templatetags.annotator_tags import render_markdown
from annotator.views.panel import panel_context
from annotator.views.trace import viewer_context
from traces.models import Trace
from traces.viewer import trace_queryset

SKIP_REASONS = (
    "The trace is broken or truncated",
    "I cannot judge this (outside my expertise)",
    "The task or outcome is unclear",
    "Duplicate of another trace",
)


def _page(
    request: HttpRequest,
    assignment: Assignment,
    *,
    payload: AnnotationPayload | None = None,
    status: dict[str, Any] | None = None,
    code: int = 200,
) -> HttpResponse:
    project = assignment.project
    trace = trace_queryset().get(pk=assignment.trace_id)
    annotation = Annotation.objects.filter(assignment=assignment).first()
    locked = is_locked(assignment)
    panel = panel_context(assignment, annotation, payload=payload, locked=locked)
    if status and "version" in status:
        panel["version"] = status["version"]
    page_url = reverse("annotate", args=[project.slug, assignment.pk])
    context = {
        **viewer_context(
            request,
            project,
            trace,
            page_url=page_url,
            steps_url=reverse("trace-steps", args=[project.slug, trace.pk]),
        ),
        **panel,
        "project": project,
        "status": status or {"state": "idle", "version": panel["version"]},
        "guidelines_html": render_markdown(project.guidelines),
        "skip_reasons": SKIP_REASONS,
        "position": queue_position(assignment),
        "submitted": bool(annotation and annotation.status == Annotation.Status.SUBMITTED),
        # The gold answer of a calibration item, only once it is submitted (blind until then).
        "gold_feedback": calibration_feedback(assignment),
        "gate": gate(project, request.user) if assignment.purpose == Assignment.Purpose.WORK else None,
        # Provenance of labels a taxonomy migration moved (the annotator's own annotation only).
        "migrated": [
            entry.after.get("migration", "")
            for entry in LabelHistory.objects.filter(annotation=annotation, action="taxonomy").order_by(
                "at", "id"
            )
        ]
        if annotation
        else [],
        "rechecks": list(
            ModeRecheck.objects.filter(annotation=annotation, resolved_at__isnull=True).select_related("mode")
        )
        if annotation
        else [],
    }
    return render(request, "annotator/annotate.html", context, status=code)


def queue_position(assignment: Assignment) -> dict[str, int]:
    """ "13 of 70": the traces this annotator finished, plus this one while it is still open."""
    counts = Assignment.objects.filter(
        project_id=assignment.project_id, annotator_id=assignment.annotator_id
    ).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status__in=(Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED))),
    )
    total, done = counts["total"], counts["done"]
    is_open = assignment.status in Assignment.OPEN_STATUSES
    return {"number": min(total, done + 1) if is_open else done, "total": total}


# no-store: after Submit, Back must fetch the page again rather than show the stale "To do" copy.
@never_cache
def annotate(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    assignment = access_assignment(request.user, slug, assignment_id)
    extend_reservation(assignment)
    return _page(request, assignment)


def _status(request: HttpRequest, state: str, *, version: int, code: int = 200, **extra: Any) -> HttpResponse:
    context = {"status": {"state": state, "version": version, "at": timezone.now(), **extra}}
    return render(request, "annotator/partials/_save_status.html", context, status=code)


def _refused(
    request: HttpRequest, assignment: Assignment, error: Exception, base: int, payload
) -> HttpResponse:
    """The same answer for autosave and submit: what went wrong, and the user's own answer back."""
    echo = json.dumps(payload.as_json(), indent=2, ensure_ascii=False) if payload else ""
    if isinstance(error, StaleAnnotation):
        status = {
            "state": "conflict",
            "version": base,
            "current_version": error.current_version,
            "echo": echo,
        }
        code = 409
    elif isinstance(error, AnnotationLocked):
        status, code = {"state": "locked", "version": base, "errors": error.messages, "echo": echo}, 409
    else:
        status, code = {"state": "invalid", "version": base, "errors": error.messages}, 422
    if request.htmx:
        return _status(request, status.pop("state"), code=code, **status)
    return _page(request, assignment, payload=payload, status=status, code=code)


@require_POST
def save_draft(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    assignment = access_assignment(request.user, slug, assignment_id)
    payload, base = None, _base(request)
    try:
        payload = payload_from_form(request.POST)
        annotation = do_save_draft(assignment, payload, actor=request.user, base_version=base)
    except (PayloadError, AnnotationInvalid, AnnotationLocked, StaleAnnotation) as error:
        return _refused(request, assignment, error, base, payload)
    return _status(request, "saved", version=annotation.version)


@require_POST
def submit(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    """Submit, then go straight to the next trace in the queue (or back to the queue when done)."""
    assignment = access_assignment(request.user, slug, assignment_id)
    payload, base = None, _base(request)
    try:
        payload = payload_from_form(request.POST)
        do_submit_annotation(assignment, payload, actor=request.user, base_version=base)
    except (PayloadError, AnnotationInvalid, AnnotationLocked, StaleAnnotation) as error:
        return _refused(request, assignment, error, base, payload)
    if assignment.purpose == Assignment.Purpose.CALIBRATION:
        # Back to the same page, which now shows the gold answer beside the annotator's own.
        messages.success(request, f"Submitted trace {_trace_name(assignment)}: compare with the gold answer.")
        return _go(request, reverse("annotate", args=[assignment.project.slug, assignment.pk]))
    messages.success(request, f"Submitted trace {_trace_name(assignment)}.")
    return _to_next(request, assignment)


@require_POST
def skip(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    assignment = access_assignment(request.user, slug, assignment_id)
    try:
        do_skip(
            assignment,
            request.POST.get("reason", "") or request.POST.get("reason_choice", ""),
            actor=request.user,
        )
    except (AnnotationInvalid, AnnotationLocked) as error:
        messages.error(request, " ".join(error.messages))
        return redirect("annotate", slug, assignment.pk)
    messages.info(request, f"Skipped trace {_trace_name(assignment)}. You can reopen it from your queue.")
    return _to_next(request, assignment)


def _trace_name(assignment: Assignment) -> str:
    """The trace's own id (what every page shows), not its database id; without loading the raw record."""
    return Trace.objects.filter(pk=assignment.trace_id).values_list("external_id", flat=True).first() or ""


def _base(request: HttpRequest) -> int:
    try:
        return version_from(request.POST.get("force_version") or request.POST.get("version"))
    except PayloadError:
        return -1  # never matches a stored version, so the save is refused as stale and nothing is lost


def _to_next(request: HttpRequest, assignment: Assignment) -> HttpResponse:
    project = assignment.project
    following = do_claim_next(project, request.user)
    url = (
        reverse("annotate", args=[project.slug, following.pk])
        if following
        else reverse("project-detail", args=[project.slug])
    )
    if following is None:
        messages.success(request, "That was the last trace in your queue. Thank you!")
    return _go(request, url)


def _go(request: HttpRequest, url: str) -> HttpResponse:
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)
