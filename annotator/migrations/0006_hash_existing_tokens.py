"""Data migration: DRF's clear-text tokens (rest_framework.authtoken, no longer installed) become hashed
ApiTokens that keep working until API_TOKEN_TTL_DAYS from now; the clear-text copies are deleted.

Raw SQL because the authtoken app is gone from INSTALLED_APPS (its table may or may not exist)."""

import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone


def hash_existing_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if "authtoken_token" not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("annotator", "ApiToken")
    days = getattr(settings, "API_TOKEN_TTL_DAYS", 90)
    expires = timezone.now() + timedelta(days=days) if days > 0 else None
    with connection.cursor() as cursor:
        cursor.execute("SELECT key, user_id FROM authtoken_token")
        rows = cursor.fetchall()
    ApiToken.objects.bulk_create(
        [
            ApiToken(
                user_id=user_id,
                digest=hashlib.sha256(key.encode()).hexdigest(),
                prefix=key[:8],
                name="from before hashed tokens",
                expires_at=expires,
            )
            for key, user_id in rows
        ],
        ignore_conflicts=True,
    )
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM authtoken_token")


class Migration(migrations.Migration):
    dependencies = [("annotator", "0005_api_token")]

    operations = [migrations.RunPython(hash_existing_tokens, migrations.RunPython.noop)]
