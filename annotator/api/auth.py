"""`Authorization: Token <key>` against hashed, expiring tokens (annotator.models.tokens).

A project's ingest token is refused (403) on every route but its own project's OTLP endpoints, here, before
any view runs: no view can forget the check.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from annotator.models import ApiToken
from annotator.models.tokens import token_digest
from annotator.prepared import PreparedQuery

# last_used_at is informative: write it at most this often per token, not on every request.
LAST_USED_RESOLUTION = timedelta(minutes=5)
# Every API request starts here: compiled once per connection (annotator.prepared). Digests are unique.
_TOKEN = PreparedQuery(
    lambda digest: ApiToken.objects.select_related("user", "project").filter(digest=digest), digest=str
)


class HashedTokenAuthentication(TokenAuthentication):
    """DRF's header and error behaviour (and drf-spectacular's "tokenAuth" scheme, as a subclass), looking
    tokens up by digest and refusing expired ones."""

    keyword = "Token"

    def authenticate(self, request):
        found = super().authenticate(request)
        if found is not None:
            token = found[1]
            match = getattr(request._request, "resolver_match", None)
            url_name = match.url_name if match else None
            slug = match.kwargs.get("slug") if match else None
            if not token.allows_route(url_name, slug):
                raise exceptions.PermissionDenied(
                    f"This is an ingest token of project {token.project.slug}: it can only send OTLP spans "
                    "and logs to that project's /otlp/v1/ endpoints."
                )
        return found

    def authenticate_credentials(self, key: str):
        found = _TOKEN.objects(digest=token_digest(key))
        if not found:
            raise exceptions.AuthenticationFailed("Invalid token.")
        token = found[0]
        if token.is_expired:
            raise exceptions.AuthenticationFailed("Token expired: create a new one at /api/token/.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
