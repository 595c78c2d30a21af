"""Agreement reports on a real Celery worker (through Redis): a burst of submits schedules one debounced
refresh, a requested report is computed by the worker, and both stored reports appear."""

from __future__ import annotations

import time

import pytest

from tests.services import require_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def wait_for(check, timeout: float = 60.0):
    """Poll the database: the worker writes through its own connection, so there is nothing to await."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("the worker did not finish in time")


def test_reports_are_computed_by_the_worker_and_stored(project, annotator_a, annotator_b, settings):
    require_worker()
    from celery import current_app
    from django.core.cache import cache

    from annotator.models import AgreementReport
    from annotator.services import followups, reports
    from tests.labels import project_trace, submit

    assert not current_app.conf.task_always_eager
    settings.AGREEMENT_DEBOUNCE_SECONDS = 5  # long enough to gather the burst below, short for a test
    cache.delete(followups.refresh_debounce_key(project.pk))
    for k in range(8):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": [1], **({"FM-2.1": [2]} if k % 3 else {})})
        submit(project, trace, annotator_b, {"FM-1.1": [1]} if k % 2 else {})
    requested = reports.do_request_report(project, {"annotators": ["ana-annotator", "ben-annotator"]})

    def finished(filters):
        report = reports.latest_report(project, filters)
        return report if report and report.status in ("succeeded", "failed") else None

    report = wait_for(lambda: finished({"annotators": ["ana-annotator", "ben-annotator"]}))
    assert report.pk == requested.pk and report.status == "succeeded", report.error
    assert report.results["schema"] == 1 and report.results["counts"]["annotations"] == 16
    assert [r["username"] for r in report.results["raters"]] == ["ana-annotator", "ben-annotator"]
    refreshed = wait_for(lambda: finished({}))  # the debounced refresh of the unfiltered report
    assert refreshed.status == "succeeded" and refreshed.results["counts"]["annotations"] == 16
    assert AgreementReport.objects.filter(project=project, filters_key=reports.filters_key({})).count() == 1
    assert (
        reports.do_request_report(project, {"annotators": ["ana-annotator", "ben-annotator"]}).pk == report.pk
    )
