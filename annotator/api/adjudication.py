"""The adjudication queue over the API: list, claim the next item, read one, decide, reopen.

Adjudicators and owners only; annotators get 403, outsiders 404 (annotator.access). A decision on a stale
version, or on an item another adjudicator holds, answers 409 with the current version and the submitted
body echoed back under "submitted", so a client loses nothing.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from annotator.access import REVIEW_ROLES, access_project
from annotator.models import AdjudicationItem
from annotator.services.adjudication import (
    AdjudicationConflict,
    AdjudicationInvalid,
    do_claim_next,
    do_reopen,
    queue_counts,
)
from annotator.services.comparison import LETTERS, gold_snapshot, item_annotations
from annotator.services.gold import REASON_CODES, decision_from_json, do_decide

Status = AdjudicationItem.Status

Item = inline_serializer(
    "AdjudicationItem",
    {
        "id": serializers.IntegerField(),
        "trace": serializers.DictField(help_text="id, external_id"),
        "status": serializers.CharField(help_text="open, resolved or agreed"),
        "severity": serializers.IntegerField(help_text="100 per disputed fatal mode + 1 per disputed mode"),
        "disputed": serializers.ListField(child=serializers.CharField()),
        "primary_disputed": serializers.BooleanField(),
        "version": serializers.IntegerField(help_text="Send it back with a decision"),
        "claimed_by": serializers.CharField(allow_null=True),
        "claimed_until": serializers.DateTimeField(allow_null=True),
        "resolved_by": serializers.CharField(allow_null=True),
        "resolved_at": serializers.DateTimeField(allow_null=True),
    },
)
ItemDetail = inline_serializer(
    "AdjudicationItemDetail",
    {
        "item": Item,
        "annotations": serializers.ListField(
            child=serializers.DictField(), help_text="letter (A, B, ...), annotator, no_failure, labels[]"
        ),
        "gold": serializers.ListField(child=serializers.DictField()),
        "reason_codes": serializers.DictField(child=serializers.CharField()),
    },
)
Conflict = OpenApiResponse(
    inline_serializer(
        "AdjudicationConflict",
        {
            "detail": serializers.CharField(),
            "current_version": serializers.IntegerField(),
            "submitted": serializers.DictField(),
        },
    ),
    description="Someone else decided, claimed or changed the item; nothing was saved",
)
Invalid = OpenApiResponse(
    inline_serializer("AdjudicationErrors", {"errors": serializers.ListField(child=serializers.CharField())}),
    description="The decision is incomplete or inconsistent; nothing was saved",
)


def item_json(item: AdjudicationItem) -> dict[str, Any]:
    return {
        "id": item.pk,
        "trace": {"id": item.trace_id, "external_id": item.trace.external_id},
        "status": item.status,
        "severity": item.severity,
        "disputed": item.disputed,
        "primary_disputed": item.primary_disputed,
        "version": item.version,
        "claimed_by": item.claimed_by.username if item.claimed_by else None,
        "claimed_until": item.claimed_until,
        "resolved_by": item.resolved_by.username if item.resolved_by else None,
        "resolved_at": item.resolved_at,
    }


def detail_json(item: AdjudicationItem) -> dict[str, Any]:
    annotations = [
        {
            "letter": letter,
            "annotator": a.annotator,
            "no_failure": a.no_failure,
            "labels": [
                {"mode": code, "primary": label.primary, "evidence": label.evidence, "note": label.note}
                for code, label in a.labels.items()
            ],
        }
        for letter, a in zip(LETTERS, item_annotations(item), strict=False)
    ]
    return {
        "item": item_json(item),
        "annotations": annotations,
        "gold": gold_snapshot(item.pk),
        "reason_codes": REASON_CODES,
    }


def _items(project):
    # Scoped by the access policy: items of a trace this user is still annotating are not there.
    return (
        project.access.adjudication_items()
        .select_related("trace", "claimed_by", "resolved_by")
        .defer("trace__raw", "trace__metadata", "trace__task")
    )


@extend_schema(
    operation_id="projects_adjudication_list",
    summary="Queue progress and items of one status (open: most severe first)",
    parameters=[
        OpenApiParameter("status", OpenApiTypes.STR, enum=Status.values),
        OpenApiParameter("page", OpenApiTypes.INT),
    ],
    responses={
        200: inline_serializer(
            "AdjudicationQueue",
            {
                "counts": serializers.DictField(child=serializers.IntegerField()),
                "count": serializers.IntegerField(),
                "next": serializers.URLField(allow_null=True),
                "previous": serializers.URLField(allow_null=True),
                "results": serializers.ListField(child=Item),
            },
        )
    },
)
@api_view(["GET"])
def queue(request, slug: str):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    wanted = request.query_params.get("status", Status.OPEN)
    if wanted not in Status.values:
        return Response({"errors": [f"status must be one of {', '.join(Status.values)}"]}, status=400)
    items = _items(project).filter(status=wanted)
    items = (
        items.order_by("-severity", "id") if wanted == Status.OPEN else items.order_by("-updated_at", "-id")
    )
    paginator = PageNumberPagination()
    page = paginator.paginate_queryset(items, request)
    response = paginator.get_paginated_response([item_json(item) for item in page])
    response.data = {"counts": queue_counts(project), **response.data}
    return response


@extend_schema(
    summary="Claim the next open item (or keep my current claim)",
    request=None,
    responses={200: ItemDetail, 204: OpenApiResponse(description="Nothing left to adjudicate")},
)
@api_view(["POST"])
def claim_next(request, slug: str):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    item = do_claim_next(project, request.user, items=project.access.adjudication_items())
    if item is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(detail_json(_items(project).get(pk=item.pk)))


@extend_schema(
    summary="One item: both annotations, the gold labels, the reason codes", responses={200: ItemDetail}
)
@api_view(["GET"])
def item(request, slug: str, item_id: int):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    return Response(detail_json(get_object_or_404(_items(project), pk=item_id)))


@extend_schema(
    summary="Decide an open item",
    description='Body: {"version": N, "decisions": [{"mode": "FM-1.3", "choice": "a" | "b" | "present" | '
    '"absent", "steps": [3], "reason_code": "evidence", "note": ""}], "primary": "FM-1.3" | null, "note": ""}. '
    "One decision per disputed mode; modes every annotator chose carry over.",
    request=inline_serializer(
        "AdjudicationDecision",
        {
            "version": serializers.IntegerField(),
            "decisions": serializers.ListField(child=serializers.DictField()),
            "primary": serializers.CharField(required=False, allow_null=True),
            "note": serializers.CharField(required=False, allow_blank=True),
        },
    ),
    responses={200: ItemDetail, 400: Invalid, 409: Conflict},
)
@api_view(["POST"])
def decide(request, slug: str, item_id: int):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    current = get_object_or_404(_items(project), pk=item_id)
    body = request.data if isinstance(request.data, dict) else {}
    try:
        base = int(body.get("version"))
    except (TypeError, ValueError, OverflowError):  # OverflowError: a version of 1e999
        return Response({"errors": ["version (the item's version you decided on) is required"]}, status=400)
    try:
        do_decide(current, decision_from_json(body), actor=request.user, base_version=base)
    except AdjudicationConflict as conflict:
        return Response(
            {"detail": str(conflict), "current_version": conflict.item.version, "submitted": body},
            status=status.HTTP_409_CONFLICT,
        )
    except AdjudicationInvalid as error:
        return Response({"errors": error.messages}, status=status.HTTP_400_BAD_REQUEST)
    return Response(detail_json(_items(project).get(pk=current.pk)))


@extend_schema(
    summary="Reopen a decided item (its gold is kept in the history)",
    request=inline_serializer(
        "AdjudicationReopen",
        {"version": serializers.IntegerField(), "note": serializers.CharField(required=False)},
    ),
    responses={200: ItemDetail, 400: Invalid, 409: Conflict},
)
@api_view(["POST"])
def reopen(request, slug: str, item_id: int):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    current = get_object_or_404(_items(project), pk=item_id)
    body = request.data if isinstance(request.data, dict) else {}
    try:
        do_reopen(
            current,
            actor=request.user,
            base_version=int(body.get("version", -1)),
            note=str(body.get("note", "")),
        )
    except (TypeError, ValueError, OverflowError):
        return Response({"errors": ["version must be a number"]}, status=400)
    except AdjudicationConflict as conflict:
        return Response(
            {"detail": str(conflict), "current_version": conflict.item.version, "submitted": body},
            status=status.HTTP_409_CONFLICT,
        )
    except AdjudicationInvalid as error:
        return Response({"errors": error.messages}, status=status.HTTP_400_BAD_REQUEST)
    return Response(detail_json(_items(project).get(pk=current.pk)))
