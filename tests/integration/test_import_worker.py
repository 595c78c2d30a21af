"""A hostile file fails its own import job on a real worker (started by .ci/run, with a memory cap per child),
and the worker goes on to import the next file."""

from __future__ import annotations

import io
import json
import time
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.services import require_worker
from traces.importers.synthetic import native_lines, synthetic_traces

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def wait_for_job(job_id: int, timeout: float = 60.0):
    """Poll the database: the worker writes through its own connection, so there is nothing to await."""
    from annotator.models import ImportJob

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = ImportJob.objects.get(pk=job_id)
        if job.status in ("succeeded", "failed"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"import job {job_id} did not finish in time")


def queue_files(project, owner, batch_name: str, files: dict[str, bytes]):
    """Queue an upload of `files` (name -> bytes) as the import page does; the worker takes it."""
    from annotator.services.uploads import do_queue_import

    return do_queue_import(
        project,
        batch_name=batch_name,
        fmt="",
        files=[SimpleUploadedFile(name, body) for name, body in files.items()],
        user=owner,
        ignore_unknown_modes=False,
    )


def zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
        padding = " " * (64 * 1024 * 1024)
        zf.writestr(
            "samples/1_epoch_1.json", '{"id": 1, "epoch": 1, "messages": [], "pad": "' + padding + '"}'
        )
    return buffer.getvalue()


def test_hostile_files_fail_their_jobs_and_the_worker_imports_the_next_one(project, owner):
    require_worker()
    from celery import current_app

    assert not current_app.conf.task_always_eager
    deep = "[" * 100_000 + "]" * 100_000
    hostile = {
        "deep.json": (
            '[{"id": "a", "messages": [{"role": "user", "content": "hi"}]}, {"id": "b", "messages": '
            + deep
            + "}]"
        ).encode(),
        "deep.jsonl": f'{{"id": "a", "steps": [], "metadata": {{"x": {deep}}}}}\n'.encode(),
        "bomb.eval": zip_bomb(),
    }
    good = "".join(line + "\n" for line in native_lines(synthetic_traces(3, steps=2))).encode()

    def queue(name: str, body: bytes):
        return queue_files(project, owner, f"batch-{name}", {name: body})

    failed = {name: wait_for_job(queue(name, body).pk) for name, body in hostile.items()}
    for name, job in failed.items():
        assert job.status == "failed", (name, job.errors)
        [error] = job.errors
        assert error["file"] == name and "limit IMPORT_MAX_" in error["error"], error
    assert "line 1: nested deeper than 100 levels" in failed["deep.jsonl"].errors[0]["error"]
    assert "record 2: nested deeper than 100 levels" in failed["deep.json"].errors[0]["error"]
    assert "member inflates more than 200 times" in failed["bomb.eval"].errors[0]["error"]
    after = wait_for_job(queue("good.jsonl", good).pk)
    assert after.status == "succeeded" and after.summary["traces"] == 3
