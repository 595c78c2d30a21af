"""Every page needs a login; the project pages answer outsiders 404; the API takes tokens."""

from __future__ import annotations

import pytest

from tests.factories import PASSWORD, api_token


def test_it_redirects_anonymous_visitors_to_the_login_page(client, db):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_login_page_signs_a_user_in(client, owner):
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b"Sign in" in page.content
    response = client.post("/accounts/login/", {"username": owner.username, "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_home_lists_only_my_projects(client, project, outsider, annotator_a):
    client.force_login(annotator_a)
    assert project.name.encode() in client.get("/").content
    client.force_login(outsider)
    page = client.get("/")
    assert project.name.encode() not in page.content
    assert b"You are not in any project yet" in page.content


def test_an_outsider_gets_404_on_a_project_page(client, project, outsider):
    client.force_login(outsider)
    assert client.get(f"/p/{project.slug}/").status_code == 404


def test_a_member_sees_the_project_page(client, project, annotator_a):
    client.force_login(annotator_a)
    assert client.get(f"/p/{project.slug}/").status_code == 200


def test_taxonomy_pages_show_every_definition(client, mast, outsider):
    client.force_login(outsider)
    assert b"MAST" in client.get("/taxonomies/").content
    page = client.get("/taxonomies/mast/").content.decode()
    for mode in mast.modes.all():
        assert mode.code in page
        assert mode.definition[:40].replace("'", "&#x27;").replace('"', "&quot;") in page


def test_the_batch_list_is_for_staff_only(client, owner):
    client.force_login(owner)
    assert client.get("/traces/").status_code == 403
    owner.is_staff = True
    owner.save()
    assert client.get("/traces/").status_code == 200


def test_the_api_accepts_a_token_and_scopes_projects(client, project, annotator_a, outsider):
    token = api_token(annotator_a)
    response = client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    assert [p["slug"] for p in response.json()["results"]] == [project.slug]
    assert response.json()["results"][0]["my_roles"] == ["annotator"]
    other = api_token(outsider)
    assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {other}").json()["results"] == []
    assert (
        client.get(f"/api/projects/{project.slug}/", HTTP_AUTHORIZATION=f"Token {other}").status_code == 404
    )


def test_the_api_refuses_anonymous_requests(client, db):
    assert client.get("/api/projects/").status_code == 401


def test_a_token_is_issued_for_valid_credentials(client, owner):
    response = client.post("/api/token/", {"username": owner.username, "password": PASSWORD})
    assert response.status_code == 200
    key = response.json()["token"]
    assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


@pytest.mark.parametrize("path", ["/api/schema/", "/api/docs/"])
def test_the_openapi_schema_is_served(client, owner, path):
    client.force_login(owner)
    assert client.get(path).status_code == 200


def test_healthz_answers_without_login(client, db):
    assert client.get("/healthz").json() == {"status": "ok"}
