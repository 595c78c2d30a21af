"""The agreement report page, its status partial (htmx polling while a report computes), downloads.

Who: owners, adjudicators and viewers (REPORT_ROLES). Annotators get 403: the page names every rater and
compares them pair by pair, and blind annotation means an annotator learns nothing about the others'
labels -- not even how often they agree -- while labelling. Outsiders get 404.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotator.access import REPORT_ROLES, access_project
from annotator.models import AgreementReport, Membership, Project, Role
from annotator.models.reports import JobStatus
from annotator.search.saved import project_views
from annotator.services.reports import (
    ReportFilterError,
    clean_filters,
    do_open_report,
    do_request_report,
    latest_finished,
    report_is_current,
)
from annotator.views import agreement_display as display
from traces.models import Batch


def _filters(project: Project, params: QueryDict) -> tuple[dict[str, Any], list[str]]:
    try:
        return clean_filters(project, params, project.access), []
    except ReportFilterError as error:
        return {}, error.messages


def _query(filters: dict[str, Any]) -> str:
    query = QueryDict(mutable=True)
    for key, value in filters.items():
        if isinstance(value, list):
            query.setlist(key, value)
        else:
            query[key] = value
    return query.urlencode()


def report_context(
    project: Project, report: AgreementReport | None, filters: dict[str, Any]
) -> dict[str, Any]:
    """What `_agreement_report.html` needs for any state: pending (with the last finished report for the
    same filters, shown dimmed), failed, or done (with whether the data changed since)."""
    shown = report if report and report.status == JobStatus.SUCCEEDED else latest_finished(project, filters)
    context: dict[str, Any] = {
        "project": project,
        "report": report,
        "shown": shown,
        "pending": bool(report and report.status in (JobStatus.QUEUED, JobStatus.RUNNING)),
        "query": _query(filters),
        "filters": filters,
        # Flattened (key, value) pairs for hidden inputs: list filters (annotators, where) repeat their key.
        "hidden_filters": [
            (key, item)
            for key, value in filters.items()
            for item in (value if isinstance(value, list) else [value])
        ],
        "stale": bool(
            shown
            and report
            and report.status == JobStatus.SUCCEEDED
            and not report_is_current(project, report)
        ),
    }
    if shown is not None and shown.results:
        results = shown.results
        context.update(
            results=results,
            matrix=display.pair_matrix(results),
            notes=display.undefined_notes(results),
            histogram=display.histogram(results),
            confusion=display.confusion(results),
            names=display.mode_names(results),
            kappa_key=results["kappa_statistic"],
            # The trace list is for owners and adjudicators: a viewer's cells open nothing.
            drill=display.drill_query(filters)
            if getattr(project, "access", None) and project.access.is_reviewer
            else None,
            mode_disagree=display.mode_disagreements(results),
        )
        context["disagree_raters"], context["disagree_unlinked"] = display.disagree_raters(results)
    return context


def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    """The report for the filters in the query string. With no report yet for these filters one is
    requested (computed inline when Celery is eager; queued otherwise, and the partial polls)."""
    project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
    filters, errors = _filters(project, request.GET)
    report = None
    if not errors:
        report = do_open_report(project, filters, retry=bool(request.GET.get("retry")))
    raters = (
        Membership.objects.filter(project=project, role=Role.ANNOTATOR)
        .order_by("user__username")
        .values_list("user__username", flat=True)
        .distinct()
    )
    context = {
        **report_context(project, report, filters),
        "errors": errors,
        "batches": Batch.objects.in_project(project).order_by("name").values_list("name", flat=True),
        "raters": list(raters),
        "form": {
            "batch": request.GET.get("batch", ""),
            "annotators": set(filters.get("annotators", [])),
            "since": request.GET.get("since", ""),
            "until": request.GET.get("until", ""),
            # One input per metadata condition already set, and an empty one to add another.
            "where": [*request.GET.getlist("where"), ""][:11],
            "view": str(filters.get("view", "")),
        },
        "saved_views": project_views(project.access),
    }
    return render(request, "annotator/agreement.html", context, status=400 if errors else 200)


@require_POST
def refresh(request: HttpRequest, slug: str) -> HttpResponse:
    """Recompute for the posted filters (nothing is recomputed when the data did not change)."""
    project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
    filters, errors = _filters(project, request.POST)
    if errors:
        messages.error(request, "; ".join(errors))
        return redirect("agreement", slug)
    report = do_request_report(project, filters)
    report.refresh_from_db()
    if request.htmx:
        return render(
            request, "annotator/partials/_agreement_report.html", report_context(project, report, filters)
        )
    query = _query(filters)
    return redirect(reverse("agreement", args=[slug]) + (f"?{query}" if query else ""))


def report_status(request: HttpRequest, slug: str, report_id: int) -> HttpResponse:
    """The `#agreement-report` partial for one report: what the page polls while it computes."""
    project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
    report = get_object_or_404(AgreementReport, project=project, pk=report_id)
    return render(
        request, "annotator/partials/_agreement_report.html", report_context(project, report, report.filters)
    )


def _finished(request: HttpRequest, slug: str, report_id: int) -> AgreementReport:
    project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
    return get_object_or_404(AgreementReport, project=project, pk=report_id, status=JobStatus.SUCCEEDED)


def report_json(request: HttpRequest, slug: str, report_id: int) -> HttpResponse:
    report = _finished(request, slug, report_id)
    response = HttpResponse(
        json.dumps(report.results, indent=2, ensure_ascii=False), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="agreement-{slug}-{report.pk}.json"'
    return response


def report_csv(request: HttpRequest, slug: str, report_id: int) -> HttpResponse:
    report = _finished(request, slug, report_id)
    response = HttpResponse(display.report_csv(report.results), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="agreement-{slug}-{report.pk}.csv"'
    return response
