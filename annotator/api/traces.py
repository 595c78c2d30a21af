"""Traces of a project and their steps, read-only. Same door as the pages: annotator.access."""

from __future__ import annotations

from dataclasses import fields as dataclass_fields
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.paginator import EmptyPage, Paginator
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import ProjectAccess, access_trace
from annotator.search.filters import ORDERINGS, OUTCOMES, STATES, STEP_KINDS, FilterError, TraceFilter, parse
from annotator.search.saved import open_view
from annotator.search.service import StepMatch, filtered_traces, step_matches
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


class StepMatchSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The step's index (open the viewer at ?step=INDEX#step-INDEX)")
    kind = serializers.CharField()
    snippet = serializers.CharField(help_text="Plain text around the first hit (not HTML)")


class TraceHitSerializer(TraceSerializer):
    matches = serializers.SerializerMethodField(
        help_text="With `q`: the best matching steps (up to 3), best first; empty without `q`."
    )
    similarity = serializers.SerializerMethodField(
        help_text="With `like` (and no ordering): cosine similarity to that trace, -1 to 1; else null."
    )

    class Meta(TraceSerializer.Meta):
        fields = [*TraceSerializer.Meta.fields, "matches", "similarity"]

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_similarity(self, trace: Trace) -> float | None:
        score = self.context.get("similarity", {}).get(trace.pk)
        return None if score is None else round(float(score), 6)

    @extend_schema_field(StepMatchSerializer(many=True))
    def get_matches(self, trace: Trace) -> list[dict[str, Any]]:
        found: list[StepMatch] = self.context.get("matches", {}).get(trace.pk, [])
        return StepMatchSerializer(found, many=True).data


def _choices_help(values) -> str:
    return ", ".join(values)


class TraceFilterParams(serializers.Serializer):
    """The trace filter language (annotator/search/filters.py; docs/search.md): documentation only, the
    parser is `annotator.search.filters.parse`, whose errors answer 400 naming the parameter."""

    batch = serializers.CharField(required=False, help_text="A batch's id or name")
    benchmark = serializers.CharField(required=False)
    model = serializers.CharField(required=False)
    system = serializers.CharField(required=False, help_text="Agent system / framework")
    outcome = serializers.ChoiceField(OUTCOMES, required=False)
    score_min = serializers.FloatField(required=False)
    score_max = serializers.FloatField(required=False)
    steps_min = serializers.IntegerField(required=False, min_value=0)
    steps_max = serializers.IntegerField(required=False, min_value=0)
    meta = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="key:value on the metadata (repeatable)"
    )
    state = serializers.ChoiceField(
        STATES,
        required=False,
        help_text="Label state; in_adjudication and gold only for owners and adjudicators who are not blind",
    )
    gold_mode = serializers.CharField(required=False, help_text="A mode code in the gold (reviewers only)")
    human_mode = serializers.CharField(
        required=False, help_text="A mode code in any submitted human annotation (reviewers only)"
    )
    llm_mode = serializers.CharField(
        required=False, help_text="A mode code in an LLM rater's labels (reviewers)"
    )
    disputed_mode = serializers.CharField(
        required=False, help_text="A mode code the annotators disagree on (reviewers only)"
    )
    pair = serializers.CharField(
        required=False,
        help_text="Two raters' usernames a,b: the traces both submitted; with disputed_mode, where only one "
        "of the two chose it (reviewers only)",
    )
    raters = serializers.CharField(
        required=False,
        help_text="Two or more raters' usernames a,b,c: the traces at least two of them submitted; with "
        "disputed_mode, where one of them chose it and another did not (reviewers only)",
    )
    sig_mode = serializers.CharField(
        required=False,
        help_text="A mode the failure signatures count on the trace under sig_source (reviewers only)",
    )
    sig_source = serializers.CharField(
        required=False,
        help_text="The label source of sig_mode: gold (default), union, agreed, annotator:NAME, gold+...",
    )
    evidence_kind = serializers.ChoiceField(
        STEP_KINDS, required=False, help_text="A label's evidence on a step of this kind (reviewers only)"
    )
    evidence_tool = serializers.CharField(
        required=False, help_text="A label's evidence on a step calling this tool (reviewers only)"
    )
    tool = serializers.CharField(required=False, help_text="A step calls this tool (exact name)")
    tool_args = serializers.CharField(required=False, help_text="Text in a step's tool arguments")
    q = serializers.CharField(required=False, help_text="Full-text search of step content (ranked)")
    like = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="A trace id: the traces most similar to it first (the other filters still apply; an "
        "explicit ordering sorts the same traces by that column instead). 400 for a trace you may not open "
        "or one without a representation yet",
    )
    ordering = serializers.ChoiceField(
        [*ORDERINGS, *(f"-{o}" for o in ORDERINGS)],
        required=False,
        help_text="Sort column, - for descending; rank (needs q) is the default with q; id breaks ties",
    )
    view = serializers.CharField(
        required=False,
        help_text="A saved view's id or name (GET /api/projects/SLUG/views/): its filters instead of the "
        "others (ordering may still be given)",
    )


FILTER_PARAMS = frozenset(f.name for f in dataclass_fields(TraceFilter))


def trace_filter(params):
    """Parse the filter of a request; a bad parameter is a 400 naming it (the shared error shape)."""
    try:
        return parse(params)
    except FilterError as error:
        raise serializers.ValidationError({error.param: [error.message]}) from None


def applied_filter(access: ProjectAccess, params):
    """The request's filter, or with `view=ID|NAME` the saved view's (its ordering may be overridden by
    `ordering`; other filters beside a view are a 400, so a view means the same traces everywhere)."""
    ref = str(params.get("view") or "").strip()
    if not ref:
        return trace_filter(params)
    extra = sorted({k for k in params if k in FILTER_PARAMS and k != "ordering" and params.get(k)})
    if extra:
        raise serializers.ValidationError(
            {"view": [f"give a view or filters, not both ({', '.join(extra)})"]}
        )
    try:
        _, flt = open_view(access, ref)
    except FilterError as error:
        message = f"the saved view's {error.param} no longer reads: {error.message}"
        raise serializers.ValidationError({"view": [message]}) from None
    ordering = trace_filter({"ordering": params.get("ordering") or ""}).ordering
    return flt.with_ordering(ordering) if ordering else flt


MAX_PAGE_SIZE = 200


def _page_numbers(params) -> tuple[int, int]:
    """`page` (from 1) and `page_size` (1 to 200, default 50): a bad value is a 400 naming it."""
    numbers = {}
    for name, default in (("page", 1), ("page_size", settings.REST_FRAMEWORK["PAGE_SIZE"])):
        raw = str(params.get(name) or "").strip()
        if not raw:
            numbers[name] = default
            continue
        if not raw.isdigit() or int(raw) < 1 or (name == "page_size" and int(raw) > MAX_PAGE_SIZE):
            limit = f"1 to {MAX_PAGE_SIZE}" if name == "page_size" else "a whole number from 1"
            raise serializers.ValidationError({name: [f"'{raw[:20]}' is not {limit}"]})
        numbers[name] = int(raw)
    return numbers["page"], numbers["page_size"]


def trace_list_body(access: ProjectAccess, params, base_url: str) -> dict[str, Any]:
    """The body of GET /api/projects/SLUG/traces/ for these query parameters: one function for the API and
    `manage.py traces --json`, so the two cannot differ. `base_url` is the endpoint's URL (absolute in the
    API; whatever the CLI is told) for the `next` / `previous` links, which keep every parameter."""
    flt = applied_filter(access, params)
    page_number, page_size = _page_numbers(params)
    try:
        traces = filtered_traces(access, flt).defer("metadata", "answer_key")
    except FilterError as error:
        raise serializers.ValidationError({error.param: [error.message]}) from None
    paginator = Paginator(traces, page_size)
    try:
        page = paginator.page(page_number)
    except EmptyPage:
        if page_number == 1:
            page = paginator.page(1)  # an empty list has its one, empty, page
        else:
            raise NotFound(
                f"page: there is no page {page_number} (the list has {paginator.num_pages})"
            ) from None
    rows = list(page.object_list)
    keep = [(k, v) for k, v in flt.to_params()] + (
        [("page_size", str(page_size))] if page_size != settings.REST_FRAMEWORK["PAGE_SIZE"] else []
    )

    def link(number: int) -> str:
        query = keep + ([("page", str(number))] if number > 1 else [])
        return f"{base_url}?{urlencode(query)}" if query else base_url

    matches = step_matches(flt, [trace.pk for trace in rows])
    return {
        "count": paginator.count,
        "next": link(page.next_page_number()) if page.has_next() else None,
        "previous": link(page.previous_page_number()) if page.has_previous() else None,
        "results": TraceHitSerializer(
            rows, many=True, context={"matches": matches, "similarity": getattr(traces, "scores", {})}
        ).data,
    }


class TraceListPageParams(serializers.Serializer):
    page = serializers.IntegerField(required=False, min_value=1, help_text="Page number, from 1")
    page_size = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_PAGE_SIZE, help_text="Traces per page (default 50)"
    )


class ProjectTraceList(generics.ListAPIView):
    """Traces of the project (annotators: only theirs), filtered, sorted and searched (the trace filter
    language, docs/search.md), paginated with the count of the whole filtered set; no step content except
    the matching steps' snippets of a search. Filters on labels, the gold or adjudication answer 403 to
    annotators and viewers, and to anyone still blind on a trace the filter reaches."""

    serializer_class = TraceHitSerializer

    @extend_schema(parameters=[TraceFilterParams, TraceListPageParams])
    def get(self, request: Request, slug: str) -> Response:
        access = ProjectAccess.load(request.user, slug)
        return Response(
            trace_list_body(access, request.query_params, request.build_absolute_uri(request.path))
        )


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
