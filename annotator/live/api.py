"""The project's OTLP/HTTP endpoints: `POST /api/projects/<slug>/otlp/v1/traces` and `.../otlp/v1/logs`.

Answers as the OTLP/HTTP specification says, so the OpenTelemetry SDK exporters work unchanged: 200 with an
Export*ServiceResponse in the request's encoding (`partial_success` when some spans were rejected, with how
many and why); 400 for a body that is not OTLP, 413 over the size limits, 429 when too many spans of the
project wait for assembly and 503 when the task queue is down, both with Retry-After (the exporters retry
those). Failures carry a google.rpc.Status body. Token authentication only (no session, so no CSRF): the
project's ingest token, or an owner's own token. The request only validates, bounds and queues
(annotator.live.service).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view, authentication_classes, parser_classes, permission_classes
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.auth import HashedTokenAuthentication
from annotator.live import otlp, service
from annotator.live.otlp import JSON, PROTOBUF
from annotator.models import Project
from traces.importers import limits

# google.rpc.Code values for the Status body.
_INVALID_ARGUMENT, _RESOURCE_EXHAUSTED, _UNAVAILABLE = 3, 8, 14


def ingest_project(request, slug: str) -> Project:
    """The project the request may send to: an ingest token's own (annotator.api.auth has checked the
    slug), or one the token's user owns (404 for others, 403 for members who are not owners)."""
    token = request.auth
    project = token.project if token is not None and token.is_ingest else None
    project = project or access_project(request.user, slug, roles=MANAGE_ROLES)
    if project.archived:
        raise PermissionDenied("This project is archived: it takes no new spans (an owner can unarchive it).")
    return project


def _answer(kind: str, status: int, message: str, *, retry: bool = False) -> HttpResponse:
    code = {400: _INVALID_ARGUMENT, 413: _INVALID_ARGUMENT, 429: _RESOURCE_EXHAUSTED}.get(
        status, _UNAVAILABLE
    )
    response = HttpResponse(otlp.status_body(kind, code, message), status=status, content_type=kind)
    if retry:
        response["Retry-After"] = str(settings.OTLP_RETRY_AFTER_SECONDS)
    return response


def _receive(
    request,
    slug: str,
    parse: Callable[[bytes, str], otlp.Decoded],
    accept: Callable[[Project, otlp.Decoded], int],
    respond: Callable[[str, int, str], bytes],
) -> HttpResponse:
    project = ingest_project(request, slug)
    try:
        kind = otlp.media_type(request.content_type)
    except otlp.BadRequest as error:
        return _answer(otlp.PROTOBUF, 400, str(error))
    bounds = limits.current()
    cap = bounds.max_record_bytes
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return _answer(kind, 400, "Content-Length is not a number")
    if length > cap:
        return _answer(kind, 413, _too_large(length, cap))
    body = request.stream.read(cap + 1) if request.stream is not None else b""
    if len(body) > cap:
        return _answer(kind, 413, _too_large(len(body), cap))
    try:
        data = otlp.inflate(body, request.headers.get("Content-Encoding", ""), bounds)
        decoded = parse(data, kind)
    except otlp.TooLarge as error:
        return _answer(kind, 413, str(error))
    except otlp.BadRequest as error:
        return _answer(kind, 400, str(error))
    if decoded.count > settings.OTLP_MAX_SPANS:
        return _answer(
            kind,
            413,
            f"{decoded.count} items in one request, more than {settings.OTLP_MAX_SPANS} "
            "(limit OTLP_MAX_SPANS): send smaller batches",
        )
    try:
        accept(project, decoded)
    except service.QueueFull as error:
        return _answer(kind, 429, f"{error}; try again later", retry=True)
    except service.QueueUnavailable:
        return _answer(kind, 503, "the task queue is unavailable; nothing was stored, try again", retry=True)
    return HttpResponse(respond(kind, decoded.rejected, decoded.message), content_type=kind)


def _too_large(size: int, cap: int) -> str:
    return f"the request body is {size} bytes, more than {cap} (limit IMPORT_MAX_RECORD_MB): send smaller batches"


class _PartialSuccess(serializers.Serializer):
    rejectedSpans = serializers.CharField(required=False, help_text="int64, as a string (proto3 JSON)")
    rejectedLogRecords = serializers.CharField(required=False, help_text="int64, as a string (proto3 JSON)")
    errorMessage = serializers.CharField(required=False)


class _ExportResponse(serializers.Serializer):
    partialSuccess = _PartialSuccess(required=False, help_text="Only when items were rejected")


class _Status(serializers.Serializer):
    code = serializers.IntegerField(help_text="google.rpc.Code")
    message = serializers.CharField()


def _responses() -> dict:
    binary = OpenApiTypes.BINARY
    out: dict = {(200, PROTOBUF): binary, (200, JSON): _ExportResponse}
    for status, why in (
        (400, "Not an OTLP request"),
        (413, "Over IMPORT_MAX_RECORD_MB or OTLP_MAX_SPANS"),
        (429, "Too many spans waiting for assembly; Retry-After"),
        (503, "Task queue unavailable, nothing stored; Retry-After"),
    ):
        out[(status, PROTOBUF)] = OpenApiResponse(binary, description=f"{why} (google.rpc.Status)")
        out[(status, JSON)] = OpenApiResponse(_Status, description=f"{why} (google.rpc.Status)")
    return out


@extend_schema(
    summary="Receive OTLP spans (ExportTraceServiceRequest, protobuf or JSON, gzip or not)",
    request={PROTOBUF: OpenApiTypes.BINARY, JSON: OpenApiTypes.OBJECT},
    responses=_responses(),
)
@api_view(["POST"])
@authentication_classes([HashedTokenAuthentication])
@permission_classes([IsAuthenticated])
@parser_classes([])
def otlp_traces(request, slug: str) -> HttpResponse:
    return _receive(request, slug, otlp.parse_traces, service.do_accept_spans, otlp.trace_response)


@extend_schema(
    summary="Receive OTLP log records (ExportLogsServiceRequest: GenAI message events)",
    request={PROTOBUF: OpenApiTypes.BINARY, JSON: OpenApiTypes.OBJECT},
    responses=_responses(),
)
@api_view(["POST"])
@authentication_classes([HashedTokenAuthentication])
@permission_classes([IsAuthenticated])
@parser_classes([])
def otlp_logs(request, slug: str) -> HttpResponse:
    return _receive(request, slug, otlp.parse_logs, service.do_accept_logs, otlp.logs_response)
