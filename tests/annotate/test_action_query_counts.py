"""Claim, save a draft and submit cost a fixed number of queries, through the API and the annotation page:
not one more per label chosen, per trace in the project or per annotator in it. bench/bench_annotators.py
measures what they cost with 50 annotators at once; these constants keep them from growing back.

The counts are taken inside the test's transaction, so each verb's own transaction shows as a SAVEPOINT
and its RELEASE (BEGIN and COMMIT in production), and the work after commit (the adjudication check and the
report refresh, enqueued) is not in them.
"""

from __future__ import annotations

import json

import pytest

from annotator.models import Annotation, Assignment
from annotator.services.assignment import do_assign
from tests.factories import BatchFactory, UserFactory, add_member, api_token, trace_with_steps

# API: token, access (project and roles in one), then the verb.
API_CLAIM = 4  # + the claim as one UPDATE ... RETURNING (no calibration set: no calibration look-up, no
#               transaction), the claimed slot's trace and batch name
API_DRAFT = 11  # + the modes (all labels at once), lock (the assignment's access check too, with the
#                 annotation, the lock rule's facts and the trace's step count, so evidence steps need no
#                 query), taxonomy check, annotation insert, labels insert, assignment update, history;
#                 savepoint and release
API_SUBMIT = 13  # as a draft on an existing annotation (+ labels before, labels delete); no re-check open,
#                  so no re-check update; the answer's lock rule comes from the lock
# The page: session and user instead of the token; submit claims the next trace too.
PAGE_CLAIM = 5
PAGE_DRAFT = 13
PAGE_SUBMIT = 18

MODES = ["FM-1.1", "FM-1.2", "FM-1.3", "FM-1.4", "FM-1.5", "FM-2.1", "FM-2.2", "FM-2.3", "FM-2.4", "FM-2.5"]


def world(project, n_traces: int, n_annotators: int = 0):
    batch = BatchFactory(name=f"run-{n_traces}")
    project.batches.add(batch)
    for _ in range(n_traces):
        trace_with_steps(12, batch=batch)
    for i in range(n_annotators):
        add_member(project, UserFactory(username=f"extra-{i}"), "annotator")
    do_assign(project)


def labels_json(n: int) -> list[dict]:
    return [{"mode": code, "evidence": [{"step": i}]} for i, code in enumerate(MODES[:n])]


def labels_form(n: int, version: int) -> dict:
    form: dict = {"version": str(version), "labels": MODES[:n], "confidence": "4"}
    for i, code in enumerate(MODES[:n]):
        form[f"evidence:{code}"] = json.dumps({"step": i})
    return form


@pytest.mark.parametrize(("n_traces", "n_labels", "n_annotators"), [(3, 1, 0), (40, 10, 8)])
def test_api_claim_draft_and_submit_cost_a_fixed_number_of_queries(
    client, project, annotator_a, django_assert_num_queries, n_traces, n_labels, n_annotators
):
    world(project, n_traces, n_annotators)
    headers = {"HTTP_AUTHORIZATION": f"Token {api_token(annotator_a)}"}
    api = f"/api/projects/{project.slug}/assignments"
    client.get(f"{api}/", **headers)  # the token's first use stamps last_used_at (once per 5 minutes)
    for _ in range(2):  # the second round: claims skip the submitted slot
        with django_assert_num_queries(API_CLAIM):
            slot = client.post(f"{api}/next/", **headers).json()["id"]
        with django_assert_num_queries(API_DRAFT):
            draft = client.put(
                f"{api}/{slot}/annotation/",
                {"version": 0, "labels": labels_json(n_labels)},
                content_type="application/json",
                **headers,
            )
        assert draft.status_code == 200 and len(draft.json()["labels"]) == n_labels
        with django_assert_num_queries(API_SUBMIT):
            submitted = client.post(
                f"{api}/{slot}/submit/",
                {"version": 1, "labels": labels_json(n_labels)},
                content_type="application/json",
                **headers,
            )
        assert submitted.status_code == 200 and submitted.json()["status"] == "submitted"
        assert submitted.json()["editable"] is True
        assert Annotation.objects.get(assignment_id=slot).labels.count() == n_labels


@pytest.mark.parametrize(("n_traces", "n_labels", "n_annotators"), [(3, 1, 0), (40, 10, 8)])
def test_page_claim_draft_and_submit_cost_a_fixed_number_of_queries(
    client, project, annotator_a, django_assert_num_queries, n_traces, n_labels, n_annotators
):
    world(project, n_traces, n_annotators)
    client.force_login(annotator_a)
    htmx = {"HTTP_HX_REQUEST": "true"}
    with django_assert_num_queries(PAGE_CLAIM):
        opened = client.post(f"/p/{project.slug}/next/")
    slot = int(opened.url.rstrip("/").rsplit("/", 1)[1])
    for _ in range(2):  # the second round opens the trace submit claimed
        base = f"/p/{project.slug}/a/{slot}"
        with django_assert_num_queries(PAGE_DRAFT):
            saved = client.post(f"{base}/save/", labels_form(n_labels, 0), **htmx)
        assert saved.status_code == 200, saved.content
        with django_assert_num_queries(PAGE_SUBMIT):
            submitted = client.post(f"{base}/submit/", labels_form(n_labels, 1), **htmx)
        assert submitted.status_code == 204, submitted.content
        assert Assignment.objects.get(pk=slot).status == Assignment.Status.SUBMITTED
        slot = int(submitted["HX-Redirect"].rstrip("/").rsplit("/", 1)[1])
