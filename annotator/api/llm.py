"""LLM rater API: the endpoint settings, the stored key and the versioned prompt (owners), start, stop and
follow runs (owners), their agreement with humans and gold (owners), and the model's labels of a trace for
the annotator who has submitted their own (when the project allows it).

The settings go through the page's own form (annotator.views.llm_forms.LLMConfigForm), so the same rules
hold: a key comes only from a variable the administrator lists (LLM_KEY_ENVS) or is stored encrypted, the
base URL passes annotator.llm.urlguard, and a changed base URL forgets the stored key.

Access goes through annotator.access like every page: outsiders 404, members without the role 403. No
response carries the API key: runs expose their endpoint snapshot, which never holds one.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import MANAGE_ROLES, access_assignment, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.api.signature_serializers import EstimateSerializer
from annotator.models import LLMConfig, LLMRun
from annotator.models.llm import MAX_CONCURRENCY
from annotator.search.filters import FilterError
from annotator.search.saved import open_view
from annotator.services.enqueue import is_eager
from annotator.services.llm.agreement import CURVE_RULE, llm_agreement
from annotator.services.llm.config import (
    LLMSettingsError,
    current_prompt,
    do_forget_key,
    do_save_config,
    do_save_prompt,
    do_store_key,
    get_config,
)
from annotator.services.llm.estimate import estimate_run
from annotator.services.llm.labeller import windows_for
from annotator.services.llm.opinion import llm_opinions_for
from annotator.services.llm.runs import (
    LLMRunError,
    check_run_request,
    do_resume_run,
    do_start_run,
    do_stop_run,
    run_progress,
)
from annotator.views.llm_forms import LLMConfigForm
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


class IntervalSerializer(serializers.Serializer):
    statistic = serializers.CharField()
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    level = serializers.FloatField()
    n_resamples = serializers.IntegerField()
    n_defined = serializers.IntegerField()
    undefined_code = serializers.CharField(allow_null=True)
    undefined_reason = serializers.CharField(allow_null=True)


class ModeKappaSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    cohen_kappa = EstimateSerializer()
    kappa_ci = IntervalSerializer()
    observed_agreement = EstimateSerializer()
    pabak = EstimateSerializer()
    prevalence_llm = serializers.FloatField(allow_null=True)
    prevalence_other = serializers.FloatField(allow_null=True)


class ComparisonSerializer(serializers.Serializer):
    against = serializers.CharField(help_text="A human rater's username, or gold")
    kind = serializers.ChoiceField(["human", "gold"])
    n_items = serializers.IntegerField(help_text="Traces both rated")
    kappa_macro = serializers.FloatField(allow_null=True, help_text="Mean of the defined per-mode kappas")
    modes = ModeKappaSerializer(many=True)


class CurvePointSerializer(serializers.Serializer):
    n_gold = serializers.IntegerField(help_text="The first n gold traces this model labelled, in gold order")
    kappa = serializers.FloatField(
        allow_null=True, help_text="Cohen's kappa on them; null when undefined (both sides constant)"
    )


class ModeCurveSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    points = CurvePointSerializer(many=True, help_text="After 10, 20, 40 ... gold traces, and after all")
    good_enough = serializers.BooleanField(help_text=f"The hint's rule: {CURVE_RULE}")


class LLMRaterAgreementSerializer(serializers.Serializer):
    rater = serializers.CharField()
    n_items = serializers.IntegerField()
    comparisons = ComparisonSerializer(many=True)
    kappa_curve = ModeCurveSerializer(
        many=True, help_text="Per mode: the kappa against gold as gold arrived (in the order it was decided)"
    )


class LLMAgreementSerializer(serializers.Serializer):
    raters = LLMRaterAgreementSerializer(many=True)
    curve_rule = serializers.CharField(help_text="When a mode's curve is called good enough")


class OpinionLabelSerializer(serializers.Serializer):
    mode = serializers.CharField(source="code")
    name = serializers.CharField()
    primary = serializers.BooleanField()
    steps = serializers.ListField(child=serializers.IntegerField())
    reason = serializers.CharField(allow_blank=True)


class OpinionSerializer(serializers.Serializer):
    rater = serializers.CharField()
    note = serializers.CharField(allow_blank=True)
    no_failure = serializers.BooleanField()
    labels = OpinionLabelSerializer(many=True)


class LLMLabelsSerializer(serializers.Serializer):
    visible = serializers.BooleanField(help_text="False until you submitted, or when the project hides them")
    opinions = OpinionSerializer(many=True)


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


class LLMSettingsSerializer(serializers.Serializer):
    """The project's LLM endpoint. Never the key: only where it comes from (`key_source`)."""

    base_url = serializers.CharField(
        max_length=500,
        help_text="Up to /v1; a private or local address only if LLM_ALLOWED_BASE_URLS allows it",
    )
    model = serializers.CharField(max_length=200, allow_blank=True)
    api_key_env = serializers.CharField(
        max_length=100,
        allow_blank=True,
        help_text="One of the variables the administrator lists (LLM_KEY_ENVS)",
    )
    temperature = serializers.FloatField()
    max_tokens = serializers.IntegerField()
    requests_per_minute = serializers.IntegerField()
    concurrency = serializers.IntegerField(
        help_text=f"Requests a run keeps in flight at once, 1 to {MAX_CONCURRENCY}",
        min_value=1,
        max_value=MAX_CONCURRENCY,
    )
    token_cap = serializers.IntegerField(help_text="Per run; 0: no cap")
    prompt_price_per_million = serializers.DecimalField(
        max_digits=10,
        decimal_places=4,
        min_value=0,
        allow_null=True,
        help_text="For the estimate before a run; null: no cost shown",
    )
    completion_price_per_million = serializers.DecimalField(
        max_digits=10, decimal_places=4, min_value=0, allow_null=True
    )
    timeout_seconds = serializers.FloatField()
    max_trace_chars = serializers.IntegerField(help_text="Character budget for the trace in one request")
    long_traces = serializers.ChoiceField(
        LLMConfig._meta.get_field("long_traces").choices,
        help_text="A trace over the budget: judged in overlapping windows, or its middle cut out",
    )
    window_overlap_steps = serializers.IntegerField(help_text="Steps consecutive windows share (0 to 20)")
    json_mode = serializers.BooleanField()
    show_to_annotators = serializers.BooleanField()


class LLMSettingsOut(LLMSettingsSerializer):
    key_source = serializers.CharField(help_text="Where the key comes from (never the key itself)")
    has_stored_key = serializers.BooleanField()
    allowed_key_envs = serializers.ListField(child=serializers.CharField())
    key_forgotten = serializers.BooleanField(
        help_text="true when this change of base URL removed the stored key (store it again)"
    )


class LLMSettingsPatch(LLMSettingsSerializer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class StoreKeySerializer(serializers.Serializer):
    api_key = serializers.CharField(max_length=500, help_text="Stored encrypted; never shown again")


class PromptSerializer(serializers.Serializer):
    number = serializers.IntegerField(read_only=True, help_text="The prompt version")
    instructions = serializers.CharField(help_text="Saving different text makes a new version")
    created = serializers.BooleanField(read_only=True, help_text="Whether this request made a new version")


def _settings_body(config, *, forgot: bool = False) -> dict:
    from annotator.llm.secrets import allowed_key_envs

    data = {name: getattr(config, name) for name in LLMSettingsSerializer().fields}
    data.update(
        key_source=config.key_source(),
        has_stored_key=config.has_stored_key,
        allowed_key_envs=sorted(allowed_key_envs()),
        key_forgotten=forgot,
    )
    return LLMSettingsOut(data).data


class LLMSettings(APIView):
    @extend_schema(
        summary="The project's LLM endpoint settings (owners only; never the key)", responses=LLMSettingsOut
    )
    def get(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        return Response(_settings_body(get_config(project)))

    @extend_schema(
        summary="Change the LLM endpoint settings; fields left out keep their value (owners only)",
        request=LLMSettingsPatch,
        responses={200: LLMSettingsOut, 400: _ERROR},
    )
    def patch(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        body = LLMSettingsPatch(data=request.data)
        body.is_valid(raise_exception=True)
        config = get_config(project)
        current = {name: getattr(config, name) for name in LLMSettingsSerializer().fields}
        # The page's form validates (base URL rule, allowed key variables, ranges): one rule set for both.
        form = LLMConfigForm({**current, **body.validated_data}, instance=config)
        if not form.is_valid():
            fields = {name: [str(message) for message in messages] for name, messages in form.errors.items()}
            errors = [f"{name}: {message}" for name, messages in fields.items() for message in messages]
            return error_response(
                f"The request is not valid: {errors[0]}",
                status=status.HTTP_400_BAD_REQUEST,
                errors=errors,
                fields=fields,
            )
        forgot = do_save_config(form.save(commit=False), actor=request.user)
        return Response(_settings_body(get_config(project), forgot=forgot))


class LLMKey(APIView):
    @extend_schema(
        summary="Store an API key for the project's endpoint, encrypted (owners only)",
        request=StoreKeySerializer,
        responses={200: LLMSettingsOut, 400: _ERROR},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        body = StoreKeySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            do_store_key(project, body.validated_data["api_key"], actor=request.user)
        except LLMSettingsError as error:
            return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])
        return Response(_settings_body(get_config(project)))

    @extend_schema(
        summary="Remove the stored API key (owners only)", request=None, responses={200: LLMSettingsOut}
    )
    def delete(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        do_forget_key(project, actor=request.user)
        return Response(_settings_body(get_config(project)))


class LLMPrompt(APIView):
    @extend_schema(summary="The current prompt version (owners only)", responses=PromptSerializer)
    def get(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        template = current_prompt(project)
        return Response(PromptSerializer({**vars(template), "created": False}).data)

    @extend_schema(
        summary="Save the prompt's instructions as a new version (unchanged text keeps the version)",
        request=PromptSerializer,
        responses={200: PromptSerializer, 400: _ERROR},
    )
    def put(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        body = PromptSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            template, created = do_save_prompt(
                project, body.validated_data["instructions"], actor=request.user
            )
        except LLMSettingsError as error:
            return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])
        return Response(
            PromptSerializer(
                {"number": template.number, "instructions": template.instructions, "created": created}
            ).data
        )


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


class LLMRunDetail(APIView):
    @extend_schema(
        summary="Status, progress, tokens and failures of an LLM run (owners only)", responses=RunStatus
    )
    def get(self, request: Request, slug: str, run_id: int) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        run = get_object_or_404(
            LLMRun.objects.select_related("batch", "prompt", "rater"), project=project, pk=run_id
        )
        return Response(RunStatus(run_progress(run, hide=project.access.blind_trace_ids())).data)


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
        project = access_project(request.user, slug, roles=MANAGE_ROLES)
        run = get_object_or_404(
            LLMRun.objects.select_related("batch", "prompt", "rater"), project=project, pk=run_id
        )
        if not do_stop_run(run):
            return error_response(
                f"Run {run.pk} is {run.status_label}: nothing to stop", status=status.HTTP_409_CONFLICT
            )
        run.refresh_from_db()
        return Response(RunStatus(run_progress(run, hide=project.access.blind_trace_ids())).data)


class LLMAgreement(APIView):
    @extend_schema(
        summary="Per LLM rater: per-mode Cohen's kappa vs each human and vs gold, with intervals (owners only)",
        responses={200: LLMAgreementSerializer},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
        body = {"raters": llm_agreement(project), "curve_rule": CURVE_RULE}
        return Response(LLMAgreementSerializer(body).data)


class LLMLabelsForMe(APIView):
    @extend_schema(
        summary="The LLM raters' labels of my assignment's trace: only after I submitted, if the project allows",
        responses={200: LLMLabelsSerializer},
    )
    def get(self, request: Request, slug: str, assignment_id: int) -> Response:
        assignment = access_assignment(request.user, slug, assignment_id)
        opinions = llm_opinions_for(assignment)
        body = {"visible": opinions is not None, "opinions": opinions or []}
        return Response(LLMLabelsSerializer(body).data)
