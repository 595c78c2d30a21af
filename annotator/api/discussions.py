"""A calibration round's disagreements over the API, the twin of the round's discussion page: its threads
with each annotator's position and the comments (owners and adjudicators; the round's annotators once it is
closed, never on a trace they are blind on), and the decision that settles one (owners and adjudicators; a
clarified guideline is added to the project's guidelines). The serializers below document and build every
body."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import ANY_ROLE, REVIEW_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import Thread
from annotator.services.discussions import DiscussionError, do_decide, positions, visible_round_threads


class PositionSerializer(serializers.Serializer):
    username = serializers.CharField()
    chose = serializers.BooleanField(help_text="Whether this annotator chose the disputed mode")
    steps = serializers.ListField(child=serializers.IntegerField(), help_text="Their evidence steps")


class CommentSerializer(serializers.Serializer):
    author = serializers.CharField(source="author.username")
    body = serializers.CharField()
    step = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()


class ThreadSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    trace_id = serializers.IntegerField()
    trace = serializers.CharField(source="trace.external_id", help_text="The trace's own id")
    mode = serializers.CharField(source="mode.code", allow_null=True, default=None)
    positions = serializers.SerializerMethodField()
    comments = CommentSerializer(many=True, source="comments.all")
    decision = serializers.ChoiceField(choices=[("", "undecided"), *Thread.Decision.choices])
    decision_text = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    decided_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(PositionSerializer(many=True))
    def get_positions(self, thread: Thread) -> list[dict]:
        data = [{"username": p.username, "chose": p.chose, "steps": p.steps} for p in positions(thread)]
        return PositionSerializer(data, many=True).data


class ThreadDecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Thread.Decision.choices)
    text = serializers.CharField(
        max_length=5000,
        required=False,
        allow_blank=True,
        default="",
        help_text="The clarified guideline or the definition change (required for those two decisions)",
    )


@extend_schema(
    responses={200: ThreadSerializer(many=True)},
    summary="A round's disagreements: each annotator's position, the comments, the decision",
)
@api_view(["GET"])
def round_threads(request, slug: str, round_id: int):
    project = access_project(request.user, slug, roles=ANY_ROLE)
    round_ = project.rounds.filter(pk=round_id).first()
    if round_ is None:
        return error_response("No such round in this project", status=status.HTTP_404_NOT_FOUND)
    if not project.user_roles & REVIEW_ROLES and not round_.annotators.filter(pk=request.user.pk).exists():
        raise PermissionDenied("This round's discussion is for its annotators, owners and adjudicators")
    threads = visible_round_threads(round_, request.user, project)
    return Response(ThreadSerializer(threads, many=True).data)


@extend_schema(
    request=ThreadDecisionSerializer,
    responses={
        200: ThreadSerializer,
        400: OpenApiResponse(ErrorSerializer, description="What is wrong with the decision, in words"),
    },
    summary="Settle a discussion (a clarified guideline is added to the project's guidelines)",
)
@api_view(["POST"])
def decide(request, slug: str, thread_id: int):
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    thread = (
        Thread.objects.select_related("mode", "trace", "decided_by", "calibration_round")
        .filter(project=project, pk=thread_id)
        .first()
    )
    if thread is None:
        return error_response("No such discussion in this project", status=status.HTTP_404_NOT_FOUND)
    project.access.require_labels(thread.trace_id)  # blind beats every role, before anything is read
    incoming = ThreadDecisionSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    thread.project = project
    try:
        thread = do_decide(
            thread,
            request.user,
            decision=incoming.validated_data["decision"],
            text=incoming.validated_data["text"],
        )
    except DiscussionError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])
    return Response(ThreadSerializer(thread).data)
