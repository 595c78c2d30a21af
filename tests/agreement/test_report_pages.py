"""The report page, its partial, downloads and API; the fingerprint; the debounce."""

from __future__ import annotations

import csv
import io

import pytest

from annotator.models import AgreementReport
from annotator.services import followups, reports
from annotator.services.followups import schedule_report_refresh
from annotator.services.reports import do_request_report
from tests.factories import UserFactory, add_member, api_token
from tests.labels import project_trace, submit


@pytest.fixture
def labelled(project, annotator_a, annotator_b):
    """Six traces, both annotators; they agree on FM-1.1, and FM-2.4 is never chosen (undefined kappa)."""
    for k in range(6):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": [1], **({"FM-3.1": [2]} if k % 2 else {})})
        submit(project, trace, annotator_b, {"FM-1.1": [1]} if k < 4 else {})
    return project


def urls(project, report):
    base = f"/p/{project.slug}/agreement/"
    return {
        "get": [
            base,
            f"{base}{report.pk}/",
            f"{base}{report.pk}/report.json",
            f"{base}{report.pk}/report.csv",
        ],
        "post": [f"{base}refresh/"],
    }


@pytest.mark.parametrize("persona", ["outsider", "annotator_a"])
def test_outsiders_get_404_and_annotators_403(client, request, labelled, persona):
    report = do_request_report(labelled, {})
    client.force_login(request.getfixturevalue(persona))
    expected = 404 if persona == "outsider" else 403
    for method, paths in urls(labelled, report).items():
        for path in paths:
            assert getattr(client, method)(path).status_code == expected, path
    api = f"/api/projects/{labelled.slug}/agreement/"
    assert client.get(api).status_code == expected
    assert client.post(api).status_code == expected


def test_the_page_shows_the_report_to_a_viewer(client, labelled):
    viewer = UserFactory(username="vic-viewer")
    add_member(labelled, viewer, "viewer")
    client.force_login(viewer)
    page = client.get(
        f"/p/{labelled.slug}/agreement/"
    )  # no report yet: requested, and computed inline (eager)
    html = page.content.decode()
    assert page.status_code == 200
    assert "Cohen&#x27;s κ" in html or "Cohen's κ" in html
    assert "FM-1.1" in html and "kappa paradox" in html
    assert "undefined: no variation" in html  # FM-2.4: nobody chose it, said so in words
    assert 'class="table heatmap"' in html and "ana-annotator" in html
    assert "Step localisation" in html
    report = AgreementReport.objects.get(project=labelled)
    assert report.status == "succeeded" and report.results["schema"] == 1


def test_a_pending_report_polls_its_partial(client, labelled, owner):
    report = do_request_report(labelled, {}, enqueue=False)
    client.force_login(owner)
    page = client.get(f"/p/{labelled.slug}/agreement/").content.decode()
    assert (
        f'hx-get="/p/{labelled.slug}/agreement/{report.pk}/"' in page
        and "Computing the agreement report" in page
    )
    reports.do_compute_report(report.pk)
    partial = client.get(
        f"/p/{labelled.slug}/agreement/{report.pk}/", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert partial.lstrip().startswith('<section id="agreement-report"')
    assert "hx-trigger" not in partial and "FM-1.1" in partial


def test_downloads(client, labelled, adjudicator):
    report = reports.do_compute_report(do_request_report(labelled, {}, enqueue=False).pk)
    client.force_login(adjudicator)
    data = client.get(f"/p/{labelled.slug}/agreement/{report.pk}/report.json")
    assert data["Content-Disposition"].startswith("attachment") and data.json()["schema"] == 1
    rows = list(
        csv.DictReader(
            io.StringIO(client.get(f"/p/{labelled.slug}/agreement/{report.pk}/report.csv").content.decode())
        )
    )
    fm11 = next(r for r in rows if r["table"] == "modes" and r["mode"] == "FM-1.1")
    assert float(fm11["observed_agreement"]) == report.results["modes"][0]["observed_agreement"]["value"]
    assert any(r["table"] == "pair:ana-annotator|ben-annotator" for r in rows)


def test_filters_on_the_page(client, labelled, owner):
    client.force_login(owner)
    page = client.get(
        f"/p/{labelled.slug}/agreement/?annotators=ana-annotator&annotators=ben-annotator&since=2020-01-01"
    )
    assert page.status_code == 200
    report = AgreementReport.objects.get(project=labelled)
    assert report.filters == {"annotators": ["ana-annotator", "ben-annotator"], "since": "2020-01-01"}
    bad = client.get(f"/p/{labelled.slug}/agreement/?batch=nope&until=soon")
    assert bad.status_code == 400
    assert (
        "No batch “nope” in this project" in bad.content.decode() and "is not a date" in bad.content.decode()
    )


def test_an_unchanged_input_is_not_recomputed_and_a_change_is_noticed(client, labelled, owner, annotator_a):
    first = reports.do_compute_report(do_request_report(labelled, {}, enqueue=False).pk)
    assert do_request_report(labelled, {}).pk == first.pk
    client.force_login(owner)
    assert "Annotations changed since" not in client.get(f"/p/{labelled.slug}/agreement/").content.decode()
    trace = project_trace(labelled)
    submit(labelled, trace, annotator_a, {"FM-2.1": [0]})
    html = client.get(f"/p/{labelled.slug}/agreement/").content.decode()
    assert "Annotations changed since" in html and "Recompute with the new annotations" in html
    response = client.post(f"/p/{labelled.slug}/agreement/refresh/")
    assert response.status_code == 302
    latest = AgreementReport.objects.filter(project=labelled).order_by("-id").first()
    assert latest.pk != first.pk and latest.status == "succeeded"
    assert latest.results["counts"]["annotations"] == first.results["counts"]["annotations"] + 1


def test_the_api_get_answers_the_report_as_the_page_does(client, labelled, adjudicator):
    """The page's GET requests a report when there is none yet; the API's GET does the same (it used to
    answer 404 where the page showed a report)."""
    auth = {"HTTP_AUTHORIZATION": f"Token {api_token(adjudicator)}"}
    url = f"/api/projects/{labelled.slug}/agreement/"
    first = client.get(url, **auth)
    assert first.status_code == 200  # eager Celery computed it inline
    assert first.json()["status"] == "succeeded" and first.json()["filters"] == {}
    client.force_login(adjudicator)
    page = client.get(f"/p/{labelled.slug}/agreement/")
    assert page.context["report"].pk == first.json()["id"]


def test_the_api(client, labelled, adjudicator):
    auth = {"HTTP_AUTHORIZATION": f"Token {api_token(adjudicator)}"}
    url = f"/api/projects/{labelled.slug}/agreement/"
    created = client.post(
        url, {"annotators": ["ana-annotator", "ben-annotator"]}, content_type="application/json", **auth
    )
    assert created.status_code == 200  # eager Celery computed it inline
    body = created.json()
    assert body["status"] == "succeeded" and body["current"] is True
    assert body["results"]["pairs"][0]["modes"][0]["kappa_ci"]["statistic"] == "cohen_kappa"
    got = client.get(f"{url}?annotators=ana-annotator,ben-annotator", **auth).json()
    assert got["id"] == body["id"]
    assert client.get(f"{url}?annotators=zed", **auth).json() == {
        "detail": "A filter is not valid",
        "errors": ["No annotator “zed” in this project"],
    }


def test_the_schema_documents_the_endpoints(client, owner):
    client.force_login(owner)
    schema = client.get("/api/schema/").content.decode()
    for path in (
        "/api/projects/{slug}/agreement/",
        "/api/projects/{slug}/adjudication/",
        "/api/projects/{slug}/adjudication/{item_id}/decide/",
    ):
        assert path in schema


def test_eager_submits_refresh_a_small_project_inline(
    labelled, annotator_a, django_capture_on_commit_callbacks
):
    trace = project_trace(labelled)
    with django_capture_on_commit_callbacks(execute=True):
        submit(labelled, trace, annotator_a, {"FM-1.1": [0]})
    report = AgreementReport.objects.get(project=labelled, filters_key=reports.filters_key({}))
    assert report.status == "succeeded" and report.results["counts"]["annotations"] == 13


def test_eager_submits_leave_a_large_project_to_the_page(
    labelled, annotator_a, settings, django_capture_on_commit_callbacks
):
    settings.AGREEMENT_INLINE_MAX_ANNOTATIONS = 5
    trace = project_trace(labelled)
    with django_capture_on_commit_callbacks(execute=True):
        submit(labelled, trace, annotator_a, {"FM-1.1": [0]})
    assert not AgreementReport.objects.exists()


def test_with_a_worker_a_burst_of_changes_schedules_one_refresh(labelled, monkeypatch):
    from django.core.cache import cache

    from annotator import tasks

    calls = []
    cache.delete(
        followups.refresh_debounce_key(labelled.pk)
    )  # the cache is Redis in CI: start from a clean key
    monkeypatch.setattr(followups, "is_eager", lambda: False)
    monkeypatch.setattr(
        tasks.refresh_agreement_reports, "apply_async", lambda *a, **kw: calls.append((a, kw))
    )
    for _ in range(5):
        schedule_report_refresh(labelled.pk)
    assert calls == [(((labelled.pk,),), {"countdown": 30})]
    reports.do_refresh_reports(labelled.pk)  # the task clears the key before it reads
    schedule_report_refresh(labelled.pk)
    assert len(calls) == 2
    assert AgreementReport.objects.get(project=labelled).status == "succeeded"


def test_localisation_from_the_stored_evidence(project, annotator_a, annotator_b):
    from annotator.agreement.report import build_report
    from annotator.services.reports.data import load_report_input

    for steps_a, steps_b in (([2], [3]), ([5, 9], [5]), ([1], [])):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": steps_a})
        submit(project, trace, annotator_b, {"FM-1.1": steps_b})
    results = build_report(load_report_input(project, {}).data)
    loc = results["localisation"]["overall"]
    assert (loc["n_pairs_chosen_by_both"], loc["n_pairs"], loc["n_only_one_pinned"]) == (3, 2, 1)
    assert loc["exact"]["value"] == 0.5
    assert loc["within"]["1"]["value"] == 1.0 and loc["within"]["3"]["value"] == 1.0
