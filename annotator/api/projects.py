"""Projects I am a member of; creating one (annotator/api/admin.py has the administration verbs)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets

from annotator.access import roles_in
from annotator.api import admin
from annotator.api.errors import ErrorSerializer
from annotator.models import Project


class ProjectSerializer(serializers.ModelSerializer):
    taxonomy = serializers.CharField(source="taxonomy_version.taxonomy.slug", read_only=True)
    taxonomy_version = serializers.IntegerField(source="taxonomy_version.number", read_only=True)
    my_roles = serializers.SerializerMethodField()
    archived = serializers.BooleanField(read_only=True)

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
            "imported_labels_count_toward_overlap",
            "archived",
            "my_roles",
        ]

    def get_my_roles(self, project: Project) -> list[str]:
        return sorted(roles_in(self.context["request"].user, project))


class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ProjectSerializer
    lookup_field = "slug"

    def get_queryset(self):
        projects = Project.objects.visible_to(self.request.user).select_related("taxonomy_version__taxonomy")
        # Like the home page: archived projects only when asked for (a single project opens either way).
        if self.action == "list" and self.request.query_params.get("archived") != "1":
            projects = projects.filter(archived_at__isnull=True)
        return projects

    @extend_schema(
        summary="Projects I am a member of (archived ones with ?archived=1)",
        parameters=[OpenApiParameter("archived", int, description="1: include archived projects")],
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Create a project; you become its owner (staff, or anyone when PROJECT_CREATORS=any)",
        request=admin.NewProjectSerializer,
        responses={
            201: admin.CreatedProjectSerializer,
            400: admin._ERROR,
            403: OpenApiResponse(ErrorSerializer, description="You may not create projects"),
        },
    )
    def create(self, request, *args, **kwargs):
        return admin.create_project(request)
