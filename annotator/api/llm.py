"""LLM rater API: start a run and follow it (owners), its agreement with humans and gold (owners), and the
model's labels of a trace for the annotator who has submitted their own (when the project allows it).

Access goes through annotator.access like every page: outsiders 404, members without the role 403. No
response carries the API key: runs expose their endpoint snapshot, which never holds one.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import MANAGE_ROLES, access_assignment, access_project
from annotator.models import LLMRun
from annotator.services.llm_agreement import llm_agreement
from annotator.services.llm_opinion import llm_opinions_for
from annotator.services.llm_runs import LLMRunError, do_resume_run, do_start_run, run_progress


class RunStatus(serializers.Serializer):
    """An LLM run as the API shows it (`annotator.services.llm_runs.run_progress`)."""

    id = serializers.IntegerField()
    status = serializers.CharField(help_text="queued, running, succeeded, stopped or failed")
    status_label = serializers.CharField(help_text='e.g. "stopped: token cap reached"')
    stop_reason = serializers.CharField()
    model = serializers.CharField()
    rater = serializers.CharField(help_text="The rater user whose annotations hold the labels")
    batch = serializers.CharField()
    prompt_version = serializers.IntegerField()
    limit = serializers.IntegerField(allow_null=True)
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    skipped = serializers.IntegerField()
    processed = serializers.IntegerField()
    percent = serializers.IntegerField()
    tokens_used = serializers.IntegerField()
    token_cap = serializers.IntegerField(help_text="0: no cap")
    error = serializers.CharField()
    endpoint = serializers.DictField(help_text="Base URL, model, temperature, ... (never the key)")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    failures = serializers.ListField(
        child=serializers.DictField(), help_text="Up to 20: trace, trace_id, error, raw_output (the answer)"
    )


class StartRunSerializer(serializers.Serializer):
    batch = serializers.CharField(max_length=200, help_text="A batch of the project")
    limit = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, help_text="Only the first N traces"
    )
    model = serializers.CharField(max_length=200, required=False, help_text="Default: the project's model")


_ERROR = OpenApiResponse(description="What is wrong with the request ({detail})")


class LLMRunList(APIView):
    @extend_schema(
        summary="The project's LLM runs, newest first (owners only)", responses={200: RunStatus(many=True)}
    )
    def get(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        runs = LLMRun.objects.filter(project=project).select_related("batch", "prompt", "rater")
        return Response([run_progress(run, failures=0) for run in runs.order_by("-created_at")[:50]])

    @extend_schema(
        summary="Start an LLM run over a batch (owners only); follow it at llm-runs/{id}/",
        request=StartRunSerializer,
        responses={202: RunStatus, 400: _ERROR},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        body = StartRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            run = do_start_run(
                project,
                batch_name=body.validated_data["batch"],
                limit=body.validated_data.get("limit"),
                model=body.validated_data.get("model") or None,
                actor=request.user,
            )
        except LLMRunError as error:
            return Response({"detail": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        run.refresh_from_db()
        return Response(
            run_progress(run, hide=project.access.blind_trace_ids()), status=status.HTTP_202_ACCEPTED
        )


class LLMRunDetail(APIView):
    @extend_schema(
        summary="Status, progress, tokens and failures of an LLM run (owners only)", responses=RunStatus
    )
    def get(self, request: Request, slug: str, run_id: int) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        run = get_object_or_404(
            LLMRun.objects.select_related("batch", "prompt", "rater"), project=project, pk=run_id
        )
        return Response(run_progress(run, hide=project.access.blind_trace_ids()))


class LLMRunResume(APIView):
    @extend_schema(
        summary="Resume a stopped or failed run; finished traces are skipped (owners only)",
        request=None,
        responses={202: RunStatus, 409: _ERROR},
    )
    def post(self, request: Request, slug: str, run_id: int) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        run = get_object_or_404(
            LLMRun.objects.select_related("batch", "prompt", "rater"), project=project, pk=run_id
        )
        if not do_resume_run(run):
            return Response(
                {"detail": f"Run {run.pk} is {run.status_label}"}, status=status.HTTP_409_CONFLICT
            )
        run.refresh_from_db()
        return Response(
            run_progress(run, hide=project.access.blind_trace_ids()), status=status.HTTP_202_ACCEPTED
        )


class LLMAgreement(APIView):
    @extend_schema(
        summary="Per LLM rater: per-mode Cohen's kappa vs each human and vs gold, with intervals (owners only)",
        responses={
            200: inline_serializer(
                "LLMAgreement", {"raters": serializers.ListField(child=serializers.DictField())}
            )
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
        return Response({"raters": llm_agreement(project)})


class LLMLabelsForMe(APIView):
    @extend_schema(
        summary="The LLM raters' labels of my assignment's trace: only after I submitted, if the project allows",
        responses={
            200: inline_serializer(
                "LLMLabels",
                {
                    "visible": serializers.BooleanField(),
                    "opinions": serializers.ListField(
                        child=serializers.DictField(),
                        help_text="rater, note, no_failure, labels[mode, steps, reason]",
                    ),
                },
            )
        },
    )
    def get(self, request: Request, slug: str, assignment_id: int) -> Response:
        assignment = access_assignment(request.user, slug, assignment_id)
        opinions = llm_opinions_for(assignment)
        if opinions is None:
            return Response({"visible": False, "opinions": []})
        return Response({"visible": True, "opinions": [opinion.as_json() for opinion in opinions]})
