"""Failure signatures page and its CSV downloads: parse, check access, call the bridge, render.

Who may look is decided in annotator.access.access_signatures (owners, adjudicators, viewers; annotators
once the project is no longer blind). The filter form is a plain GET form; with htmx it swaps only
``#signatures-body`` (templates/annotator/partials/_signatures_body.html) and pushes the URL.
"""

from __future__ import annotations

import re

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render

from annotator.csvsafe import csv_writer
from annotator.search.saved import project_views
from annotator.services.signatures.report import build_report, filter_options, open_signatures, source_choices
from annotator.signatures.charts import build_charts
from annotator.signatures.tables import FIGURES, figure_table

PAGE = "annotator/signatures.html"
PARTIAL = "annotator/partials/_signatures_body.html"


def signatures_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, query, error = open_signatures(request.user, slug, request.GET)
    report = build_report(project, query) if query else None
    options = filter_options(project, request.user)
    context = {
        "project": project,
        "query": query,
        "error": error,
        "report": report,
        "charts": build_charts(report.signatures) if report and report.signatures else None,
        "options": options,
        "sources": source_choices(options, query.source if query else None),
        "query_string": request.GET.urlencode(),
        "saved_views": [row for row in project_views(project.access) if row.usable],
        "view_chosen": request.GET.get("view", ""),
        "drill": drill_query(project, query),
    }
    template = PARTIAL if request.htmx else PAGE
    return render(request, template, context, status=400 if error else 200)


def drill_query(project, query) -> str | None:
    """The trace-list parameters a cell of the signatures' tables adds to its mode and outcome: the label
    source and the filters, when the trace list can say them too (one value per filter, no saved view, no
    comparison) and the reader may open the list (owners and adjudicators); else None (cells open nothing)."""
    if query is None or query.view or query.compare or not project.access.is_reviewer:
        return None
    filters = query.filters()
    if any(len(values) > 1 for values in filters.values()):
        return None
    params = QueryDict(mutable=True)
    params["sig_source"] = query.source
    for name, values in filters.items():
        params[name] = values[0]
    return "&" + params.urlencode()


def signatures_csv(request: HttpRequest, slug: str, figure: str) -> HttpResponse:
    if figure not in FIGURES:
        raise Http404("No such figure")
    project, query, error = open_signatures(request.user, slug, request.GET)
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    report = build_report(project, query, keep_empty=True)
    header, rows = figure_table(report.signatures, figure)
    source = re.sub(r"[^A-Za-z0-9._-]+", "-", query.source)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-{figure}-{source}.csv"'
    writer = csv_writer(response)
    writer.writerow(header)
    writer.writerows([_cell(value) for value in row] for row in rows)
    return response


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return value
