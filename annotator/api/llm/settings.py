"""LLM rater API, settings (owners): the endpoint settings, the stored key and the versioned prompt.

The settings go through the page's own form (annotator.views.llm_forms.LLMConfigForm), so the same rules
hold: a key comes only from a variable the administrator lists (LLM_KEY_ENVS) or is stored encrypted, the
base URL passes annotator.llm.urlguard, and a changed base URL forgets the stored key. No response carries
the key."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import LLMConfig
from annotator.models.llm import MAX_CONCURRENCY
from annotator.services.llm.config import (
    LLMSettingsError,
    current_prompt,
    do_forget_key,
    do_save_config,
    do_save_prompt,
    do_store_key,
    get_config,
)
from annotator.views.llm_forms import LLMConfigForm

_ERROR = OpenApiResponse(ErrorSerializer, description="What is wrong with the request")


class LLMSettingsSerializer(serializers.Serializer):
    """The project's LLM endpoint. Never the key: only where it comes from (`key_source`)."""

    base_url = serializers.CharField(
        max_length=500,
        help_text="Up to /v1; a private or local address only if LLM_ALLOWED_BASE_URLS allows it",
    )
    model = serializers.CharField(max_length=200, allow_blank=True)
    embeddings_model = serializers.CharField(
        max_length=200,
        allow_blank=True,
        required=False,
        help_text="For similar traces and discovery's grouping: an embeddings model on this endpoint "
        "(/embeddings); empty: TF-IDF",
    )
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
