"""The agreement report over the API: the report for some filters (requested when there is none yet, as the
page does), or a request to recompute. Owners, adjudicators and viewers (REPORT_ROLES)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import REPORT_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import AgreementReport
from annotator.models.reports import JobStatus
from annotator.services.reports import (
    ReportFilterError,
    clean_filters,
    do_open_report,
    do_request_report,
    report_is_current,
)


class AgreementReportSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(JobStatus.choices)
    filters = serializers.DictField(help_text="batch, annotators, since, until (only those set)")
    fingerprint = serializers.CharField(help_text="Hash of the inputs the report was computed from")
    current = serializers.SerializerMethodField(
        help_text="False when annotations changed since (POST to recompute)"
    )
    requested_at = serializers.DateTimeField()
    computed_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    results = serializers.JSONField(
        allow_null=True, help_text='The report, schema 1 (docs: "Agreement report JSON"); null until computed'
    )

    def get_current(self, report: AgreementReport) -> bool:
        return report.status == JobStatus.SUCCEEDED and report_is_current(report.project, report)


class AgreementRequestSerializer(serializers.Serializer):
    batch = serializers.CharField(required=False, max_length=200)
    annotators = serializers.ListField(child=serializers.CharField(max_length=150), required=False)
    since = serializers.DateField(required=False)
    until = serializers.DateField(required=False)
    where = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        max_length=10,
        help_text='Trace metadata conditions "key=value" (all must hold), e.g. "round=Round 3"',
    )
    view = serializers.CharField(
        required=False,
        max_length=200,
        help_text="A saved view's id or name: only its traces (GET /api/projects/SLUG/views/)",
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
    OpenApiParameter(
        "view", OpenApiTypes.STR, description="A saved view's id or name: only its traces (/api/.../views/)"
    ),
]
Errors = OpenApiResponse(ErrorSerializer, description="A filter names something that is not in the project")
Pending = OpenApiResponse(AgreementReportSerializer, description="Queued or running: poll with GET")


def _answer(report: AgreementReport) -> Response:
    code = status.HTTP_200_OK if report.status == JobStatus.SUCCEEDED else status.HTTP_202_ACCEPTED
    return Response(AgreementReportSerializer(report).data, status=code)


@extend_schema(
    methods=["GET"],
    operation_id="projects_agreement_latest",
    summary="The agreement report for these filters (owners, adjudicators, viewers)",
    description="As the page does: the newest report for these filters, or a new request when there is none "
    "yet (`retry=1` also requests one when the newest failed). 200 when computed, 202 while queued or "
    "running (poll with GET).",
    parameters=[
        *FILTERS,
        OpenApiParameter("retry", OpenApiTypes.BOOL, description="Request anew when the newest failed"),
    ],
    responses={200: AgreementReportSerializer, 202: Pending, 400: Errors},
)
@extend_schema(
    methods=["POST"],
    operation_id="projects_agreement_request",
    summary="Request a report for these filters; an unchanged input returns the existing report",
    description="Filters come as query parameters or in the JSON body. Answers 200 with the report when it "
    "is already computed for the current data, 202 while it is queued or running (poll with GET).",
    parameters=FILTERS,
    request=AgreementRequestSerializer,
    responses={200: AgreementReportSerializer, 202: Pending, 400: Errors},
)
@api_view(["GET", "POST"])
def agreement(request, slug: str):
    project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
    params = request.query_params
    if request.method == "POST" and isinstance(request.data, dict) and request.data:
        params = request.data
    try:
        filters = clean_filters(project, params, project.access)
    except ReportFilterError as error:
        return error_response("A filter is not valid", status=400, errors=error.messages)
    if request.method == "GET":
        retry = str(request.query_params.get("retry", "")).lower() in {"1", "true", "on", "yes"}
        return _answer(do_open_report(project, filters, retry=retry))
    report = do_request_report(project, filters)
    report.refresh_from_db()
    return _answer(report)
