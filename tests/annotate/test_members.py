"""The owner's page: add and remove members, attach batches, settings; everyone else is kept out."""

from __future__ import annotations

from annotator.models import Assignment, Membership
from tests.factories import BatchFactory, ProjectFactory, UserFactory, trace_with_steps


def test_only_owners_manage(client, project, traces, annotator_a, outsider):
    client.force_login(annotator_a)
    assert client.get(f"/p/{project.slug}/members/").status_code == 403
    assert (
        client.post(f"/p/{project.slug}/members/add/", {"username": "x", "role": "owner"}).status_code == 403
    )
    client.force_login(outsider)
    assert client.get(f"/p/{project.slug}/members/").status_code == 404


def test_the_page_lists_members_workload_and_pairs(client, project, traces, owner):
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/members/").content.decode()
    assert "ana-annotator + ben-annotator" in html and "0 / 4" in html


def test_adding_an_annotator_gives_them_work(client, project, traces, owner):
    carl = UserFactory(username="carl")
    client.force_login(owner)
    response = client.post(
        f"/p/{project.slug}/members/add/", {"username": "carl", "role": "annotator"}, follow=True
    )
    assert "carl is now annotator" in response.content.decode()
    assert Assignment.objects.filter(project=project, annotator=carl).count() >= 2
    response = client.post(
        f"/p/{project.slug}/members/add/", {"username": "nobody", "role": "annotator"}, follow=True
    )
    assert "There is no user" in response.content.decode()


def test_removing_an_annotator_keeps_submitted_work(client, project, traces, owner, annotator_a):
    carl = UserFactory(username="carl")
    Membership.objects.create(project=project, user=carl, role="annotator")
    done = Assignment.objects.filter(project=project, annotator=annotator_a).first()
    Assignment.objects.filter(pk=done.pk).update(status="submitted")
    membership = Membership.objects.get(project=project, user=annotator_a, role="annotator")
    client.force_login(owner)
    client.post(f"/p/{project.slug}/members/{membership.pk}/remove/")
    assert list(Assignment.objects.filter(annotator=annotator_a).values_list("pk", flat=True)) == [done.pk]
    assert Assignment.objects.filter(project=project, annotator=carl).count() == 3


def test_the_last_owner_cannot_be_removed(client, project, owner):
    membership = Membership.objects.get(project=project, user=owner, role="owner")
    client.force_login(owner)
    response = client.post(f"/p/{project.slug}/members/{membership.pk}/remove/", follow=True)
    assert "at least one owner" in response.content.decode()
    assert Membership.objects.get(pk=membership.pk).active


def test_attaching_a_batch_assigns_its_traces(client, project, owner):
    batch = BatchFactory(name="fresh", imported_by=owner)
    for _ in range(3):
        trace_with_steps(2, batch=batch)
    client.force_login(owner)
    client.post(f"/p/{project.slug}/batches/attach/", {"batch": batch.pk})
    assert project.batches.filter(pk=batch.pk).exists()
    assert Assignment.objects.filter(project=project, trace__batch=batch).count() == 6


def test_another_projects_batch_is_neither_listed_nor_attachable(client, project, owner, mast):
    other_owner = UserFactory(username="olga")
    other = ProjectFactory(slug="other", taxonomy_version=mast)
    Membership.objects.create(project=other, user=other_owner, role="owner")
    secret = BatchFactory(name="their-secret-batch", imported_by=other_owner)
    trace_with_steps(2, batch=secret)
    other.batches.add(secret)
    mine = BatchFactory(name="my-own-batch", imported_by=owner)
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/members/").content.decode()
    assert "my-own-batch" in html and "their-secret-batch" not in html
    response = client.post(f"/p/{project.slug}/batches/attach/", {"batch": secret.pk})
    assert response.status_code == 404  # the same answer as for a batch that does not exist
    assert not project.batches.filter(pk=secret.pk).exists()
    assert client.post(f"/p/{project.slug}/batches/attach/", {"batch": 999999}).status_code == 404
    assert client.post(f"/p/{project.slug}/batches/attach/", {"batch": mine.pk}).status_code == 302


def test_staff_see_and_attach_any_batch(client, project, owner):
    owner.is_staff = True
    owner.save()
    batch = BatchFactory(name="anyones-batch")
    client.force_login(owner)
    assert "anyones-batch" in client.get(f"/p/{project.slug}/members/").content.decode()
    client.post(f"/p/{project.slug}/batches/attach/", {"batch": batch.pk})
    assert project.batches.filter(pk=batch.pk).exists()


def test_settings_are_validated(client, project, owner):
    client.force_login(owner)
    data = {"name": "Renamed", "overlap": "0", "reservation_minutes": "30", "guidelines": "# Hi"}
    response = client.post(f"/p/{project.slug}/settings/", data, follow=True)
    assert "Overlap must be" in response.content.decode()
    client.post(f"/p/{project.slug}/settings/", {**data, "overlap": "3"})
    project.refresh_from_db()
    assert (project.name, project.overlap, project.guidelines) == ("Renamed", 3, "# Hi")
