"""Projects I am a member of."""

from __future__ import annotations

from rest_framework import serializers, viewsets

from annotator.access import roles_in
from annotator.models import Project


class ProjectSerializer(serializers.ModelSerializer):
    taxonomy = serializers.CharField(source="taxonomy_version.taxonomy.slug", read_only=True)
    taxonomy_version = serializers.IntegerField(source="taxonomy_version.number", read_only=True)
    my_roles = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = [
            "slug",
            "name",
            "description",
            "taxonomy",
            "taxonomy_version",
            "overlap",
            "blind",
            "my_roles",
        ]

    def get_my_roles(self, project: Project) -> list[str]:
        return sorted(roles_in(self.context["request"].user, project))


class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ProjectSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return Project.objects.visible_to(self.request.user).select_related("taxonomy_version__taxonomy")
