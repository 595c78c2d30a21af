"""Gold calibration: the project's Calibration page (settings and items for owners; scores for owners,
adjudicators and viewers; an annotator sees only their own scores), and the owners' two forms.

The verbs live in annotator.services.calibration; the gold answer after a calibration item is shown on the
labelling page itself (annotator/views/annotate.py)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotator.access import MANAGE_ROLES, REPORT_ROLES, access_project
from annotator.agreement.calibration import KAPPA_SE_FORMULA, PROPORTION_INTERVAL
from annotator.models import Role
from annotator.services.calibration import (
    CalibrationError,
    annotator_scores,
    do_add_items,
    do_configure,
    do_remove_items,
    gate,
    gold_items,
    item_trace_ids,
    scores_withheld,
)
from traces.models import Batch


def calibration_page(request: HttpRequest, slug: str, *, errors: list[str] | None = None) -> HttpResponse:
    project = access_project(request.user, slug)
    access = project.access
    sees_all = access.holds(REPORT_ROLES)
    withheld = scores_withheld(access)
    if withheld:
        scores = {}
    elif sees_all:
        scores = annotator_scores(project)
    elif Role.ANNOTATOR in project.user_roles:
        scores = annotator_scores(project, [request.user.pk])
    else:
        scores = {}
    can_manage = access.holds(MANAGE_ROLES)
    context = {
        "project": project,
        "scores": scores,
        "sees_all": sees_all,
        "can_manage": can_manage,
        "gate": gate(project, request.user) if Role.ANNOTATOR in project.user_roles else None,
        "items": item_trace_ids(project) if can_manage else [],
        "gold_count": gold_items(project).count() if can_manage else 0,
        "batches": Batch.objects.in_project(project).order_by("name").values_list("name", flat=True)
        if can_manage
        else [],
        "kappa_formula": KAPPA_SE_FORMULA,
        "proportion_interval": PROPORTION_INTERVAL,
        "errors": errors or [],
        "withheld": withheld,
    }
    return render(request, "annotator/calibration.html", context, status=422 if errors else 200)


def _number(raw: str, cast, label: str, errors: list[str]):
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        return cast(raw)
    except (TypeError, ValueError, OverflowError):
        errors.append(f"{label}: “{raw[:40]}” is not a number")
        return None


@require_POST
def calibration_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    errors: list[str] = []
    rate = _number(request.POST.get("rate", ""), float, "Mix-in rate", errors)
    size = _number(request.POST.get("qualification_size", ""), int, "Qualification set size", errors)
    kappa = _number(request.POST.get("min_kappa", ""), float, "Threshold", errors)
    if not errors:
        try:
            do_configure(
                project,
                rate=rate if rate is not None else 0.0,
                qualification_size=size if size is not None else 0,
                min_kappa=kappa,
                clear_min_kappa=kappa is None,
            )
        except CalibrationError as error:
            errors += error.messages
    if errors:
        return calibration_page(request, slug, errors=errors)
    messages.success(request, "Calibration settings saved.")
    return redirect("calibration", slug)


@require_POST
def calibration_items(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    errors: list[str] = []
    ids = []
    for part in request.POST.get("trace_ids", "").replace(",", " ").split()[:5001]:
        value = _number(part, int, "Trace ids", errors)
        if value is not None:
            ids.append(value)
    try:
        if errors:
            raise CalibrationError(errors)
        if request.POST.get("action") == "remove":
            removed = do_remove_items(project, ids)
            messages.success(request, f"{removed} calibration item(s) removed.")
        else:
            added = do_add_items(
                project,
                trace_ids=ids,
                batch=request.POST.get("batch", "").strip()[:200],
                all_gold=request.POST.get("all") == "1",
                actor=request.user,
            )
            messages.success(request, f"{added} calibration item(s) added.")
    except CalibrationError as error:
        return calibration_page(request, slug, errors=error.messages)
    return redirect("calibration", slug)
