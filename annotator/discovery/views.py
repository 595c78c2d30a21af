"""The discovery pages (/p/<slug>/discovery/): start a discovery run or a gate, watch it, read its results,
send passing candidates to the proposals page, open a calibration round on them.

Owners and adjudicators read (adjudicators see the results, owners also act); a run's page is refused while
the reader is blind on any trace the run read (annotator.discovery.service.access_run). Forms post and
redirect; the run's card (`_discovery_run.html`, swap target #discovery-run) polls itself while active.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.access import MANAGE_ROLES, REVIEW_ROLES, ProjectAccess
from annotator.discovery.estimate import estimate_discovery
from annotator.discovery.results import results_view
from annotator.discovery.service import (
    DEFAULT_GATE_SAMPLE,
    DEFAULT_SAMPLE,
    OUTCOMES,
    DiscoveryError,
    access_run,
    candidates_from_changes,
    candidates_from_proposals,
    do_open_candidate_round,
    do_resume_discovery,
    do_send_to_proposals,
    do_start_discovery,
    do_start_gate,
    do_stop_discovery,
    visible_runs,
)
from annotator.services.enqueue import is_eager
from annotator.services.evolution import MigrationError, parse_changes_text
from annotator.services.llm.config import get_config
from annotator.services.rounds import RoundError
from traces.models import Batch


def _access(request: HttpRequest, slug: str, roles=REVIEW_ROLES) -> ProjectAccess:
    return ProjectAccess.load(request.user, slug).require(roles)


def _int(value: str, default: int) -> int:
    text = (value or "").strip()
    return int(text) if text.isdigit() and len(text) < 7 else default


def _float(value: str, default: float) -> float:
    try:
        return float(value) if (value or "").strip() else default
    except ValueError:
        return default


def _form(request: HttpRequest) -> dict[str, Any]:
    post = request.POST
    return {
        "scope": post.get("scope", ""),
        "raters": post.get("raters", ""),
        "model": post.get("model", "").strip(),
        "sample": _int(post.get("sample"), DEFAULT_SAMPLE),
        "gate_sample": _int(post.get("gate_sample"), DEFAULT_GATE_SAMPLE),
        "kappa_min": _float(post.get("kappa_min"), 0.75),
        "coverage_min": _float(post.get("coverage_min"), 0.70),
        "changes": post.get("changes", ""),
        "source": post.get("source", "changes"),
    }


def _page(request: HttpRequest, access: ProjectAccess, *, form=None, estimate=None, error="", code=200):
    project = access.project
    config = get_config(project)
    context = {
        "project": project,
        "can_manage": access.holds(MANAGE_ROLES),
        "runs": visible_runs(access)[:30],
        "batches": Batch.objects.in_project(project).order_by("name").values_list("name", flat=True),
        "views": project.saved_views.order_by("name").values_list("name", flat=True),
        "outcomes": OUTCOMES,
        "form": form
        or {
            "sample": DEFAULT_SAMPLE,
            "gate_sample": DEFAULT_GATE_SAMPLE,
            "kappa_min": 0.75,
            "coverage_min": 0.70,
            "model": config.model,
            "raters": "",
        },
        "estimate": estimate,
        "error": error,
    }
    return render(request, "discovery/discovery.html", context, status=code)


@require_GET
def discovery_page(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, _access(request, slug))


@require_POST
def start(request: HttpRequest, slug: str) -> HttpResponse:
    """Estimate first (the "Estimate cost" button), start only when confirmed (the "Start" button)."""
    access = _access(request, slug, MANAGE_ROLES)
    form = _form(request)
    options = {k: form[k] for k in ("scope", "raters", "sample", "gate_sample", "kappa_min", "coverage_min")}
    try:
        if request.POST.get("confirm") != "1":
            estimate = estimate_discovery(access, model=form["model"] or None, **options)
            return _page(request, access, form=form, estimate=estimate)
        run = do_start_discovery(
            access, model=form["model"] or None, actor=request.user, background=is_eager(), **options
        )
    except DiscoveryError as error:
        return _page(request, access, form=form, error=str(error), code=400)
    return redirect("discovery-run", slug, run.pk)


@require_POST
def start_gate(request: HttpRequest, slug: str) -> HttpResponse:
    access = _access(request, slug, MANAGE_ROLES)
    form = _form(request)
    try:
        if form["source"] == "proposals":
            candidates = candidates_from_proposals(access.project)
        else:
            candidates = candidates_from_changes(parse_changes_text(form["changes"]))
        run = do_start_gate(
            access,
            candidates=candidates,
            scope=form["scope"],
            raters=form["raters"],
            sample=form["gate_sample"],
            kappa_min=form["kappa_min"],
            coverage_min=form["coverage_min"],
            actor=request.user,
            background=is_eager(),
        )
    except (DiscoveryError, MigrationError) as error:
        return _page(request, access, form=form, error=str(error), code=400)
    return redirect("discovery-run", slug, run.pk)


@require_GET
def run_page(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    access = _access(request, slug)
    run = access_run(access, run_id)
    context = {
        "project": access.project,
        "run": run,
        "view": results_view(run),
        "can_manage": access.holds(MANAGE_ROLES),
    }
    if request.htmx:
        return render(request, "discovery/partials/_discovery_run.html", context)
    return render(request, "discovery/run.html", context)


def _act(request: HttpRequest, slug: str, run_id: int):
    return access_run(_access(request, slug, MANAGE_ROLES), run_id, manage=True)


@require_POST
def stop(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    run = _act(request, slug, run_id)
    if not do_stop_discovery(run):
        messages.error(request, f"Run {run.pk} is not running.")
    return redirect("discovery-run", slug, run.pk)


@require_POST
def resume(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    run = _act(request, slug, run_id)
    if not do_resume_discovery(run, background=is_eager()):
        messages.error(request, f"Run {run.pk} cannot be resumed (it is active or has finished).")
    return redirect("discovery-run", slug, run.pk)


@require_POST
def send(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    run = _act(request, slug, run_id)
    try:
        created = do_send_to_proposals(run, actor=request.user)
    except DiscoveryError as error:
        messages.error(request, str(error))
        return redirect("discovery-run", slug, run.pk)
    messages.success(request, f"{len(created)} passing candidate(s) sent to the proposals page.")
    return redirect("proposals", slug)


@require_POST
def open_round(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    run = _act(request, slug, run_id)
    annotators = [a for a in request.POST.get("annotators", "").replace(",", " ").split() if a]
    name = request.POST.get("name", "").strip() or f"Discovery run {run.pk} candidates"
    try:
        round_ = do_open_candidate_round(run, name=name, annotators=annotators, actor=request.user)
    except (DiscoveryError, RoundError) as error:
        messages.error(request, str(error))
        return redirect("discovery-run", slug, run.pk)
    messages.success(request, f"Calibration round “{round_.name}” opened on {round_.traces.count()} traces.")
    return redirect("discovery-run", slug, run.pk)
