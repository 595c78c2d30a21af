"""Issue and revoke API tokens (annotator.models.tokens): the key is returned once and never stored."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotator.models import ApiToken

log = logging.getLogger(__name__)

# A user who scripts token creation must not grow the table without bound: beyond this many live tokens the
# oldest are revoked.
MAX_TOKENS_PER_USER = 20


def do_issue_token(user, *, name: str = "", ttl_days: int | None = None) -> tuple[ApiToken, str]:
    """A new token for `user` (expired ones are dropped, the oldest revoked past MAX_TOKENS_PER_USER)."""
    with transaction.atomic():
        mine = ApiToken.objects.filter(user=user)
        mine.filter(Q(expires_at__lte=timezone.now())).delete()
        surplus = list(mine.order_by("-created_at").values_list("pk", flat=True)[MAX_TOKENS_PER_USER - 1 :])
        if surplus:
            ApiToken.objects.filter(pk__in=surplus).delete()
        token, key = ApiToken.issue(user, name=name, ttl_days=ttl_days)
    log.info("API token %s… issued to %s (expires %s)", token.prefix, user, token.expires_at or "never")
    return token, key


def do_revoke_tokens(user) -> int:
    """Revoke every token of `user`; returns how many there were."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return deleted
