"""The home page shows an owner the state of each of their projects; an annotator's "My assignments" lists
their own slots by status, paginated, and any of them opens."""

from __future__ import annotations

import pytest

from annotator.models import Assignment
from annotator.services.assignment import do_assign
from annotator.views.queue import MINE_PER_PAGE
from tests.factories import BatchFactory, trace_with_steps
from tests.labels import submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def assigned(project):
    batch = BatchFactory(name="run-1")
    traces = [trace_with_steps(2, batch=batch) for _ in range(4)]
    project.batches.add(batch)
    do_assign(project)
    return project, traces


def test_the_owners_home_page_shows_how_far_each_project_is(client, owner, annotator_a, assigned):
    project, traces = assigned
    submit(project, traces[0], annotator_a, {"FM-1.1": [0]})
    client.force_login(owner)
    html = client.get("/").content.decode()
    assert "no traces assigned to you" not in html
    assert "1 submitted" in html and "7 to do" in html
    assert "12%" in html  # 1 of 8 slots


def test_an_owner_of_an_empty_project_is_told_what_to_do_next(client, owner, project):
    client.force_login(owner)
    html = client.get("/").content.decode()
    assert "no traces assigned yet" in html and f"/p/{project.slug}/import/" in html


def test_an_annotators_home_page_shows_their_own_progress(client, annotator_a, assigned):
    client.force_login(annotator_a)
    html = client.get("/").content.decode()
    assert "Mine: 0 / 4" in html
    assert "to adjudicate" not in html


def test_my_assignments_lists_and_opens_any_trace_to_do(client, annotator_a, assigned):
    project, _ = assigned
    client.force_login(annotator_a)
    response = client.get(f"/p/{project.slug}/mine/")
    assert response.status_code == 200
    mine = Assignment.objects.filter(project=project, annotator=annotator_a)
    last = mine.order_by("-pk").first()
    assert f"/p/{project.slug}/a/{last.pk}/" in response.content.decode()
    assert client.get(f"/p/{project.slug}/a/{last.pk}/").status_code == 200  # not only "Start next"


def test_my_assignments_shows_drafts_and_submitted_in_their_tabs(client, annotator_a, assigned):
    project, traces = assigned
    submit(project, traces[0], annotator_a, {"FM-1.1": [0]})
    draft = Assignment.objects.filter(project=project, annotator=annotator_a, trace=traces[1]).get()
    Assignment.objects.filter(pk=draft.pk).update(status="in_progress")
    client.force_login(annotator_a)
    tabs = dict((key, n) for key, _, n in client.get(f"/p/{project.slug}/mine/").context["tabs"])
    assert tabs == {"todo": 2, "drafts": 1, "submitted": 1, "skipped": 0}
    drafts = client.get(f"/p/{project.slug}/mine/?show=drafts").content.decode()
    assert f"/p/{project.slug}/a/{draft.pk}/" in drafts
    submitted = client.get(f"/p/{project.slug}/mine/?show=submitted").content.decode()
    assert traces[0].external_id in submitted and "editable" in submitted


def test_my_assignments_never_lists_another_annotators_slots(client, annotator_a, annotator_b, assigned):
    project, _ = assigned
    client.force_login(annotator_a)
    html = client.get(f"/p/{project.slug}/mine/").content.decode()
    for other in Assignment.objects.filter(project=project, annotator=annotator_b):
        assert f"/a/{other.pk}/" not in html


def test_my_assignments_is_paginated(client, annotator_a, project):
    batch = BatchFactory(name="big")
    for _ in range(MINE_PER_PAGE + 3):
        trace_with_steps(1, batch=batch)
    project.batches.add(batch)
    do_assign(project)
    client.force_login(annotator_a)
    first = client.get(f"/p/{project.slug}/mine/")
    assert len(first.context["page"].object_list) == MINE_PER_PAGE
    second = client.get(f"/p/{project.slug}/mine/?show=todo&page=2")
    assert len(second.context["page"].object_list) == 3
    assert "?show=todo&amp;page=2" in first.content.decode()
