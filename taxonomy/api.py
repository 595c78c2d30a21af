"""Read-only taxonomy API: taxonomies are shared reference data, visible to every signed-in user."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers, viewsets

from taxonomy.models import FailureMode, Taxonomy


class FailureModeSerializer(serializers.ModelSerializer):
    category = serializers.CharField(source="category.code", default=None, read_only=True, allow_null=True)
    parent = serializers.CharField(source="parent.code", default=None, read_only=True, allow_null=True)

    class Meta:
        model = FailureMode
        fields = [
            "code",
            "name",
            "category",
            "parent",
            "definition",
            "guidance",
            "examples",
            "aliases",
            "fatal",
        ]


class TaxonomySerializer(serializers.ModelSerializer):
    # A plain string: the schema of a blank-allowed URL field is a `oneOf` that "" matches twice.
    source_url = serializers.CharField(
        read_only=True, help_text="Where the taxonomy is published; may be empty"
    )
    latest_version = serializers.SerializerMethodField()
    labelling_mode = serializers.SerializerMethodField()
    modes = serializers.SerializerMethodField()

    class Meta:
        model = Taxonomy
        fields = [
            "slug",
            "name",
            "description",
            "citation",
            "source_url",
            "latest_version",
            "labelling_mode",
            "modes",
        ]

    def _version(self, taxonomy: Taxonomy):
        versions = list(taxonomy.versions.all())
        return versions[-1] if versions else None

    def get_latest_version(self, taxonomy: Taxonomy) -> int | None:
        version = self._version(taxonomy)
        return version.number if version else None

    def get_labelling_mode(self, taxonomy: Taxonomy) -> str | None:
        version = self._version(taxonomy)
        return version.labelling_mode if version else None

    @extend_schema_field(FailureModeSerializer(many=True))
    def get_modes(self, taxonomy: Taxonomy) -> list[dict]:
        version = self._version(taxonomy)
        if version is None:
            return []
        return FailureModeSerializer(version.modes.all(), many=True).data


class TaxonomyViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = TaxonomySerializer
    lookup_field = "slug"

    def get_queryset(self):
        return Taxonomy.objects.prefetch_related(
            "versions__modes__category", "versions__modes__parent"
        ).order_by("slug")
