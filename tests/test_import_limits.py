"""A hostile or oversized file fails its import job with a reason naming file and record; the worker lives on."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.models import ImportJob
from annotator.services.imports import do_run_import_job
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch, Trace


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def upload(client, project, owner, run_on_commit, name: str, body: bytes) -> ImportJob:
    client.force_login(owner)
    with run_on_commit():
        response = client.post(
            f"/api/projects/{project.slug}/imports/",
            {"batch": "hostile", "files": SimpleUploadedFile(name, body)},
        )
    assert response.status_code == 202, response.content
    return ImportJob.objects.get(pk=response.json()["id"])


def test_a_deeply_nested_line_fails_the_job_naming_the_file_and_line(client, project, owner, run_on_commit):
    lines = list(native_lines(synthetic_traces(2, steps=2)))
    deep = "[" * 100_000 + "]" * 100_000
    body = "\n".join([*lines, f'{{"id": "deep", "steps": [], "metadata": {{"x": {deep}}}}}']) + "\n"
    job = upload(client, project, owner, run_on_commit, "deep.jsonl", body.encode())
    assert job.status == "failed"
    assert job.errors == [
        {
            "file": "deep.jsonl",
            "error": "deep.jsonl, line 3: nested deeper than 100 levels (limit IMPORT_MAX_DEPTH)",
        }
    ]
    assert not Trace.objects.exists() and not Batch.objects.filter(name="hostile").exists()


def test_a_trace_id_used_twice_fails_the_job_naming_both_lines(client, project, owner, run_on_commit):
    lines = list(native_lines(synthetic_traces(2, steps=2)))
    other = json.loads(lines[1])
    other["id"] = json.loads(lines[0])["id"]
    body = "\n".join([lines[0], lines[1], json.dumps(other)]) + "\n"
    job = upload(client, project, owner, run_on_commit, "twice.jsonl", body.encode())
    assert job.status == "failed"
    [error] = job.errors
    assert "line 3 repeats the id of line 1" in error["error"] and error["file"] == "twice.jsonl"
    assert not Trace.objects.exists()


@pytest.mark.parametrize(
    ("failure", "reason"),
    [(MemoryError, "ran out of memory"), (RecursionError, "ran out of stack (a record nested too deeply)")],
)
def test_an_import_that_runs_out_of_memory_fails_its_job_and_does_not_take_the_worker_down(
    client, project, owner, run_on_commit, monkeypatch, failure, reason
):
    def exhausted(stream, filename):
        yield from ()
        raise failure()

    monkeypatch.setattr("traces.importers.native.parse", exhausted)
    monkeypatch.setattr("annotator.services.jobs.enqueue", lambda *args, **kwargs: None)  # run it below
    body = "".join(line + "\n" for line in native_lines(synthetic_traces(2, steps=2))).encode()
    job = upload(client, project, owner, run_on_commit, "huge.jsonl", body)
    assert job.status == "queued"
    finished = do_run_import_job(job.pk)  # re-raising here is what made Celery's pool exit
    assert finished.status == "failed" and finished.finished_at is not None
    [error] = finished.errors
    assert (
        error["file"] == "huge.jsonl"
        and reason in error["error"]
        and "nothing was imported" in error["error"]
    )
    assert not Trace.objects.exists()
