"""The token settings page: create (key shown once), list, revoke one or all; owners' ingest tokens."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import ApiToken
from annotator.services.api_tokens import do_issue_ingest_token, do_issue_token, do_revoke_token
from tests.factories import ProjectFactory, UserFactory, add_member

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_creates_a_named_token_and_shows_its_key_once(annotator_a):
    client = _client(annotator_a)
    response = client.post(
        reverse("account-token-create"), {"name": "laptop script", "expires_in_days": "30"}, **HTMX
    )
    assert response.status_code == 200
    token = ApiToken.objects.get(user=annotator_a)
    key = re.search(r'value="([^"]+)"[^>]*data-token-key', response.content.decode()).group(1)
    assert key.startswith(token.prefix) and len(key) == 40
    assert token.name == "laptop script" and token.expires_at is not None
    # The key works once shown, and the page never shows it again.
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get(reverse("api-tokens")).status_code == 200
    page = client.get(reverse("account-tokens")).content.decode()
    assert key not in page and f"{token.prefix}…" in page and "laptop script" in page


def test_it_names_what_is_wrong_in_the_form_itself(annotator_a):
    response = _client(annotator_a).post(
        reverse("account-token-create"), {"name": "", "expires_in_days": "30"}, **HTMX
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert 'id="my-tokens"' in body and 'role="alert"' in body and "Give the token a name" in body
    assert not ApiToken.objects.exists()
    response = _client(annotator_a).post(
        reverse("account-token-create"), {"name": "x", "expires_in_days": "12"}, **HTMX
    )
    assert response.status_code == 422 and "Choose when the token expires" in response.content.decode()


def test_a_token_that_never_expires_can_be_chosen(annotator_a):
    _client(annotator_a).post(reverse("account-token-create"), {"name": "ci", "expires_in_days": "0"})
    assert ApiToken.objects.get(user=annotator_a).expires_at is None


def test_it_revokes_one_token_and_then_all(annotator_a):
    first, _ = do_issue_token(annotator_a, name="one")
    do_issue_token(annotator_a, name="two")
    client = _client(annotator_a)
    response = client.post(reverse("account-token-revoke", args=[first.pk]), **HTMX)
    assert response.status_code == 200 and "Revoked “one”" in response.content.decode()
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["two"]
    response = client.post(reverse("account-tokens-revoke-all"), **HTMX)
    assert "Revoked all your tokens (1)" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_a_revoked_key_is_refused(annotator_a):
    token, key = do_issue_token(annotator_a, name="gone")
    _client(annotator_a).post(reverse("account-token-revoke", args=[token.pk]))
    response = Client(HTTP_AUTHORIZATION=f"Token {key}").get(reverse("api-tokens"))
    assert response.status_code == 401


def test_it_does_not_revoke_or_show_another_users_token(annotator_a, annotator_b):
    theirs, _ = do_issue_token(annotator_b, name="bens-secret-name")
    client = _client(annotator_a)
    assert "bens-secret-name" not in client.get(reverse("account-tokens")).content.decode()
    assert client.post(reverse("account-token-revoke", args=[theirs.pk])).status_code == 404
    assert ApiToken.objects.filter(pk=theirs.pk).exists()


def test_an_owner_manages_each_projects_ingest_tokens(project, owner, annotator_a):
    co_owner = UserFactory(username="cora-co-owner")
    add_member(project, co_owner, "owner")
    client = _client(owner)
    page = client.get(reverse("account-tokens")).content.decode()
    assert f'id="project-tokens-{project.slug}"' in page
    response = client.post(
        reverse("project-token-create", args=[project.slug]),
        {"name": "agent", "expires_in_days": "90"},
        **HTMX,
    )
    assert response.status_code == 200 and f'id="project-tokens-{project.slug}"' in response.content.decode()
    token = ApiToken.objects.get(project=project)
    assert token.scope == "ingest" and token.user == owner
    # Another owner of the project sees it and may revoke it; an annotator of the project may not.
    assert "agent" in _client(co_owner).get(reverse("account-tokens")).content.decode()
    with pytest.raises(ApiToken.DoesNotExist):
        do_revoke_token(annotator_a, token.pk)
    response = _client(co_owner).post(reverse("account-token-revoke", args=[token.pk]), **HTMX)
    assert response.status_code == 200 and f'id="project-tokens-{project.slug}"' in response.content.decode()
    assert not ApiToken.objects.filter(project=project).exists()


def test_revoking_all_my_tokens_keeps_my_projects_ingest_tokens(project, owner):
    do_issue_token(owner, name="mine")
    do_issue_ingest_token(project, owner, name="agent")
    _client(owner).post(reverse("account-tokens-revoke-all"))
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["agent"]


def test_only_owners_create_a_projects_ingest_token(project, annotator_a, outsider):
    other = ProjectFactory(taxonomy_version=project.taxonomy_version, slug="elsewhere")
    data = {"name": "agent", "expires_in_days": "30"}
    assert (
        _client(annotator_a).post(reverse("project-token-create", args=[project.slug]), data).status_code
        == 403
    )
    assert _client(outsider).post(reverse("project-token-create", args=[other.slug]), data).status_code == 404
    assert not ApiToken.objects.exists()
    assert (
        "Ingest tokens of your projects"
        not in _client(annotator_a).get(reverse("account-tokens")).content.decode()
    )


def test_the_top_bar_links_to_the_page(annotator_a):
    page = _client(annotator_a).get(reverse("home")).content.decode()
    assert f'href="{reverse("account-tokens")}"' in page
