"""The agreement report over the API: the latest report for some filters, or a request to recompute."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import REPORT_ROLES, access_project
from annotator.models import AgreementReport
from annotator.models.reports import JobStatus
from annotator.services.reports import (
    ReportFilterError,
    clean_filters,
    do_request_report,
    latest_report,
    report_is_current,
)

ReportSchema = inline_serializer(
    "AgreementReport",
    {
        "id": serializers.IntegerField(),
        "status": serializers.CharField(help_text="queued, running, succeeded or failed"),
        "filters": serializers.DictField(help_text="batch, annotators, since, until (only those set)"),
        "fingerprint": serializers.CharField(help_text="Hash of the inputs the report was computed from"),
        "current": serializers.BooleanField(
            help_text="False when annotations changed since (POST to recompute)"
        ),
        "requested_at": serializers.DateTimeField(),
        "computed_at": serializers.DateTimeField(allow_null=True),
        "error": serializers.CharField(),
        "results": serializers.DictField(
            allow_null=True,
            help_text='The report, schema 1 (README, "Agreement report JSON"); null until computed',
        ),
    },
)
FILTERS = [
    OpenApiParameter("batch", OpenApiTypes.STR, description="Only traces of this batch (name)"),
    OpenApiParameter(
        "annotators", OpenApiTypes.STR, description="Only these raters: comma-separated usernames (or repeat)"
    ),
    OpenApiParameter("since", OpenApiTypes.DATE, description="Annotations submitted on or after this day"),
    OpenApiParameter("until", OpenApiTypes.DATE, description="Annotations submitted on or before this day"),
    OpenApiParameter(
        "where",
        OpenApiTypes.STR,
        many=True,
        description='Trace metadata condition "key=value" (repeat for several; all must hold), e.g. round=Round 3',
    ),
]
Errors = OpenApiResponse(
    inline_serializer("FilterErrors", {"errors": serializers.ListField(child=serializers.CharField())}),
    description="A filter names something that is not in the project",
)


def report_json(report: AgreementReport) -> dict[str, Any]:
    return {
        "id": report.pk,
        "status": report.status,
        "filters": report.filters,
        "fingerprint": report.fingerprint,
        "current": report.status == JobStatus.SUCCEEDED and report_is_current(report.project, report),
        "requested_at": report.requested_at,
        "computed_at": report.computed_at,
        "error": report.error,
        "results": report.results,
    }


@extend_schema(
    methods=["GET"],
    operation_id="projects_agreement_latest",
    summary="The latest agreement report for these filters (owners, adjudicators, viewers)",
    parameters=FILTERS,
    responses={
        200: ReportSchema,
        400: Errors,
        404: OpenApiResponse(description="No report for these filters yet"),
    },
)
@extend_schema(
    methods=["POST"],
    operation_id="projects_agreement_request",
    summary="Request a report for these filters; an unchanged input returns the existing report",
    description="Filters come as query parameters or in the JSON body. Answers 200 with the report when it "
    "is already computed for the current data, 202 while it is queued or running (poll with GET).",
    parameters=FILTERS,
    request=inline_serializer(
        "AgreementRequest",
        {
            "batch": serializers.CharField(required=False),
            "annotators": serializers.ListField(child=serializers.CharField(), required=False),
            "since": serializers.DateField(required=False),
            "until": serializers.DateField(required=False),
            "where": serializers.ListField(
                child=serializers.CharField(max_length=200),
                required=False,
                help_text='Trace metadata conditions "key=value" (all must hold), e.g. "round=Round 3"',
            ),
        },
    ),
    responses={200: ReportSchema, 202: ReportSchema, 400: Errors},
)
@api_view(["GET", "POST"])
def agreement(request, slug: str):
    project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
    params = request.query_params
    if request.method == "POST" and isinstance(request.data, dict) and request.data:
        params = request.data
    try:
        filters = clean_filters(project, params)
    except ReportFilterError as error:
        return Response({"errors": error.messages}, status=status.HTTP_400_BAD_REQUEST)
    if request.method == "GET":
        report = latest_report(project, filters)
        if report is None:
            return Response(
                {"detail": "No report for these filters yet; POST to request one"},
                status=status.HTTP_404_NOT_FOUND,
            )
        return Response(report_json(report))
    report = do_request_report(project, filters)
    report.refresh_from_db()
    code = status.HTTP_200_OK if report.status == JobStatus.SUCCEEDED else status.HTTP_202_ACCEPTED
    return Response(report_json(report), status=code)
