"""Taxonomy migrations over the API (owners): preview a new version from changes, read a preview, and apply
it with a confirmed mapping. The serializers below both document and build every body."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import TaxonomyMigration
from annotator.services.evolution import (
    MigrationError,
    do_apply_migration,
    do_preview_migration,
    preview_rows,
)


class OldModeSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["kept", "renamed", "merged", "split", "retired"])
    targets = serializers.ListField(child=serializers.CharField(), help_text="New codes; empty: retired")
    labels = serializers.IntegerField(help_text="Labels of this mode in the project")


class NewModeSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    proposals = serializers.ListField(child=serializers.IntegerField())


class MigrationSerializer(serializers.ModelSerializer):
    from_version = serializers.IntegerField(source="from_version.number")
    to_version = serializers.IntegerField(source="to_version.number")
    mapping = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="What the changes imply: old code -> new codes ([] = retired)",
    )
    applied_mapping = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), allow_null=True
    )
    summary = serializers.DictField(child=serializers.IntegerField())
    old_modes = serializers.SerializerMethodField()
    new_modes = serializers.SerializerMethodField()

    class Meta:
        model = TaxonomyMigration
        fields = [
            "id",
            "status",
            "from_version",
            "to_version",
            "changes",
            "mapping",
            "applied_mapping",
            "summary",
            "old_modes",
            "new_modes",
            "created_at",
            "applied_at",
        ]
        read_only_fields = fields

    @extend_schema_field(OldModeSerializer(many=True))
    def get_old_modes(self, migration: TaxonomyMigration) -> list[dict]:
        return OldModeSerializer(self._rows(migration)["old"], many=True).data

    @extend_schema_field(NewModeSerializer(many=True))
    def get_new_modes(self, migration: TaxonomyMigration) -> list[dict]:
        return NewModeSerializer(self._rows(migration)["new"], many=True).data

    def _rows(self, migration: TaxonomyMigration) -> dict:
        cache = self.context.setdefault("rows", {})
        if migration.pk not in cache:
            cache[migration.pk] = preview_rows(migration)
        return cache[migration.pk]


class PreviewRequestSerializer(serializers.Serializer):
    changes = serializers.ListField(
        child=serializers.DictField(), max_length=200, help_text="op: add, rename, merge, split, retire, edit"
    )
    label = serializers.CharField(required=False, allow_blank=True, max_length=40)


class ApplyRequestSerializer(serializers.Serializer):
    mapping = serializers.DictField(
        child=serializers.JSONField(),
        help_text="Every old code -> a new code, a list of new codes, or the word 'retire'",
    )


ERRORS = OpenApiResponse(ErrorSerializer, description="What is wrong with the request, in words")


def _errors(message: str) -> Response:
    return error_response(message, status=status.HTTP_400_BAD_REQUEST, errors=[message])


@extend_schema(
    methods=["GET"], responses={200: MigrationSerializer(many=True)}, summary="Taxonomy migrations"
)
@extend_schema(
    methods=["POST"],
    request=PreviewRequestSerializer,
    responses={201: MigrationSerializer, 400: ERRORS},
    summary="Preview a new taxonomy version derived from the project's current one (changes no label)",
)
@api_view(["GET", "POST"])
def migrations(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    if request.method == "GET":
        items = project.taxonomy_migrations.select_related("from_version", "to_version", "project")
        return Response(MigrationSerializer(items, many=True, context={}).data)
    incoming = PreviewRequestSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    try:
        migration = do_preview_migration(
            project,
            incoming.validated_data["changes"],
            actor=request.user,
            label=incoming.validated_data.get("label", ""),
        )
    except MigrationError as error:
        return _errors(str(error))
    return Response(MigrationSerializer(migration, context={}).data, status=status.HTTP_201_CREATED)


def _find(project, migration_id: int) -> TaxonomyMigration | None:
    return (
        project.taxonomy_migrations.select_related("from_version", "to_version", "project")
        .filter(pk=migration_id)
        .first()
    )


@extend_schema(responses={200: MigrationSerializer}, summary="One taxonomy migration with its mapping")
@api_view(["GET"])
def migration(request, slug: str, migration_id: int):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    found = _find(project, migration_id)
    if found is None:
        return error_response("No such migration in this project", status=status.HTTP_404_NOT_FOUND)
    return Response(MigrationSerializer(found, context={}).data)


@extend_schema(
    request=ApplyRequestSerializer,
    responses={200: MigrationSerializer, 400: ERRORS},
    summary="Move the project to the previewed version with this mapping (every old mode, or 'retire')",
)
@api_view(["POST"])
def apply(request, slug: str, migration_id: int):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    found = _find(project, migration_id)
    if found is None:
        return error_response("No such migration in this project", status=status.HTTP_404_NOT_FOUND)
    incoming = ApplyRequestSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    try:
        done = do_apply_migration(found, incoming.validated_data["mapping"], actor=request.user)
    except MigrationError as error:
        return _errors(str(error))
    return Response(MigrationSerializer(done, context={}).data)
