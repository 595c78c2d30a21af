"""LLM rater API, runs (owners): start one over a batch or a saved view, preview its prompt and estimate,
follow, stop and resume it. No response carries the API key: a run exposes its endpoint snapshot, which never
holds one. Access goes through annotator.access: outsiders 404, members without the role 403."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import LLMRun, Project
from annotator.search.filters import FilterError
from annotator.search.saved import open_view
from annotator.services.enqueue import is_eager
from annotator.services.llm.config import (
    current_prompt,
)
from annotator.services.llm.estimate import estimate_run
from annotator.services.llm.labeller import windows_for
from annotator.services.llm.runs import (
    LLMRunError,
    check_run_request,
    do_resume_run,
    do_start_run,
    do_stop_run,
    run_progress,
)
from traces.models import Trace


class RunFailureSerializer(serializers.Serializer):
    trace = serializers.CharField(help_text="The trace's external id")
    trace_id = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True)
    raw_output = serializers.CharField(
        allow_blank=True, help_text="The model's answer (first 1,000 characters)"
    )


class RunStatus(serializers.Serializer):
    """An LLM run as `annotator.services.llm.runs.run_progress` reports it (the page shows the same)."""

    id = serializers.IntegerField()
    status = serializers.ChoiceField(LLMRun.Status.choices)
    status_label = serializers.CharField(help_text='e.g. "stopped: token cap reached"')
    stop_reason = serializers.CharField(allow_blank=True)
    model = serializers.CharField()
    rater = serializers.CharField(help_text="The rater user whose annotations hold the labels")
    batch = serializers.CharField(allow_blank=True, help_text="The batch it covers; empty for a view run")
    view = serializers.CharField(allow_blank=True, help_text="The saved view it covers (its traces then)")
    prompt_version = serializers.IntegerField()
    limit = serializers.IntegerField(allow_null=True)
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    skipped = serializers.IntegerField()
    processed = serializers.IntegerField()
    in_flight = serializers.IntegerField(help_text="Requests sent and not yet answered")
    concurrency = serializers.IntegerField(help_text="Requests the run keeps in flight at once")
    percent = serializers.IntegerField()
    seconds_left = serializers.FloatField(
        allow_null=True, help_text="Estimated from the pace so far; null when not running or no pace yet"
    )
    time_left = serializers.CharField(
        allow_blank=True, help_text='e.g. "about 3 min"; empty when not running'
    )
    tokens_used = serializers.IntegerField()
    token_cap = serializers.IntegerField(help_text="0: no cap")
    windowed_traces = serializers.IntegerField(help_text="Traces longer than the budget, judged in windows")
    window_requests = serializers.IntegerField(help_text="The requests (windows) those traces took")
    error = serializers.CharField(allow_blank=True)
    endpoint = serializers.DictField(help_text="Base URL, model, temperature, ... (never the key)")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    failures = RunFailureSerializer(many=True, help_text="The first 20 traces that failed")


class PreviewRunSerializer(serializers.Serializer):
    batch = serializers.CharField(max_length=200, help_text="A batch of the project")
    limit = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, help_text="Only the first N traces"
    )
    model = serializers.CharField(max_length=200, required=False, help_text="Default: the project's model")


class StartRunSerializer(serializers.Serializer):
    batch = serializers.CharField(
        max_length=200, required=False, help_text="A batch of the project (or give `view`)"
    )
    view = serializers.CharField(
        max_length=200,
        required=False,
        help_text="A saved view's id or name: label its traces instead of a batch",
    )
    limit = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, help_text="Only the first N traces"
    )
    model = serializers.CharField(max_length=200, required=False, help_text="Default: the project's model")


_ERROR = OpenApiResponse(ErrorSerializer, description="What is wrong with the request")


class LLMRunList(APIView):
    @extend_schema(
        summary="The project's LLM runs, newest first (owners only)", responses={200: RunStatus(many=True)}
    )
    def get(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        runs = LLMRun.objects.filter(project=project).select_related("batch", "prompt", "rater")
        newest = [run_progress(run, failures=0) for run in runs.order_by("-created_at")[:50]]
        return Response(RunStatus(newest, many=True).data)

    @extend_schema(
        summary="Start an LLM run over a batch or a saved view (owners only); follow it at llm-runs/{id}/",
        request=StartRunSerializer,
        responses={202: RunStatus, 400: _ERROR},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        body = StartRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if bool(data.get("batch")) == bool(data.get("view")):
            message = "Give a batch or a saved view to label"
            return error_response(message, status=status.HTTP_400_BAD_REQUEST, errors=[message])
        try:
            # A view on labels answers 403 to an owner still blind on a trace it selects (its check).
            view = open_view(project.access, data["view"])[0] if data.get("view") else None
        except FilterError as error:
            message = f"The saved view no longer reads: {error.param}: {error.message}"
            return error_response(message, status=status.HTTP_400_BAD_REQUEST, errors=[message])
        try:
            run = do_start_run(
                project,
                view=view,
                batch_name=body.validated_data.get("batch", ""),
                limit=body.validated_data.get("limit"),
                model=body.validated_data.get("model") or None,
                actor=request.user,
                background=is_eager(),  # no worker: answer at once, the run goes on in this process
            )
        except LLMRunError as error:
            return error_response(str(error), status=status.HTTP_400_BAD_REQUEST)
        run.refresh_from_db()
        return Response(
            RunStatus(run_progress(run, hide=project.access.blind_trace_ids())).data,
            status=status.HTTP_202_ACCEPTED,
        )


def _owned_run(request: Request, slug: str, run_id: int) -> tuple[Project, LLMRun]:
    """The project (owners only, by the one access policy) and its run `run_id` (404 in another project)."""
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    run = get_object_or_404(
        LLMRun.objects.select_related("batch", "prompt", "rater"), project=project, pk=run_id
    )
    return project, run


class LLMRunDetail(APIView):
    @extend_schema(
        summary="Status, progress, tokens and failures of an LLM run (owners only)", responses=RunStatus
    )
    def get(self, request: Request, slug: str, run_id: int) -> Response:
        project, run = _owned_run(request, slug, run_id)
        return Response(RunStatus(run_progress(run, hide=project.access.blind_trace_ids())).data)


class LLMRunResume(APIView):
    @extend_schema(
        summary="Resume a stopped or failed run; finished traces are skipped (owners only)",
        request=None,
        responses={202: RunStatus, 409: _ERROR},
    )
    def post(self, request: Request, slug: str, run_id: int) -> Response:
        project, run = _owned_run(request, slug, run_id)
        if not do_resume_run(run, background=is_eager()):
            return error_response(f"Run {run.pk} is {run.status_label}", status=status.HTTP_409_CONFLICT)
        run.refresh_from_db()
        return Response(
            RunStatus(run_progress(run, hide=project.access.blind_trace_ids())).data,
            status=status.HTTP_202_ACCEPTED,
        )


class RunEstimateSerializer(serializers.Serializer):
    """annotator.services.llm.estimate.RunEstimate: prompt tokens counted from the messages a run would
    send (4 characters a token); retries of malformed answers not included."""

    model = serializers.CharField()
    batch = serializers.CharField()
    prompt_version = serializers.IntegerField()
    traces = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="Already labelled by this model: no request")
    requests = serializers.IntegerField(help_text="One per trace, or one per window of a long trace")
    windowed_traces = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField(help_text="Estimated")
    max_completion_tokens = serializers.IntegerField(help_text="Upper bound: requests x max_tokens")
    max_tokens = serializers.IntegerField()
    prompt_price_per_million = serializers.DecimalField(max_digits=10, decimal_places=4, allow_null=True)
    completion_price_per_million = serializers.DecimalField(max_digits=10, decimal_places=4, allow_null=True)
    prompt_cost = serializers.DecimalField(
        max_digits=20, decimal_places=4, allow_null=True, help_text="null unless both prices are set"
    )
    max_completion_cost = serializers.DecimalField(max_digits=20, decimal_places=4, allow_null=True)
    max_cost = serializers.DecimalField(
        max_digits=20, decimal_places=4, allow_null=True, help_text="prompt_cost + max_completion_cost"
    )


class RunPreview(serializers.Serializer):
    model = serializers.CharField()
    base_url = serializers.CharField()
    prompt_version = serializers.IntegerField()
    trace = serializers.CharField(help_text="The external id of the batch's first trace")
    windows = serializers.IntegerField(help_text="The requests of that trace (over 1: judged in windows)")
    messages = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()),
        help_text="role and content, as they would be sent (the first window's, when windowed)",
    )
    estimate = RunEstimateSerializer(help_text="The whole run's requests, tokens and cost, before spending")


class LLMRunPreview(APIView):
    @extend_schema(
        summary="Dry run: the messages a run would send for the batch's first trace, and the estimate of the "
        "whole run (requests, prompt tokens, cost); calls nothing (owners only)",
        request=PreviewRunSerializer,
        responses={200: RunPreview, 400: _ERROR},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        body = PreviewRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        arguments = {
            "batch_name": body.validated_data["batch"],
            "limit": body.validated_data.get("limit"),
            "model": body.validated_data.get("model") or None,
        }
        try:
            batch, config, model = check_run_request(project, **arguments, check_url=False)
            estimate = estimate_run(project, **arguments)
        except LLMRunError as error:
            return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])
        trace = Trace.objects.in_project(project).filter(batch=batch).order_by("id").first()
        if trace is None:
            message = f"Batch {batch.name!r} has no traces"
            return error_response(message, status=status.HTTP_400_BAD_REQUEST, errors=[message])
        template = current_prompt(project)
        windows = windows_for(project, trace, template=template, config=config)
        preview = {
            "model": model,
            "base_url": config.base_url,
            "prompt_version": template.number,
            "trace": trace.external_id,
            "windows": len(windows),
            "messages": [{"role": m["role"], "content": m["content"]} for m in windows[0].messages],
            "estimate": estimate.as_dict(),
        }
        return Response(RunPreview(preview).data)


class LLMRunStop(APIView):
    @extend_schema(
        summary="Stop a queued or running run; resume it later (owners only)",
        request=None,
        responses={200: RunStatus, 409: _ERROR},
    )
    def post(self, request: Request, slug: str, run_id: int) -> Response:
        project, run = _owned_run(request, slug, run_id)
        if not do_stop_run(run):
            return error_response(
                f"Run {run.pk} is {run.status_label}: nothing to stop", status=status.HTTP_409_CONFLICT
            )
        run.refresh_from_db()
        return Response(RunStatus(run_progress(run, hide=project.access.blind_trace_ids())).data)
