"""Project administration over the REST API: create (PROJECT_CREATORS), settings, archive, batches, members
(add, invite with a set-password link, change role, deactivate); who may, and the OpenAPI schema lists it."""

from __future__ import annotations

import pytest
from django.test import override_settings

from annotator.models import Assignment, Membership, Project
from tests.factories import BatchFactory, ProjectFactory, UserFactory, api_token, trace_with_steps


def _api(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(user)}")
    return client


def url(project, tail=""):
    return f"/api/projects/{project.slug}/{tail}"


def test_staff_create_a_project_with_batches_they_may_see(mast):
    staff = UserFactory(username="sam-staff", is_staff=True)
    batch = BatchFactory(name="run-9", imported_by=staff)
    for _ in range(3):
        trace_with_steps(2, batch=batch)
    response = _api(staff).post(
        "/api/projects/",
        {"slug": "airline", "name": "Airline", "taxonomy": "mast", "overlap": 1, "batches": ["run-9"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["slug"], body["taxonomy"], body["taxonomy_version"], body["batches"]) == (
        "airline",
        "mast",
        mast.number,
        ["run-9"],
    )
    project = Project.objects.get(slug="airline")
    assert project.memberships.get().role == "owner" and project.created_by == staff


def test_who_may_create_follows_project_creators(mast, outsider, settings):
    body = {"slug": "mine", "name": "Mine", "taxonomy": "mast"}
    assert _api(outsider).post("/api/projects/", body, format="json").status_code == 403
    settings.PROJECT_CREATORS = "any"
    assert _api(outsider).post("/api/projects/", body, format="json").status_code == 201


def test_bad_creations_say_what_is_wrong(mast, project):
    plain = _api(UserFactory(username="sid"))
    other = BatchFactory(name="theirs")
    ProjectFactory(taxonomy_version=mast, slug="elsewhere").batches.add(other)
    client = _api(UserFactory(username="stan", is_staff=True))
    taken = client.post(
        "/api/projects/", {"slug": project.slug, "name": "X", "taxonomy": "mast"}, format="json"
    )
    assert taken.status_code == 400 and "exists already" in taken.json()["detail"]
    unknown = client.post("/api/projects/", {"slug": "y", "name": "Y", "taxonomy": "nope"}, format="json")
    assert unknown.status_code == 400 and "nope" in unknown.json()["detail"]
    assert plain.post("/api/projects/", {"slug": "z", "name": "Z", "taxonomy": "mast"}).status_code == 403
    # A plain user may not name another project's batch (it is not one they may see).
    with override_settings(PROJECT_CREATORS="any"):
        hidden = _api(UserFactory(username="una")).post(
            "/api/projects/",
            {"slug": "w", "name": "W", "taxonomy": "mast", "batches": ["theirs"]},
            format="json",
        )
    assert hidden.status_code == 400 and "theirs" in hidden.json()["detail"]
    assert not Project.objects.filter(slug__in=["y", "z", "w"]).exists()


def test_an_owner_adds_invites_changes_roles_and_deactivates(project, owner, annotator_a):
    client = _api(owner)
    batch = BatchFactory(name="run-1")
    project.batches.add(batch)
    for _ in range(2):
        trace_with_steps(2, batch=batch)
    UserFactory(username="carl")
    added = client.post(url(project, "members/"), {"username": "carl", "role": "viewer"}, format="json")
    assert added.status_code == 201 and added.json()["member"]["role"] == "viewer"
    assert added.json()["set_password_link"] == ""

    invited = client.post(
        url(project, "members/"),
        {"email": "dana@example.org", "username": "dana", "role": "annotator"},
        format="json",
    )
    body = invited.json()
    assert invited.status_code == 201 and body["user_created"] and body["emailed"]
    assert body["set_password_link"].startswith("http://testserver/accounts/set-password/")
    assert body["member"]["has_password"] is False
    assert body["assignments_created"] >= 0

    listed = client.get(url(project, "members/")).json()
    assert {"carl", "dana", "olivia-owner"} <= {row["username"] for row in listed}

    slot = Membership.objects.get(project=project, user=annotator_a, role="annotator")
    changed = client.patch(url(project, f"members/{slot.pk}/"), {"role": "adjudicator"}, format="json")
    assert changed.status_code == 200 and changed.json()["member"]["role"] == "adjudicator"
    assert not Assignment.objects.filter(project=project, annotator=annotator_a, status="pending").exists()

    carl = Membership.objects.get(project=project, user__username="carl")
    gone = client.delete(url(project, f"members/{carl.pk}/"))
    assert gone.status_code == 200 and gone.json()["member"]["active"] is False
    assert client.delete(url(project, f"members/{carl.pk}/")).status_code == 404

    mine = Membership.objects.get(project=project, user=owner)
    refused = client.delete(url(project, f"members/{mine.pk}/"))
    assert refused.status_code == 400 and "at least one owner" in refused.json()["detail"]
    assert refused.json()["errors"] == [refused.json()["detail"]]
    bad = client.post(url(project, "members/"), {"username": "nobody", "role": "viewer"}, format="json")
    assert bad.status_code == 400 and "nobody" in bad.json()["detail"]
    nameless = client.post(url(project, "members/"), {"role": "viewer"}, format="json")
    assert nameless.status_code == 400 and "non_field_errors" in nameless.json()["fields"]
    assert client.patch(url(project, f"members/{mine.pk}/"), {"role": "boss"}, format="json").json()[
        "fields"
    ] == {"role": ['"boss" is not a valid choice.']}


def test_settings_archive_and_batches(project, owner):
    client = _api(owner)
    patched = client.patch(
        url(project, "settings/"), {"overlap": 3, "guidelines": "Be brief."}, format="json"
    )
    assert patched.status_code == 200 and (patched.json()["overlap"], patched.json()["guidelines"]) == (
        3,
        "Be brief.",
    )
    refused = client.patch(url(project, "settings/"), {"overlap": 0}, format="json")
    assert refused.status_code == 400 and set(refused.json()["fields"]) == {"overlap"}

    mine = BatchFactory(name="mine", imported_by=owner)
    trace_with_steps(2, batch=mine)
    theirs = BatchFactory(name="theirs")
    ProjectFactory(taxonomy_version=project.taxonomy_version, slug="else").batches.add(theirs)
    attached = client.post(url(project, "batches/"), {"batch": "mine"}, format="json")
    assert attached.status_code == 201 and attached.json()["batch"]["name"] == "mine"
    assert client.post(url(project, "batches/"), {"batch": "theirs"}, format="json").status_code == 404
    assert [row["name"] for row in client.get(url(project, "batches/")).json()] == ["mine"]

    archived = client.post(url(project, "archive/"), {"archived": True}, format="json")
    assert archived.status_code == 200 and archived.json()["archived"] is True
    assert [p["slug"] for p in client.get("/api/projects/").json()["results"]] == []
    assert [p["slug"] for p in client.get("/api/projects/?archived=1").json()["results"]] == [project.slug]
    assert client.get(f"/api/projects/{project.slug}/").status_code == 200  # still readable
    later = BatchFactory(name="later", imported_by=owner)
    refused = client.post(url(project, "batches/"), {"batch": later.name}, format="json")
    assert refused.status_code == 400 and "archived" in refused.json()["detail"]
    restored = client.post(url(project, "archive/"), {"archived": False}, format="json")
    assert restored.json()["archived"] is False


@pytest.mark.parametrize("tail", ["settings/", "members/", "batches/"])
def test_outsiders_get_404_members_without_the_owner_role_403_and_staff_get_in(
    project, annotator_a, adjudicator, outsider, tail
):
    assert _api(outsider).get(url(project, tail)).status_code == 404
    assert _api(annotator_a).get(url(project, tail)).status_code == 403
    assert _api(adjudicator).get(url(project, tail)).status_code == 403
    assert _api(UserFactory(username="stella", is_staff=True)).get(url(project, tail)).status_code == 200


def test_an_annotator_cannot_promote_themself_or_archive(project, annotator_a):
    slot = Membership.objects.get(project=project, user=annotator_a)
    client = _api(annotator_a)
    assert (
        client.patch(url(project, f"members/{slot.pk}/"), {"role": "owner"}, format="json").status_code == 403
    )
    assert client.post(url(project, "archive/"), {}, format="json").status_code == 403
    assert (
        client.post(
            url(project, "members/"), {"email": "a@b.org", "role": "owner"}, format="json"
        ).status_code
        == 403
    )


def test_the_administration_verbs_are_in_the_openapi_schema(client, owner):
    client.force_login(owner)
    schema = client.get("/api/schema/").content.decode()
    for path in (
        "/api/projects/{slug}/settings/",
        "/api/projects/{slug}/archive/",
        "/api/projects/{slug}/members/",
        "/api/projects/{slug}/members/{membership_id}/",
        "/api/projects/{slug}/batches/",
        "/api/projects/{slug}/llm-settings/",
        "/api/projects/{slug}/llm-settings/key/",
        "/api/projects/{slug}/llm-settings/prompt/",
        "/api/projects/{slug}/llm-runs/{run_id}/stop/",
    ):
        assert path in schema
    assert "NewProject" in schema and "set_password_link" in schema
