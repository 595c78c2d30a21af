"""Start an import by POSTing files; follow it through its job-status endpoint. Owners only."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import ImportJob
from annotator.services.imports import job_progress
from annotator.services.uploads import UploadError, do_queue_import, jobs_for_project


class ImportJobSerializer(serializers.Serializer):
    """An import job as `annotator.services.imports.job_progress` reports it (the page shows the same)."""

    id = serializers.IntegerField()
    status = serializers.ChoiceField(ImportJob.Status.choices)
    batch = serializers.CharField()
    percent = serializers.IntegerField(help_text="0-100, from the bytes read")
    records = serializers.IntegerField(help_text="Records read so far")
    bytes_done = serializers.IntegerField()
    bytes_total = serializers.IntegerField()
    summary = serializers.DictField(help_text="Once finished: traces, steps, duplicates, labels per file")
    error = serializers.CharField(allow_blank=True, help_text="Why the job failed, empty otherwise")
    errors = serializers.ListField(child=serializers.DictField(), help_text="file, record, message")


class ImportRequestSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), required=False)
    batch = serializers.CharField(max_length=200, required=False, allow_blank=True, help_text="Batch name")
    format = serializers.CharField(max_length=50, required=False, allow_blank=True, help_text="Empty: detect")
    ignore_unknown_modes = serializers.BooleanField(required=False, default=False)


@extend_schema(
    summary="Import trace files into the project (owners only)",
    request={"multipart/form-data": ImportRequestSerializer},
    responses={
        202: ImportJobSerializer,
        400: OpenApiResponse(ErrorSerializer, description="What is wrong with the request"),
        413: OpenApiResponse(ErrorSerializer, description="The files are larger than IMPORT_MAX_UPLOAD_MB"),
    },
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
def start_import(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    body = ImportRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    try:
        job = do_queue_import(
            project,
            batch_name=body.validated_data.get("batch", ""),
            fmt=body.validated_data.get("format", ""),
            files=request.FILES.getlist("files"),
            user=request.user,
            ignore_unknown_modes=body.validated_data["ignore_unknown_modes"],
        )
    except UploadError as error:
        return error_response(str(error), status=error.status)
    job.refresh_from_db()
    return Response(ImportJobSerializer(job_progress(job)).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(summary="Status and progress of an import job", responses={200: ImportJobSerializer})
@api_view(["GET"])
def import_status(request, slug: str, job_id: int):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    job = get_object_or_404(jobs_for_project(project), pk=job_id)
    return Response(ImportJobSerializer(job_progress(job)).data)
