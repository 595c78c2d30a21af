"""Pushing with the real huggingface_hub client to a stand-in Hub on 127.0.0.1; plain messages on failure."""

from __future__ import annotations

import logging
import socket
import zipfile
from pathlib import Path

import pytest
from django.core.cache import cache

from annotator.models import Export
from annotator.services.exports import (
    ExportOptions,
    HubError,
    build_export,
    do_queue_export,
    export_status,
    push_folder,
    token_key,
)

TOKEN = "hf_standinSecretToken1234567890"


def folder_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def built(labelled, tmp_path) -> Path:
    folder = tmp_path / "dataset"
    build_export(labelled, ExportOptions(repo_id="olivia/mast-labels"), folder)
    return folder


def test_the_hub_receives_exactly_the_local_export_in_one_commit(built, hub):
    from huggingface_hub.utils._runtime import is_xet_available

    result = push_folder(built, "olivia/mast-labels", token=TOKEN, endpoint=hub.url, commit_message="First")
    assert not is_xet_available()
    assert hub.files("olivia/mast-labels") == folder_files(built)
    assert hub.repos["olivia/mast-labels"]["private"] is True
    assert hub.repos["olivia/mast-labels"]["commits"] == [result.commit_oid]
    assert hub.repos["olivia/mast-labels"]["last_message"] == "First"
    assert result.commit_url == f"{hub.url}/datasets/olivia/mast-labels/commit/{result.commit_oid}"
    assert all(headers.get("authorization") == f"Bearer {TOKEN}" for _, _, headers in hub.requests)
    # Pushing again to the repo it created is fine (exist_ok), and is a second commit.
    push_folder(built, "olivia/mast-labels", token=TOKEN, endpoint=hub.url)
    assert len(hub.repos["olivia/mast-labels"]["commits"]) == 2


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ({"fail": {"create": 401, "info": 401}}, "token was rejected (401)"),
        ({"fail": {"create": 403, "info": 404}}, "may not create repositories under 'olivia' (403)"),
        ({"existing": True, "fail": {"preupload": 403}}, "exists and belongs to someone else"),
        ({"fail": {"commit": 409}}, "'olivia/mast-labels' is taken (409)"),
    ],
)
def test_hub_refusals_become_plain_messages(built, hub, setup, expected):
    hub.fail.update(setup.get("fail", {}))
    if setup.get("existing"):
        hub.existing.add("olivia/mast-labels")
        hub.repos["olivia/mast-labels"] = {"private": False, "files": {}, "commits": []}
    with pytest.raises(HubError) as error:
        push_folder(built, "olivia/mast-labels", token=TOKEN, endpoint=hub.url)
    assert expected in error.value.message
    assert TOKEN not in error.value.message


def test_no_network_is_a_plain_message(built):
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(HubError, match=r"Could not reach the Hugging Face Hub at http://127\.0\.0\.1:\d+"):
        push_folder(built, "olivia/mast-labels", token=TOKEN, endpoint=f"http://127.0.0.1:{port}")


def test_a_typed_token_reaches_the_hub_but_never_the_row_the_task_or_the_logs(
    labelled, owner, hub, settings, caplog, monkeypatch, django_capture_on_commit_callbacks
):
    from annotator.tasks import run_export_job

    settings.HF_ENDPOINT = hub.url
    monkeypatch.delenv("HF_TOKEN", raising=False)
    sent = []
    original = run_export_job.apply_async
    monkeypatch.setattr(
        run_export_job, "apply_async", lambda *a, **kw: sent.append((a, kw)) or original(*a, **kw)
    )
    caplog.set_level(logging.DEBUG)
    options = ExportOptions(repo_id="olivia/mast-labels", private=False, commit_message="Publish v1")
    with django_capture_on_commit_callbacks(execute=True):
        export = do_queue_export(labelled, options, user=owner, token=TOKEN)
    export.refresh_from_db()
    assert export.status == "succeeded", export.log
    assert export.commit_url.startswith(f"{hub.url}/datasets/olivia/mast-labels/commit/")
    assert hub.repos["olivia/mast-labels"]["private"] is False
    with zipfile.ZipFile(export.path) as archive:
        assert hub.files("olivia/mast-labels") == {name: archive.read(name) for name in archive.namelist()}
    assert any(h.get("authorization") == f"Bearer {TOKEN}" for _, _, h in hub.requests)

    row = Export.objects.filter(pk=export.pk).values().get()
    assert TOKEN not in repr(row)
    assert sent and TOKEN not in repr(sent)
    assert TOKEN not in caplog.text
    assert TOKEN not in repr(export_status(export))
    assert cache.get(token_key(export.pk)) is None


def test_a_failed_push_keeps_the_zip_and_says_why(
    labelled, owner, hub, settings, django_capture_on_commit_callbacks
):
    settings.HF_ENDPOINT = hub.url
    hub.fail["create"] = 401
    hub.fail["info"] = 401
    with django_capture_on_commit_callbacks(execute=True):
        export = do_queue_export(
            labelled, ExportOptions(repo_id="olivia/mast-labels"), user=owner, token=TOKEN
        )
    export.refresh_from_db()
    status = export_status(export)
    assert status["status"] == "failed" and "token was rejected (401)" in status["error"]
    assert status["download_ready"] and status["commit_url"] == ""
    assert TOKEN not in export.log


def test_a_token_that_expired_before_the_job_ran_fails_clearly(labelled, owner, hub, settings, monkeypatch):
    from annotator.services.exports import do_run_export

    settings.HF_ENDPOINT = hub.url
    monkeypatch.delenv("HF_TOKEN", raising=False)
    export = do_queue_export(labelled, ExportOptions(repo_id="olivia/mast-labels"), user=owner, token=TOKEN)
    cache.delete(token_key(export.pk))  # the TTL ran out while the job waited in the queue
    export = do_run_export(export.pk)
    assert export.status == "failed" and "start the export again" in export.log
    assert not hub.requests
