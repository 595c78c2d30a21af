"""`/api/projects/<slug>/live/`: an owner reads and changes which live traces get annotators, by token."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotator.live import otlp
from annotator.live.service import do_accept_spans
from annotator.models import Assignment, LiveSettings, LiveTrace
from annotator.services.annotations import do_save_draft
from annotator.services.api_tokens import do_issue_ingest_token
from annotator.services.payload import AnnotationPayload
from tests.live import agent_run
from traces.models import Trace


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _url(project) -> str:
    return f"/api/projects/{project.slug}/live/"


def _send(project, spans) -> None:
    do_accept_spans(project, otlp.parse_traces(agent_run.protobuf_body(spans), otlp.PROTOBUF))


def test_an_owner_reads_the_settings_endpoints_and_counts(project, owner, annotator_a):
    run = agent_run.record_run()
    root = next(s for s in run if s.parent is None)
    children = [s for s in run if s.parent is not None]
    _send(project, [root, *children[:2]])
    slot = Assignment.objects.get(project=project, trace=Trace.objects.get(), annotator=annotator_a)
    do_save_draft(slot, AnnotationPayload(note="wrong tool"), actor=annotator_a, base_version=0)
    _send(project, children[2:])  # late: held

    body = _client(owner).get(_url(project)).json()

    assert body["assign"] == "all" and body["sample_rate"] == 1.0
    assert body["traces_endpoint"] == f"http://testserver/api/projects/{project.slug}/otlp/v1/traces"
    assert body["logs_endpoint"] == f"http://testserver/api/projects/{project.slug}/otlp/v1/logs"
    assert body["counts"] == {
        "pending_spans": 0,
        "pending_traces": 0,
        "traces_today": 1,
        "held_traces": 1,
        "held_spans": 1,
    }


def test_an_owner_changes_the_assignment_and_new_live_traces_follow_it(project, owner):
    response = _client(owner).patch(_url(project), {"assign": "none"}, format="json")

    assert response.status_code == 200
    assert response.json()["assign"] == "none"
    _send(project, agent_run.record_run())
    assert LiveTrace.objects.get().unassigned
    assert not Assignment.objects.filter(trace=Trace.objects.get()).exists()


def test_a_patch_keeps_what_it_does_not_name(project, owner):
    client = _client(owner)
    client.patch(_url(project), {"assign": "sample", "sample_rate": 0.25}, format="json")

    body = client.patch(_url(project), {"sample_rate": 0.5}, format="json").json()

    assert (body["assign"], body["sample_rate"]) == ("sample", 0.5)
    assert LiveSettings.objects.get(project=project).sample_rate == 0.5


@pytest.mark.parametrize(
    ("change", "field"),
    [({"assign": "everything"}, "assign"), ({"sample_rate": 1.5}, "sample_rate")],
)
def test_a_wrong_choice_or_rate_is_400_and_says_which(project, owner, change, field):
    response = _client(owner).patch(_url(project), change, format="json")

    assert response.status_code == 400
    assert field in response.content.decode()
    assert not LiveSettings.objects.filter(project=project).exists()


def test_an_ingest_token_is_refused(project, owner):
    key = do_issue_ingest_token(project, owner)[1]
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")

    assert client.get(_url(project)).status_code == 403
    assert client.patch(_url(project), {"assign": "none"}, format="json").status_code == 403
    assert not LiveSettings.objects.filter(project=project).exists()


def test_members_who_are_not_owners_are_refused(project, annotator_a, outsider):
    assert _client(annotator_a).patch(_url(project), {"assign": "none"}, format="json").status_code == 403
    assert _client(outsider).get(_url(project)).status_code == 404
    assert not LiveSettings.objects.filter(project=project).exists()
