"""Proposals for new modes: the form on a trace (htmx partial), and the project's page where owners see
them grouped and settle them (annotators see their own)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotator.access import LABEL_ROLES, MANAGE_ROLES, REVIEW_ROLES, access_project, access_trace
from annotator.models import ModeProposal
from annotator.services.proposals import (
    ProposalError,
    do_propose,
    do_settle,
    proposal_groups,
    status_counts,
    visible_proposals,
)


def trace_proposals(request: HttpRequest, slug: str, trace_id: int) -> HttpResponse:
    """GET: the form and my proposals on this trace. POST: record one; a refusal comes back in the form (400)."""
    project, trace = access_trace(request.user, slug, trace_id, roles=LABEL_ROLES | REVIEW_ROLES)
    error, status, saved = "", 200, False
    if request.method == "POST":
        try:
            do_propose(
                project,
                trace,
                request.user,
                text=request.POST.get("text", ""),
                suggested_name=request.POST.get("name", ""),
                steps=request.POST.get("steps", ""),
            )
            saved = True
        except ProposalError as problem:
            error, status = str(problem), 400
    context = {
        "project": project,
        "trace": trace,
        "mine": visible_proposals(project, request.user).filter(trace=trace, author=request.user),
        "error": error,
        "saved": saved,
        "form": request.POST if error else {},
    }
    return render(request, "annotator/partials/_proposals.html", context, status=status)


def proposals_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Reviewers: the proposals of one status (?status=open, the default; accepted, declined or all),
    grouped, with a count per status. Annotators: their own, whatever the status."""
    project = access_project(request.user, slug, roles=LABEL_ROLES | REVIEW_ROLES)
    reviewer = bool(project.user_roles & REVIEW_ROLES)
    visible = visible_proposals(project, request.user)
    status = request.GET.get("status", ModeProposal.Status.OPEN)
    error, groups = "", []
    if reviewer:
        try:
            groups = proposal_groups(visible, status)
        except ProposalError as problem:
            error = str(problem)
    context = {
        "project": project,
        "reviewer": reviewer,
        "status": status,
        "error": error,
        "can_settle": bool(project.user_roles & MANAGE_ROLES) and status == ModeProposal.Status.OPEN,
        "tabs": status_counts(visible) if reviewer else [],
        "groups": groups,
        "mine": [] if reviewer else visible,
    }
    return render(request, "annotator/proposals.html", context, status=400 if error else 200)


@require_POST
def settle(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    try:
        settled = do_settle(
            project,
            request.POST.getlist("proposal"),
            status=request.POST.get("status", ""),
            outcome=request.POST.get("outcome", ""),
            actor=request.user,
        )
    except ProposalError as problem:
        messages.error(request, str(problem))
    else:
        n = len(settled)
        messages.success(request, f"{n} proposal{'s' if n != 1 else ''} settled")
    return redirect("proposals", slug)
