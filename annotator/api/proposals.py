"""Proposals for new failure modes over the API, the twin of the proposals page: record one on a trace (its
annotators, owners and adjudicators), list the project's proposals grouped (owners and adjudicators see
every proposal they are not blind on; annotators their own), settle some (owners). The serializers below
both document and build every body; the verbs and the grouping are annotator/services/proposals.py's."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.access import LABEL_ROLES, MANAGE_ROLES, REVIEW_ROLES, access_project, access_trace
from annotator.api.errors import ErrorSerializer, error_response
from annotator.models import ModeProposal
from annotator.services.proposals import (
    STATUSES,
    ProposalError,
    do_propose,
    do_settle,
    groups_json,
    proposal_groups,
    proposal_json,
    visible_proposals,
)


class ProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    trace = serializers.IntegerField(help_text="The trace's id (as in /api/projects/SLUG/traces/ID/)")
    trace_external_id = serializers.CharField()
    author = serializers.CharField(help_text="The annotator's username")
    text = serializers.CharField(help_text="What went wrong, in the author's words")
    suggested_name = serializers.CharField(allow_blank=True)
    steps = serializers.ListField(child=serializers.IntegerField(), help_text="Evidence step indices")
    cooccurring = serializers.ListField(
        child=serializers.CharField(), help_text="The modes the author had chosen on the trace when proposing"
    )
    status = serializers.ChoiceField(choices=ModeProposal.Status.choices)
    outcome = serializers.CharField(allow_blank=True, help_text="The mode it became, or why it was declined")
    mode = serializers.CharField(
        allow_null=True, help_text="The mode a taxonomy migration turned it into (null until then)"
    )
    created_at = serializers.DateTimeField()


class CooccurringSerializer(serializers.Serializer):
    code = serializers.CharField()
    count = serializers.IntegerField(help_text="Proposals of the group whose author had chosen this mode")


class GroupSerializer(serializers.Serializer):
    size = serializers.IntegerField()
    status = serializers.ChoiceField(
        choices=[*ModeProposal.Status.values, "mixed"],
        help_text="Its proposals' status ('mixed' when listing every status and they differ)",
    )
    terms = serializers.ListField(child=serializers.CharField(), help_text="The group's most frequent words")
    names = serializers.ListField(child=serializers.CharField(), help_text="Suggested names in the group")
    cooccurring = CooccurringSerializer(many=True, help_text="Modes the group co-occurs with, most first")
    proposals = ProposalSerializer(many=True)


class GroupsSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=STATUSES)
    count = serializers.IntegerField(help_text="Proposals in all groups")
    groups = GroupSerializer(many=True, help_text="Largest first; each proposal in exactly one group")


class ProposeSerializer(serializers.Serializer):
    # Bounds only: the service checks the content and words its refusals as the page does.
    text = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=10_000)
    suggested_name = serializers.CharField(required=False, allow_blank=True, max_length=1_000, default="")
    steps = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=2**31 - 1),
        required=False,
        default=list,
        max_length=100,
        help_text="Evidence step indices of the trace (at most 20)",
    )


class SettleSerializer(serializers.Serializer):
    proposals = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1),
        max_length=500,
        help_text="Proposal ids (a group's, or one); all or nothing",
    )
    status = serializers.ChoiceField(
        choices=[ModeProposal.Status.ACCEPTED, ModeProposal.Status.DECLINED],
        help_text="accepted: turned into a mode; declined",
    )
    outcome = serializers.CharField(
        allow_blank=True,
        max_length=1_000,
        help_text="accepted: the new mode's code (a taxonomy migration adding it links them); declined: why",
    )


class SettledSerializer(serializers.Serializer):
    settled = serializers.IntegerField()
    proposals = ProposalSerializer(many=True)


ERRORS = OpenApiResponse(ErrorSerializer, description="What is wrong with the request, in words")


def _refused(error: ProposalError) -> Response:
    return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=str(error).split("; "))


@extend_schema(
    methods=["GET"],
    responses={200: ProposalSerializer(many=True)},
    summary="My proposals on this trace",
)
@extend_schema(
    methods=["POST"],
    request=ProposeSerializer,
    responses={201: ProposalSerializer, 400: ERRORS},
    summary="Record a failure the taxonomy lacks, seen on this trace (annotators: a trace assigned to them)",
)
@api_view(["GET", "POST"])
def trace_proposals(request, slug: str, trace_id: int):
    project, trace = access_trace(request.user, slug, trace_id, roles=LABEL_ROLES | REVIEW_ROLES)
    if request.method == "GET":
        mine = visible_proposals(project, request.user).filter(trace=trace, author=request.user)
        return Response(ProposalSerializer([proposal_json(p) for p in mine], many=True).data)
    incoming = ProposeSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        proposal = do_propose(
            project,
            trace,
            request.user,
            text=data["text"],
            suggested_name=data["suggested_name"],
            steps=data["steps"],
        )
    except ProposalError as error:
        return _refused(error)
    proposal = visible_proposals(project, request.user).get(pk=proposal.pk)
    return Response(ProposalSerializer(proposal_json(proposal)).data, status=status.HTTP_201_CREATED)


@extend_schema(
    parameters=[
        OpenApiParameter(
            "status",
            OpenApiTypes.STR,
            enum=list(STATUSES),
            description="Which proposals to group (default open; all: every status)",
        )
    ],
    responses={200: GroupsSerializer, 400: ERRORS},
    summary="The project's proposals, grouped as on the proposals page (annotators: their own)",
)
@api_view(["GET"])
def proposals(request, slug: str):
    project = access_project(request.user, slug, roles=LABEL_ROLES | REVIEW_ROLES)
    wanted = request.query_params.get("status", ModeProposal.Status.OPEN)
    try:
        groups = proposal_groups(visible_proposals(project, request.user), wanted)
    except ProposalError as error:
        return _refused(error)
    return Response(GroupsSerializer(groups_json(groups, wanted)).data)


@extend_schema(
    request=SettleSerializer,
    responses={200: SettledSerializer, 400: ERRORS},
    summary="Settle proposals: turned into a mode (naming it) or declined (saying why)",
)
@api_view(["POST"])
def settle(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    incoming = SettleSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    data = incoming.validated_data
    try:
        settled = do_settle(
            project, data["proposals"], status=data["status"], outcome=data["outcome"], actor=request.user
        )
    except ProposalError as error:
        return _refused(error)
    body = {"settled": len(settled), "proposals": [proposal_json(p) for p in settled]}
    return Response(SettledSerializer(body).data)
