"""Calibration rounds: open a round on a seeded sample, every chosen annotator labels every trace (blind), the
round's report is kept when it closes, and the trend compares rounds."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import AgreementReport, Assignment, CalibrationRound
from annotator.services.assignment import do_assign
from annotator.services.rounds import RoundError, TraceChoice, do_close_round, do_open_round, round_trend
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit


@pytest.fixture
def carol(project):
    return add_member(project, UserFactory(username="carol-annotator"), "annotator").user


@pytest.fixture
def traces(project):
    return [project_trace(project, metadata={"round": "R1" if i < 4 else "R2"}) for i in range(8)]


def test_a_seeded_sample_picks_the_same_traces_and_gives_every_annotator_every_trace(
    project, traces, annotator_a, annotator_b, carol
):
    choice = TraceChoice(sample=3, seed=7)
    names = [annotator_a.username, annotator_b.username, carol.username]
    first = do_open_round(project, name="Round 1", annotators=names, choice=choice)
    picked = set(first.traces.values_list("pk", flat=True))
    assert len(picked) == 3
    slots = Assignment.objects.filter(calibration_round=first)
    assert slots.count() == 9  # full overlap: 3 traces x 3 annotators, whatever the project's overlap (2)
    assert {(s.trace_id, s.annotator_id) for s in slots} == {
        (t, u.pk) for t in picked for u in (annotator_a, annotator_b, carol)
    }
    # The same seed over the same traces picks the same sample (a second project-free check via the service).
    first.delete()
    Assignment.objects.filter(calibration_round__isnull=True, trace_id__in=picked).delete()
    again = do_open_round(project, name="Round 1", annotators=names, choice=choice)
    assert set(again.traces.values_list("pk", flat=True)) == picked


def test_round_slots_never_move_when_the_project_rebalances(project, traces, annotator_a, annotator_b, carol):
    round_ = do_open_round(
        project,
        name="R",
        annotators=[annotator_a.username, annotator_b.username, carol.username],
        choice=TraceChoice(ids=tuple(t.pk for t in traces[:2])),
    )
    add_member(project, UserFactory(username="dan-late"), "annotator")
    do_assign(project)
    assert Assignment.objects.filter(calibration_round=round_).count() == 6


def test_it_refuses_what_cannot_be_a_round_and_creates_nothing(
    project, traces, annotator_a, annotator_b, outsider
):
    with pytest.raises(RoundError, match="at least two annotators"):
        do_open_round(project, name="R", annotators=[annotator_a.username], choice=TraceChoice(sample=2))
    with pytest.raises(RoundError, match="is not an annotator of this project"):
        do_open_round(
            project, name="R", annotators=[annotator_a.username, outsider.username], choice=TraceChoice()
        )
    with pytest.raises(RoundError, match="No trace matches"):
        do_open_round(
            project,
            name="R",
            annotators=[annotator_a.username, annotator_b.username],
            choice=TraceChoice(where=("round=R9",)),
        )
    assert not CalibrationRound.objects.exists()
    do_open_round(
        project,
        name="R",
        annotators=[annotator_a.username, annotator_b.username],
        choice=TraceChoice(where=("round=R1",)),
    )
    with pytest.raises(RoundError, match="already a round"):
        do_open_round(
            project, name="R", annotators=[annotator_a.username, annotator_b.username], choice=TraceChoice()
        )
    with pytest.raises(RoundError, match="already in another round"):
        do_open_round(
            project,
            name="R again",
            annotators=[annotator_a.username, annotator_b.username],
            choice=TraceChoice(),
        )


def _label_round(round_, users, disagree_on=()):
    for trace in round_.traces.order_by("pk"):
        for user in users:
            labels = {"FM-1.1": [1]}
            if trace.pk in disagree_on and user == users[-1]:
                labels = {"FM-2.1": [2]}
            submit(round_.project, trace, user, labels)


def test_closing_keeps_the_round_report_and_the_trend_compares_rounds(
    project, traces, annotator_a, annotator_b
):
    users = [annotator_a, annotator_b]
    names = [u.username for u in users]
    one = do_open_round(project, name="Round 1", annotators=names, choice=TraceChoice(where=("round=R1",)))
    r1 = list(one.traces.values_list("pk", flat=True))
    _label_round(one, users, disagree_on=r1[:2])
    one = do_close_round(one)
    assert one.status == "closed" and one.report.status == "succeeded"
    assert one.report.results["counts"]["items"] == 4
    two = do_open_round(project, name="Round 2", annotators=names, choice=TraceChoice(where=("round=R2",)))
    _label_round(two, users)
    two = do_close_round(two)
    with pytest.raises(RoundError, match="already closed"):
        do_close_round(two)

    trend = round_trend(project)
    assert [r.name for r in trend.rounds] == ["Round 1", "Round 2"]
    by_code = {code: rows for code, _, rows in trend.modes}
    assert by_code["FM-1.1"][0]["cohen_kappa"] == one.report.results["modes"][0]["cohen_kappa"]
    assert by_code["FM-1.1"][1]["observed_agreement"]["value"] == 1.0
    assert by_code["FM-1.1"][0]["observed_agreement"]["value"] == 0.5
    # A later submit outside the round does not change the kept report.
    submit(project, traces[0], annotator_a, {"FM-3.1": [1]})
    one.report.refresh_from_db()
    assert one.report.results["counts"]["items"] == 4


def test_the_page_opens_and_closes_rounds_for_owners_and_is_closed_to_annotators(
    client, project, traces, owner, annotator_a, annotator_b
):
    client.force_login(owner)
    assert "No rounds yet" in client.get(f"/p/{project.slug}/rounds/").content.decode()
    bad = client.post(f"/p/{project.slug}/rounds/open/", {"name": "R", "annotators": [annotator_a.username]})
    assert bad.status_code == 400 and "at least two annotators" in bad.content.decode()
    response = client.post(
        f"/p/{project.slug}/rounds/open/",
        {
            "name": "Round 1",
            "annotators": [annotator_a.username, annotator_b.username],
            "sample": "3",
            "seed": "1",
        },
    )
    assert response.status_code == 302
    round_ = CalibrationRound.objects.get()
    page = client.get(f"/p/{project.slug}/rounds/").content.decode()
    assert "Round 1" in page and "0 of 6" in page
    _label_round(round_, [annotator_a, annotator_b])
    client.post(f"/p/{project.slug}/rounds/{round_.pk}/close/")
    page = client.get(f"/p/{project.slug}/rounds/").content.decode()
    assert "6 of 6" in page and "Trend across closed rounds" in page and "FM-1.1" in page
    report = client.get(f"/p/{project.slug}/agreement/", {"round": round_.pk}).content.decode()
    assert "on 3 traces" in report
    client.force_login(annotator_a)
    assert client.get(f"/p/{project.slug}/rounds/").status_code == 403
    assert client.post(f"/p/{project.slug}/rounds/{round_.pk}/close/").status_code == 403


def test_the_trend_polls_while_a_closed_rounds_report_is_computed_and_shows_a_failure(
    client, project, traces, owner, annotator_a, annotator_b
):
    """With a real worker the report is still queued when the owner lands back on the page: the trend says
    so and polls (htmx) until the round's column can be shown; a failed report says why."""
    names = [annotator_a.username, annotator_b.username]
    round_ = do_open_round(project, name="Round 1", annotators=names, choice=TraceChoice(where=("round=R1",)))
    _label_round(round_, [annotator_a, annotator_b])
    round_ = do_close_round(round_)
    AgreementReport.objects.filter(pk=round_.report_id).update(status="queued")
    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/rounds/").content.decode()
    assert 'id="round-trend"' in page and 'hx-trigger="every 2s"' in page
    assert "Round 1: its report is" in page and ">queued</span>" in page
    partial = client.get(f"/p/{project.slug}/rounds/", headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith("<section") and 'id="round-trend"' in partial
    assert "every 2s" in partial and "<html" not in partial
    AgreementReport.objects.filter(pk=round_.report_id).update(status="succeeded")
    partial = client.get(f"/p/{project.slug}/rounds/", headers={"HX-Request": "true"}).content.decode()
    assert (
        "every 2s" not in partial
        and "its report is" not in partial
        and '<th class="num">Round 1</th>' in partial
    )
    AgreementReport.objects.filter(pk=round_.report_id).update(
        status="failed", error="The database went away"
    )
    page = client.get(f"/p/{project.slug}/rounds/").content.decode()
    assert "every 2s" not in page and ">failed</span>" in page and "The database went away" in page
    assert f'?round={round_.pk}">open the report to compute it again' in page


def test_the_api_opens_lists_and_closes_rounds(project, traces, owner, annotator_a, annotator_b, adjudicator):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(owner)
    url = f"/api/projects/{project.slug}/rounds/"
    bad = api.post(url, {"name": "R", "annotators": [annotator_a.username]}, format="json")
    assert bad.status_code == 400 and "annotators" in bad.json()["errors"][0]
    ids = [t.pk for t in traces[:2]]
    created = api.post(
        url,
        {"name": "R", "annotators": [annotator_a.username, annotator_b.username], "traces": ids},
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert (
        body["n_traces"] == 2 and body["slots"] == 4 and body["submitted"] == 0 and body["status"] == "open"
    )
    api.force_authenticate(adjudicator)
    assert [r["name"] for r in api.get(url).json()] == ["R"]
    assert api.post(f"{url}{body['id']}/close/").status_code == 403
    api.force_authenticate(owner)
    closed = api.post(f"{url}{body['id']}/close/")
    assert closed.status_code == 200 and closed.json()["status"] == "closed" and closed.json()["report_id"]
    assert api.post(f"{url}{body['id']}/close/").status_code == 400
    api.force_authenticate(annotator_a)
    assert api.get(url).status_code == 403


def test_the_rounds_command_opens_closes_and_prints_the_trend(project, traces, annotator_a, annotator_b):
    names = f"{annotator_a.username},{annotator_b.username}"
    out = io.StringIO()
    call_command(
        "rounds", project.slug, "open", "Round 1", "--annotators", names, "--where", "round=R1", stdout=out
    )
    assert "4 traces" in out.getvalue()
    with pytest.raises(CommandError, match="at least two annotators"):
        call_command(
            "rounds",
            project.slug,
            "open",
            "Round 2",
            "--annotators",
            annotator_a.username,
            stdout=io.StringIO(),
        )
    round_ = CalibrationRound.objects.get()
    _label_round(round_, [annotator_a, annotator_b])
    call_command("rounds", project.slug, "close", "Round 1", stdout=io.StringIO())
    listing = io.StringIO()
    call_command("rounds", project.slug, "list", stdout=listing)
    assert (
        "Round 1" in listing.getvalue() and "closed" in listing.getvalue() and "8 of 8" in listing.getvalue()
    )
    trend = io.StringIO()
    call_command("rounds", project.slug, "trend", "--json", stdout=trend)
    data = json.loads(trend.getvalue())
    assert data["rounds"] == ["Round 1"] and data["modes"]["FM-1.1"][0]["observed_agreement"] == 1.0


def test_the_api_serves_the_same_trend_as_the_command(
    client, project, traces, owner, annotator_a, annotator_b, outsider
):
    names = [annotator_a.username, annotator_b.username]
    round_ = do_open_round(project, name="Round 1", annotators=names, choice=TraceChoice(where=("round=R1",)))
    _label_round(round_, [annotator_a, annotator_b])
    do_close_round(round_)
    printed = io.StringIO()
    call_command("rounds", project.slug, "trend", "--json", stdout=printed)
    client.force_login(owner)
    response = client.get(f"/api/projects/{project.slug}/rounds/trend/")
    assert response.status_code == 200 and response.json() == json.loads(printed.getvalue())
    client.force_login(annotator_a)
    assert client.get(f"/api/projects/{project.slug}/rounds/trend/").status_code == 403
    client.force_login(outsider)
    assert client.get(f"/api/projects/{project.slug}/rounds/trend/").status_code == 404


def test_the_api_lists_rounds_in_a_constant_number_of_queries(
    project, traces, owner, annotator_a, annotator_b, django_assert_max_num_queries
):
    from rest_framework.test import APIClient

    names = [annotator_a.username, annotator_b.username]
    for n, trace in enumerate(traces[:6]):
        do_open_round(project, name=f"R{n}", annotators=names, choice=TraceChoice(ids=(trace.pk,)))
    api = APIClient()
    api.force_authenticate(owner)
    with django_assert_max_num_queries(9):
        body = api.get(f"/api/projects/{project.slug}/rounds/").json()
    assert [r["n_traces"] for r in body] == [1] * 6
