"""Start a dataset export (optionally published to the Hugging Face Hub) and follow it. Owners only.

`hf_token` is write-only: it is handed to the job through a short-lived cache entry and never returned,
stored on the export or logged (see annotator.services.exports.jobs).
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models.reports import JobStatus
from annotator.services.exports import (
    LICENSES,
    ExportOptionsError,
    clean_options,
    do_queue_export,
    export_status,
    exports_for,
)
from annotator.services.exports.tables import (
    CONTENT_TYPES,
    FORMATS,
    KINDS,
    TableError,
    check_table,
    encode,
    filename,
    label_table,
)


class ExportStatusSerializer(serializers.Serializer):
    """An export as `annotator.services.exports.export_status` reports it (the page shows the same)."""

    id = serializers.IntegerField()
    status = serializers.ChoiceField(JobStatus.choices)
    progress = serializers.IntegerField(help_text="0-100")
    options = serializers.DictField()
    target_repo = serializers.CharField(
        allow_blank=True, help_text="Hub dataset repo id; empty when not published"
    )
    commit_url = serializers.CharField(allow_blank=True, help_text="The Hub commit, once published")
    download_ready = serializers.BooleanField()
    download_url = serializers.CharField(allow_null=True, help_text="Zip of the dataset folder")
    log = serializers.ListField(child=serializers.CharField(allow_blank=True), help_text="The last 20 lines")
    error = serializers.CharField(
        allow_blank=True, help_text="Why it failed, in plain words (401, 403, taken repo, network)"
    )
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class ExportRequestSerializer(serializers.Serializer):
    batches = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, help_text="Default: all"
    )
    gold_only = serializers.BooleanField(required=False, default=False)
    view = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="A saved view's id or name (GET /api/projects/SLUG/views/): only its traces",
    )
    include_text = serializers.BooleanField(required=False, default=True)
    real_names = serializers.BooleanField(required=False, default=False)
    license = serializers.ChoiceField(LICENSES, required=False, default="cc-by-4.0")
    pretty_name = serializers.CharField(required=False, allow_blank=True, max_length=120)
    repo_id = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="owner/name: publish to this Hub dataset repo",
    )
    private = serializers.BooleanField(required=False, default=True)
    commit_message = serializers.CharField(required=False, allow_blank=True, max_length=200)
    hf_token = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        max_length=500,
        help_text="Hub write token; default: the server's HF_TOKEN",
    )


@extend_schema(
    summary="Export the project as a Hugging Face dataset, optionally published to the Hub (owners only)",
    request=ExportRequestSerializer,
    responses={
        202: ExportStatusSerializer,
        400: OpenApiResponse(ErrorSerializer, description="What is wrong with the options"),
    },
)
@sensitive_variables("token")
@sensitive_post_parameters("hf_token")
@api_view(["POST"])
def start_export(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    body = ExportRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    values = dict(body.validated_data)
    token = values.pop("hf_token", "")
    try:
        export = do_queue_export(project, clean_options(project, values), user=request.user, token=token)
    except ExportOptionsError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=error.messages)
    export.refresh_from_db()
    return Response(_payload(request, project, export), status=status.HTTP_202_ACCEPTED)


@extend_schema(
    summary="Status, progress, download and commit URL of an export (owners only)",
    responses={200: ExportStatusSerializer},
)
@api_view(["GET"])
def export_detail(request, slug: str, export_id: int):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    return Response(_payload(request, project, get_object_or_404(exports_for(project), pk=export_id)))


class _TableNegotiation(BaseContentNegotiation):
    """`?format=` names the table's file format here, not one of DRF's renderers (its URL_FORMAT_OVERRIDE
    would answer 404 to `format=csv`); errors are JSON like everywhere else in the API."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _label_table_view(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    kind, fmt = request.query_params.get("kind", "annotations"), request.query_params.get("format", "csv")
    values = {
        flag: request.query_params.get(flag, "") for flag in ("gold_only", "include_text", "real_names")
    }
    values |= {
        "batches": request.query_params.getlist("batches"),
        "view": request.query_params.get("view", ""),
    }
    try:
        check_table(kind, fmt)
        options = clean_options(project, values)
    except TableError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST)
    except ExportOptionsError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=error.messages)
    response = StreamingHttpResponse(
        encode(label_table(project, options, kind), fmt), content_type=CONTENT_TYPES[fmt]
    )
    response["Content-Disposition"] = f'attachment; filename="{filename(project, kind, fmt)}"'
    return response


_label_table_view.content_negotiation_class = _TableNegotiation
export_labels = extend_schema(
    summary="The project's labels as CSV or JSON Lines: per annotation, per label with its evidence, or gold "
    "(owners not blind on any trace; annotators pseudonymised unless real_names)",
    parameters=[
        OpenApiParameter("kind", OpenApiTypes.STR, enum=list(KINDS), description="Default: annotations"),
        OpenApiParameter("format", OpenApiTypes.STR, enum=list(FORMATS), description="Default: csv"),
        OpenApiParameter("batches", OpenApiTypes.STR, many=True, description="Only these batches (repeat)"),
        OpenApiParameter("view", OpenApiTypes.STR, description="A saved view's id or name: only its traces"),
        OpenApiParameter("gold_only", OpenApiTypes.BOOL, description="Only traces with settled gold labels"),
        OpenApiParameter("include_text", OpenApiTypes.BOOL, description="Quoted evidence (default true)"),
        OpenApiParameter("real_names", OpenApiTypes.BOOL, description="Usernames instead of annotator-N"),
    ],
    responses={
        (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, formula-safe cells"),
        (200, "application/x-ndjson"): OpenApiResponse(
            OpenApiTypes.STR, description="One JSON object a line"
        ),
        400: OpenApiResponse(ErrorSerializer, description="An unknown kind, format, batch or view"),
    },
)(api_view(["GET"])(_label_table_view))


def _payload(request, project, export) -> dict:
    data = export_status(export)
    data["download_url"] = (
        request.build_absolute_uri(reverse("project-export-download", args=[project.slug, export.pk]))
        if data["download_ready"]
        else None
    )
    return ExportStatusSerializer(data).data
