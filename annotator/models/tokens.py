"""API tokens: stored as a SHA-256 digest (a database leak gives no usable token), expiring, shown once.

Clients keep sending ``Authorization: Token <key>``; annotator.api.auth looks the digest up. A token is a
random 40-character key from `secrets`, so one unsalted SHA-256 is enough (no password to guess).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

KEY_BYTES = 30  # 40 URL-safe characters


def token_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
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

    def __str__(self) -> str:
        return f"API token {self.prefix}… of {self.user_id}"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @classmethod
    def issue(cls, user, *, name: str = "", ttl_days: int | None = None) -> tuple[ApiToken, str]:
        """A new token row and its key: the key exists only in this return value (show it once)."""
        days = settings.API_TOKEN_TTL_DAYS if ttl_days is None else ttl_days
        key = secrets.token_urlsafe(KEY_BYTES)
        token = cls.objects.create(
            user=user,
            digest=token_digest(key),
            prefix=key[:8],
            name=name[:100],
            expires_at=timezone.now() + timedelta(days=days) if days > 0 else None,
        )
        return token, key
