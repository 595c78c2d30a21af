"""Discussion pages: a trace's threads (an htmx partial on the annotation, review and adjudication pages),
a calibration round's disagreements with each annotator's position, decisions, and one's mentions."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from annotator.access import ANY_ROLE, REVIEW_ROLES, access_project, access_trace
from annotator.models import CalibrationRound, Mention, Thread
from annotator.services.discussions import (
    DiscussionError,
    do_comment,
    do_decide,
    mentions_for,
    positions,
    require_discussion,
    threads_of,
    visible_round_threads,
)


def trace_discussion(request: HttpRequest, slug: str, trace_id: int) -> HttpResponse:
    """GET: the trace's threads. POST: add a comment (body, optional mode code and step); htmx gets the
    refreshed partial, a refused comment back in the form with the reason (400). A plain form post (the
    round's disagreements page, or no JavaScript) goes back to the page it came from (`next`), the outcome
    in a message there, rather than to a bare fragment."""
    project, trace = access_trace(request.user, slug, trace_id)
    require_discussion(project, request.user, trace)
    error, status = "", 200
    if request.method == "POST":
        try:
            do_comment(
                project,
                trace,
                request.user,
                body=request.POST.get("body", ""),
                mode_code=request.POST.get("mode", "").strip(),
                step=request.POST.get("step"),
            )
        except DiscussionError as problem:
            error, status = str(problem), 400
        if not request.htmx:
            if error:
                messages.error(request, f"The comment was not added: {error}")
            else:
                messages.success(request, "Comment added.")
            return redirect(_back(request, project))
    context = {
        "project": project,
        "trace": trace,
        "threads": threads_of(project, trace),
        "modes": project.taxonomy_version.modes.order_by("order").values_list("code", "name"),
        "error": error,
        "form": request.POST if error else {},
    }
    return render(request, "annotator/partials/_discussion.html", context, status=status)


def _back(request: HttpRequest, project) -> str:
    """The page a plain comment form came from: a path of this project on this site, else the project."""
    target = request.POST.get("next", "")
    if target.startswith(f"/p/{project.slug}/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("project-detail", args=[project.slug])


def round_discussion(request: HttpRequest, slug: str, round_id: int) -> HttpResponse:
    """A round's disagreements: per (trace, mode), what each annotator said and where, the comments, and
    the decision. Owners and adjudicators always; the round's annotators once it is closed."""
    project = access_project(request.user, slug, roles=ANY_ROLE)
    round_ = get_object_or_404(CalibrationRound, project=project, pk=round_id)
    if not project.user_roles & REVIEW_ROLES and not round_.annotators.filter(pk=request.user.pk).exists():
        raise PermissionDenied("This round's discussion is for its annotators, owners and adjudicators")
    threads = visible_round_threads(round_, request.user, project)
    context = {
        "project": project,
        "round": round_,
        "items": [(thread, positions(thread)) for thread in threads],
        "can_decide": bool(project.user_roles & REVIEW_ROLES),
        "decisions": Thread.Decision.choices,
        "waiting": round_.is_open and not project.user_roles & REVIEW_ROLES,
    }
    return render(request, "annotator/round_discussion.html", context)


@require_POST
def decide(request: HttpRequest, slug: str, thread_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    thread = get_object_or_404(Thread.objects.select_related("mode"), project=project, pk=thread_id)
    thread.project = project
    try:
        do_decide(
            thread, request.user, decision=request.POST.get("decision", ""), text=request.POST.get("text", "")
        )
    except DiscussionError as problem:
        messages.error(request, str(problem))
    else:
        messages.success(
            request,
            "Decision recorded" + (" and added to the guidelines" if thread.decision == "guideline" else ""),
        )
    if thread.calibration_round_id:
        return redirect("round-discussion", slug, thread.calibration_round_id)
    return redirect("project-detail", slug)


def mentions(request: HttpRequest) -> HttpResponse:
    """Comments that mention me, newest first; opening the page marks them read."""
    items = list(mentions_for(request.user))
    unread = [m.pk for m in items if m.read_at is None]
    response = render(request, "annotator/mentions.html", {"items": items, "unread": set(unread)})
    if unread:
        Mention.objects.filter(pk__in=unread).update(read_at=timezone.now())
    return response
