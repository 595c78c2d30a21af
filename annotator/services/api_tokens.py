"""Issue and revoke API tokens (annotator.models.tokens): the key is returned once and never stored."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotator.access import access_tokens
from annotator.models import ApiToken

log = logging.getLogger(__name__)

# A user who scripts token creation must not grow the table without bound: beyond this many live tokens the
# oldest are revoked. A project's ingest tokens are counted apart, with the same cap per project.
MAX_TOKENS_PER_USER = 20


def _issue_within(mine, issue) -> tuple[ApiToken, str]:
    """Drop `mine`'s expired tokens and its oldest past the cap, then `issue()`, in one transaction."""
    with transaction.atomic():
        mine.filter(Q(expires_at__lte=timezone.now())).delete()
        surplus = list(mine.order_by("-created_at").values_list("pk", flat=True)[MAX_TOKENS_PER_USER - 1 :])
        if surplus:
            ApiToken.objects.filter(pk__in=surplus).delete()
        return issue()


def do_issue_token(user, *, name: str = "", ttl_days: int | None = None) -> tuple[ApiToken, str]:
    """A new token for `user` (expired ones are dropped, the oldest revoked past MAX_TOKENS_PER_USER)."""
    mine = ApiToken.objects.filter(user=user, project__isnull=True)
    token, key = _issue_within(mine, lambda: ApiToken.issue(user, name=name, ttl_days=ttl_days))
    log.info("API token %s… issued to %s (expires %s)", token.prefix, user, token.expires_at or "never")
    return token, key


def do_issue_ingest_token(
    project, by_user, *, name: str = "", ttl_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new ingest token of `project` (OTLP spans and logs only), created by `by_user`. The caller has
    checked that `by_user` owns the project (annotator.access)."""
    theirs = ApiToken.objects.filter(project=project)
    token, key = _issue_within(
        theirs, lambda: ApiToken.issue(by_user, name=name, ttl_days=ttl_days, project=project)
    )
    log.info("Ingest token %s… of project %s issued by %s", token.prefix, project.slug, by_user)
    return token, key


def do_revoke_tokens(user) -> int:
    """Revoke every token of `user` (not the ingest tokens they created: those are their projects');
    returns how many there were."""
    deleted, _ = ApiToken.objects.filter(user=user, project__isnull=True).delete()
    return deleted


def do_revoke_token(user, token_id: int) -> ApiToken:
    """Revoke one token that `user` may revoke (annotator.access.access_tokens: their own, or an ingest
    token of a project they own); returns the deleted row (its pk is gone, its prefix and name kept for the
    message). ApiToken.DoesNotExist for any other id: someone else's token and a missing one look alike."""
    token = access_tokens(user).get(pk=token_id)
    token.delete()
    log.info("API token %s… revoked by %s", token.prefix, user)
    return token
