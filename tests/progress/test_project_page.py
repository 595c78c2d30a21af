"""The owner's project page shows progress per annotator and per batch (counts, median time, pace, finish),
the adjudication queue's size and the agreement report's state, in a bounded number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.models import Annotation, Assignment
from annotator.services.adjudication import do_check_trace
from annotator.services.assignment import do_assign
from tests.factories import BatchFactory, trace_with_steps
from tests.labels import submit

pytestmark = pytest.mark.django_db


def _traces(project, n: int, batch_name: str):
    batch = BatchFactory(name=batch_name)
    traces = [trace_with_steps(3, batch=batch) for _ in range(n)]
    project.batches.add(batch)
    return traces


@pytest.fixture
def busy(project, annotator_a, annotator_b):
    first = _traces(project, 3, "run-1")
    _traces(project, 2, "run-2")
    do_assign(project)
    submit(project, first[0], annotator_a, {"FM-1.1": [0]})
    submit(project, first[0], annotator_b, {"FM-1.2": [1]})  # they disagree: one item to adjudicate
    submit(project, first[1], annotator_a, {"FM-1.1": [0]})
    Annotation.objects.filter(assignment__annotator=annotator_a).update(time_spent_seconds=90)
    Annotation.objects.filter(assignment__annotator=annotator_b).update(time_spent_seconds=30)
    do_check_trace(project.pk, first[0].pk)
    return project


def _page(client, user, project):
    client.force_login(user)
    return client.get(f"/p/{project.slug}/")


def test_it_shows_each_annotators_progress_and_median_time(client, owner, busy):
    response = _page(client, owner, busy)
    assert response.status_code == 200
    progress = response.context["progress"]
    rows = {row.name: row for row in progress.by_annotator}
    ana, ben = rows["ana-annotator"], rows["ben-annotator"]
    assert (ana.assigned, ana.submitted, ana.drafts, ana.skipped) == (5, 2, 0, 0)
    assert (ben.assigned, ben.submitted) == (5, 1)
    assert ana.median_seconds == 90 and ben.median_seconds == 30
    assert ana.pace.per_day[-1] == 2  # both submitted today
    html = response.content.decode()
    assert 'id="progress-annotators"' in html and "1 min 30 s" in html


def test_it_shows_each_batchs_progress(client, owner, busy):
    rows = {row.name: row for row in _page(client, owner, busy).context["progress"].by_batch}
    assert (rows["run-1"].assigned, rows["run-1"].submitted) == (6, 3)
    assert (rows["run-2"].assigned, rows["run-2"].submitted) == (4, 0)


def test_it_shows_the_adjudication_queue_and_the_report_state(client, owner, busy):
    response = _page(client, owner, busy)
    progress = response.context["progress"]
    assert progress.adjudication_open == 1
    assert progress.agreement["state"] in {"current", "stale", "none", "pending"}
    html = response.content.decode()
    assert 'id="adjudication-size"' in html and 'id="agreement-state"' in html


def test_a_draft_and_a_skip_are_counted_apart(client, owner, busy, annotator_b):
    slots = Assignment.objects.filter(project=busy, annotator=annotator_b, status="pending")
    slots.filter(pk=slots.first().pk).update(status="in_progress")
    slots.filter(pk=slots.last().pk).update(status="skipped")
    rows = {row.name: row for row in _page(client, owner, busy).context["progress"].by_annotator}
    assert (rows["ben-annotator"].drafts, rows["ben-annotator"].skipped) == (1, 1)


def test_annotators_see_their_queue_not_everyones_progress(client, annotator_a, busy):
    response = _page(client, annotator_a, busy)
    assert response.context["progress"] is None
    assert 'id="progress-annotators"' not in response.content.decode()
    assert 'id="my-queue"' in response.content.decode()


def test_the_progress_costs_the_same_queries_for_more_traces(client, owner, busy, annotator_a):
    client.force_login(owner)
    client.get(f"/p/{busy.slug}/")
    with CaptureQueriesContext(connection) as few:
        client.get(f"/p/{busy.slug}/")
    more = _traces(busy, 6, "run-3")
    do_assign(busy)
    for trace in more[:3]:
        submit(busy, trace, annotator_a, {"FM-1.1": [0]})
    with CaptureQueriesContext(connection) as many:
        client.get(f"/p/{busy.slug}/")
    assert len(many) == len(few)
