"""The state of a project's similar-traces representation over the API, and the owner's requests to (re)build
it and to stop a build in progress. Ranking by similarity itself is the trace list's `like=`
(GET /api/projects/SLUG/traces/?like=ID)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, ProjectAccess
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import TraceRepresentation
from annotator.similar.panel import may_see_panel
from annotator.similar.service import (
    active_build,
    current_representation,
    do_request_build,
    do_stop_build,
    latest_build,
)


class BuildSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    method = serializers.ChoiceField(TraceRepresentation.Method.choices)
    model = serializers.CharField(help_text="The embeddings model (empty for TF-IDF)")
    dimensions = serializers.IntegerField()
    status = serializers.CharField()
    traces_done = serializers.IntegerField()
    traces_total = serializers.IntegerField()
    error = serializers.CharField(help_text="Why the build failed or stopped, else empty")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class SimilarStateSerializer(serializers.Serializer):
    current = BuildSerializer(allow_null=True, help_text="The representation `like=` ranks by, if any")
    building = BuildSerializer(allow_null=True, help_text="A build queued or running, with its progress")
    latest = BuildSerializer(allow_null=True, help_text="The newest build, whatever its state")


def _state(access: ProjectAccess) -> dict[str, Any]:
    project = access.project
    return SimilarStateSerializer(
        {
            "current": current_representation(project),
            "building": active_build(project),
            "latest": latest_build(project),
        }
    ).data


@extend_schema(
    methods=["GET"],
    responses={200: SimilarStateSerializer},
    summary="The project's similar-traces representation: the current one and any build in progress",
)
@extend_schema(
    methods=["POST"],
    request=None,
    responses={202: SimilarStateSerializer},
    summary="Build (or rebuild) the representation (owners); answers at once, the build runs in a worker",
)
@api_view(["GET", "POST"])
def similar(request: Request, slug: str) -> Response:
    access = ProjectAccess.load(request.user, slug)
    if request.method == "POST":
        access.require(MANAGE_ROLES)
        do_request_build(access.project, actor=request.user)
        return Response(_state(access), status=status.HTTP_202_ACCEPTED)
    if not may_see_panel(access):
        raise PermissionDenied("Similar traces are for owners, adjudicators and annotators")
    return Response(_state(access))


@extend_schema(
    request=None,
    responses={200: SimilarStateSerializer, 409: ErrorSerializer},
    summary="Stop the build in progress (owners); it stays stopped, and the current representation is kept",
)
@api_view(["POST"])
def similar_stop(request: Request, slug: str) -> Response:
    access = ProjectAccess.load(request.user, slug).require(MANAGE_ROLES)
    if do_stop_build(access.project) is None:
        return error_response("No similar-traces build is in progress: nothing to stop", status=409)
    return Response(_state(access))
