"""One shape for every API error body, and the exception handler that gives DRF's own errors that shape.

Every 4xx of the API answers `{"detail": "...", "errors": [...]?, "fields": {...}?}`: `detail` says what
went wrong in one sentence, `errors` lists every problem (for people), `fields` maps a request field (dotted
for nested values: `labels.0.mode`) to its problems (for programs). Conflicts (409) add what the client needs
to retry without losing work. The schema documents these serializers and the views build their bodies with
them, so the documentation and the bodies cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotator.middleware import OVERSIZED_FORM, oversized_form_message


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong, in one sentence")
    errors = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Every problem found, for people"
    )
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Problems per request field (dotted path for nested values)",
    )


class AnnotationConflictSerializer(ErrorSerializer):
    code = serializers.ChoiceField(choices=["stale", "locked"])
    current_version = serializers.IntegerField(required=False, help_text="Set when `code` is stale")
    your_payload = serializers.JSONField(help_text="The body you sent, so nothing is lost")


class AdjudicationConflictSerializer(ErrorSerializer):
    current_version = serializers.IntegerField()
    submitted = serializers.JSONField(help_text="The body you sent, so nothing is lost")


def error_response(
    detail: str, *, status: int, errors: list[str] | None = None, serializer=ErrorSerializer, **extra: Any
) -> Response:
    """An error answer built by the serializer the schema documents (extra: the conflict fields)."""
    body: dict[str, Any] = {"detail": detail, **extra}
    if errors is not None:
        body["errors"] = [str(error) for error in errors]
    return Response(serializer(body).data, status=status)


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(detail, list) and any(isinstance(item, dict | list) for item in detail):
        out = {}
        for index, item in enumerate(detail):
            out.update(_flatten(item, f"{prefix}.{index}" if prefix else str(index)))
        return out
    items = detail if isinstance(detail, list) else [detail]
    return {prefix or "non_field_errors": [str(item) for item in items]} if items else {}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler (status, headers), then the body reshaped into ErrorSerializer's shape."""
    if isinstance(exc, OVERSIZED_FORM):
        # A body DRF parses past Django's form bounds (a PATCH form, say): a 400 like the middleware's.
        return Response(dict(ErrorSerializer({"detail": oversized_form_message(exc)}).data), status=400)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ValidationError):
        fields = _flatten(exc.detail)
        errors = [
            message if name == "non_field_errors" else f"{name}: {message}"
            for name, messages in fields.items()
            for message in messages
        ]
        summary = "; ".join(errors)
        detail = f"The request is not valid: {summary}" if len(summary) <= 300 else "The request is not valid"
        body: dict[str, Any] = {"detail": detail, "errors": errors, "fields": fields}
    else:
        data = response.data
        detail = data.get("detail") if isinstance(data, dict) else None
        body = {"detail": str(detail if detail is not None else data)}
    # A plain dict: the schema view renders errors as YAML, which knows no ReturnDict.
    response.data = dict(ErrorSerializer(body).data)
    return response


def api_error_json(detail: str, *, status: int) -> JsonResponse:
    """The API's error shape outside DRF's views: an unknown /api/ address, a crash before a view ran."""
    return JsonResponse(dict(ErrorSerializer({"detail": detail}).data), status=status)


def lockout_response(request, original_response=None, credentials=None) -> HttpResponse:
    """django-axes' answer to a locked-out sign-in: the API's error shape under /api/ (the token endpoint
    documents its 429), axes' own plain message on the login page."""
    from axes.helpers import get_lockout_message

    status = settings.AXES_HTTP_RESPONSE_CODE
    if request.path.startswith("/api/"):
        return api_error_json(get_lockout_message(), status=status)
    return HttpResponse(get_lockout_message(), status=status)
