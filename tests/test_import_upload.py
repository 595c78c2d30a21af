"""Importing from the browser and the API: owners only, progress via the job, errors per file."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.models import ImportJob
from annotator.services.imports import do_import_traces
from tests.factories import api_token
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Trace


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Tests run inside a transaction: run the on-commit task enqueue (eager Celery) as a real commit would."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def native_upload(name: str = "run.jsonl", n: int = 3) -> SimpleUploadedFile:
    body = "".join(line + "\n" for line in native_lines(synthetic_traces(n, steps=4, seed=11)))
    return SimpleUploadedFile(name, body.encode(), content_type="application/jsonl")


def test_an_owner_imports_files_through_the_page(client, project, owner, run_on_commit):
    client.force_login(owner)
    assert client.get(f"/p/{project.slug}/import/").status_code == 200
    with run_on_commit():
        response = client.post(
            f"/p/{project.slug}/import/",
            {"batch": "uploaded", "files": [native_upload("a.jsonl", 3), native_upload("b.jsonl", 3)]},
            HTTP_HX_REQUEST="true",
        )
    assert response.status_code == 200
    job = ImportJob.objects.get()
    assert job.status == "succeeded"  # eager Celery in tests: the job ran on commit
    page = client.get(f"/p/{project.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "3 traces and 12 steps added" in page and "3 already imported" in page
    assert project.batches.filter(name="uploaded").exists()
    assert Trace.objects.count() == 3  # the second file holds the same traces: de-duplicated
    assert job.summary["duplicates"] == 3


def test_the_job_partial_reports_progress_and_stops_polling_when_done(client, project, owner, run_on_commit):
    client.force_login(owner)
    with run_on_commit():
        client.post(
            f"/p/{project.slug}/import/", {"batch": "b", "files": [native_upload()]}, HTTP_HX_REQUEST="true"
        )
    job = ImportJob.objects.get()
    page = client.get(f"/p/{project.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "succeeded" in page and 'hx-trigger="every 1s"' not in page
    ImportJob.objects.filter(pk=job.pk).update(status="running", bytes_total=100)
    page = client.get(f"/p/{project.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 1s"' in page and "<progress" in page


def test_a_malformed_upload_lists_the_file_and_imports_nothing(client, project, owner, run_on_commit):
    client.force_login(owner)
    bad = SimpleUploadedFile("broken.jsonl", b'{"id": "x", "steps": [{"kind": "dance"}]}\n')
    with run_on_commit():
        client.post(
            f"/p/{project.slug}/import/",
            {"batch": "b", "files": [native_upload(), bad]},
            HTTP_HX_REQUEST="true",
        )
    job = ImportJob.objects.get()
    assert job.status == "failed"
    assert job.errors[0]["file"] == "broken.jsonl" and "steps[0].kind" in job.errors[0]["error"]
    assert Trace.objects.count() == 0
    page = client.get(f"/p/{project.slug}/import/{job.pk}/").content.decode()
    assert "broken.jsonl" in page and "Nothing was imported" in page


def test_a_missing_batch_name_is_explained(client, project, owner):
    client.force_login(owner)
    response = client.post(
        f"/p/{project.slug}/import/", {"batch": "", "files": [native_upload()]}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert b"Name the batch" in response.content


def test_trace_content_in_an_error_is_escaped(client, project, owner, run_on_commit):
    client.force_login(owner)
    bad = SimpleUploadedFile("x.jsonl", b'{"id": "a", "steps": [{"kind": "<script>alert(1)</script>"}]}\n')
    with run_on_commit():
        client.post(f"/p/{project.slug}/import/", {"batch": "b", "files": [bad]}, HTTP_HX_REQUEST="true")
    page = client.get(f"/p/{project.slug}/import/{ImportJob.objects.get().pk}/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_annotators_and_outsiders_cannot_import(client, project, annotator_a, outsider):
    client.force_login(annotator_a)
    assert client.get(f"/p/{project.slug}/import/").status_code == 403
    client.force_login(outsider)
    assert client.get(f"/p/{project.slug}/import/").status_code == 404
    assert (
        client.post(f"/p/{project.slug}/import/", {"batch": "b", "files": [native_upload()]}).status_code
        == 404
    )
    assert not ImportJob.objects.exists()


def test_the_api_starts_an_import_and_reports_its_status(client, project, owner, run_on_commit):
    token = api_token(owner)
    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}
    with run_on_commit():
        response = client.post(
            f"/api/projects/{project.slug}/imports/", {"batch": "api", "files": [native_upload()]}, **auth
        )
    assert response.status_code == 202
    job_id = response.json()["id"]
    status = client.get(f"/api/projects/{project.slug}/imports/{job_id}/", **auth).json()
    assert status["status"] == "succeeded" and status["summary"]["traces"] == 3 and status["percent"] == 100


def test_the_api_refuses_outsiders_and_explains_bad_requests(client, project, owner, outsider):
    other = api_token(outsider)
    response = client.post(
        f"/api/projects/{project.slug}/imports/",
        {"batch": "x", "files": [native_upload()]},
        HTTP_AUTHORIZATION=f"Token {other}",
    )
    assert response.status_code == 404
    token = api_token(owner)
    response = client.post(
        f"/api/projects/{project.slug}/imports/", {"batch": "x"}, HTTP_AUTHORIZATION=f"Token {token}"
    )
    assert response.status_code == 400 and "file" in json.dumps(response.json())


def test_an_upload_sees_only_the_uploaders_batches(client, project, owner, mast, run_on_commit):
    """Issue 11, point 3: another project's owner uploads the same file under the same batch name: they get
    their own batch and traces, and the summary does not say the content exists elsewhere."""
    from tests.factories import ProjectFactory, UserFactory, add_member

    client.force_login(owner)
    with run_on_commit():
        client.post(
            f"/p/{project.slug}/import/",
            {"batch": "run-1", "files": [native_upload()]},
            HTTP_HX_REQUEST="true",
        )
    olga = UserFactory(username="olga")
    other = ProjectFactory(taxonomy_version=mast, slug="other")
    add_member(other, olga, "owner")
    client.force_login(olga)
    with run_on_commit():
        client.post(
            f"/p/{other.slug}/import/", {"batch": "run-1", "files": [native_upload()]}, HTTP_HX_REQUEST="true"
        )
    job = ImportJob.objects.filter(created_by=olga).get()
    assert job.status == "succeeded" and (job.summary["traces"], job.summary["duplicates"]) == (3, 0)
    assert Trace.objects.count() == 6
    assert project.batches.get().traces.count() == other.batches.get().traces.count() == 3


def test_an_upload_of_traces_imported_elsewhere_says_they_joined_the_project(
    client, project, owner, run_on_commit, tmp_path
):
    """Issue 28: the traces, not their batch, and the page says so."""
    path = tmp_path / "run.jsonl"
    path.write_bytes(native_upload("run.jsonl", 3).read())
    do_import_traces([(path, "run.jsonl")], batch_name="mine", user=owner)  # outside any project
    client.force_login(owner)
    with run_on_commit():
        client.post(
            f"/p/{project.slug}/import/",
            {"batch": "uploaded", "files": [native_upload("run.jsonl", 3)]},
            HTTP_HX_REQUEST="true",
        )
    job = ImportJob.objects.get()
    page = client.get(f"/p/{project.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "3 traces already imported were added to the project" in page
    assert Trace.objects.in_project(project).count() == 3 and not project.batches.exists()
