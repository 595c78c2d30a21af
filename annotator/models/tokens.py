"""API tokens: stored as a SHA-256 digest (a database leak gives no usable token), expiring, shown once.

Clients keep sending ``Authorization: Token <key>``; annotator.api.auth looks the digest up. A token is a
random 40-character key from `secrets`, so one unsalted SHA-256 is enough (no password to guess).

A token is either a user's (scope "full": it acts as its user, everywhere the user may go) or a project's
ingest token (scope "ingest", `project` set): it may only send spans to that project's OTLP endpoints
(INGEST_ROUTES), so an agent's environment variables never carry a key that can read labels.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

KEY_BYTES = 30  # 40 URL-safe characters
# The URL names an ingest token may call (with its own project's slug); every other route refuses it.
INGEST_ROUTES = frozenset({"api-otlp-traces", "api-otlp-logs"})


def token_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        FULL = "full", "Full access (acts as its user)"
        INGEST = "ingest", "Ingest only (OTLP spans and logs to one project)"

    # For an ingest token: the owner who created it (shown in the list; the token acts for the project).
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    project = models.ForeignKey(
        "annotator.Project",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="api_tokens",
        help_text="Set for a project's ingest token; empty for a user's token",
    )
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.FULL)
    digest = models.CharField(max_length=64, unique=True)
    # The first characters, so a user can tell tokens apart in a list; too short to be guessed from.
    prefix = models.CharField(max_length=8)
    name = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never (API_TOKEN_TTL_DAYS=0)")
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["user", "-created_at"]
        indexes = [models.Index(fields=["user", "expires_at"], name="api_token_user_expiry_idx")]
        constraints = [
            # An ingest token always names its project; a user's token never does.
            models.CheckConstraint(
                condition=(
                    models.Q(scope="ingest", project__isnull=False)
                    | models.Q(scope="full", project__isnull=True)
                ),
                name="api_token_scope_project",
            )
        ]

    def __str__(self) -> str:
        return f"API token {self.prefix}… of {self.user_id}"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_ingest(self) -> bool:
        return self.scope == self.Scope.INGEST

    def allows_route(self, url_name: str | None, slug: str | None) -> bool:
        """Whether this token may call the route `url_name` for project `slug` (an ingest token: only its
        project's OTLP endpoints)."""
        if not self.is_ingest:
            return True
        return url_name in INGEST_ROUTES and slug is not None and slug == self.project.slug

    @classmethod
    def issue(
        cls, user, *, name: str = "", ttl_days: int | None = None, project=None
    ) -> tuple[ApiToken, str]:
        """A new token row and its key: the key exists only in this return value (show it once). With
        `project`, an ingest token of that project created by `user`."""
        days = settings.API_TOKEN_TTL_DAYS if ttl_days is None else ttl_days
        key = secrets.token_urlsafe(KEY_BYTES)
        token = cls.objects.create(
            user=user,
            project=project,
            scope=cls.Scope.INGEST if project is not None else cls.Scope.FULL,
            digest=token_digest(key),
            prefix=key[:8],
            name=name[:100],
            expires_at=timezone.now() + timedelta(days=days) if days > 0 else None,
        )
        return token, key
