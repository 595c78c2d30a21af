"""Saved views over the API: list (each with its count as the caller may see it) and create; read, rename
or change, delete one. Who may do what: annotator/search/saved.py. A view is applied to the trace list with
`GET /api/projects/SLUG/traces/?view=ID` (or its name): annotator/api/traces.py."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.access import ProjectAccess
from annotator.api.errors import ErrorSerializer, error_response
from annotator.search.filters import FilterError, TraceFilter, parse
from annotator.search.saved import (
    ViewError,
    ViewRow,
    do_change_view,
    do_delete_view,
    do_save_view,
    find_view,
    may_manage,
    project_views,
    stored_params,
    view_row,
)


class SavedViewSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    params = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="The view's trace filters (docs/search.md), each parameter with its values",
    )
    query = serializers.CharField(help_text="The same filters as a query string for /traces/")
    count = serializers.IntegerField(
        allow_null=True, help_text="Traces in the view as you may see them now; null with `error` or `held`"
    )
    error = serializers.CharField(
        allow_blank=True,
        help_text="A stored filter that no longer reads (e.g. a mode gone from the taxonomy)",
    )
    held = serializers.CharField(allow_blank=True, help_text="Why you may not open it yet (blind labelling)")
    may_manage = serializers.BooleanField(help_text="You may rename, change or delete it")
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


def view_body(access: ProjectAccess, row: ViewRow) -> dict[str, Any]:
    view = row.view
    params: dict[str, list[str]] = {}
    for name, value in stored_params(view):
        params.setdefault(name, []).append(value)
    return SavedViewSerializer(
        {
            "id": view.pk,
            "name": view.name,
            "params": params,
            "query": row.query,
            "count": row.count,
            "error": row.error,
            "held": row.held,
            "may_manage": may_manage(access, view),
            "created_by": view.created_by.username if view.created_by else None,
            "created_at": view.created_at,
            "updated_at": view.updated_at,
        }
    ).data


class SaveViewSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    params = serializers.DictField(
        required=False,
        help_text="Trace filters, as the query parameters of /traces/ (a string, or a list for `meta`); "
        'e.g. {"gold_mode": "FM-3.3", "meta": ["split:test"]}',
    )


class ChangeViewSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    params = serializers.DictField(required=False, help_text="Replaces the view's filters (as in POST)")


VIEW_ERRORS = OpenApiResponse(ErrorSerializer, description="What is wrong, with `fields` naming the field")


def _filter_of(raw: dict[str, Any]) -> TraceFilter:
    mapping = {
        str(k): [str(v) for v in value] if isinstance(value, list) else [str(value)]
        for k, value in raw.items()
    }
    return parse(mapping)


def _problem(field: str, message: str, code: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return error_response(f"{field}: {message}", status=code, errors=[message], fields={field: [message]})


@extend_schema(
    methods=["GET"],
    responses={200: SavedViewSerializer(many=True)},
    summary="The project's saved views you may see, by name, each with its current count",
)
@extend_schema(
    methods=["POST"],
    request=SaveViewSerializer,
    responses={201: SavedViewSerializer, 400: VIEW_ERRORS},
    summary="Save trace filters as a view shared in the project (owners and adjudicators)",
)
@api_view(["GET", "POST"])
def views(request: Request, slug: str) -> Response:
    access = ProjectAccess.load(request.user, slug)
    if request.method == "GET":
        return Response([view_body(access, row) for row in project_views(access)])
    incoming = SaveViewSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        flt = _filter_of(data.get("params") or {})
        view = do_save_view(access, data["name"], flt)
    except FilterError as error:
        return _problem(f"params.{error.param}", error.message)
    except ViewError as error:
        field = error.field if error.field == "name" else f"params.{error.field}"
        return _problem(field, error.message)
    return Response(view_body(access, view_row(access, view)), status=status.HTTP_201_CREATED)


@extend_schema(
    methods=["GET"], responses={200: SavedViewSerializer}, summary="One saved view, with its count"
)
@extend_schema(
    methods=["PATCH"],
    request=ChangeViewSerializer,
    responses={200: SavedViewSerializer, 400: VIEW_ERRORS},
    summary="Rename a view or replace its filters (owners and the view's creator)",
)
@extend_schema(methods=["DELETE"], responses={204: None}, summary="Delete a view (owners and its creator)")
@api_view(["GET", "PATCH", "DELETE"])
def view_detail(request: Request, slug: str, view_id: int) -> Response:
    access = ProjectAccess.load(request.user, slug)
    view = find_view(access, view_id)
    if request.method == "GET":
        return Response(view_body(access, view_row(access, view)))
    if not may_manage(access, view):
        raise PermissionDenied("Only the project's owners and the view's creator may change or delete it")
    if request.method == "DELETE":
        do_delete_view(access, view)
        return Response(status=status.HTTP_204_NO_CONTENT)
    incoming = ChangeViewSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        flt = _filter_of(data["params"]) if "params" in data else None
        view = do_change_view(access, view, name=data.get("name"), flt=flt)
    except FilterError as error:
        return _problem(f"params.{error.param}", error.message)
    except ViewError as error:
        field = error.field if error.field == "name" else f"params.{error.field}"
        return _problem(field, error.message)
    return Response(view_body(access, view_row(access, view)))
