"""The JSON shape of the failure signatures: one serializer per result dataclass.

They read the frozen dataclasses of annotator.signatures directly (DRF reads attributes), so the API,
the ``signatures --json`` command and the OpenAPI schema all come from this one description.
"""

from __future__ import annotations

from rest_framework import serializers

S = serializers


class EstimateSerializer(S.Serializer):
    value = S.FloatField(allow_null=True, help_text="The number; null when undefined")
    undefined_code = S.CharField(allow_null=True, help_text="Why it is undefined (machine-readable)")
    undefined_reason = S.CharField(allow_null=True, help_text="Why it is undefined, for people")


class ProportionSerializer(S.Serializer):
    key = S.CharField(help_text="Mode or category code")
    count = S.IntegerField()
    total = S.IntegerField()
    rate = EstimateSerializer()
    low = S.FloatField(allow_null=True, help_text="Wilson 95% score interval, lower bound")
    high = S.FloatField(allow_null=True, help_text="Wilson 95% score interval, upper bound")


class ModeSerializer(S.Serializer):
    code = S.CharField()
    name = S.CharField()
    category = S.CharField()
    category_name = S.CharField()
    fatal = S.BooleanField(help_text="The taxonomy's prior: this mode usually predicts a failed run")


class CategorySerializer(S.Serializer):
    code = S.CharField()
    name = S.CharField()


class GroupRatesSerializer(S.Serializer):
    value = S.CharField(help_text='The group (a model, system or benchmark; "all" overall)')
    n_traces = S.IntegerField()
    modes = ProportionSerializer(many=True)
    categories = ProportionSerializer(many=True, help_text="A category counts when any of its modes shows")


class PrevalenceSerializer(S.Serializer):
    dimension = S.ChoiceField(["all", "model", "system", "benchmark"])
    groups = GroupRatesSerializer(many=True)


class ModeCountDistributionSerializer(S.Serializer):
    group = S.CharField()
    outcome = S.ChoiceField(["failure", "success"])
    n_traces = S.IntegerField()
    mean = EstimateSerializer(help_text="Mean number of modes per trace")
    histogram = S.ListField(child=S.IntegerField(), help_text="histogram[k]: traces with exactly k modes")


class ModesPerTraceSerializer(S.Serializer):
    dimension = S.CharField()
    rows = ModeCountDistributionSerializer(many=True)


class ModeContrastSerializer(S.Serializer):
    key = S.CharField()
    in_failed = ProportionSerializer()
    in_successful = ProportionSerializer()
    relative_increase = EstimateSerializer(
        help_text="(rate_failed - rate_successful) / rate_successful; undefined 'only in failures' when the "
        "mode never appears in a successful trace"
    )
    classification = S.ChoiceField(["fatal", "benign", "not_observed", "undetermined"])
    warnings = S.ListField(
        child=S.ChoiceField(["few_failed_traces", "few_successful_traces", "intervals_overlap"])
    )


class OutcomeContrastSerializer(S.Serializer):
    n_failed = S.IntegerField()
    n_successful = S.IntegerField()
    n_unknown = S.IntegerField()
    fatal_min_relative_increase = S.FloatField()
    min_traces_per_outcome = S.IntegerField()
    modes = ModeContrastSerializer(many=True)


class CooccurrenceSerializer(S.Serializer):
    keys = S.ListField(child=S.CharField())
    n_traces = S.IntegerField()
    both = S.ListField(child=S.ListField(child=S.IntegerField()), help_text="Traces with both modes")
    lift = S.ListField(child=S.ListField(child=S.FloatField(allow_null=True)))
    jaccard = S.ListField(child=S.ListField(child=S.FloatField(allow_null=True)))


class FailureVectorSerializer(S.Serializer):
    modes = S.ListField(child=S.CharField())
    count = S.IntegerField()
    n_failed = S.IntegerField()
    share = S.FloatField(help_text="Of the traces with at least one mode")


class FailureVectorsSerializer(S.Serializer):
    n_traces = S.IntegerField()
    n_with_modes = S.IntegerField()
    n_distinct = S.IntegerField()
    top = FailureVectorSerializer(many=True)


class AgentCountSerializer(S.Serializer):
    agent = S.CharField()
    count = S.IntegerField()
    by_mode = S.ListField(child=S.IntegerField())


class EvidencePositionsSerializer(S.Serializer):
    n_points = S.IntegerField()
    n_invalid = S.IntegerField(help_text="Evidence steps outside their trace (left out)")
    deciles = S.ListField(child=S.IntegerField(), help_text="Evidence steps per tenth of the trace")
    by_mode = S.ListField(child=S.ListField(child=S.IntegerField()))
    agents = AgentCountSerializer(many=True, help_text="Evidence steps by the agent acting at that step")
    attributed_agents = AgentCountSerializer(
        many=True, help_text="The same steps by the agent their label's imported attribution names (Who&When)"
    )
    n_attributed = S.IntegerField(help_text="Evidence steps whose label carries an attribution")


class ModeChangeSerializer(S.Serializer):
    key = S.CharField()
    a = ProportionSerializer()
    b = ProportionSerializer()
    difference = EstimateSerializer(help_text="rate_b - rate_a")
    low = S.FloatField(allow_null=True, help_text="Newcombe hybrid score 95% interval, lower bound")
    high = S.FloatField(allow_null=True)
    significant = S.BooleanField(help_text="The interval excludes 0")


class BatchComparisonSerializer(S.Serializer):
    a = S.CharField()
    b = S.CharField()
    n_a = S.IntegerField()
    n_b = S.IntegerField()
    method = S.CharField()
    modes = ModeChangeSerializer(many=True)


class SignaturesSerializer(S.Serializer):
    modes = ModeSerializer(many=True)
    categories = CategorySerializer(many=True)
    n_traces = S.IntegerField()
    n_failed = S.IntegerField()
    n_successful = S.IntegerField()
    n_unknown = S.IntegerField()
    prevalence = PrevalenceSerializer(many=True)
    modes_per_trace = ModesPerTraceSerializer()
    contrast = OutcomeContrastSerializer()
    cooccurrence = CooccurrenceSerializer()
    vectors = FailureVectorsSerializer()
    positions = EvidencePositionsSerializer()
    comparison = BatchComparisonSerializer(allow_null=True)


class SignatureReportSerializer(S.Serializer):
    project = S.CharField()
    source = S.CharField()
    filters = S.DictField(child=S.ListField(child=S.CharField()))
    compare = S.ListField(child=S.CharField(), allow_null=True)
    empty_message = S.CharField(allow_null=True, help_text="Set when the source labels no trace: what to do")
    figures = SignaturesSerializer(source="signatures", allow_null=True)
