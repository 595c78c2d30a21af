"""One import is one set of traces: a trace id names one trace across all the files of an import (as within
one file), identical traces in two files are stored once and counted, and the plain-form import page shows
the job as it is (failed with its reason when the task queue is down, not "queued 0%")."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from annotator.models import ImportJob
from tests.factories import api_token
from tests.services import missing
from traces.models import Batch, Trace


def record(trace_id: str, content: str) -> dict:
    return {"id": trace_id, "steps": [{"kind": "message", "content": content}]}


def jsonl(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def folder(tmp_path, files: dict[str, bytes]):
    root = tmp_path / "runs"
    root.mkdir()
    for name, body in files.items():
        (root / name).write_bytes(body)
    return root


@pytest.mark.django_db
def test_the_same_id_on_different_traces_in_two_files_is_refused(tmp_path):
    root = folder(
        tmp_path,
        {
            "a.jsonl": jsonl(record("t1", "first"), record("t2", "x")),
            "b.jsonl": jsonl(record("t3", "y"), record("t1", "second")),
        },
    )
    with pytest.raises(CommandError) as raised:
        call_command("import_traces", str(root), batch="b")
    message = str(raised.value)
    assert f"{root / 'b.jsonl'}, line 2: duplicate trace id 't1': the file {root / 'a.jsonl'}" in message
    assert "every trace in an import needs its own id" in message
    assert not Trace.objects.exists() and not Batch.objects.exists()


@pytest.mark.django_db
def test_identical_traces_in_two_files_are_stored_once_and_counted(tmp_path, capsys):
    same = jsonl(record("t1", "first"), record("t2", "x"))
    root = folder(tmp_path, {"a.jsonl": same, "b.jsonl": jsonl(record("t2", "x"))})
    call_command("import_traces", str(root), batch="b")
    assert sorted(Trace.objects.values_list("external_id", flat=True)) == ["t1", "t2"]
    assert "1 duplicates skipped" in capsys.readouterr().out


@pytest.mark.django_db
def test_two_benchmarks_may_number_their_tasks_alike(tmp_path):
    """tau-bench and tau2-bench both have a task "5-0": ids are compared within a benchmark."""
    root = folder(
        tmp_path,
        {
            "a.jsonl": jsonl({**record("5-0", "airline"), "benchmark": "tau-bench"}),
            "b.jsonl": jsonl({**record("5-0", "retail"), "benchmark": "tau2-bench/retail"}),
        },
    )
    call_command("import_traces", str(root), batch="b")
    assert sorted(Trace.objects.values_list("benchmark", flat=True)) == ["tau-bench", "tau2-bench/retail"]


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_parallel_import_refuses_it_too(tmp_path):
    """Files over a megabyte in all are parsed by worker processes; the ids are checked where they meet."""
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    pad = [record(f"p{i}", "x" * 2000) for i in range(600)]
    root = folder(
        tmp_path,
        {"a.jsonl": jsonl(*pad, record("t1", "first")), "b.jsonl": jsonl(record("t1", "second"))},
    )
    with pytest.raises(CommandError) as raised:
        call_command("import_traces", str(root), batch="b")
    assert "b.jsonl, line 1: duplicate trace id 't1'" in str(raised.value)
    assert not Trace.objects.exists()


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def uploads(same_name: bool = False) -> list[SimpleUploadedFile]:
    first, second = ("run.jsonl", "run.jsonl") if same_name else ("a.jsonl", "b.jsonl")
    return [
        SimpleUploadedFile(first, jsonl(record("t1", "first"))),
        SimpleUploadedFile(second, jsonl(record("t1", "second"))),
    ]


@pytest.mark.parametrize("same_name", [False, True], ids=["two names", "one name twice"])
def test_the_upload_refuses_it_naming_the_file(client, project, owner, committed, same_name):
    client.force_login(owner)
    with committed():
        response = client.post(
            f"/p/{project.slug}/import/", {"batch": "b", "files": uploads(same_name)}, HTTP_HX_REQUEST="true"
        )
    assert response.status_code == 200
    job = ImportJob.objects.get()
    [error] = job.errors
    second = "run.jsonl" if same_name else "b.jsonl"
    assert job.status == "failed" and error["file"] == second
    assert f"{second}, line 1: duplicate trace id 't1'" in error["error"]
    assert not Trace.objects.exists()


def test_the_api_refuses_it_naming_the_file(client, project, owner, committed):
    auth = {"HTTP_AUTHORIZATION": f"Token {api_token(owner)}"}
    with committed():
        response = client.post(
            f"/api/projects/{project.slug}/imports/", {"batch": "b", "files": uploads()}, **auth
        )
    status = client.get(f"/api/projects/{project.slug}/imports/{response.json()['id']}/", **auth).json()
    assert status["status"] == "failed"
    assert [e["file"] for e in status["errors"]] == ["b.jsonl"]
    assert "duplicate trace id 't1'" in status["errors"][0]["error"]


@pytest.fixture
def queue_down(monkeypatch):
    """The task queue (Redis) refuses the message, as when it is down."""
    from kombu.exceptions import OperationalError

    from annotator.services import enqueue

    def refuse(self, args=None, kwargs=None, **options):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(enqueue, "is_eager", lambda: False)
    app = enqueue.celery_app()
    monkeypatch.setattr(type(app.tasks["annotator.run_import_job"]), "apply_async", refuse)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("htmx", [False, True], ids=["plain form", "htmx"])
def test_the_page_shows_a_job_that_could_not_be_queued_as_failed(client, project, owner, queue_down, htmx):
    client.force_login(owner)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = client.post(
        f"/p/{project.slug}/import/",
        {"batch": "b", "files": [SimpleUploadedFile("a.jsonl", jsonl(record("t1", "x")))]},
        **headers,
    )
    assert response.status_code == 200
    job = ImportJob.objects.get()
    assert job.status == "failed"
    page = response.content.decode()
    card = page[page.index(f'id="import-job-{job.pk}"') :].split("Recent imports")[0]
    assert f"Import #{job.pk}" in card and "Could not reach the task queue" in card
    assert "<progress" not in card and "0%" not in card
    assert "6379" not in card
