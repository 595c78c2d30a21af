"""The adjudication queue over the API: list, claim the next item, read one, decide, reopen.

Adjudicators and owners only; annotators get 403, outsiders 404 (annotator.access). A decision on a stale
version, or on an item another adjudicator holds, answers 409 with the current version and the submitted
body echoed back under "submitted", so a client loses nothing.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from annotator.access import REVIEW_ROLES, access_project
from annotator.api.errors import AdjudicationConflictSerializer, ErrorSerializer, error_response
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


class TraceRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()


class AdjudicationItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    trace = TraceRefSerializer()
    status = serializers.ChoiceField(Status.choices)
    severity = serializers.IntegerField(help_text="100 per disputed fatal mode + 1 per disputed mode")
    disputed = serializers.ListField(child=serializers.CharField(), help_text="Disputed mode codes")
    primary_disputed = serializers.BooleanField()
    version = serializers.IntegerField(help_text="Send it back with a decision")
    claimed_by = serializers.CharField(source="claimed_by.username", allow_null=True)
    claimed_until = serializers.DateTimeField(allow_null=True)
    resolved_by = serializers.CharField(source="resolved_by.username", allow_null=True)
    resolved_at = serializers.DateTimeField(allow_null=True)


class ComparedLabelSerializer(serializers.Serializer):
    mode = serializers.CharField(source="code")
    primary = serializers.BooleanField()
    evidence = serializers.JSONField(help_text="[{step, quote?}]")
    note = serializers.CharField(allow_blank=True)


class ComparedAnnotationSerializer(serializers.Serializer):
    letter = serializers.CharField(help_text="A, B, ...: how the page names the annotators")
    annotator = serializers.CharField()
    no_failure = serializers.BooleanField()
    labels = ComparedLabelSerializer(many=True)


class GoldLabelSerializer(serializers.Serializer):
    mode = serializers.CharField()
    primary = serializers.BooleanField()
    source = serializers.CharField()
    evidence = serializers.JSONField()
    reason_code = serializers.CharField(allow_blank=True)
    note = serializers.CharField(allow_blank=True)


class AdjudicationDetailSerializer(serializers.Serializer):
    item = AdjudicationItemSerializer()
    annotations = ComparedAnnotationSerializer(many=True)
    gold = GoldLabelSerializer(many=True)
    reason_codes = serializers.DictField(child=serializers.CharField())


class AdjudicationQueueSerializer(serializers.Serializer):
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Items per status")
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = AdjudicationItemSerializer(many=True)


class DecisionSerializer(serializers.Serializer):
    mode = serializers.CharField(max_length=50)
    choice = serializers.CharField(
        max_length=20,
        required=False,
        allow_blank=True,
        help_text="a, b, ... (take that annotator's answer), present or absent (your own)",
    )
    steps = serializers.ListField(child=serializers.IntegerField(min_value=0), required=False)
    reason_code = serializers.ChoiceField(list(REASON_CODES), required=False, allow_blank=True)
    note = serializers.CharField(required=False, allow_blank=True)


class AdjudicationDecisionSerializer(serializers.Serializer):
    version = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, help_text="The item's version you decided on"
    )
    decisions = DecisionSerializer(many=True, help_text="One per disputed mode")
    primary = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=50)
    note = serializers.CharField(required=False, allow_blank=True)


class AdjudicationReopenSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=0, max_value=2**31 - 1)
    note = serializers.CharField(required=False, allow_blank=True)


Conflict = OpenApiResponse(
    AdjudicationConflictSerializer,
    description="Someone else decided, claimed or changed the item; nothing was saved",
)
Invalid = OpenApiResponse(
    ErrorSerializer, description="The decision is incomplete or inconsistent; nothing was saved"
)


def _detail(item: AdjudicationItem) -> dict[str, Any]:
    annotations = [
        {"letter": letter, "annotator": a.annotator, "no_failure": a.no_failure, "labels": a.labels.values()}
        for letter, a in zip(LETTERS, item_annotations(item), strict=False)
    ]
    body = {
        "item": item,
        "annotations": annotations,
        "gold": gold_snapshot(item.pk),
        "reason_codes": REASON_CODES,
    }
    return AdjudicationDetailSerializer(body).data


def _conflict(conflict: AdjudicationConflict, body: Any) -> Response:
    return error_response(
        str(conflict),
        status=status.HTTP_409_CONFLICT,
        serializer=AdjudicationConflictSerializer,
        current_version=conflict.item.version,
        submitted=body,
    )


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
    responses={200: AdjudicationQueueSerializer},
)
@api_view(["GET"])
def queue(request, slug: str):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    wanted = request.query_params.get("status", Status.OPEN)
    if wanted not in Status.values:
        problem = f"status must be one of {', '.join(Status.values)}"
        return error_response(problem, status=400, errors=[problem])
    items = _items(project).filter(status=wanted).in_list_order(wanted)
    paginator = PageNumberPagination()
    page = paginator.paginate_queryset(items, request)
    body = {
        "counts": queue_counts(project),
        "count": paginator.page.paginator.count,
        "next": paginator.get_next_link(),
        "previous": paginator.get_previous_link(),
        "results": page,
    }
    return Response(AdjudicationQueueSerializer(body).data)


@extend_schema(
    summary="Claim the next open item (or keep my current claim)",
    request=None,
    responses={
        200: AdjudicationDetailSerializer,
        204: OpenApiResponse(description="Nothing left to adjudicate"),
    },
)
@api_view(["POST"])
def claim_next(request, slug: str):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    item = do_claim_next(project, request.user, items=project.access.adjudication_items())
    if item is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(_detail(_items(project).get(pk=item.pk)))


@extend_schema(
    summary="One item: both annotations, the gold labels, the reason codes",
    responses={200: AdjudicationDetailSerializer},
)
@api_view(["GET"])
def item(request, slug: str, item_id: int):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    return Response(_detail(get_object_or_404(_items(project), pk=item_id)))


@extend_schema(
    summary="Decide an open item",
    description='Body: {"version": N, "decisions": [{"mode": "FM-1.3", "choice": "a" | "b" | "present" | '
    '"absent", "steps": [3], "reason_code": "evidence", "note": ""}], "primary": "FM-1.3" | null, "note": ""}. '
    "One decision per disputed mode; modes every annotator chose carry over.",
    request=AdjudicationDecisionSerializer,
    responses={200: AdjudicationDetailSerializer, 400: Invalid, 409: Conflict},
)
@api_view(["POST"])
def decide(request, slug: str, item_id: int):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    current = get_object_or_404(_items(project), pk=item_id)
    body = AdjudicationDecisionSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    try:
        do_decide(
            current,
            decision_from_json(body.validated_data),
            actor=request.user,
            base_version=body.validated_data["version"],
        )
    except AdjudicationConflict as conflict:
        return _conflict(conflict, request.data)
    except AdjudicationInvalid as error:
        return error_response("The decision is not valid", status=400, errors=error.messages)
    return Response(_detail(_items(project).get(pk=current.pk)))


@extend_schema(
    summary="Reopen a decided item (its gold is kept in the history)",
    request=AdjudicationReopenSerializer,
    responses={200: AdjudicationDetailSerializer, 400: Invalid, 409: Conflict},
)
@api_view(["POST"])
def reopen(request, slug: str, item_id: int):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    current = get_object_or_404(_items(project), pk=item_id)
    body = AdjudicationReopenSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    try:
        do_reopen(
            current,
            actor=request.user,
            base_version=body.validated_data["version"],
            note=body.validated_data.get("note", ""),
        )
    except AdjudicationConflict as conflict:
        return _conflict(conflict, request.data)
    except AdjudicationInvalid as error:
        return error_response("The item cannot be reopened", status=400, errors=error.messages)
    return Response(_detail(_items(project).get(pk=current.pk)))
