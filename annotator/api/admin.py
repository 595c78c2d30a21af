"""Project administration over the API: create a project (PROJECT_CREATORS), archive it, change its settings,
attach batches, manage members (add, invite with a set-password link, change role, deactivate).

The same verbs as the pages (annotator.services.projects, annotator.services.members) and the same door:
`access_project_admin` (owners, and staff; outsiders 404, other members 403). The serializers below both
document and build every body, so the OpenAPI schema is what the responses are.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.access import access_project_admin
from annotator.api.errors import ErrorSerializer, error_response
from annotator.batches import visible_batches
from annotator.models import Membership, Project, QueueOrder, Role
from annotator.services.members import (
    MemberChange,
    MemberError,
    do_add_existing,
    do_change_role,
    do_deactivate,
    do_invite,
)
from annotator.services.projects import (
    ProjectSetupError,
    do_archive_project,
    do_attach_batches,
    do_new_project,
    do_update_settings,
    may_create_projects,
)
from traces.models import Batch

MAX_GUIDELINES = 100_000
_ERROR = OpenApiResponse(ErrorSerializer, description="What is wrong with the request, in words")


class NewProjectSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=80, help_text="Used in URLs; unique")
    name = serializers.CharField(max_length=200)
    taxonomy = serializers.CharField(max_length=100, help_text="Taxonomy slug, e.g. mast")
    taxonomy_version = serializers.IntegerField(
        min_value=1, required=False, help_text="Default: the newest version"
    )
    overlap = serializers.IntegerField(min_value=1, max_value=20, default=2)
    guidelines = serializers.CharField(
        allow_blank=True, default="", max_length=MAX_GUIDELINES, help_text="Markdown shown to annotators"
    )
    blind = serializers.BooleanField(default=True)
    imported_labels_count_toward_overlap = serializers.BooleanField(
        default=False,
        help_text="Whether imported raters' annotations fill a trace's overlap slots (on to reproduce a "
        "published study)",
    )
    batches = serializers.ListField(
        child=serializers.CharField(max_length=200),
        default=list,
        max_length=1000,
        help_text="Names of batches you may see (batches you imported or own through a project)",
    )


class SettingsSerializer(serializers.Serializer):
    """Every field optional: what is left out keeps its value."""

    name = serializers.CharField(max_length=200, required=False)
    overlap = serializers.IntegerField(min_value=1, max_value=20, required=False)
    reservation_minutes = serializers.IntegerField(min_value=1, max_value=24 * 60, required=False)
    guidelines = serializers.CharField(allow_blank=True, required=False, max_length=MAX_GUIDELINES)
    imported_labels_count_toward_overlap = serializers.BooleanField(
        required=False,
        help_text="Whether imported raters' annotations fill a trace's overlap slots and its adjudication "
        "(off: every trace still goes to `overlap` people; on: for reproducing a published study). "
        "Changing it re-plans the assignments; submitted and started work stays",
    )
    queue_order = serializers.ChoiceField(
        QueueOrder.choices,
        required=False,
        help_text="The order in which each annotator's own open traces are handed out: trace order, or an LLM "
        "triage signal (the model least certain, disagreeing with gold on the same batch, or marking modes "
        "people rarely saw, first). Who labels which trace never changes; annotators see the order only",
    )


class ArchiveSerializer(serializers.Serializer):
    archived = serializers.BooleanField(default=True, help_text="false restores the project")


class AdminProjectSerializer(serializers.Serializer):
    """A project as its administrators see it."""

    slug = serializers.CharField()
    name = serializers.CharField()
    taxonomy = serializers.CharField(source="taxonomy_version.taxonomy.slug")
    taxonomy_version = serializers.IntegerField(source="taxonomy_version.number")
    overlap = serializers.IntegerField()
    reservation_minutes = serializers.IntegerField()
    guidelines = serializers.CharField()
    blind = serializers.BooleanField()
    imported_labels_count_toward_overlap = serializers.BooleanField(
        help_text="Whether imported raters' annotations fill a trace's overlap slots and its adjudication"
    )
    queue_order = serializers.ChoiceField(
        QueueOrder.choices, help_text="The order annotators get their open traces in (trace or an LLM signal)"
    )
    archived = serializers.BooleanField()
    archived_at = serializers.DateTimeField(allow_null=True)
    batches = serializers.SerializerMethodField()

    def get_batches(self, project: Project) -> list[str]:
        return list(project.batches.order_by("name").values_list("name", flat=True))


class CreatedProjectSerializer(AdminProjectSerializer):
    assignments_created = serializers.IntegerField()


class MemberSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The membership id (one per user and role)")
    username = serializers.CharField(source="user.username")
    email = serializers.CharField(source="user.email")
    role = serializers.ChoiceField(Role.choices)
    active = serializers.BooleanField()
    has_password = serializers.SerializerMethodField(help_text="false until an invited person sets one")

    def get_has_password(self, membership: Membership) -> bool:
        return membership.user.has_usable_password()


class MemberChangeSerializer(serializers.Serializer):
    member = MemberSerializer(source="membership")
    assignments_created = serializers.IntegerField()
    user_created = serializers.BooleanField()
    set_password_link = serializers.CharField(
        help_text="A new account's one-time link to choose a password (empty otherwise); give it to them"
    )
    emailed = serializers.BooleanField(help_text="Whether the link was also sent by e-mail")


class AddMemberSerializer(serializers.Serializer):
    role = serializers.ChoiceField(Role.choices)
    username = serializers.CharField(
        max_length=150,
        required=False,
        allow_blank=True,
        help_text="An existing account, or the new one's name",
    )
    email = serializers.EmailField(
        required=False,
        allow_blank=True,
        help_text="Invite: an account is created unless one has this address",
    )

    def validate(self, data):
        if not data.get("username") and not data.get("email"):
            raise serializers.ValidationError(
                "Give a username (an existing account) or an e-mail (an invitation)"
            )
        return data


class RoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(Role.choices)


class AttachBatchSerializer(serializers.Serializer):
    batch = serializers.CharField(max_length=200, help_text="The name of a batch you may see")


class BatchRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    trace_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class BatchAttachedSerializer(serializers.Serializer):
    batch = BatchRowSerializer()
    assignments_created = serializers.IntegerField()


def _refused(error: Exception) -> Response:
    """A service's refusal (ProjectSetupError, MemberError) in the one error shape."""
    return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])


def _visible_batches(user, names: list[str]) -> list[Batch]:
    """The named batches, only among those `user` may see: any other name is unknown, like a missing one."""
    found = {batch.name: batch for batch in visible_batches(user).filter(name__in=names)}
    missing = [name for name in names if name not in found]
    if missing:
        raise ProjectSetupError(f"No batch named {', '.join(map(repr, missing))} that you may see")
    return [found[name] for name in dict.fromkeys(names)]


def create_project(request: Request) -> Response:
    """POST /api/projects/ (ProjectViewSet.create documents it)."""
    if not may_create_projects(request.user):
        raise PermissionDenied(
            "Only staff may create projects (the administrator's PROJECT_CREATORS setting)"
        )
    body = NewProjectSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    try:
        setup = do_new_project(
            request.user,
            slug=data["slug"],
            name=data["name"],
            taxonomy=data["taxonomy"],
            version=data.get("taxonomy_version"),
            overlap=data["overlap"],
            guidelines=data["guidelines"],
            blind=data["blind"],
            imported_labels_count_toward_overlap=data["imported_labels_count_toward_overlap"],
            batches=_visible_batches(request.user, data["batches"]),
        )
    except ProjectSetupError as error:
        return _refused(error)
    project = setup.project
    project.assignments_created = setup.assignments_created
    return Response(CreatedProjectSerializer(project).data, status=status.HTTP_201_CREATED)


@extend_schema(
    methods=["GET"], summary="The project's settings (owners and staff)", responses=AdminProjectSerializer
)
@extend_schema(
    methods=["PATCH"],
    summary="Change the name, overlap, reservation, guidelines, queue order or whether imported labels count "
    "toward the overlap; a larger overlap assigns more annotators, switching the imported labels re-plans the "
    "work, switching the queue order re-ranks each annotator's open traces",
    request=SettingsSerializer,
    responses={200: AdminProjectSerializer, 400: _ERROR},
)
@api_view(["GET", "PATCH"])
def project_settings(request: Request, slug: str) -> Response:
    project = access_project_admin(request.user, slug)
    if request.method == "PATCH":
        body = SettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        values = {
            "name": project.name,
            "overlap": project.overlap,
            "reservation_minutes": project.reservation_minutes,
            "guidelines": project.guidelines,
            "imported_labels_count_toward_overlap": project.imported_labels_count_toward_overlap,
            "queue_order": project.queue_order,
            **body.validated_data,
        }
        try:
            do_update_settings(project, **values)
        except ProjectSetupError as error:
            return _refused(error)
    return Response(AdminProjectSerializer(project).data)


@extend_schema(
    summary="Archive a project (off the home list, no new work, still readable), or restore it",
    request=ArchiveSerializer,
    responses=AdminProjectSerializer,
)
@api_view(["POST"])
def archive_project(request: Request, slug: str) -> Response:
    project = access_project_admin(request.user, slug)
    body = ArchiveSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    do_archive_project(project, archived=body.validated_data["archived"])
    return Response(AdminProjectSerializer(project).data)


def _change(request: Request, change: MemberChange, code: int = status.HTTP_200_OK) -> Response:
    link = request.build_absolute_uri(change.set_password_path) if change.set_password_path else ""
    body = {
        "membership": change.membership,
        "assignments_created": change.assignments_created,
        "user_created": change.user_created,
        "set_password_link": link,
        "emailed": change.emailed,
    }
    return Response(MemberChangeSerializer(body).data, status=code)


@extend_schema(
    methods=["GET"],
    summary="Members of the project, active and former (owners and staff)",
    responses=MemberSerializer(many=True),
)
@extend_schema(
    methods=["POST"],
    summary="Add an existing account (username) or invite by e-mail (creates the account; returns its "
    "one-time set-password link, also e-mailed)",
    request=AddMemberSerializer,
    responses={201: MemberChangeSerializer, 400: _ERROR},
)
@api_view(["GET", "POST"])
def members(request: Request, slug: str) -> Response:
    project = access_project_admin(request.user, slug)
    if request.method == "GET":
        rows = project.memberships.select_related("user").order_by("-active", "role", "user__username")
        return Response(MemberSerializer(rows, many=True).data)
    body = AddMemberSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    try:
        if data.get("email"):
            change = do_invite(
                project,
                email=data["email"],
                role=data["role"],
                username=data.get("username", ""),
                base_url=request.build_absolute_uri("/").rstrip("/"),
                actor=request.user,
            )
        else:
            change = do_add_existing(project, data["username"], data["role"])
    except MemberError as error:
        return _refused(error)
    return _change(request, change, status.HTTP_201_CREATED)


@extend_schema(
    methods=["PATCH"],
    summary="Change a member's role (the old role is deactivated; an annotator's unfinished traces go to others)",
    request=RoleSerializer,
    responses={200: MemberChangeSerializer, 400: _ERROR},
)
@extend_schema(
    methods=["DELETE"],
    summary="Deactivate a membership (finished work stays; the last owner cannot leave)",
    request=None,
    responses={200: MemberChangeSerializer, 400: _ERROR},
)
@api_view(["PATCH", "DELETE"])
def member(request: Request, slug: str, membership_id: int) -> Response:
    project = access_project_admin(request.user, slug)
    membership = get_object_or_404(
        Membership.objects.select_related("user"), project=project, pk=membership_id, active=True
    )
    try:
        if request.method == "DELETE":
            return _change(request, do_deactivate(project, membership))
        body = RoleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _change(request, do_change_role(project, membership, body.validated_data["role"]))
    except MemberError as error:
        return _refused(error)


@extend_schema(
    methods=["GET"],
    summary="The project's batches (owners and staff)",
    responses=BatchRowSerializer(many=True),
)
@extend_schema(
    methods=["POST"],
    summary="Attach a batch you may see and assign its traces",
    request=AttachBatchSerializer,
    responses={201: BatchAttachedSerializer, 400: _ERROR},
)
@api_view(["GET", "POST"])
def batches(request: Request, slug: str) -> Response:
    project = access_project_admin(request.user, slug)
    if request.method == "GET":
        return Response(BatchRowSerializer(project.batches.order_by("name"), many=True).data)
    body = AttachBatchSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    # Only a batch this user may see: another project's batch answers 404, exactly like a missing one.
    batch = visible_batches(request.user).filter(name=body.validated_data["batch"]).order_by("-pk").first()
    if batch is None:
        raise Http404("No such batch")
    try:
        created = do_attach_batches(project, [batch])
    except ProjectSetupError as error:
        return _refused(error)
    return Response(
        BatchAttachedSerializer({"batch": batch, "assignments_created": created}).data,
        status=status.HTTP_201_CREATED,
    )
