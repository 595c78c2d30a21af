"""Triage never shows a blind annotator anything of the model's: only the order of their own queue changes.
No score, reason, confidence, model name or model label on the project page (the queue), the annotate page,
or the API's assignment endpoints; the triage page and API refuse annotators and an owner still blind."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import QueueOrder
from annotator.services.assignment import do_assign
from annotator.triage import signals
from annotator.triage.service import do_set_queue_order, triage_ranking
from tests.factories import add_member, trace_with_steps
from tests.triage.helpers import REASON, model_says, run_model

SUMMARY = "TRIAGE-MODEL-SUMMARY"


@pytest.fixture
def triaged(project, batch, llm_config, chat_server, clock, django_capture_on_commit_callbacks):
    traces = [trace_with_steps(4, batch=batch) for _ in range(3)]
    do_assign(project)
    replies = [model_says({"FM-2.2"}, confidence, SUMMARY) for confidence in (0.9, 0.17, 0.53)]
    run_model(project, chat_server, clock, replies)
    with django_capture_on_commit_callbacks(execute=True):
        do_set_queue_order(project, QueueOrder.LLM_UNCERTAIN)
    return traces


def model_marks(project) -> list[str]:
    """Strings that would give the model's answers away: its reason and summary, its confidences, and the
    triage scores and reasons. (The model's name is listed among the members, as before triage: a name is
    not a label. "Confidence" is also the annotator's own field, so the numbers are checked instead.)"""
    marks = [REASON, SUMMARY, "0.17", "0.53", "0.83", "0.47", "gave confidence"]
    marks += [score.reason for score in triage_ranking(project, signals.UNCERTAIN)]
    return marks


def seen_by_annotator(client, project) -> str:
    api = f"/api/projects/{project.slug}"
    pages = [client.get(reverse("project-detail", args=[project.slug])).content.decode()]
    claimed = client.post(f"{api}/assignments/next/")
    pages.append(claimed.content.decode())
    slot = claimed.json()["id"]
    pages += [
        client.get(reverse("annotate", args=[project.slug, slot])).content.decode(),
        client.get(f"{api}/assignments/").content.decode(),
        client.get(f"{api}/assignments/{slot}/annotation/").content.decode(),
        client.get(f"{api}/assignments/{slot}/llm-labels/").content.decode(),
        client.get(reverse("project-detail", args=[project.slug])).content.decode(),
    ]
    return "\n".join(pages)


def test_a_blind_annotator_gets_the_order_and_nothing_else(client, project, triaged, annotator_a):
    client.force_login(annotator_a)
    seen = seen_by_annotator(client, project)
    assert triaged[1].external_id in seen  # the first-ranked trace was handed out ...
    leaked = [mark for mark in model_marks(project) if mark in seen]
    assert leaked == []  # ... and nothing says why
    assert client.get(reverse("project-triage", args=[project.slug])).status_code == 403
    assert client.get(f"/api/projects/{project.slug}/triage/").status_code == 403


def test_an_owner_still_annotating_is_refused_the_triage_scores(client, project, triaged, owner):
    add_member(project, owner, "annotator")
    do_assign(project)
    client.force_login(owner)
    assert client.get(reverse("project-triage", args=[project.slug])).status_code == 403
    assert client.get(f"/api/projects/{project.slug}/triage/").status_code == 403
    # Switching the order reveals nothing, so the owner may still do it.
    response = client.post(reverse("project-triage-order", args=[project.slug]), {"queue_order": "trace"})
    assert response.status_code == 302


def test_the_owner_sees_scores_and_reasons(client, project, triaged, owner):
    client.force_login(owner)
    page = client.get(reverse("project-triage", args=[project.slug])).content.decode()
    assert "confidence 0.17" in page and "0.83" in page
    body = client.get(f"/api/projects/{project.slug}/triage/?signal=uncertain").json()
    assert [row["trace_id"] for row in body["traces"]] == [triaged[1].pk, triaged[2].pk, triaged[0].pk]
    assert body["traces"][0]["score"] == pytest.approx(0.83)
