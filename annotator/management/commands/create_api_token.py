"""python manage.py create_api_token USERNAME [--name NAME] [--days N] [--revoke-all]"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.services.api_tokens import do_issue_token, do_revoke_tokens


class Command(BaseCommand):
    help = (
        "Create an API token for a user and print it once (only its SHA-256 digest is stored). Send it as "
        "'Authorization: Token <token>'. Tokens expire after API_TOKEN_TTL_DAYS days unless --days is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", help="The user the token acts as")
        parser.add_argument("--name", default="", help="A label to tell the token apart (e.g. 'CI')")
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help=f"Days until it expires (default: API_TOKEN_TTL_DAYS, now {settings.API_TOKEN_TTL_DAYS}; 0: never)",
        )
        parser.add_argument(
            "--revoke-all", action="store_true", help="Revoke the user's existing tokens first"
        )

    def handle(self, *args, username: str, name: str, days, revoke_all: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}", returncode=2)
        if days is not None and days < 0:
            raise CommandError("--days must be 0 (never) or more", returncode=2)
        if revoke_all:
            self.stderr.write(f"Revoked {do_revoke_tokens(user)} token(s) of {username}.")
        token, key = do_issue_token(user, name=name, ttl_days=days)
        expiry = token.expires_at.isoformat(timespec="minutes") if token.expires_at else "never"
        self.stderr.write(f"Token for {username} (expires {expiry}); it is shown only now:")
        self.stdout.write(key)
