"""The discovery page, the API and the commands: one body everywhere, the cost before the start, and the
blind rule (an annotator still blind on a trace never sees an analysis, quote or candidate drawn from it)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.discovery.process import do_process_discovery
from annotator.discovery.service import do_send_to_proposals, do_start_discovery
from annotator.models import Assignment, CalibrationRound, DiscoveryRun, ModeProposal
from annotator.services.proposals import visible_proposals
from tests.discovery.conftest import RATERS
from tests.factories import add_member, api_token
from tests.labels import submit
from traces.models import Trace

CHANGES = """
- op: add
  code: STALE-CREDS
  name: Stale cached credentials
  definition: The agent reuses an expired cached token or credential instead of obtaining a fresh one.
  category: FC3
"""


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(user)}")
    return client


@pytest.fixture
def finished(owner_access, llm_config, synthetic) -> DiscoveryRun:
    run = do_start_discovery(
        owner_access, scope="batch:synthetic", raters=RATERS, sample=60, gate_sample=30, enqueue=False
    )
    return do_process_discovery(run.pk)


def test_gate_modes_json_equals_the_api_body(project, owner, llm_config, synthetic, tmp_path):
    changes = tmp_path / "changes.yaml"
    changes.write_text(CHANGES)
    out = StringIO()
    call_command(
        "gate_modes",
        project.slug,
        str(changes),
        "--raters",
        ",".join(RATERS),
        "--scope",
        "batch:synthetic",
        "--sample",
        "20",
        "--json",
        stdout=out,
    )
    printed = json.loads(out.getvalue())
    assert printed["candidates"][0]["code"] == "STALE-CREDS"
    answer = _api(owner).get(f"/api/projects/{project.slug}/discovery/{printed['id']}/")
    assert answer.status_code == 200
    assert json.loads(json.dumps(answer.json())) == printed


def test_discover_modes_dry_run_prints_the_cost_and_calls_nothing(project, llm_config, synthetic, standin):
    out = StringIO()
    call_command(
        "discover_modes",
        project.slug,
        "--scope",
        "batch:synthetic",
        "--raters",
        ",".join(RATERS),
        "--sample",
        "60",
        "--gate-sample",
        "30",
        "--dry-run",
        "--json",
        stdout=out,
    )
    estimate = json.loads(out.getvalue())
    assert estimate["analysis_requests"] == 60 and estimate["gate_requests"] == 90
    assert estimate["prompt_tokens"] > 0 and standin.requests == 0
    assert not DiscoveryRun.objects.exists()


def test_the_api_starts_a_run_and_the_page_shows_the_estimate_first(project, owner, llm_config, synthetic):
    body = {"scope": "batch:synthetic", "raters": RATERS, "sample": 60, "gate_sample": 30}
    answer = _api(owner).post(f"/api/projects/{project.slug}/discovery/estimate/", body, format="json")
    assert answer.status_code == 200 and answer.json()["requests"] >= 150
    web = Client()
    web.force_login(owner)
    url = reverse("discovery-start", args=[project.slug])
    form = {"scope": "batch:synthetic", "raters": ",".join(RATERS), "sample": 60, "gate_sample": 30}
    page = web.post(url, form)
    assert page.status_code == 200 and b"Before it starts" in page.content
    assert not DiscoveryRun.objects.exists()
    started = web.post(url, {**form, "confirm": "1"})
    run = DiscoveryRun.objects.get()
    assert started.status_code == 302 and started["Location"].endswith(f"/discovery/{run.pk}/")
    answer = _api(owner).post(f"/api/projects/{project.slug}/discovery/", body, format="json")
    assert answer.status_code == 201 and answer.json()["status"] == "queued"


def test_an_adjudicator_reads_the_results_but_cannot_act(project, adjudicator, finished):
    web = Client()
    web.force_login(adjudicator)
    page = web.get(reverse("discovery-run", args=[project.slug, finished.pk]))
    assert page.status_code == 200 and b"PAGINATION" in page.content and b"Methods" in page.content
    assert web.post(reverse("discovery-send", args=[project.slug, finished.pk])).status_code == 403


def test_a_blind_annotator_never_sees_what_a_run_drew_from_their_trace(project, owner, annotator_a, finished):
    add_member(project, annotator_a, "owner")  # an owner who is also an annotator: blind beats every role
    trace_id = finished.candidates[0]["examples"][0]["trace"]
    Assignment.objects.create(project=project, trace_id=trace_id, annotator=annotator_a)
    do_send_to_proposals(finished, actor=owner)
    web = Client()
    web.force_login(annotator_a)
    page = web.get(reverse("discovery-run", args=[project.slug, finished.pk]))
    assert page.status_code == 403 and b"PAGINATION" not in page.content
    assert _api(annotator_a).get(f"/api/projects/{project.slug}/discovery/{finished.pk}/").status_code == 403
    listed = _api(annotator_a).get(f"/api/projects/{project.slug}/discovery/").json()
    assert listed[0]["candidates"] is None
    assert not visible_proposals(project, annotator_a).filter(discovery_run=finished).exists()
    proposals = web.get(reverse("proposals", args=[project.slug]))
    assert b"discovered" not in proposals.content
    # Once they have submitted, the run opens to them.
    submit(project, Trace.objects.get(pk=trace_id), annotator_a, {"FM-1.1": [0]})
    assert web.get(reverse("discovery-run", args=[project.slug, finished.pk])).status_code == 200
    assert visible_proposals(project, annotator_a).filter(discovery_run=finished).count() == 3
    assert ModeProposal.objects.filter(discovery_run=finished).count() == 3


def test_the_embedding_model_is_set_through_the_settings_api_and_kept_by_other_changes(
    project, owner, llm_config
):
    client = _api(owner)
    url = f"/api/projects/{project.slug}/llm-settings/"
    assert (
        client.patch(url, {"embeddings_model": "embedder"}, format="json").json()["embeddings_model"]
        == "embedder"
    )
    assert client.patch(url, {"temperature": 0.2}, format="json").json()["embeddings_model"] == "embedder"
    llm_config.refresh_from_db()
    assert llm_config.embeddings_model == "embedder"


def test_an_owner_opens_a_calibration_round_on_the_candidates_traces(
    project, owner, annotator_a, annotator_b, finished
):
    web = Client()
    web.force_login(owner)
    url = reverse("discovery-round", args=[project.slug, finished.pk])
    answer = web.post(url, {"annotators": f"{annotator_a.username}, {annotator_b.username}"})
    assert answer.status_code == 302
    round_ = CalibrationRound.objects.get(project=project)
    examples = {e["trace"] for c in finished.candidates for e in c["examples"]}
    chosen = set(round_.traces.values_list("pk", flat=True))
    assert examples <= chosen and chosen & set(finished.held_ids)
    assert round_.selection["run"] == finished.pk
