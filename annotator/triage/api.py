"""The LLM triage order over the API: the traces a signal puts first, with score and reason (owners who are
blind on no trace, like the LLM agreement), and a calibration round opened from that order. The queue order
itself is a project setting (PATCH /api/projects/<slug>/settings/, `queue_order`)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.api.rounds import RoundSerializer
from annotator.services.rounds import RoundError
from annotator.triage import signals
from annotator.triage.service import TriageError, do_open_triage_round, triage_table

MAX_ROWS = 1000
_ERRORS = OpenApiResponse(ErrorSerializer, description="What is wrong with the request, in words")


class TriageRowSerializer(serializers.Serializer):
    trace_id = serializers.IntegerField()
    external_id = serializers.CharField()
    batch = serializers.CharField()
    score = serializers.FloatField(help_text="Higher: a person should look sooner")
    reason = serializers.CharField(help_text="Why, in one line (may name the model's labels)")


class TriageSerializer(serializers.Serializer):
    signal = serializers.ChoiceField(signals.SIGNALS)
    queue_order = serializers.CharField(help_text="The project's current queue order")
    traces = TriageRowSerializer(many=True, help_text="Highest score first")


class TriageRoundSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), min_length=2, max_length=100
    )
    signal = serializers.ChoiceField(signals.SIGNALS)
    n = serializers.IntegerField(
        min_value=2,
        max_value=5000,
        help_text="How many of the first traces (traces in a round are passed over)",
    )


@extend_schema(
    summary="The traces an LLM triage signal puts first, with score and reason (owners not blind on any trace)",
    parameters=[
        OpenApiParameter("signal", enum=list(signals.SIGNALS), description="Default: uncertain"),
        OpenApiParameter("limit", int, description=f"At most {MAX_ROWS} (default 100)"),
    ],
    responses={200: TriageSerializer, 400: _ERRORS},
)
@api_view(["GET"])
def triage(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    signal = request.query_params.get("signal") or signals.UNCERTAIN
    limit_text = request.query_params.get("limit") or "100"
    if signal not in signals.SIGNALS:
        message = f"signal must be one of {', '.join(signals.SIGNALS)}"
        return error_response(message, status=status.HTTP_400_BAD_REQUEST, errors=[message])
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_ROWS:
        message = f"limit must be a whole number from 1 to {MAX_ROWS}"
        return error_response(message, status=status.HTTP_400_BAD_REQUEST, errors=[message])
    rows = triage_table(project, signal, limit=int(limit_text))
    body = {"signal": signal, "queue_order": project.queue_order, "traces": rows}
    return Response(TriageSerializer(body).data)


@extend_schema(
    summary="Open a calibration round on the first n traces of an LLM triage signal",
    request=TriageRoundSerializer,
    responses={201: RoundSerializer, 400: _ERRORS},
)
@api_view(["POST"])
def triage_round(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    incoming = TriageRoundSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        round_ = do_open_triage_round(
            project,
            signal=data["signal"],
            n=data["n"],
            name=data["name"],
            annotators=data["annotators"],
            actor=request.user,
        )
    except (TriageError, RoundError) as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])
    return Response(RoundSerializer(round_).data, status=status.HTTP_201_CREATED)
