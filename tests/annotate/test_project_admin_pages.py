"""Project administration in the browser: "New project" (PROJECT_CREATORS), archive, invitations with a
one-time set-password link, role changes, deactivation; owners and staff administer, others are kept out."""

from __future__ import annotations

import re

from django.core import mail

from annotator.models import Assignment, Membership, Project
from tests.factories import BatchFactory, ProjectFactory, UserFactory, add_member, trace_with_steps


def _invite_link(html: str) -> str:
    match = re.search(
        r'id="invite-link-url" [^>]*value="([^"]+)"|value="([^"]+)"[^>]*id="invite-link-url"', html
    )
    assert match, "the set-password link is shown to the owner"
    return (match.group(1) or match.group(2)).replace("&amp;", "&")


def test_staff_create_a_project_from_the_home_page_and_become_its_owner(client, mast):
    staff = UserFactory(username="sam-staff", is_staff=True)
    batch = BatchFactory(name="run-9", imported_by=staff)
    trace_with_steps(3, batch=batch)
    client.force_login(staff)
    assert 'id="new-project"' in client.get("/").content.decode()
    response = client.post(
        "/projects/new/",
        {
            "name": "Airline failures",
            "slug": "airline",
            "taxonomy_version": mast.pk,
            "overlap": 2,
            "guidelines": "Label the first failure.",
            "batches": [batch.pk],
        },
    )
    assert response.status_code == 302 and response["Location"] == "/p/airline/members/"
    project = Project.objects.get(slug="airline")
    assert project.created_by == staff and project.taxonomy_version == mast
    assert list(project.batches.all()) == [batch]
    assert Membership.objects.filter(project=project, user=staff, role="owner", active=True).exists()


def test_plain_users_may_not_create_projects_unless_the_administrator_allows_it(
    client, mast, outsider, settings
):
    client.force_login(outsider)
    assert 'id="new-project"' not in client.get("/").content.decode()
    assert client.get("/projects/new/").status_code == 403
    settings.PROJECT_CREATORS = "any"
    assert 'id="new-project"' in client.get("/").content.decode()
    response = client.post(
        "/projects/new/", {"name": "Mine", "slug": "mine", "taxonomy_version": mast.pk, "overlap": 1}
    )
    assert response.status_code == 302
    assert Project.objects.get(slug="mine").memberships.get().user == outsider


def test_a_taken_slug_and_another_projects_batch_are_refused(client, mast, project):
    staff_owner = UserFactory(username="sue", is_staff=False)
    add_member(project, staff_owner, "owner")
    hidden = BatchFactory(name="theirs")
    ProjectFactory(taxonomy_version=mast, slug="elsewhere").batches.add(hidden)
    client.force_login(UserFactory(username="sid", is_staff=True))
    taken = client.post(
        "/projects/new/", {"name": "X", "slug": project.slug, "taxonomy_version": mast.pk, "overlap": 2}
    )
    assert taken.status_code == 422 and "exists already" in taken.content.decode()
    client.force_login(staff_owner)
    with_settings = client.post(
        "/projects/new/",
        {"name": "X", "slug": "x", "taxonomy_version": mast.pk, "overlap": 2, "batches": [hidden.pk]},
    )
    assert with_settings.status_code in (403, 422)
    assert not Project.objects.filter(slug="x").exists()


def test_an_owner_invites_by_email_and_the_link_sets_a_password_once(client, project, traces, owner):
    client.force_login(owner)
    response = client.post(
        f"/p/{project.slug}/members/add/",
        {"email": "dana@example.org", "role": "annotator"},
        follow=True,
    )
    html = response.content.decode()
    assert "dana is now annotator" in html
    link = _invite_link(html)
    assert link.startswith("http://testserver/accounts/set-password/")
    # Shown once: the next visit of the page no longer carries it.
    assert 'id="invite-link-url"' not in client.get(f"/p/{project.slug}/members/").content.decode()
    # The console backend by default; in tests Django collects the mail.
    assert len(mail.outbox) == 1 and link in mail.outbox[0].body and mail.outbox[0].to == ["dana@example.org"]
    dana = Membership.objects.get(project=project, role="annotator", user__email="dana@example.org").user
    assert not dana.has_usable_password()
    assert Assignment.objects.filter(project=project, annotator=dana).exists()

    client.logout()
    form = client.get(link, follow=True)
    assert "Choose your password" in form.content.decode() and "dana" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a-long-pass-phrase-42", "new_password2": "a-long-pass-phrase-42"},
        follow=True,
    )
    assert "Your password is set" in done.content.decode()
    signed_in = client.post("/accounts/login/", {"username": "dana", "password": "a-long-pass-phrase-42"})
    assert signed_in.status_code == 302
    client.logout()
    again = client.get(link, follow=True)
    assert "has been used already or has expired" in again.content.decode()


def test_inviting_an_existing_address_adds_that_account_without_a_link(client, project, owner):
    carl = UserFactory(username="carl", email="carl@example.org")
    client.force_login(owner)
    response = client.post(
        f"/p/{project.slug}/members/add/", {"email": "CARL@example.org", "role": "viewer"}, follow=True
    )
    assert "carl is now viewer" in response.content.decode()
    assert 'id="invite-link-url"' not in response.content.decode()
    assert Membership.objects.filter(project=project, user=carl, role="viewer", active=True).exists()


def test_a_role_changes_and_the_last_owner_cannot_leave(client, project, traces, owner, annotator_a):
    client.force_login(owner)
    slot = Membership.objects.get(project=project, user=annotator_a, role="annotator")
    response = client.post(f"/p/{project.slug}/members/{slot.pk}/role/", {"role": "adjudicator"}, follow=True)
    assert "ana-annotator is now adjudicator" in response.content.decode()
    assert not Membership.objects.get(pk=slot.pk).active
    assert Membership.objects.get(project=project, user=annotator_a, role="adjudicator").active
    assert not Assignment.objects.filter(project=project, annotator=annotator_a, status="pending").exists()
    mine = Membership.objects.get(project=project, user=owner, role="owner")
    refused = client.post(f"/p/{project.slug}/members/{mine.pk}/remove/", follow=True)
    assert "at least one owner" in refused.content.decode()
    refused = client.post(f"/p/{project.slug}/members/{mine.pk}/role/", {"role": "viewer"}, follow=True)
    assert "at least one owner" in refused.content.decode()
    assert Membership.objects.get(pk=mine.pk).active


def test_staff_administer_members_of_any_project_but_others_are_kept_out(
    client, project, annotator_a, outsider
):
    client.force_login(UserFactory(username="stella", is_staff=True))
    assert client.get(f"/p/{project.slug}/members/").status_code == 200
    UserFactory(username="carl")
    client.post(f"/p/{project.slug}/members/add/", {"username": "carl", "role": "viewer"})
    assert project.memberships.filter(user__username="carl", role="viewer").exists()
    slot = Membership.objects.get(project=project, user=annotator_a)
    client.force_login(annotator_a)
    assert client.post(f"/p/{project.slug}/members/{slot.pk}/role/", {"role": "owner"}).status_code == 403
    assert client.post(f"/p/{project.slug}/archive/").status_code == 403
    client.force_login(outsider)
    assert (
        client.post(
            f"/p/{project.slug}/members/add/", {"email": "x@example.org", "role": "owner"}
        ).status_code
        == 404
    )


def test_an_archived_project_leaves_the_home_list_takes_no_new_work_and_stays_readable(
    client, project, traces, owner, annotator_a
):
    client.force_login(owner)
    client.post(f"/p/{project.slug}/archive/", {"archived": "1"})
    project.refresh_from_db()
    assert project.archived
    client.force_login(annotator_a)
    assert "Demo project" not in client.get("/").content.decode()
    assert "Demo project" in client.get("/?archived=1").content.decode()
    page = client.get(f"/p/{project.slug}/")
    assert page.status_code == 200 and 'id="archived-notice"' in page.content.decode()
    response = client.post(f"/p/{project.slug}/next/", follow=True)
    assert "archived" in response.content.decode()
    assert not Assignment.objects.filter(annotator=annotator_a, reserved_until__isnull=False).exists()
    client.force_login(owner)
    batch = BatchFactory(name="late", imported_by=owner)
    attach = client.post(f"/p/{project.slug}/batches/attach/", {"batch": batch.pk}, follow=True)
    assert "archived" in attach.content.decode() and not project.batches.filter(pk=batch.pk).exists()
    client.post(f"/p/{project.slug}/archive/", {"archived": "0"})
    project.refresh_from_db()
    assert not project.archived
