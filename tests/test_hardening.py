"""Issue 11, point 10 (hardening): sign-in lockout, throttled token creation, hashed expiring API tokens,
the API schema and docs for signed-in users only."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.utils import timezone

from annotator.models import ApiToken
from annotator.models.tokens import token_digest
from tests.factories import PASSWORD, api_token


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    cache.clear()  # DRF's throttle counts live in the cache
    yield
    cache.clear()


def test_the_schema_and_the_docs_are_for_signed_in_users(client, owner):
    assert client.get("/api/schema/").status_code == 401
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/accounts/login/")
    assert client.get("/api/schema/", HTTP_AUTHORIZATION=f"Token {api_token(owner)}").status_code == 200


def test_tokens_are_stored_hashed_and_shown_once(client, owner):
    response = client.post("/api/token/", {"username": owner.username, "password": PASSWORD})
    key = response.json()["token"]
    stored = ApiToken.objects.get(user=owner)
    assert key not in repr(list(ApiToken.objects.values())) and stored.digest == token_digest(key)
    assert (
        client.post("/api/token/", {"username": owner.username, "password": PASSWORD}).json()["token"] != key
    )
    assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def test_tokens_expire_after_the_configured_days(client, owner, settings):
    settings.API_TOKEN_TTL_DAYS = 7
    response = client.post("/api/token/", {"username": owner.username, "password": PASSWORD})
    expires = ApiToken.objects.get(user=owner).expires_at
    assert timedelta(days=6, hours=23) < expires - timezone.now() <= timedelta(days=7)
    assert response.json()["expires_at"] is not None
    key = response.json()["token"]
    ApiToken.objects.filter(user=owner).update(expires_at=timezone.now() - timedelta(seconds=1))
    refused = client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {key}")
    assert refused.status_code == 401 and "expired" in refused.json()["detail"]


def test_a_token_of_an_inactive_user_or_an_unknown_token_is_refused(client, owner):
    key = api_token(owner)
    assert client.get("/api/projects/", HTTP_AUTHORIZATION="Token not-a-token").status_code == 401
    owner.is_active = False
    owner.save()
    assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401


def test_token_creation_is_throttled_per_address(client, owner):
    credentials = {"username": owner.username, "password": PASSWORD}
    answers = [client.post("/api/token/", credentials).status_code for _ in range(11)]
    assert answers[:10] == [200] * 10 and answers[10] == 429


def test_repeated_wrong_passwords_lock_the_login_out(client, owner):
    for _ in range(5):
        wrong = client.post("/accounts/login/", {"username": owner.username, "password": "wrong"})
        assert wrong.status_code in (200, 429)
    locked = client.post("/accounts/login/", {"username": owner.username, "password": PASSWORD})
    assert locked.status_code == 429 and "_auth_user_id" not in client.session
    token = client.post("/api/token/", {"username": owner.username, "password": PASSWORD})
    assert token.status_code == 429 and not ApiToken.objects.exists()


def test_a_success_resets_the_failure_count(client, owner):
    for _ in range(4):
        client.post("/accounts/login/", {"username": owner.username, "password": "wrong"})
    assert (
        client.post("/accounts/login/", {"username": owner.username, "password": PASSWORD}).status_code == 302
    )
    client.logout()
    for _ in range(4):
        client.post("/accounts/login/", {"username": owner.username, "password": "wrong"})
    assert (
        client.post("/accounts/login/", {"username": owner.username, "password": PASSWORD}).status_code == 302
    )


def test_the_command_prints_a_token_once_and_can_revoke(owner):
    out, err = StringIO(), StringIO()
    call_command("create_api_token", owner.username, "--days", "3", "--name", "CI", stdout=out, stderr=err)
    key = out.getvalue().strip()
    token = ApiToken.objects.get(user=owner)
    assert token.digest == token_digest(key) and token.name == "CI" and "expires" in err.getvalue()
    call_command("create_api_token", owner.username, "--revoke-all", stdout=StringIO(), stderr=StringIO())
    assert not ApiToken.objects.filter(digest=token_digest(key)).exists()


def test_clear_text_tokens_from_before_become_hashed_and_keep_working(client, owner, settings):
    """The data migration: rows of DRF's old authtoken table are hashed into ApiTokens, then deleted."""
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    migration = importlib.import_module("annotator.migrations.0006_hash_existing_tokens")
    old_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, user_id integer)")
        cursor.execute("INSERT INTO authtoken_token (key, user_id) VALUES (%s, %s)", [old_key, owner.pk])
    settings.API_TOKEN_TTL_DAYS = 30
    # The function only needs the editor's connection (SQLite refuses a schema editor inside a test's atomic).
    migration.hash_existing_tokens(apps, SimpleNamespace(connection=connection))
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0
    token = ApiToken.objects.get(user=owner)
    assert token.digest == token_digest(old_key) and token.expires_at is not None
    assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {old_key}").status_code == 200


def test_the_django_admin_is_for_superusers_only(client, project, annotator_a):
    """A staff flag and a model permission do not open the admin: it reads every label without the project
    access policy, so an annotator who is also staff could read the labels of traces still to label."""
    from django.contrib.auth.models import Permission

    from tests.factories import UserFactory

    annotator_a.is_staff = True
    annotator_a.save()
    annotator_a.user_permissions.add(Permission.objects.get(codename="view_annotation"))
    client.force_login(annotator_a)
    assert client.get("/admin/annotator/annotation/").status_code == 302
    assert client.get("/admin/").status_code == 302
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    assert client.get("/admin/annotator/annotation/").status_code == 200


def test_an_ingest_token_is_refused_everywhere_but_its_projects_otlp_endpoints(client, owner, project):
    from annotator.services.api_tokens import do_issue_ingest_token, do_revoke_tokens

    token, key = do_issue_ingest_token(project, owner, name="agents in prod")
    assert token.scope == ApiToken.Scope.INGEST and token.project == project and token.user == owner
    for url in ("/api/projects/", f"/api/projects/{project.slug}/traces/", "/api/schema/"):
        refused = client.get(url, HTTP_AUTHORIZATION=f"Token {key}")
        assert refused.status_code == 403, url
        assert f"ingest token of project {project.slug}" in refused.content.decode()
    assert token.allows_route("api-otlp-traces", project.slug)
    assert token.allows_route("api-otlp-logs", project.slug)
    assert not token.allows_route("api-otlp-traces", "another-project")
    # The owner's own tokens are untouched by it, and revoking the owner's tokens leaves the project's.
    assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {api_token(owner)}").status_code == 200
    assert do_revoke_tokens(owner) == 1 and ApiToken.objects.filter(pk=token.pk).exists()
