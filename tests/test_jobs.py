"""Nothing stuck, nothing lost: jobs whose task cannot be sent, whose worker died, or whose message came
twice all end in a final state with a reason, and their uploaded files go with them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from kombu.exceptions import OperationalError

from annotator.models import AdjudicationItem, AgreementReport, ImportJob
from annotator.services import enqueue, jobs
from annotator.services.imports import do_run_import_job
from tests.labels import project_trace, submit
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Trace

app = enqueue.celery_app()


def native_upload(n: int = 3) -> SimpleUploadedFile:
    body = "".join(line + "\n" for line in native_lines(synthetic_traces(n, steps=4, seed=5)))
    return SimpleUploadedFile("run.jsonl", body.encode(), content_type="application/jsonl")


@pytest.fixture
def broker_down(monkeypatch):
    """Redis is unreachable: every publish fails the way kombu reports it."""
    monkeypatch.setattr(enqueue, "is_eager", lambda: False)
    sent = []

    def refuse(self, args=None, kwargs=None, **options):
        sent.append((self.name, args))
        raise OperationalError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(type(app.tasks["annotator.run_import_job"]), "apply_async", refuse)
    return sent


@pytest.fixture
def worker_queue(monkeypatch):
    """A broker that takes messages (and a worker that has not run them yet)."""
    monkeypatch.setattr(enqueue, "is_eager", lambda: False)
    sent = []
    monkeypatch.setattr(
        type(app.tasks["annotator.run_import_job"]),
        "apply_async",
        lambda self, args=None, kwargs=None, **options: sent.append((self.name, tuple(args or ()))),
    )
    return sent


def queue_upload(client, project, owner, capture):
    client.force_login(owner)
    with capture(execute=True):
        response = client.post(
            f"/p/{project.slug}/import/", {"batch": "up", "files": [native_upload()]}, HTTP_HX_REQUEST="true"
        )
    assert response.status_code == 200
    return ImportJob.objects.get()


def test_an_import_whose_task_cannot_be_sent_fails_with_a_reason_and_drops_its_files(
    client, project, owner, broker_down, django_capture_on_commit_callbacks
):
    job = queue_upload(client, project, owner, django_capture_on_commit_callbacks)
    assert broker_down == [("annotator.run_import_job", (job.pk,))]
    assert job.status == "failed" and "task queue" in job.error
    assert not any(Path(item["path"]).exists() for item in job.files)
    page = client.get(f"/p/{project.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "Could not reach the task queue" in page and 'hx-trigger="every 1s"' not in page


def test_an_import_job_belongs_to_its_project_by_key(
    client, project, owner, worker_queue, django_capture_on_commit_callbacks
):
    job = queue_upload(client, project, owner, django_capture_on_commit_callbacks)
    assert job.project == project and "project" not in job.options
    project.slug = "renamed"
    project.save()
    assert list(project.import_jobs.all()) == [job]  # renaming the project keeps its jobs


def test_a_redelivered_import_whose_worker_died_runs_and_removes_its_files(
    client, project, owner, worker_queue, django_capture_on_commit_callbacks
):
    job = queue_upload(client, project, owner, django_capture_on_commit_callbacks)
    long_ago = timezone.now() - timedelta(hours=1)
    ImportJob.objects.filter(pk=job.pk).update(status="running", heartbeat_at=long_ago, attempts=1)
    job = do_run_import_job(job.pk)  # the same message, delivered again after the worker was killed
    assert job.status == "succeeded" and job.attempts == 2
    assert Trace.objects.count() == 3
    assert not any(Path(item["path"]).exists() for item in job.files)


def test_a_running_import_with_a_live_heartbeat_is_left_to_its_worker(
    client, project, owner, worker_queue, django_capture_on_commit_callbacks
):
    job = queue_upload(client, project, owner, django_capture_on_commit_callbacks)
    ImportJob.objects.filter(pk=job.pk).update(status="running", heartbeat_at=timezone.now())
    assert do_run_import_job(job.pk).status == "running"
    assert Trace.objects.count() == 0


def test_reconciliation_resumes_a_lost_job_and_fails_one_that_keeps_losing_its_worker(
    client, project, owner, worker_queue, django_capture_on_commit_callbacks, settings
):
    job = queue_upload(client, project, owner, django_capture_on_commit_callbacks)
    worker_queue.clear()
    long_ago = timezone.now() - timedelta(seconds=settings.JOB_HEARTBEAT_TIMEOUT + 60)
    ImportJob.objects.filter(pk=job.pk).update(status="running", heartbeat_at=long_ago, attempts=1)
    done = jobs.do_reconcile()
    job.refresh_from_db()
    assert done.resumed == [f"ImportJob {job.pk}"] and job.status == "queued"
    assert worker_queue == [("annotator.run_import_job", (job.pk,))]

    ImportJob.objects.filter(pk=job.pk).update(
        status="running", heartbeat_at=long_ago, attempts=settings.JOB_MAX_ATTEMPTS
    )
    done = jobs.do_reconcile()
    job.refresh_from_db()
    assert done.failed == [f"ImportJob {job.pk}"]
    assert job.status == "failed" and "worker running this job stopped" in job.error
    assert not any(Path(item["path"]).exists() for item in job.files)
    page = client.get(f"/p/{project.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "worker running this job stopped" in page


def test_reconciliation_sends_a_job_left_queued_again(
    client, project, owner, worker_queue, django_capture_on_commit_callbacks, settings
):
    job = queue_upload(client, project, owner, django_capture_on_commit_callbacks)
    worker_queue.clear()
    assert jobs.do_reconcile().resent == []  # just queued: its message is on its way
    ImportJob.objects.filter(pk=job.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.JOB_RESEND_AFTER + 1)
    )
    assert jobs.do_reconcile().resent == [f"ImportJob {job.pk}"]
    assert worker_queue == [("annotator.run_import_job", (job.pk,))]
    assert jobs.do_reconcile().resent == []  # not again until another JOB_RESEND_AFTER


def test_a_report_whose_worker_died_is_recomputed_by_the_reconciliation(
    project, annotator_a, annotator_b, settings
):
    trace = project_trace(project)
    submit(project, trace, annotator_a, {"FM-1.1": [1]})
    submit(project, trace, annotator_b, {"FM-1.1": [1]})
    report = AgreementReport.objects.create(project=project, status="running", attempts=1)
    AgreementReport.objects.filter(pk=report.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.JOB_HEARTBEAT_TIMEOUT + 60)
    )
    assert jobs.do_reconcile().resumed == [f"AgreementReport {report.pk}"]  # eager: recomputed inline
    report.refresh_from_db()
    assert report.status == "succeeded" and report.results["counts"]["annotations"] == 2


def test_reconciliation_checks_traces_whose_adjudication_check_was_lost(
    project, annotator_a, annotator_b, monkeypatch
):
    trace = project_trace(project)
    monkeypatch.setattr("annotator.services.followups.after_annotations_changed", lambda *a, **k: None)
    monkeypatch.setattr("annotator.services.annotations.after_annotations_changed", lambda *a, **k: None)
    submit(project, trace, annotator_a, {"FM-1.1": [1]})
    submit(project, trace, annotator_b, {"FM-2.1": [2]})
    assert not AdjudicationItem.objects.exists()
    assert jobs.traces_missing_adjudication(project.pk) == [trace.pk]
    assert jobs.do_reconcile().checked_traces == 1
    item = AdjudicationItem.objects.get(trace=trace)
    assert item.status == "open"
    assert jobs.traces_missing_adjudication(project.pk) == []


def test_a_report_whose_task_cannot_be_sent_fails_and_the_page_says_why(client, project, owner, monkeypatch):
    from annotator.services.reports import do_request_report

    def refuse(self, args=None, kwargs=None, **options):
        raise OperationalError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(enqueue, "is_eager", lambda: False)
    monkeypatch.setattr(type(app.tasks["annotator.agreement.compute_report"]), "apply_async", refuse)
    report = do_request_report(project, {})
    report.refresh_from_db()
    assert report.status == "failed" and "task queue" in report.error
    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/agreement/").content.decode()
    assert "Could not reach the task queue" in page
