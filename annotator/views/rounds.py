"""Calibration rounds: the list with the trend across rounds (owners, adjudicators, viewers), opening and
closing a round (owners).

Annotators get 403 like on the agreement report: the trend compares raters, and they label blind."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotator.access import MANAGE_ROLES, REPORT_ROLES, access_project
from annotator.models import CalibrationRound, Membership, Role
from annotator.models.jobs import JobStatus
from annotator.services.rounds import (
    RoundError,
    TraceChoice,
    do_close_round,
    do_open_round,
    round_progress,
    round_trend,
)
from traces.models import Batch


def rounds_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The page; an htmx request (the trend polling while a closed round's report is computed) gets the
    trend partial alone."""
    project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
    if request.htmx:
        rounds = list(project.rounds.select_related("report").order_by("created_at", "id"))
        return render(request, "annotator/partials/_round_trend.html", _trend_context(project, rounds))
    return _render(request, project, form={}, errors=[])


def _trend_context(project, rounds: list[CalibrationRound]) -> dict:
    reporting = [
        r for r in rounds if not r.is_open and (r.report is None or r.report.status != JobStatus.SUCCEEDED)
    ]
    computing = any(r.report is not None and r.report.is_active for r in reporting)
    return {
        "project": project,
        "trend": round_trend(project),
        "reporting": reporting,
        "trend_poll": "running" if computing else "",
        "rounds_url": reverse("rounds", args=[project.slug]),
    }


def _render(request, project, *, form: dict, errors: list[str], status: int = 200) -> HttpResponse:
    rounds = list(
        project.rounds.select_related("report").prefetch_related("annotators").order_by("created_at", "id")
    )
    context = {
        **_trend_context(project, rounds),
        "rounds": rounds,
        "progress": round_progress(rounds),
        "can_manage": bool(project.user_roles & MANAGE_ROLES),
        "annotators": Membership.objects.filter(project=project, role=Role.ANNOTATOR, active=True)
        .order_by("user__username")
        .values_list("user__username", flat=True),
        "batches": Batch.objects.in_project(project).order_by("name").values_list("name", flat=True),
        "form": form,
        "errors": errors,
    }
    return render(request, "annotator/rounds.html", context, status=status)


@require_POST
def open_round(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    post = request.POST
    errors = []
    sample = _bounded_int(post.get("sample"), "sample size", errors)
    seed = _bounded_int(post.get("seed"), "seed", errors) or 0
    choice = TraceChoice(
        batch=post.get("batch", "").strip()[:200],
        sample=sample,
        seed=seed,
        where=tuple(w.strip()[:200] for w in post.getlist("where") if w.strip()),
    )
    form = {
        "name": post.get("name", ""),
        "annotators": set(post.getlist("annotators")),
        "batch": choice.batch,
        "sample": post.get("sample", ""),
        "seed": post.get("seed", ""),
        "where": post.get("where", ""),
    }
    if not errors:
        try:
            round_ = do_open_round(
                project,
                name=post.get("name", ""),
                annotators=post.getlist("annotators"),
                choice=choice,
                actor=request.user,
            )
        except RoundError as error:
            errors.append(str(error))
        else:
            messages.success(
                request,
                f"Round “{round_.name}” opened: {round_.traces.count()} traces for {round_.annotators.count()} annotators.",
            )
            return redirect("rounds", slug)
    return _render(request, project, form=form, errors=errors, status=400)


def _bounded_int(value: str | None, what: str, errors: list[str]) -> int | None:
    text = (value or "").strip()
    if not text:
        return None
    if not text.isdigit() or len(text) > 9:
        errors.append(f"The {what} must be a whole number below 1,000,000,000")
        return None
    return int(text)


@require_POST
def close_round(request: HttpRequest, slug: str, round_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    round_ = get_object_or_404(CalibrationRound, project=project, pk=round_id)
    try:
        do_close_round(round_, actor=request.user)
    except RoundError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Round “{round_.name}” closed; its agreement report is computed and kept.")
    return redirect("rounds", slug)
