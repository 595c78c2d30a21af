"""LLM rater API, what the model said: its agreement with humans and gold, with the kappa curve (owners), and
its labels of a trace for the annotator who has submitted their own (when the project allows it)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import MANAGE_ROLES, access_assignment, access_project
from annotator.api.signature_serializers import EstimateSerializer
from annotator.services.llm.agreement import CURVE_RULE, llm_agreement
from annotator.services.llm.opinion import llm_opinions_for


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
