"""Formats fail loudly: a forced format that does not fit the file, an empty file, or a file that yields no
trace is an error (exit 2 on the command line, a per-file error on the page) naming what the parser expected
and what it found; detection still picks the right format on its own."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import ImportJob
from traces.importers import iter_records
from traces.importers.records import TraceFormatError
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch, Trace

WHO_AND_WHEN = {
    "history": [{"content": "Find the answer.", "role": "human"}, {"content": "On it.", "role": "WebSurfer"}],
    "question": "q",
    "mistake_agent": "WebSurfer",
    "mistake_step": "1",
    "mistake_reason": "gave up",
}


def who_and_when_file(tmp_path: Path) -> Path:
    path = tmp_path / "22.json"
    path.write_text(json.dumps(WHO_AND_WHEN))
    return path


def native_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(2, steps=3))))
    return path


def import_traces(*args: str) -> str:
    out = StringIO()
    call_command("import_traces", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_forcing_tau2_bench_on_a_who_and_when_file_fails_naming_both(db, tmp_path):
    path = who_and_when_file(tmp_path)
    with pytest.raises(CommandError) as error:
        import_traces(str(path), "--batch", "wrong", "--format", "tau2_bench")
    assert error.value.returncode == 2
    message = str(error.value)
    assert "22.json" in message and "expected tau2_bench" in message and "who_and_when" in message
    assert not Trace.objects.exists() and not Batch.objects.filter(name="wrong").exists()


@pytest.mark.parametrize("forced", ["inspect_ai", "mast_labelled", "tau2_bench", "who_and_when", "otel"])
def test_any_wrong_forced_format_on_a_native_file_is_an_error(tmp_path, forced):
    with pytest.raises(TraceFormatError, match=rf"wrong format: expected {forced} .* found .*native"):
        list(iter_records(native_file(tmp_path), forced))


def test_detection_still_reads_the_file_without_a_format(db, tmp_path):
    output = import_traces(str(who_and_when_file(tmp_path)), "--batch", "ok")
    assert "who_and_when, 1 traces" in output


def test_a_forced_format_that_yields_no_trace_is_an_error(tmp_path):
    # A shape no format recognises: the forced parser runs, finds nothing, and says what it found.
    path = tmp_path / "list.json"
    path.write_text("[]")
    with pytest.raises(TraceFormatError, match=r"no traces found: expected openai_chat .*found a JSON list"):
        list(iter_records(path, "openai_chat"))


def test_a_recognised_file_with_no_traces_in_it_is_an_error(db, tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": []}))
    with pytest.raises(CommandError, match=r"no traces found: expected tau2_bench .* no traces in it"):
        import_traces(str(path), "--batch", "none")
    assert not Batch.objects.filter(name="none").exists()


@pytest.mark.parametrize("forced", [None, "native", "who_and_when"])
def test_an_empty_file_says_it_is_empty(db, tmp_path, forced):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    args = [str(path), "--batch", "e"] + (["--format", forced] if forced else [])
    with pytest.raises(CommandError) as error:
        import_traces(*args)
    assert error.value.returncode == 2
    message = str(error.value)
    assert "empty.jsonl: the file is empty" in message
    assert "explicitly" not in message and "--format" not in message  # not command-line wording
    assert not Trace.objects.exists()


def test_the_upload_page_reports_a_wrong_format_per_file(
    client, project, owner, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    upload = SimpleUploadedFile("22.json", json.dumps(WHO_AND_WHEN).encode())
    empty = SimpleUploadedFile("empty.jsonl", b"")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/p/{project.slug}/import/",
            {"batch": "b", "format": "tau2_bench", "files": [upload, empty]},
            HTTP_HX_REQUEST="true",
        )
    job = ImportJob.objects.get()
    assert job.status == "failed"
    errors = {e["file"]: e["error"] for e in job.errors}
    assert "expected tau2_bench" in errors["22.json"] and "who_and_when" in errors["22.json"]
    assert errors["empty.jsonl"].endswith("the file is empty: there are no traces in it")
    assert all("/" not in e.split(":")[0] for e in errors.values())  # the display name, never a server path


def test_import_annotations_fails_loudly_too(project, tmp_path):
    path = native_file(tmp_path)
    with pytest.raises(CommandError, match=r"wrong format: expected who_and_when .* found .*native") as error:
        call_command("import_annotations", str(path), "--project", project.slug, "--format", "who_and_when")
    assert error.value.returncode == 2
    empty = tmp_path / "labels.jsonl"
    empty.write_text("")
    with pytest.raises(CommandError, match=r"labels\.jsonl: the file is empty"):
        call_command("import_annotations", str(empty), "--project", project.slug)
