"""`GET`/`PATCH /api/projects/<slug>/live/` (owners): the project's live settings (which live traces get
annotators), where to send spans, and the counts the live section of the project page shows.

Not an ingest route (annotator.models.tokens.INGEST_ROUTES): a project's ingest token is refused here, so
an agent's key cannot change who labels its traces.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer
from annotator.live import service
from annotator.models import LiveSettings, Project

_ERROR = OpenApiResponse(ErrorSerializer, description="What is wrong with the request, in words")


class LiveCountsSerializer(serializers.Serializer):
    pending_spans = serializers.IntegerField(help_text="Spans waiting for their trace to be assembled")
    pending_traces = serializers.IntegerField(help_text="Traces those spans belong to")
    traces_today = serializers.IntegerField(help_text="Live traces assembled today (UTC)")
    held_traces = serializers.IntegerField(help_text="Live traces with late spans kept apart")
    held_spans = serializers.IntegerField(help_text="Late spans kept apart, in all")


class LiveSettingsSerializer(serializers.Serializer):
    assign = serializers.ChoiceField(
        choices=LiveSettings.Assign.choices, help_text="Which live traces get annotators"
    )
    sample_rate = serializers.FloatField(
        min_value=0.0, max_value=1.0, help_text="With 'sample': the share of live traces assigned"
    )
    traces_endpoint = serializers.URLField(read_only=True, help_text="OTLP/HTTP traces endpoint")
    logs_endpoint = serializers.URLField(read_only=True, help_text="OTLP/HTTP logs endpoint")
    counts = LiveCountsSerializer(read_only=True)


def _body(request, project: Project) -> dict:
    choice = service.live_settings(project)
    status = service.live_status(project, recent=0)
    held = service.held_counts(project)
    return {
        "assign": choice.assign,
        "sample_rate": choice.sample_rate,
        "traces_endpoint": request.build_absolute_uri(reverse("api-otlp-traces", args=[project.slug])),
        "logs_endpoint": request.build_absolute_uri(reverse("api-otlp-logs", args=[project.slug])),
        "counts": {
            "pending_spans": status.pending_spans,
            "pending_traces": status.pending_traces,
            "traces_today": status.traces_today,
            "held_traces": held.traces,
            "held_spans": held.spans,
        },
    }


@extend_schema(
    methods=["GET"],
    responses={200: LiveSettingsSerializer},
    summary="Live settings, OTLP endpoints and live counts (owners)",
)
@extend_schema(
    methods=["PATCH"],
    request=LiveSettingsSerializer,
    responses={200: LiveSettingsSerializer, 400: _ERROR},
    summary="Change which live traces get annotators: all, failures, a sample, none (owners)",
)
@api_view(["GET", "PATCH"])
def live_settings(request, slug: str) -> Response:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    if request.method == "PATCH":
        current = service.live_settings(project)
        incoming = LiveSettingsSerializer(data=request.data, partial=True)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        service.do_save_live_settings(
            project,
            assign=data.get("assign", current.assign),
            sample_rate=data.get("sample_rate", current.sample_rate),
        )
    return Response(_body(request, project))
