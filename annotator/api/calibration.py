"""Gold calibration over the API: settings, items and scores (`calibration/`), adding or removing items
(`calibration/items/`), and the gold answer of one of my submitted calibration items (`assignments/<id>/gold/`).

Access as on the page: owners change settings and items; owners, adjudicators and viewers read every
annotator's scores (not while blind on a trace of the project); an annotator reads only their own. The gold
answer opens to its annotator once they have submitted the item (blind until then)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, REPORT_ROLES, ProjectAccess, access_assignment, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import Assignment, Role
from annotator.services.calibration import (
    CalibrationError,
    annotator_scores,
    do_add_items,
    do_configure,
    do_remove_items,
    feedback,
    scores_json,
    scores_withheld,
    settings_json,
)

_ERROR = OpenApiResponse(ErrorSerializer, description="What is wrong with the request, in words")


class ScoreSerializer(serializers.Serializer):
    mode = serializers.CharField(help_text="Mode code, or `overall` (every item x mode cell pooled)")
    n = serializers.IntegerField()
    tp = serializers.IntegerField()
    fp = serializers.IntegerField()
    fn = serializers.IntegerField()
    tn = serializers.IntegerField()
    sensitivity = serializers.FloatField(allow_null=True, help_text="TP / (TP + FN); null: no gold positive")
    sensitivity_ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="95% Wilson score interval"
    )
    specificity = serializers.FloatField(allow_null=True, help_text="TN / (TN + FP); null: no gold negative")
    specificity_ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="95% Wilson score interval"
    )
    kappa = serializers.FloatField(allow_null=True, help_text="Cohen's kappa against gold")
    kappa_ci = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="kappa ± 1.96·SE, Cohen (1960) approximate SE, clipped to [-1, 1]",
    )
    kappa_undefined = serializers.CharField(allow_blank=True, help_text="Why kappa is null")
    kappa_ci_undefined = serializers.CharField(
        allow_blank=True, help_text="Why kappa_ci is null although kappa is not (observed agreement 0 or 1)"
    )


class AnnotatorScoresSerializer(serializers.Serializer):
    annotator = serializers.CharField()
    items = serializers.IntegerField(help_text="Calibration items submitted")
    overall = ScoreSerializer()
    modes = ScoreSerializer(many=True)


class CalibrationSerializer(serializers.Serializer):
    rate = serializers.FloatField(help_text="Share of an annotator's claims that are calibration items")
    qualification_size = serializers.IntegerField(help_text="Calibration items before any real work")
    min_kappa = serializers.FloatField(allow_null=True, help_text="Pooled kappa against gold required")
    items = serializers.ListField(
        child=serializers.IntegerField(), help_text="Trace ids of calibration items"
    )
    gold_traces = serializers.IntegerField(help_text="Traces of the project with gold labels")
    scores = AnnotatorScoresSerializer(many=True)
    scores_withheld = serializers.CharField(
        allow_blank=True, help_text="Why other annotators' scores are left out for you (blind), or empty"
    )


class CalibrationSettingsSerializer(serializers.Serializer):
    """Every field optional: what is left out keeps its value (min_kappa null removes the threshold)."""

    rate = serializers.FloatField(min_value=0, max_value=0.5, required=False)
    qualification_size = serializers.IntegerField(min_value=0, max_value=1000, required=False)
    min_kappa = serializers.FloatField(min_value=-1, max_value=1, required=False, allow_null=True)


class CalibrationItemsSerializer(serializers.Serializer):
    trace_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1),
        required=False,
        max_length=5000,
        help_text="Gold traces to add",
    )
    batch = serializers.CharField(required=False, max_length=200, help_text="Add every gold trace of it")
    all = serializers.BooleanField(required=False, default=False, help_text="Add every gold trace")
    remove = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1),
        required=False,
        max_length=5000,
        help_text="Trace ids to stop serving (answers already given stay)",
    )


class GoldRowSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    yours = serializers.BooleanField()
    gold = serializers.BooleanField()
    your_steps = serializers.ListField(child=serializers.IntegerField())
    gold_steps = serializers.ListField(child=serializers.IntegerField())
    source = serializers.CharField(help_text="How the gold was reached")
    reason_code = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True, help_text="The adjudicator's reason code, in words")
    note = serializers.CharField(allow_blank=True, help_text="The adjudicator's note on this mode")


class GoldFeedbackSerializer(serializers.Serializer):
    matches = serializers.IntegerField(help_text="Modes where my answer equals the gold")
    modes = serializers.IntegerField()
    decided_by = serializers.CharField(allow_blank=True)
    note = serializers.CharField(allow_blank=True, help_text="The adjudicator's note on the decision")
    rows = GoldRowSerializer(many=True, help_text="Modes that I or the gold chose, or that were decided")


def _body(access: ProjectAccess, user) -> dict:
    project = access.project
    withheld = scores_withheld(access)
    if withheld:
        scores = {}
    elif access.holds(REPORT_ROLES):
        scores = annotator_scores(project)
    else:
        scores = annotator_scores(project, [user.pk]) if Role.ANNOTATOR in access.roles else {}
    body = settings_json(project)
    if not access.holds(MANAGE_ROLES):
        body["items"] = []  # which traces are gold is for owners: an annotator must not know in advance
    return {**body, "scores": scores_json(scores), "scores_withheld": withheld}


@extend_schema(
    methods=["GET"],
    parameters=[OpenApiParameter("annotator", str, description="Only this annotator's scores")],
    responses={200: CalibrationSerializer},
    summary="Calibration settings, items and scores against gold (an annotator sees their own only)",
)
@extend_schema(
    methods=["PATCH"],
    request=CalibrationSettingsSerializer,
    responses={200: CalibrationSerializer, 400: _ERROR},
    summary="Change the mix-in rate, qualification set size or threshold (owners)",
)
@api_view(["GET", "PATCH"])
def calibration(request, slug: str):
    if request.method == "GET":
        project = access_project(request.user, slug)
        body = _body(project.access, request.user)
        wanted = request.query_params.get("annotator")
        if wanted:
            body["scores"] = [s for s in body["scores"] if s["annotator"] == wanted]
        return Response(CalibrationSerializer(body).data)
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    incoming = CalibrationSettingsSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        do_configure(
            project,
            rate=data.get("rate"),
            qualification_size=data.get("qualification_size"),
            min_kappa=data.get("min_kappa"),
            clear_min_kappa="min_kappa" in data and data["min_kappa"] is None,
        )
    except CalibrationError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=error.messages)
    return Response(CalibrationSerializer(_body(project.access, request.user)).data)


@extend_schema(
    request=CalibrationItemsSerializer,
    responses={200: CalibrationSerializer, 400: _ERROR},
    summary="Add gold traces as calibration items (ids, a batch, or all), or remove some (owners)",
)
@api_view(["POST"])
def items(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    incoming = CalibrationItemsSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        if data.get("remove"):
            do_remove_items(project, data["remove"])
        if data.get("trace_ids") or data.get("batch") or data.get("all"):
            do_add_items(
                project,
                trace_ids=data.get("trace_ids") or (),
                batch=data.get("batch", ""),
                all_gold=data.get("all", False),
                actor=request.user,
            )
        elif not data.get("remove"):
            raise CalibrationError("Name the traces: trace_ids, batch, all, or remove")
    except CalibrationError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=error.messages)
    return Response(CalibrationSerializer(_body(project.access, request.user)).data)


@extend_schema(
    responses={200: GoldFeedbackSerializer, 403: _ERROR, 404: _ERROR},
    summary="The gold answer of my calibration item, with the adjudicator's reasons (after I submitted it)",
)
@api_view(["GET"])
def gold(request, slug: str, assignment_id: int):
    assignment = access_assignment(request.user, slug, assignment_id)
    # Before the submit every slot answers alike, so the answer never tells a gold item from real work.
    if assignment.status != Assignment.Status.SUBMITTED:
        return error_response(
            "The gold answer opens once you have submitted your own annotation (blind labelling)",
            status=status.HTTP_403_FORBIDDEN,
        )
    found = feedback(assignment)
    if found is None:
        return error_response("This assignment is not a calibration item", status=status.HTTP_404_NOT_FOUND)
    rows = [
        {**row.__dict__, "your_steps": list(row.your_steps), "gold_steps": list(row.gold_steps)}
        for row in found.rows
    ]
    body = {
        "matches": found.matches,
        "modes": found.modes,
        "decided_by": found.decided_by,
        "note": found.note,
    }
    return Response(GoldFeedbackSerializer({**body, "rows": rows}).data)
