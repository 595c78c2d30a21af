"""The API side of the token page: `GET /api/tokens/` lists the tokens the caller may see (their own, and
the ingest tokens of projects they own) and `DELETE /api/tokens/<id>/` revokes one. Creating one stays
`POST /api/token/` (annotator/api/tokens.py). Keys are never listed: only their first characters.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.access import access_tokens
from annotator.api.errors import ErrorSerializer
from annotator.models import ApiToken
from annotator.services.api_tokens import do_revoke_token


class TokenSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(
        slug_field="slug",
        read_only=True,
        allow_null=True,
        help_text="The project of an ingest token; null for yours",
    )
    created_by = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "prefix",
            "name",
            "scope",
            "project",
            "created_by",
            "created_at",
            "expires_at",
            "last_used_at",
        ]
        read_only_fields = fields


@extend_schema(
    summary="Your API tokens, and the ingest tokens of the projects you own (never their keys)",
    responses=TokenSerializer(many=True),
)
@api_view(["GET"])
def tokens(request: Request) -> Response:
    rows = access_tokens(request.user).select_related("user").order_by("project__slug", "-created_at")
    return Response(TokenSerializer(rows, many=True).data)


@extend_schema(
    summary="Revoke a token: one of yours, or an ingest token of a project you own",
    request=None,
    responses={
        204: None,
        404: OpenApiResponse(ErrorSerializer, description="No such token among those you may revoke"),
    },
)
@api_view(["DELETE"])
def token(request: Request, token_id: int) -> Response:
    try:
        do_revoke_token(request.user, token_id)
    except ApiToken.DoesNotExist:
        raise Http404("No such token among those you may revoke") from None
    return Response(status=status.HTTP_204_NO_CONTENT)
