"""`POST /api/token/`: a new API token for a username and password, or for the signed-in browser session
(CSRF-checked), shown once. With `project`, an owner creates that project's ingest token instead.
An API token cannot create tokens: a leaked key must not be able to outlive its revocation.

Throttled per client address (DRF, the "api-token" rate) on top of django-axes, which locks a username out
after repeated wrong passwords here as on the login page.
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.services.api_tokens import do_issue_ingest_token, do_issue_token


class Credentials(serializers.Serializer):
    username = serializers.CharField(max_length=150, required=False, help_text="Not needed from a session")
    password = serializers.CharField(
        max_length=4096,
        trim_whitespace=False,
        required=False,
        style={"input_type": "password"},
        help_text="Not needed from a session",
    )
    name = serializers.CharField(max_length=100, required=False, help_text="A label for the token")
    expires_in_days = serializers.IntegerField(
        min_value=0,
        max_value=3650,
        required=False,
        help_text="Days until it expires (default: the site's API_TOKEN_TTL_DAYS; 0: never)",
    )
    project = serializers.SlugField(
        max_length=80,
        required=False,
        help_text="A project you own: create its ingest token (OTLP spans and logs only) instead of yours",
    )


class IssuedTokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Shown once: only its digest is stored")
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null: never")


class IssueToken(APIView):
    # Credentials in the body, or the browser session (DRF checks its CSRF token); never an API token.
    authentication_classes = [SessionAuthentication]
    permission_classes = [AllowAny]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "api-token"

    @extend_schema(
        summary="Create an API token (shown once; send it as `Authorization: Token <token>`)",
        request=Credentials,
        responses={
            200: IssuedTokenSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Wrong username or password"),
            403: OpenApiResponse(ErrorSerializer, description="`project`: you do not own that project"),
            404: OpenApiResponse(ErrorSerializer, description="`project`: no such project of yours"),
            429: OpenApiResponse(
                ErrorSerializer,
                description="Too many token requests from this address, or too many failed sign-ins for "
                "this username (locked out for LOGIN_LOCKOUT_MINUTES)",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        body = Credentials(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if "username" in data or "password" in data or not request.user.is_authenticated:
            # The Django request: django-axes counts failures per username and address from it.
            user = authenticate(
                request._request, username=data.get("username", ""), password=data.get("password", "")
            )
            if user is None or not user.is_active:
                problem = "Unable to log in with provided credentials."
                return error_response(problem, status=status.HTTP_400_BAD_REQUEST, errors=[problem])
        else:
            user = request.user
        name, days = data.get("name", ""), data.get("expires_in_days")
        if "project" in data:
            project = access_project(user, data["project"], roles=MANAGE_ROLES)
            token, key = do_issue_ingest_token(project, user, name=name, ttl_days=days)
        else:
            token, key = do_issue_token(user, name=name, ttl_days=days)
        return Response(IssuedTokenSerializer({"token": key, "expires_at": token.expires_at}).data)
