"""Traces of a project and their steps, read-only. Same door as the pages: annotator.access."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import access_project, access_trace, visible_traces
from traces.models import Step, Trace
from traces.viewer import StepFilter, search_steps


class TraceSerializer(serializers.ModelSerializer):
    batch = serializers.CharField(source="batch.name", read_only=True)

    class Meta:
        model = Trace
        fields = [
            "id",
            "external_id",
            "batch",
            "task",
            "system",
            "model",
            "benchmark",
            "outcome",
            "score",
            "step_count",
        ]


class TraceDetailSerializer(TraceSerializer):
    class Meta(TraceSerializer.Meta):
        fields = [*TraceSerializer.Meta.fields, "metadata", "source_format"]


class StepSerializer(serializers.ModelSerializer):
    class Meta:
        model = Step
        fields = list(Step.DATA_FIELDS)


class SearchResultSerializer(serializers.Serializer):
    q = serializers.CharField()
    hits = serializers.ListField(child=serializers.IntegerField(), help_text="Step indices, first 1,000")
    total = serializers.IntegerField()


class ProjectTraceList(generics.ListAPIView):
    """Traces of the project (annotators: only theirs), paginated, with step counts and no step content."""

    serializer_class = TraceSerializer

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"])
        return visible_traces(project, self.request.user).defer("metadata").order_by("id")


class ProjectTraceDetail(generics.RetrieveAPIView):
    serializer_class = TraceDetailSerializer

    def get_object(self):
        _, trace = access_trace(self.request.user, self.kwargs["slug"], self.kwargs["trace_id"])
        return trace


_FILTERS = [
    OpenApiParameter("agent", OpenApiTypes.STR, description="Only steps of this agent"),
    OpenApiParameter("kind", OpenApiTypes.STR, description="Only steps of this kind"),
]


@extend_schema(parameters=_FILTERS)
class TraceStepList(generics.ListAPIView):
    """A trace's steps in order, paginated (50 per page), optionally filtered by agent and kind."""

    serializer_class = StepSerializer

    def get_queryset(self):
        _, trace = access_trace(self.request.user, self.kwargs["slug"], self.kwargs["trace_id"])
        return (
            StepFilter.from_params(self.request.query_params)
            .apply(Step.objects.filter(trace=trace))
            .order_by("index")
        )


class TraceSearch(APIView):
    """Search inside a trace (content, tool name, tool arguments; case-insensitive): hit step indices."""

    @extend_schema(
        parameters=[OpenApiParameter("q", OpenApiTypes.STR, required=True), *_FILTERS],
        responses=SearchResultSerializer,
    )
    def get(self, request: Request, slug: str, trace_id: int) -> Response:
        _, trace = access_trace(request.user, slug, trace_id)
        filters = StepFilter.from_params(request.query_params)
        hits, total = search_steps(trace, filters)
        return Response({"q": filters.q, "hits": hits, "total": total})
