"""Start an import by POSTing files; follow it through its job-status endpoint."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, access_project
from annotator.models import ImportJob
from annotator.services.imports import job_progress
from annotator.services.uploads import UploadError, do_queue_import, jobs_for_project

JobStatus = inline_serializer(
    "ImportJobStatus",
    {
        "id": serializers.IntegerField(),
        "status": serializers.ChoiceField(ImportJob.Status.choices),
        "batch": serializers.CharField(),
        "percent": serializers.IntegerField(),
        "records": serializers.IntegerField(),
        "bytes_done": serializers.IntegerField(),
        "bytes_total": serializers.IntegerField(),
        "summary": serializers.DictField(),
        "error": serializers.CharField(help_text="Why the job failed, empty otherwise"),
        "errors": serializers.ListField(child=serializers.DictField()),
    },
)


@extend_schema(
    summary="Import trace files into the project (owners only)",
    request={
        "multipart/form-data": inline_serializer(
            "ImportRequest",
            {
                "files": serializers.ListField(child=serializers.FileField()),
                "batch": serializers.CharField(),
                "format": serializers.CharField(required=False, help_text="Empty: detect per file"),
                "ignore_unknown_modes": serializers.BooleanField(required=False),
            },
        )
    },
    responses={
        202: JobStatus,
        400: OpenApiResponse(description="What is wrong with the request"),
        413: OpenApiResponse(description="The files are larger than IMPORT_MAX_UPLOAD_MB"),
    },
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
def start_import(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    try:
        job = do_queue_import(
            project,
            batch_name=request.data.get("batch", ""),
            fmt=request.data.get("format", ""),
            files=request.FILES.getlist("files"),
            user=request.user,
            ignore_unknown_modes=str(request.data.get("ignore_unknown_modes", "")).lower()
            in {"1", "true", "on"},
        )
    except UploadError as error:
        return Response({"detail": str(error)}, status=error.status)
    job.refresh_from_db()
    return Response(job_progress(job), status=status.HTTP_202_ACCEPTED)


@extend_schema(summary="Status and progress of an import job", responses={200: JobStatus})
@api_view(["GET"])
def import_status(request, slug: str, job_id: int):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    return Response(job_progress(get_object_or_404(jobs_for_project(project), pk=job_id)))
