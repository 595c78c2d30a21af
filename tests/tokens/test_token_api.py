"""The tokens API: list yours, revoke one, create one from a session or with a password."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import ApiToken
from annotator.services.api_tokens import do_issue_ingest_token, do_issue_token
from tests.factories import api_token

pytestmark = pytest.mark.django_db


def _token_client(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {api_token(user, name='script')}")


def test_it_lists_my_tokens_and_my_projects_ingest_tokens_without_keys(project, owner, annotator_a):
    do_issue_token(annotator_a, name="not-mine")
    _, key = do_issue_ingest_token(project, owner, name="agent")
    response = _token_client(owner).get(reverse("api-tokens"))
    assert response.status_code == 200
    rows = {row["name"]: row for row in response.json()}
    assert set(rows) == {"script", "agent"}
    assert rows["agent"]["project"] == project.slug and rows["agent"]["scope"] == "ingest"
    assert rows["script"]["project"] is None and rows["script"]["last_used_at"] is not None
    assert key not in response.content.decode()


def test_it_revokes_one_of_my_tokens(annotator_a):
    token, _ = do_issue_token(annotator_a, name="old")
    client = _token_client(annotator_a)
    assert client.delete(reverse("api-token-revoke", args=[token.pk])).status_code == 204
    assert client.delete(reverse("api-token-revoke", args=[token.pk])).status_code == 404
    assert not ApiToken.objects.filter(pk=token.pk).exists()


def test_it_refuses_to_revoke_anothers_token(annotator_a, annotator_b):
    token, _ = do_issue_token(annotator_b, name="bens")
    response = _token_client(annotator_a).delete(reverse("api-token-revoke", args=[token.pk]))
    assert response.status_code == 404 and ApiToken.objects.filter(pk=token.pk).exists()


def test_a_session_creates_a_token_without_a_password(annotator_a):
    client = Client()
    client.force_login(annotator_a)
    response = client.post(
        reverse("api-token"),
        {"name": "from the browser", "expires_in_days": 7},
        content_type="application/json",
    )
    assert response.status_code == 200
    token = ApiToken.objects.get(user=annotator_a)
    assert response.json()["token"].startswith(token.prefix) and token.name == "from the browser"


def test_a_session_post_needs_the_csrf_token(annotator_a):
    client = Client(enforce_csrf_checks=True)
    client.force_login(annotator_a)
    response = client.post(reverse("api-token"), {"name": "x"}, content_type="application/json")
    assert response.status_code == 403 and not ApiToken.objects.exists()


def test_an_api_token_cannot_create_tokens(annotator_a):
    response = _token_client(annotator_a).post(reverse("api-token"), {}, content_type="application/json")
    assert response.status_code == 400
    assert ApiToken.objects.filter(user=annotator_a).count() == 1


def test_an_owner_creates_a_projects_ingest_token(project, owner, annotator_a):
    client = Client()
    client.force_login(owner)
    response = client.post(reverse("api-token"), {"project": project.slug}, content_type="application/json")
    assert response.status_code == 200 and ApiToken.objects.get(project=project).scope == "ingest"
    client.force_login(annotator_a)
    response = client.post(reverse("api-token"), {"project": project.slug}, content_type="application/json")
    assert response.status_code == 403
