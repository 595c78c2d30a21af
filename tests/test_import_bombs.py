"""Issue 32's decompression bomb (a 2 KB zstd parquet file of 64 values of 30 MB) and its relatives fail
their import naming the file, through the command line and an upload run inline (eager), under a memory
ceiling far below what they decode to; a bomb no reader foresees meets the import's memory ceiling and
fails its job with that reason, and the next import goes through."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from annotator.models import ImportJob
from tests import bombs
from tests.services import missing
from traces import import_pool, services
from traces.importers import limits
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch, Trace

MB = limits.MB
RATIO = "the file inflates more than 200 times its compressed size (a decompression bomb?; limit IMPORT_MAX_ZIP_RATIO)"
CEILING = (
    "the import needed more than 256 MB of memory while decoding this file and was stopped "
    "(it ran out of memory under IMPORT_MAX_MEMORY_MB); nothing was imported"
)


@pytest.fixture(autouse=True)
def ceiling():
    """Every import here runs under a 256 MB ceiling: a bomb that decoded would fail on it, not pass."""
    with limits.override(max_memory_bytes=256 * MB) as bounds:
        yield bounds


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def upload(
    client, project, owner, run_on_commit, name: str, body: bytes, batch: str = "hostile"
) -> ImportJob:
    client.force_login(owner)
    with run_on_commit():
        response = client.post(
            f"/api/projects/{project.slug}/imports/",
            {"batch": batch, "files": SimpleUploadedFile(name, body)},
        )
    assert response.status_code == 202, response.content
    return ImportJob.objects.get(pk=response.json()["id"])


def import_command(*paths: Path) -> str:
    with pytest.raises(CommandError) as error:
        call_command("import_traces", *map(str, paths), "--batch", "b", stdout=StringIO(), stderr=StringIO())
    return str(error.value)


def test_the_command_refuses_the_parquet_bomb_naming_the_file(db, tmp_path):
    path = bombs.write(tmp_path / "bomb.parquet", bombs.parquet_bomb())
    assert path.stat().st_size < 4096
    assert f"{path}: {RATIO}" in import_command(path)
    assert not Trace.objects.exists() and not Batch.objects.exists()


def test_an_upload_of_the_parquet_bomb_fails_its_job_naming_the_file(client, project, owner, run_on_commit):
    job = upload(client, project, owner, run_on_commit, "bomb.parquet", bombs.parquet_bomb())
    assert job.status == "failed"
    assert job.errors == [{"file": "bomb.parquet", "error": f"bomb.parquet: {RATIO}"}]
    assert not Trace.objects.exists() and not Batch.objects.filter(name="hostile").exists()


def test_an_ordinary_parquet_upload_reads_back_equal(client, project, owner, run_on_commit):
    data, rows = bombs.parquet_traces(4)
    job = upload(client, project, owner, run_on_commit, "ok.parquet", data, batch="fine")
    assert job.status == "succeeded", job.errors
    stored = {t.external_id: [s.content for s in t.steps.order_by("index")] for t in Trace.objects.all()}
    assert stored == {row["id"]: [m["content"] for m in row["messages"]] for row in rows}


def test_a_bomb_no_reader_foresees_fails_its_job_on_the_memory_ceiling_and_the_next_import_goes_through(
    client, project, owner, run_on_commit
):
    job = upload(client, project, owner, run_on_commit, "nested.parquet", bombs.parquet_nested_bomb())
    assert job.status == "failed"
    assert job.errors == [{"file": "nested.parquet", "error": f"nested.parquet: {CEILING}"}]
    assert not Trace.objects.exists()
    body = "".join(line + "\n" for line in native_lines(synthetic_traces(3, steps=2))).encode()
    after = upload(client, project, owner, run_on_commit, "fine.jsonl", body, batch="fine")
    assert after.status == "succeeded" and Trace.objects.count() == 3


def test_the_command_refuses_a_dataset_folder_holding_a_gzip_bomb(db, tmp_path):
    folder = tmp_path / "dataset"
    path = bombs.write(folder / "data" / "train.jsonl.gz", bombs.gzip_bomb())
    bombs.write(folder / "dataset_info.json", b"{}")
    assert f"{path}: {RATIO}" in import_command(folder)
    assert not Trace.objects.exists()


@pytest.mark.postgres
def test_worker_processes_fail_a_bomb_on_their_own_ceiling(db, tmp_path, monkeypatch):
    """A large import parses in forked workers, which inherit the ceiling: the bomb's file fails by name."""
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    monkeypatch.setattr(import_pool, "can_fork", lambda: True)  # the test session holds idle threads
    monkeypatch.setattr(services, "PARALLEL_MIN_BYTES", 0)
    good = tmp_path / "good.jsonl"
    good.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(3, steps=2))))
    bomb = bombs.write(tmp_path / "nested.parquet", bombs.parquet_nested_bomb())
    assert f"{bomb}: {CEILING}" in import_command(good, bomb)
    assert not Trace.objects.exists()


@pytest.mark.postgres
def test_a_worker_process_that_dies_fails_the_import_instead_of_hanging_it(db, tmp_path, monkeypatch):
    """A worker killed (or crashed by an allocation its code could not survive) never answers its task."""
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    monkeypatch.setattr(import_pool, "can_fork", lambda: True)
    monkeypatch.setattr(services, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(import_pool, "run_files", die)  # in the forked worker
    good = tmp_path / "good.jsonl"
    good.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(3, steps=2))))
    assert f"{good}: {import_pool.WORKER_LOST}" in import_command(good)
    assert not Trace.objects.exists()


def die(*args) -> None:
    os._exit(9)
