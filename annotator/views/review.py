"""Owners and adjudicators: the project's traces, and one trace's annotations side by side.

Blindness ends here and only here: these views require REVIEW_ROLES (owner, adjudicator) through
annotator.access, so an annotator (or viewer) gets 403 and an outsider 404; an owner or adjudicator who is
also annotating the trace and has not submitted gets 403 too (blind beats every role).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from annotator.access import REVIEW_ROLES, access_project, access_trace
from annotator.live.service import arrivals
from annotator.models import Annotation, Assignment, LabelApplication, Project
from annotator.raters import fills_overlap_q
from annotator.search.filters import FilterError, TraceFilter, parse
from annotator.search.page import LIST_COLUMNS, FilterForm, TraceRow, sort_columns
from annotator.search.service import filtered_traces, step_matches
from annotator.search.views import panel_context
from annotator.views.trace import evidence_marks, render_steps, viewer_context
from traces.models import Trace

TRACES_PER_PAGE = 50


def trace_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The project's traces, filtered, sorted and searched by the trace filter language (GET parameters, so
    a filtered list is a bookmark). htmx requests get the results partial; a bad parameter or a refused
    label filter is shown in the page (400/403 with the message where the results would be)."""
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    error = ""
    status = 200
    try:
        flt = parse(request.GET)
        traces = filtered_traces(project.access, flt)
    except FilterError as problem:
        flt, traces, status = TraceFilter(), Trace.objects.none(), 400
        error = f"{problem.param}: {problem.message}"
    except PermissionDenied as refusal:
        flt, traces, status = TraceFilter(), Trace.objects.none(), 403
        error = str(refusal)
    # The overlap's slots, as the project page counts them: imported raters only when they count toward it.
    mine = Q(assignments__project=project, assignments__purpose=Assignment.Purpose.WORK) & fills_overlap_q(
        project.imported_labels_count_toward_overlap, "assignments__annotator"
    )
    page = Paginator(traces.only(*LIST_COLUMNS).select_related("batch"), TRACES_PER_PAGE).get_page(
        request.GET.get("page")
    )
    ids = [trace.pk for trace in page.object_list]
    counts = {
        row["pk"]: row
        for row in Trace.objects.filter(pk__in=ids)
        .values("pk")
        .annotate(
            assigned=Count("assignments", filter=mine),
            submitted=Count("assignments", filter=mine & Q(assignments__status=Assignment.Status.SUBMITTED)),
            skipped=Count("assignments", filter=mine & Q(assignments__status=Assignment.Status.SKIPPED)),
        )
    }
    matches = step_matches(flt, ids)
    live = arrivals(project, ids)  # traces received over OTLP: a "live" badge and their arrival time
    rows = [
        TraceRow(trace, counts.get(trace.pk, {}), matches.get(trace.pk, []), live.get(trace.pk))
        for trace in page.object_list
    ]
    context = {
        "project": project,
        "page": page,
        "rows": rows,
        "filter": flt,
        "form": FilterForm.of(flt, project),
        "columns": sort_columns(flt),
        "query": urlencode(flt.to_params()),
        "error": error,
    }
    if not request.htmx:  # the saved-views panel is not part of the results' swap
        context.update(panel_context(project.access, current=context["query"]))
    template = "annotator/partials/_trace_results.html" if request.htmx else "annotator/trace_list.html"
    response = render(request, template, context, status=status)
    if request.htmx and not error:
        # The canonical URL of what is shown (the form sends its empty fields too): a clean bookmark.
        shown = flt.to_params() + ([("page", str(page.number))] if page.number > 1 else [])
        response["HX-Push-Url"] = f"{request.path}?{urlencode(shown)}" if shown else request.path
    return response


@dataclass
class ComparisonRow:
    code: str
    name: str
    cells: list[LabelApplication | None]

    @property
    def agreed(self) -> bool:
        return all(cell is not None for cell in self.cells)


def _comparison(assignments: list[Assignment]) -> tuple[list[ComparisonRow], dict[int, list[str]]]:
    """One row per mode anyone chose (taxonomy order), one cell per annotator; and the evidence marks."""
    modes: dict[str, Any] = {}
    by_annotator: list[dict[str, LabelApplication]] = []
    evidence = []
    for assignment in assignments:
        annotation = getattr(assignment, "annotation", None)
        labels = {label.mode.code: label for label in annotation.labels.all()} if annotation else {}
        by_annotator.append(labels)
        for code, label in labels.items():
            modes[code] = label.mode
            evidence.append((assignment.annotator.username, code, label.evidence_steps))
    marks = evidence_marks(evidence)
    rows = [
        ComparisonRow(code, mode.name, [labels.get(code) for labels in by_annotator])
        for code, mode in sorted(modes.items(), key=lambda item: item[1].order)
    ]
    return rows, marks


def _assignments(project: Project, trace: Trace) -> list[Assignment]:
    return list(
        Assignment.objects.work()
        .filter(project=project, trace=trace)
        .select_related("annotator", "annotation")
        .prefetch_related("annotation__labels__mode")
        .order_by("annotator__username")
    )


def trace_review(request: HttpRequest, slug: str, trace_id: int) -> HttpResponse:
    project, trace = access_trace(request.user, slug, trace_id, roles=REVIEW_ROLES, labels=True)
    assignments = _assignments(project, trace)
    rows, marks = _comparison(assignments)
    page_url = reverse("trace-review", args=[slug, trace.pk])
    context = viewer_context(
        request,
        project,
        trace,
        page_url=page_url,
        steps_url=reverse("trace-review-steps", args=[slug, trace.pk]),
        marks=marks,
    )
    submitted = [
        a
        for a in assignments
        if getattr(a, "annotation", None) and a.annotation.status == Annotation.Status.SUBMITTED
    ]
    return render(
        request,
        "annotator/review.html",
        {
            **context,
            "project": project,
            "assignments": assignments,
            "rows": rows,
            "submitted_count": len(submitted),
        },
    )


def review_steps(request: HttpRequest, slug: str, trace_id: int) -> HttpResponse:
    """The review page's step partial: like the annotator's, plus everyone's evidence marks."""
    project, trace = access_trace(request.user, slug, trace_id, roles=REVIEW_ROLES, labels=True)
    _, marks = _comparison(_assignments(project, trace))
    return render_steps(
        request,
        project,
        trace,
        fallback=reverse("trace-review", args=[slug, trace_id]),
        steps_url=reverse("trace-review-steps", args=[slug, trace_id]),
        marks=marks,
    )
