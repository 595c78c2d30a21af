"""Calibration rounds over the API: list and open (owners open; owners, adjudicators and viewers read),
close (owners). The serializers below both document and build every body."""

from __future__ import annotations

from django.db.models import Count
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, REPORT_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import CalibrationRound
from annotator.services.rounds import (
    RoundError,
    TraceChoice,
    do_close_round,
    do_open_round,
    round_progress,
    round_trend,
    trend_json,
)


class RoundSerializer(serializers.ModelSerializer):
    annotators = serializers.SlugRelatedField(many=True, read_only=True, slug_field="username")
    n_traces = serializers.SerializerMethodField()
    submitted = serializers.SerializerMethodField()
    slots = serializers.SerializerMethodField()
    report_id = serializers.IntegerField(source="report.pk", allow_null=True, read_only=True, default=None)

    class Meta:
        model = CalibrationRound
        fields = [
            "id",
            "name",
            "status",
            "selection",
            "annotators",
            "n_traces",
            "submitted",
            "slots",
            "created_at",
            "closed_at",
            "report_id",
        ]
        read_only_fields = fields

    def get_n_traces(self, round_: CalibrationRound) -> int:
        counted = getattr(round_, "n_traces_counted", None)  # the list annotates it: one query for all
        return counted if counted is not None else round_.traces.count()

    def _progress(self, round_: CalibrationRound) -> tuple[int, int]:
        progress = self.context.get("progress")
        if progress is None:
            progress = round_progress([round_])
        return progress.get(round_.pk, (0, 0))

    def get_submitted(self, round_: CalibrationRound) -> int:
        return self._progress(round_)[0]

    def get_slots(self, round_: CalibrationRound) -> int:
        return self._progress(round_)[1]


class OpenRoundSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), min_length=2, max_length=100
    )
    traces = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1),
        required=False,
        max_length=5000,
        help_text="Trace ids to take (else: every trace matching batch/where, or a seeded sample of them)",
    )
    batch = serializers.CharField(required=False, max_length=200)
    where = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=10)
    sample = serializers.IntegerField(required=False, min_value=2, max_value=5000)
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1, default=0)


ROUND_ERRORS = OpenApiResponse(ErrorSerializer, description="What is wrong with the request, in words")


@extend_schema(
    methods=["GET"], responses={200: RoundSerializer(many=True)}, summary="The project's calibration rounds"
)
@extend_schema(
    methods=["POST"],
    request=OpenRoundSerializer,
    responses={201: RoundSerializer, 400: ROUND_ERRORS},
    summary="Open a round: every chosen annotator labels every chosen trace",
)
@api_view(["GET", "POST"])
def rounds(request, slug: str):
    if request.method == "GET":
        project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
        items = list(
            project.rounds.select_related("report")
            .prefetch_related("annotators")
            .annotate(n_traces_counted=Count("traces", distinct=True))
        )
        body = RoundSerializer(items, many=True, context={"progress": round_progress(items)}).data
        return Response(body)
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    incoming = OpenRoundSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    choice = TraceChoice(
        ids=tuple(data.get("traces") or ()),
        batch=data.get("batch", ""),
        sample=data.get("sample"),
        seed=data.get("seed", 0),
        where=tuple(data.get("where") or ()),
    )
    try:
        round_ = do_open_round(
            project, name=data["name"], annotators=data["annotators"], choice=choice, actor=request.user
        )
    except RoundError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])
    return Response(RoundSerializer(round_).data, status=status.HTTP_201_CREATED)


@extend_schema(
    request=None,
    responses={200: RoundSerializer, 400: ROUND_ERRORS},
    summary="Close a round and compute its agreement report (kept with the round)",
)
@api_view(["POST"])
def close(request, slug: str, round_id: int):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    round_ = project.rounds.filter(pk=round_id).first()
    if round_ is None:
        return error_response("No such round in this project", status=status.HTTP_404_NOT_FOUND)
    try:
        round_ = do_close_round(round_, actor=request.user)
    except RoundError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])
    return Response(RoundSerializer(round_).data)


class TrendMode(serializers.Serializer):
    kappa = serializers.FloatField(allow_null=True)
    kappa_ci = serializers.ListField(child=serializers.FloatField(allow_null=True))
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    gwet_ac1 = serializers.FloatField(allow_null=True)
    observed_agreement = serializers.FloatField(allow_null=True)


class TrendSerializer(serializers.Serializer):
    rounds = serializers.ListField(child=serializers.CharField(), help_text="Closed rounds, in order")
    overall = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True)),
        help_text="Each overall estimate, one value per round",
    )
    modes = serializers.DictField(
        child=serializers.ListField(child=TrendMode(allow_null=True)),
        help_text="Per mode code, one entry per round (null: the round has no row for the mode)",
    )


@extend_schema(
    responses=TrendSerializer,
    summary="Agreement across closed rounds, per mode and overall (the CLI's `rounds SLUG trend --json`)",
)
@api_view(["GET"])
def trend(request, slug: str):
    project = access_project(request.user, slug, roles=REPORT_ROLES, shows_labels=True)
    return Response(TrendSerializer(trend_json(round_trend(project))).data)
