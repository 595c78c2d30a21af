"""Discovery and the codebook gate over the API. The run body is `results_view` (the same as
`discover_modes --json` and `gate_modes --json`). Owners start, stop, resume and send; owners and
adjudicators read; a run is refused to a reader still blind on any trace it read."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, REVIEW_ROLES, ProjectAccess
from annotator.api.errors import ErrorSerializer, error_response
from annotator.api.rounds import RoundSerializer
from annotator.discovery.estimate import estimate_discovery
from annotator.discovery.results import results_view
from annotator.discovery.service import (
    DEFAULT_GATE_SAMPLE,
    DEFAULT_SAMPLE,
    MAX_SAMPLE,
    DiscoveryError,
    access_run,
    blind_on_run,
    candidates_from_changes,
    candidates_from_proposals,
    do_open_candidate_round,
    do_resume_discovery,
    do_send_to_proposals,
    do_start_discovery,
    do_start_gate,
    do_stop_discovery,
    visible_runs,
)
from annotator.models import DiscoveryRun
from annotator.services.enqueue import is_eager
from annotator.services.evolution import MigrationError, parse_changes_text
from annotator.services.proposals import proposal_json
from annotator.services.rounds import RoundError

_ERRORS = OpenApiResponse(ErrorSerializer, description="What is wrong with the request, in words")


class DiscoveryProgressSerializer(serializers.Serializer):
    step = serializers.ChoiceField(
        DiscoveryRun.Phase.values,
        help_text="The step under way (the run's phase): analyse, embed, name, gate",
    )
    step_label = serializers.CharField(help_text='The step in words, e.g. "Embedding analyses"')
    unit = serializers.ChoiceField(
        ["requests", "batches"], help_text="What done and total count: embedding batches while embedding"
    )
    total = serializers.IntegerField(help_text="Requests (embedding: batches) the current step needs")
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    percent = serializers.IntegerField()


class DiscoveryCandidateSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    definition = serializers.CharField(allow_blank=True)
    guidance = serializers.CharField(allow_blank=True)
    support = serializers.IntegerField(allow_null=True, help_text="Traces of its group (induced candidates)")
    examples = serializers.JSONField(help_text="[{trace, external_id, step, quote}], quotes checked verbatim")
    kappa = serializers.FloatField(allow_null=True, help_text="Fleiss' kappa across the gate's raters")
    kappa_undefined = serializers.CharField(allow_null=True, help_text="Why kappa is undefined, when it is")
    interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="95% bootstrap"
    )
    prevalence = serializers.FloatField(allow_null=True)
    present_in = serializers.IntegerField(
        allow_null=True, help_text="Held-out traces a majority marked it on"
    )
    cooccurring = serializers.JSONField(help_text="[{code, count}] current modes on the same traces")
    disagreement_count = serializers.IntegerField()
    disagreements = serializers.JSONField(help_text="[{trace, votes: [{rater, present, steps, reason}]}]")
    passes = serializers.BooleanField(allow_null=True)


class DiscoveryRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(["discover", "gate"])
    status = serializers.CharField()
    phase = serializers.CharField()
    stop_reason = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    scope = serializers.JSONField(help_text="{kind: batch|outcome|view, value, traces}")
    model = serializers.CharField()
    raters = serializers.ListField(child=serializers.CharField())
    induction_traces = serializers.IntegerField()
    gate_traces = serializers.IntegerField()
    progress = DiscoveryProgressSerializer()
    tokens_used = serializers.IntegerField()
    kappa_min = serializers.FloatField()
    coverage_min = serializers.FloatField()
    grouped_by = serializers.CharField(allow_blank=True, help_text='"tf-idf" or "embeddings (MODEL)"')
    coverage = serializers.FloatField(allow_null=True)
    codebook_passes = serializers.BooleanField(allow_null=True)
    candidates = DiscoveryCandidateSerializer(many=True)
    dropped = serializers.JSONField(help_text="[{code, name, reason, mode}] what consolidation dropped")
    methods = serializers.CharField(help_text="How the candidates were found and gated")


class DiscoveryRunSummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.CharField()
    scope = serializers.JSONField()
    candidates = serializers.IntegerField(
        allow_null=True, help_text="null while the reader is blind on its traces"
    )


class DiscoveryStartSerializer(serializers.Serializer):
    scope = serializers.CharField(
        max_length=300, help_text="batch:NAME, outcome:failure|success|unknown, view:NAME"
    )
    raters = serializers.ListField(child=serializers.CharField(max_length=200), min_length=3, max_length=8)
    model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    sample = serializers.IntegerField(min_value=1, max_value=MAX_SAMPLE, default=DEFAULT_SAMPLE)
    gate_sample = serializers.IntegerField(min_value=1, max_value=MAX_SAMPLE, default=DEFAULT_GATE_SAMPLE)
    kappa_min = serializers.FloatField(min_value=-1, max_value=1, default=0.75)
    coverage_min = serializers.FloatField(min_value=0, max_value=1, default=0.70)


class DiscoveryGateSerializer(serializers.Serializer):
    scope = serializers.CharField(max_length=300)
    raters = serializers.ListField(child=serializers.CharField(max_length=200), min_length=3, max_length=8)
    changes = serializers.JSONField(required=False, help_text="The `add` entries (a list, or YAML text)")
    proposals = serializers.BooleanField(default=False, help_text="Gate the groups of open proposals instead")
    sample = serializers.IntegerField(min_value=1, max_value=MAX_SAMPLE, default=DEFAULT_GATE_SAMPLE)
    kappa_min = serializers.FloatField(min_value=-1, max_value=1, default=0.75)
    coverage_min = serializers.FloatField(min_value=0, max_value=1, default=0.70)


class DiscoveryEstimateSerializer(serializers.Serializer):
    scope_traces = serializers.IntegerField()
    induction_traces = serializers.IntegerField()
    gate_traces = serializers.IntegerField()
    raters = serializers.IntegerField()
    analysis_requests = serializers.IntegerField()
    max_naming_requests = serializers.IntegerField()
    gate_requests = serializers.IntegerField()
    requests = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    max_completion_tokens = serializers.IntegerField()
    max_embedding_requests = serializers.IntegerField(help_text="With an embeddings model; 0 without")
    max_embedding_tokens = serializers.IntegerField(
        help_text="Embedding tokens at most (counted against the token cap, priced at the prompt price)"
    )
    max_cost = serializers.CharField(allow_null=True, help_text="With the endpoint's prices; null without")


class DiscoveryRoundRequestSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True)
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), min_length=1, max_length=100
    )


def _bad(error: Exception) -> Response:
    return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])


def run_body(run) -> dict:
    """The run as the API answers it (and `discover_modes --json` / `gate_modes --json` print it)."""
    return DiscoveryRunSerializer(results_view(run)).data


@extend_schema(
    methods=["GET"],
    summary="The project's discovery and gate runs (owners and adjudicators)",
    responses={200: DiscoveryRunSummarySerializer(many=True)},
)
@extend_schema(
    methods=["POST"],
    summary="Start a discovery run: induce candidate modes from a sample of the scope, gate them on held-out traces",
    request=DiscoveryStartSerializer,
    responses={201: DiscoveryRunSerializer, 400: _ERRORS},
)
@api_view(["GET", "POST"])
def runs(request, slug: str):
    access = ProjectAccess.load(request.user, slug)
    if request.method == "GET":
        rows = [
            {
                "id": r.pk,
                "kind": r.kind,
                "status": r.status,
                "scope": {k: (r.scope or {}).get(k) for k in ("kind", "value", "traces")},
                "candidates": None if blind_on_run(access, r) else len(r.candidates),
            }
            for r in visible_runs(access)[:100]
        ]
        return Response(DiscoveryRunSummarySerializer(rows, many=True).data)
    access.require(MANAGE_ROLES)
    options = _start_options(request)
    try:
        run = do_start_discovery(access, actor=request.user, background=is_eager(), **options)
    except DiscoveryError as error:
        return _bad(error)
    return Response(run_body(run), status=status.HTTP_201_CREATED)


def _start_options(request) -> dict:
    """A discovery run's options from a start or estimate request (400 on bad input); no model: the
    project's LLM rater model."""
    incoming = DiscoveryStartSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = dict(incoming.validated_data)
    return {**data, "model": data.get("model") or None}


@extend_schema(
    summary="What a discovery run would cost, before it spends anything",
    request=DiscoveryStartSerializer,
    responses={200: DiscoveryEstimateSerializer, 400: _ERRORS},
)
@api_view(["POST"])
def estimate(request, slug: str):
    access = ProjectAccess.load(request.user, slug).require(MANAGE_ROLES)
    options = _start_options(request)
    try:
        found = estimate_discovery(access, **options)
    except DiscoveryError as error:
        return _bad(error)
    return Response(DiscoveryEstimateSerializer(found.as_dict()).data)


@extend_schema(
    summary="Gate candidate modes (taxonomy-migration `add` entries, or the groups of open proposals)",
    request=DiscoveryGateSerializer,
    responses={201: DiscoveryRunSerializer, 400: _ERRORS},
)
@api_view(["POST"])
def gate(request, slug: str):
    access = ProjectAccess.load(request.user, slug).require(MANAGE_ROLES)
    incoming = DiscoveryGateSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        if data["proposals"]:
            candidates = candidates_from_proposals(access.project)
        else:
            changes = data.get("changes") or []
            candidates = candidates_from_changes(
                parse_changes_text(changes) if isinstance(changes, str) else changes
            )
        run = do_start_gate(
            access,
            candidates=candidates,
            scope=data["scope"],
            raters=data["raters"],
            sample=data["sample"],
            kappa_min=data["kappa_min"],
            coverage_min=data["coverage_min"],
            actor=request.user,
            background=is_eager(),  # no worker: answer at once, the run goes on in this process
        )
    except (DiscoveryError, MigrationError) as error:
        return _bad(error)
    return Response(run_body(run), status=status.HTTP_201_CREATED)


@extend_schema(summary="A discovery or gate run with its results", responses={200: DiscoveryRunSerializer})
@api_view(["GET"])
def run_detail(request, slug: str, run_id: int):
    access = ProjectAccess.load(request.user, slug).require(REVIEW_ROLES)
    return Response(run_body(access_run(access, run_id)))


def _owned(request, slug: str, run_id: int):
    access = ProjectAccess.load(request.user, slug).require(MANAGE_ROLES)
    return access_run(access, run_id, manage=True)


@extend_schema(
    summary="Stop an active run", request=None, responses={200: DiscoveryRunSerializer, 400: _ERRORS}
)
@api_view(["POST"])
def stop(request, slug: str, run_id: int):
    run = _owned(request, slug, run_id)
    if not do_stop_discovery(run):
        return _bad(DiscoveryError(f"Run {run.pk} is not running."))
    run.refresh_from_db()
    return Response(run_body(run))


@extend_schema(
    summary="Resume a stopped or failed run",
    request=None,
    responses={200: DiscoveryRunSerializer, 400: _ERRORS},
)
@api_view(["POST"])
def resume(request, slug: str, run_id: int):
    run = _owned(request, slug, run_id)
    if not do_resume_discovery(run, background=is_eager()):
        return _bad(DiscoveryError(f"Run {run.pk} cannot be resumed (it is active or has finished)."))
    run.refresh_from_db()
    return Response(run_body(run))


class DiscoverySentSerializer(serializers.Serializer):
    created = serializers.JSONField(help_text="The proposals made (as GET .../proposals/ shows them)")


@extend_schema(
    summary="Send the passing candidates to the proposals page (open proposals marked discovered)",
    request=None,
    responses={200: DiscoverySentSerializer, 400: _ERRORS},
)
@api_view(["POST"])
def send(request, slug: str, run_id: int):
    run = _owned(request, slug, run_id)
    try:
        created = do_send_to_proposals(run, actor=request.user)
    except DiscoveryError as error:
        return _bad(error)
    return Response(DiscoverySentSerializer({"created": [proposal_json(p) for p in created]}).data)


@extend_schema(
    summary="Open a calibration round on the traces the candidates speak of",
    request=DiscoveryRoundRequestSerializer,
    responses={201: RoundSerializer, 400: _ERRORS},
)
@api_view(["POST"])
def candidate_round(request, slug: str, run_id: int):
    run = _owned(request, slug, run_id)
    incoming = DiscoveryRoundRequestSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        round_ = do_open_candidate_round(
            run,
            name=data.get("name") or f"Discovery run {run.pk} candidates",
            annotators=data["annotators"],
            actor=request.user,
        )
    except (DiscoveryError, RoundError) as error:
        return _bad(error)
    return Response(RoundSerializer(round_).data, status=status.HTTP_201_CREATED)
