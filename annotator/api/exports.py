"""Start a dataset export (optionally published to the Hugging Face Hub) and follow it. Owners only.

`hf_token` is write-only: it is handed to the job through a short-lived cache entry and never returned,
stored on the export or logged (see annotator.services.exports.jobs).
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
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


def _payload(request, project, export) -> dict:
    data = export_status(export)
    data["download_url"] = (
        request.build_absolute_uri(reverse("project-export-download", args=[project.slug, export.pk]))
        if data["download_ready"]
        else None
    )
    return ExportStatusSerializer(data).data
