"""Traces of a project and their steps, read-only. Same door as the pages: annotator.access."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import ProjectAccess, access_trace
from traces.models import Step, StepKind, Trace
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
    answer_key = serializers.SerializerMethodField(
        help_text="The verdict that came with the data (e.g. Who&When's mistake_agent/mistake_step, MAST's "
        "failure_modes): only for owners and adjudicators who are not annotating this trace; null otherwise."
    )

    class Meta(TraceSerializer.Meta):
        fields = [*TraceSerializer.Meta.fields, "metadata", "answer_key", "source_format"]

    def get_answer_key(self, trace: Trace) -> dict[str, Any] | None:
        access = self.context["access"]
        return access.answer_key(trace) if access.may_see_labels(trace) else None


class StepSerializer(serializers.ModelSerializer):
    class Meta:
        model = Step
        fields = list(Step.DATA_FIELDS)


class StepFilterSerializer(serializers.Serializer):
    agent = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="Only this agent"
    )
    kind = serializers.ChoiceField(
        StepKind.choices, required=False, allow_blank=True, help_text="Only this kind"
    )


class SearchQuerySerializer(StepFilterSerializer):
    q = serializers.CharField(max_length=200, help_text="Text to find (case-insensitive)")


def _filters(request: Request, serializer=StepFilterSerializer) -> StepFilter:
    """The query string, checked by the serializer the schema documents (400 in the shared error shape)."""
    params = serializer(data=request.query_params)
    params.is_valid(raise_exception=True)
    return StepFilter.from_params(params.validated_data)


class SearchResultSerializer(serializers.Serializer):
    q = serializers.CharField()
    hits = serializers.ListField(child=serializers.IntegerField(), help_text="Step indices, first 1,000")
    total = serializers.IntegerField()


class ProjectTraceList(generics.ListAPIView):
    """Traces of the project (annotators: only theirs), paginated, with step counts and no step content."""

    serializer_class = TraceSerializer

    def get_queryset(self):
        access = ProjectAccess.load(self.request.user, self.kwargs["slug"])
        return access.traces().defer("metadata", "answer_key").order_by("id")


class ProjectTraceDetail(generics.RetrieveAPIView):
    serializer_class = TraceDetailSerializer

    def get_object(self):
        access = ProjectAccess.load(self.request.user, self.kwargs["slug"])
        self.access = access
        return access.trace(self.kwargs["trace_id"])

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "access": getattr(self, "access", None)}


@extend_schema(parameters=[StepFilterSerializer])
class TraceStepList(generics.ListAPIView):
    """A trace's steps in order, paginated (50 per page), optionally filtered by agent and kind."""

    serializer_class = StepSerializer

    def get_queryset(self):
        _, trace = access_trace(self.request.user, self.kwargs["slug"], self.kwargs["trace_id"])
        return _filters(self.request).apply(Step.objects.filter(trace=trace)).order_by("index")


class TraceSearch(APIView):
    """Search inside a trace (content, tool name, tool arguments; case-insensitive): hit step indices."""

    @extend_schema(
        parameters=[SearchQuerySerializer],
        responses=SearchResultSerializer,
    )
    def get(self, request: Request, slug: str, trace_id: int) -> Response:
        _, trace = access_trace(request.user, slug, trace_id)
        filters = _filters(request, SearchQuerySerializer)
        hits, total = search_steps(trace, filters)
        return Response(SearchResultSerializer({"q": filters.q, "hits": hits, "total": total}).data)
