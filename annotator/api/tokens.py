"""`POST /api/token/`: a new API token for a username and password, shown once.

Throttled per client address (DRF, the "api-token" rate) on top of django-axes, which locks a username out
after repeated wrong passwords here as on the login page.
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from annotator.api.errors import ErrorSerializer, error_response
from annotator.services.api_tokens import do_issue_token


class Credentials(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False, style={"input_type": "password"})
    name = serializers.CharField(max_length=100, required=False, help_text="A label for the token")


class IssuedTokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Shown once: only its digest is stored")
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null: never")


class IssueToken(APIView):
    authentication_classes: list = []  # credentials are in the body; no session, so no CSRF
    permission_classes = [AllowAny]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "api-token"

    @extend_schema(
        summary="Create an API token (shown once; send it as `Authorization: Token <token>`)",
        request=Credentials,
        responses={
            200: IssuedTokenSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Wrong username or password"),
            429: OpenApiResponse(
                ErrorSerializer,
                description="Too many token requests from this address, or too many failed sign-ins for "
                "this username (locked out for LOGIN_LOCKOUT_MINUTES)",
            ),
        },
        auth=[],
    )
    def post(self, request: Request) -> Response:
        body = Credentials(data=request.data)
        body.is_valid(raise_exception=True)
        # The Django request: django-axes counts failures per username and address from it.
        user = authenticate(
            request._request,
            username=body.validated_data["username"],
            password=body.validated_data["password"],
        )
        if user is None or not user.is_active:
            problem = "Unable to log in with provided credentials."
            return error_response(problem, status=status.HTTP_400_BAD_REQUEST, errors=[problem])
        token, key = do_issue_token(user, name=body.validated_data.get("name", ""))
        return Response(IssuedTokenSerializer({"token": key, "expires_at": token.expires_at}).data)
