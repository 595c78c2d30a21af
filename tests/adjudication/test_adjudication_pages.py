"""Adjudication pages and API: access (outsiders 404, annotators 403), the queue, deciding, conflicts."""

from __future__ import annotations

import pytest

from annotator.models import AdjudicationItem, GoldLabel
from annotator.services.adjudication import do_check_trace, do_claim_next
from tests.factories import UserFactory, add_member, api_token
from tests.labels import project_trace, submit

Status = AdjudicationItem.Status


@pytest.fixture
def disputed(project, annotator_a, annotator_b):
    """An open item: A chose FM-1.1 (step 2) and FM-3.1; B chose FM-1.1 (step 3) only."""
    trace = project_trace(project)
    submit(project, trace, annotator_a, {"FM-1.1": [2], "FM-3.1": [4]})
    submit(project, trace, annotator_b, {"FM-1.1": [3]})
    return do_check_trace(project.pk, trace.pk)


def pages(project, item):
    base = f"/p/{project.slug}/adjudication/"
    return {
        "get": [base, f"{base}history/", f"{base}{item.pk}/", f"{base}{item.pk}/steps/"],
        "post": [
            f"{base}next/",
            f"{base}{item.pk}/",
            f"{base}{item.pk}/claim/",
            f"{base}{item.pk}/release/",
            f"{base}{item.pk}/reopen/",
        ],
    }


def api(project, item):
    base = f"/api/projects/{project.slug}/adjudication/"
    return {
        "get": [base, f"{base}{item.pk}/"],
        "post": [f"{base}claim/", f"{base}{item.pk}/decide/", f"{base}{item.pk}/reopen/"],
    }


@pytest.mark.parametrize("persona", ["outsider", "annotator_a"])
def test_outsiders_get_404_and_annotators_403_everywhere(client, request, project, disputed, persona):
    user = request.getfixturevalue(persona)
    expected = 404 if persona == "outsider" else 403
    client.force_login(user)
    for method, urls in pages(project, disputed).items():
        for url in urls:
            assert getattr(client, method)(url).status_code == expected, (method, url)
    for method, urls in api(project, disputed).items():
        for url in urls:
            assert getattr(client, method)(url, content_type="application/json").status_code == expected, (
                method,
                url,
            )
    disputed.refresh_from_db()
    assert disputed.status == Status.OPEN and disputed.claimed_by is None


def test_the_queue_lists_open_items_with_progress(
    client, project, disputed, adjudicator, django_assert_max_num_queries
):
    for _ in range(3):
        trace = project_trace(project)
        submit(project, trace, project.memberships.get(user__username="ana-annotator").user, {"FM-2.1": []})
        submit(project, trace, project.memberships.get(user__username="ben-annotator").user, {})
        do_check_trace(project.pk, trace.pk)
    client.force_login(adjudicator)
    with django_assert_max_num_queries(8):
        page = client.get(f"/p/{project.slug}/adjudication/")
    html = page.content.decode()
    assert page.status_code == 200
    assert disputed.trace.external_id in html and "FM-3.1" in html
    assert "Start next disagreement" in html
    assert html.index(disputed.trace.external_id) < html.index("FM-2.1")  # the fatal dispute comes first


def test_empty_states(client, project, adjudicator):
    client.force_login(adjudicator)
    assert b"No disagreements waiting" in client.get(f"/p/{project.slug}/adjudication/").content
    assert (
        b"No automatic agreements yet" in client.get(f"/p/{project.slug}/adjudication/?status=agreed").content
    )
    assert b"No decisions yet" in client.get(f"/p/{project.slug}/adjudication/history/").content


def test_start_next_claims_and_the_page_shows_both_annotations(client, project, disputed, adjudicator):
    client.force_login(adjudicator)
    response = client.post(f"/p/{project.slug}/adjudication/next/")
    assert (
        response.status_code == 302
        and response["Location"] == f"/p/{project.slug}/adjudication/{disputed.pk}/"
    )
    page = client.get(response["Location"]).content.decode()
    assert "Claimed by you" in page
    assert "ana-annotator" in page and "ben-annotator" in page
    assert 'name="choice-FM-3.1"' in page and 'name="choice-FM-1.1"' not in page  # agreed modes carry over
    assert "FM-1.1 · A" in page and "FM-1.1 · B" in page  # evidence marked in the step viewer
    steps = client.get(f"/p/{project.slug}/adjudication/{disputed.pk}/steps/?step=4", HTTP_HX_REQUEST="true")
    assert steps.status_code == 200 and b"FM-3.1 \xc2\xb7 A" in steps.content


def test_deciding_through_the_page(client, project, disputed, adjudicator):
    client.force_login(adjudicator)
    disputed = do_claim_next(project, adjudicator)
    form = {"version": disputed.version, "choice-FM-3.1": "b", "reason-FM-3.1": "no_evidence", "then": "stay"}
    response = client.post(f"/p/{project.slug}/adjudication/{disputed.pk}/", form)
    assert response.status_code == 302
    assert list(GoldLabel.objects.filter(item=disputed).values_list("mode__code", "source")) == [
        ("FM-1.1", "agreed")
    ]
    page = client.get(response["Location"]).content.decode()
    assert "Decided by" in page and "Reopen" in page
    history = client.get(f"/p/{project.slug}/adjudication/history/").content.decode()
    assert disputed.trace.external_id in history and "FM-3.1" in history


def test_an_incomplete_decision_is_shown_with_what_was_typed(client, project, disputed, adjudicator):
    client.force_login(adjudicator)
    form = {
        "version": disputed.version,
        "choice-FM-3.1": "present",
        "steps-FM-3.1": "4, 99",
        "reason-FM-3.1": "evidence",
    }
    response = client.post(f"/p/{project.slug}/adjudication/{disputed.pk}/", form)
    assert response.status_code == 422
    html = response.content.decode()
    assert "step 99 is not in this trace" in html
    assert 'value="4, 99"' in html and 'value="present" checked' in html


def test_a_second_adjudicator_saving_a_stale_version_is_told_and_keeps_their_input(
    client, project, disputed, adjudicator
):
    second = UserFactory(username="sam-second")
    add_member(project, second, "adjudicator")
    seen = disputed.version
    client.force_login(adjudicator)
    first = {"version": seen, "choice-FM-3.1": "a", "reason-FM-3.1": "evidence", "then": "stay"}
    assert client.post(f"/p/{project.slug}/adjudication/{disputed.pk}/", first).status_code == 302
    client.force_login(second)
    mine = {
        "version": seen,
        "choice-FM-3.1": "absent",
        "reason-FM-3.1": "other",
        "note-FM-3.1": "my careful reading",
    }
    response = client.post(f"/p/{project.slug}/adjudication/{disputed.pk}/", mine)
    assert response.status_code == 409
    html = response.content.decode()
    assert "ada-adjudicator decided this item while you were working on it" in html
    assert "my careful reading" in html
    assert GoldLabel.objects.get(item=disputed, mode__code="FM-3.1").source == "accept_a"


def test_the_api_lists_claims_and_decides_with_a_409_on_conflict(client, project, disputed, adjudicator):
    second = UserFactory(username="sam-second")
    add_member(project, second, "adjudicator")
    auth = {"HTTP_AUTHORIZATION": f"Token {api_token(adjudicator)}"}
    other = {"HTTP_AUTHORIZATION": f"Token {api_token(second)}"}
    base = f"/api/projects/{project.slug}/adjudication/"
    listing = client.get(base, **auth).json()
    assert listing["counts"]["open"] == 1 and listing["results"][0]["disputed"] == ["FM-3.1"]
    claimed = client.post(f"{base}claim/", **auth).json()
    assert claimed["item"]["claimed_by"] == "ada-adjudicator"
    assert [a["letter"] for a in claimed["annotations"]] == ["A", "B"]
    body = {
        "version": claimed["item"]["version"],
        "decisions": [{"mode": "FM-3.1", "choice": "present", "steps": [4], "reason_code": "evidence"}],
    }
    refused = client.post(f"{base}{disputed.pk}/decide/", body, content_type="application/json", **other)
    assert refused.status_code == 409
    assert refused.json()["submitted"] == body and "ada-adjudicator is deciding" in refused.json()["detail"]
    bad = client.post(
        f"{base}{disputed.pk}/decide/", {**body, "decisions": []}, content_type="application/json", **auth
    )
    assert bad.status_code == 400 and bad.json()["errors"] == [
        "Decide FM-3.1: accept an annotator's answer or give your own"
    ]
    done = client.post(f"{base}{disputed.pk}/decide/", body, content_type="application/json", **auth)
    assert done.status_code == 200
    assert {g["mode"]: g["source"] for g in done.json()["gold"]} == {
        "FM-1.1": "agreed",
        "FM-3.1": "adjudicator",
    }
    stale = client.post(f"{base}{disputed.pk}/decide/", body, content_type="application/json", **auth)
    assert stale.status_code == 409 and stale.json()["current_version"] == done.json()["item"]["version"]
    assert client.post(f"{base}claim/", **auth).status_code == 204
    reopened = client.post(
        f"{base}{disputed.pk}/reopen/",
        {"version": done.json()["item"]["version"]},
        content_type="application/json",
        **auth,
    )
    assert (
        reopened.status_code == 200
        and reopened.json()["item"]["status"] == "open"
        and reopened.json()["gold"] == []
    )


def test_the_annotation_page_respects_the_lock(client, project, disputed, adjudicator, annotator_b):
    from annotator.models import Assignment

    do_claim_next(project, adjudicator)
    assignment = Assignment.objects.get(project=project, trace=disputed.trace, annotator=annotator_b)
    client.force_login(annotator_b)
    response = client.post(
        f"/p/{project.slug}/a/{assignment.pk}/submit/",
        {"version": assignment.annotation.version, "labels": ["FM-1.1", "FM-3.1"]},
    )
    assert response.status_code == 409
