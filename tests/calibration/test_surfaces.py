"""The Calibration page, the API and the CLI: who configures, who sees whose scores, errors where one looks."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotator.models import Assignment, CalibrationItem
from annotator.services.assignment import do_claim_next
from annotator.services.calibration import do_configure
from tests.factories import UserFactory, add_member, api_token
from tests.labels import submit


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(user)}")
    return client


@pytest.fixture
def answered(project, calibrated, carl):
    """Carl submitted one calibration item ("no failure"); Dora, another newcomer, submitted one too."""
    do_configure(project, qualification_size=1)
    dora = UserFactory(username="dora-dev")
    add_member(project, dora, "annotator")
    for user in (carl, dora):
        slot = do_claim_next(project, user)
        submit(project, slot.trace, user, {})
    return dora


def test_an_owner_configures_calibration_on_the_page_and_errors_show_there(
    client, project, gold_traces, owner
):
    client.force_login(owner)
    url = f"/p/{project.slug}/calibration/"
    assert client.get(url).status_code == 200
    response = client.post(url + "settings/", {"rate": "0.9", "qualification_size": "2", "min_kappa": ""})
    assert response.status_code == 422 and "mix-in rate must be from 0 to 0.5" in response.content.decode()
    assert (
        client.post(
            url + "settings/", {"rate": "0.1", "qualification_size": "2", "min_kappa": "0.6"}
        ).status_code
        == 302
    )
    project.refresh_from_db()
    assert (project.calibration_rate, project.qualification_size, project.qualification_min_kappa) == (
        0.1,
        2,
        0.6,
    )
    huge = client.post(url + "items/", {"trace_ids": str(2**70), "action": "add"})
    assert huge.status_code == 422 and "is not a trace id" in huge.content.decode()
    refused = client.post(url + "items/", {"trace_ids": "999999", "action": "add"})
    assert refused.status_code == 422 and "Not a gold trace" in refused.content.decode()
    assert client.post(url + "items/", {"batch": "gold-batch", "action": "add"}).status_code == 302
    assert CalibrationItem.objects.filter(project=project).count() == 3
    ids = f"{gold_traces[0].pk}"
    assert client.post(url + "items/", {"trace_ids": ids, "action": "remove"}).status_code == 302
    assert CalibrationItem.objects.filter(project=project).count() == 2


def test_an_annotator_sees_only_their_own_scores(client, project, answered, carl, owner, adjudicator):
    client.force_login(carl)
    html = client.get(f"/p/{project.slug}/calibration/").content.decode()
    assert "carl-calibrating" in html and "dora-dev" not in html and "Save settings" not in html
    body = _api(carl).get(f"/api/projects/{project.slug}/calibration/").json()
    assert [s["annotator"] for s in body["scores"]] == ["carl-calibrating"]
    assert body["items"] == []  # which traces are gold items is the owners' to know
    assert (
        _api(carl)
        .patch(f"/api/projects/{project.slug}/calibration/", {"rate": 0.2}, format="json")
        .status_code
        == 403
    )
    everyone = _api(adjudicator).get(f"/api/projects/{project.slug}/calibration/").json()
    assert [s["annotator"] for s in everyone["scores"]] == ["carl-calibrating", "dora-dev"]
    owner_view = _api(owner).get(f"/api/projects/{project.slug}/calibration/?annotator=dora-dev").json()
    assert [s["annotator"] for s in owner_view["scores"]] == ["dora-dev"] and len(owner_view["items"]) == 3


def test_a_viewer_reads_scores_but_a_blind_owner_waits(client, project, answered, owner):
    viewer = UserFactory(username="vera-viewer")
    add_member(project, viewer, "viewer")
    client.force_login(viewer)
    html = client.get(f"/p/{project.slug}/calibration/").content.decode()
    assert "dora-dev" in html and "Save settings" not in html
    # The owner also annotates, and has a trace still to do: scores wait (they would tell gold labels).
    add_member(project, owner, "annotator")
    Assignment.objects.create(project=project, trace=project.batches.first().traces.first(), annotator=owner)
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/calibration/").content.decode()
    assert 'id="scores-withheld"' in html and "dora-dev" not in html
    assert _api(owner).get(f"/api/projects/{project.slug}/calibration/").json()["scores"] == []


def test_the_gold_api_is_blind_until_submitted(project, calibrated, carl):
    do_configure(project, qualification_size=1)
    slot = do_claim_next(project, carl)
    api = _api(carl)
    refused = api.get(f"/api/projects/{project.slug}/assignments/{slot.pk}/gold/")
    assert refused.status_code == 403 and "blind" in refused.json()["detail"]
    submit(project, slot.trace, carl, {"FM-1.1": [1]})
    body = api.get(f"/api/projects/{project.slug}/assignments/{slot.pk}/gold/").json()
    assert {row["code"] for row in body["rows"]} >= {"FM-1.1"} and body["modes"] == 14


def test_the_cli_configures_and_prints_scores(project, answered):
    out, err = StringIO(), StringIO()
    call_command("calibration", project.slug, "--rate", "0.2", "--min-kappa", "0.5", stdout=out, stderr=err)
    text = out.getvalue()
    assert "rate 0.2" in text and "threshold 0.50" in text and "carl-calibrating" in text and "FM-1.1" in text
    assert "Wilson score interval" in text
    out = StringIO()
    call_command("calibration", project.slug, "--annotator", "dora-dev", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert [s["annotator"] for s in data["scores"]] == ["dora-dev"] and data["min_kappa"] == 0.5
    assert data["scores"][0]["overall"]["n"] == 14
    with pytest.raises(CommandError, match="Not a gold trace"):
        call_command(
            "calibration", project.slug, "--add-items", "999999", stdout=StringIO(), stderr=StringIO()
        )
    with pytest.raises(CommandError, match="mix-in rate"):
        call_command("calibration", project.slug, "--rate", "2", stdout=StringIO())
