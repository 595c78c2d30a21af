"""Every string a label import stores is one the database can hold: a NUL (raw or escaped) or a lone
surrogate in a label file (rater, note, mode, evidence note, attribution) refuses the import with an error
naming file, line or record, and field, through the command line and the API, on SQLite and PostgreSQL.
Nothing is imported. A NUL typed on an import command's line is a clear error too, never a traceback."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from annotator.models import Annotation, Assignment
from tests.factories import BatchFactory, trace_with_steps
from tests.services import missing
from traces.models import Batch, Trace

NUL, ESCAPED_NUL, SURROGATE = "a\x00b", "\\u0000", "a\ud800b"


def line(where: str, text: str) -> dict:
    """A JSONL label line holding `text` in the place `where` names."""
    label = {"mode": "FM-1.3", "steps": [1], "note": "ok"}
    record = {"trace": "t0", "annotator": "a1", "labels": [label], "note": "fine"}
    if where == "annotator":
        record["annotator"] = text
    elif where == "note":
        record["note"] = text
    elif where == "labels[0].mode":
        label["mode"] = text
    elif where == "labels[0].note":
        label["note"] = text
    elif where == "labels[0].attribution.agent":
        label["attribution"] = {"agent": text, "step": 1, "reason": "r"}
    elif where == "labels[0].attribution.reason":
        label["attribution"] = {"agent": "WebSurfer", "step": 1, "reason": text}
    return record


PLACES = [
    "annotator",
    "note",
    "labels[0].mode",
    "labels[0].note",
    "labels[0].attribution.agent",
    "labels[0].attribution.reason",
]


def labels_file(tmp_path, *records: dict, name: str = "labels.jsonl"):
    path = tmp_path / name
    path.write_bytes("".join(json.dumps(r) + "\n" for r in records).encode())
    return path


def traces_in(project) -> None:
    batch = BatchFactory(name="runs")
    project.batches.add(batch)
    for n in range(2):
        trace_with_steps(3, batch=batch, external_id=f"t{n}")


def cli_error(project, path) -> str:
    with pytest.raises(CommandError) as raised:
        call_command("import_annotations", str(path), project=project.slug, ignore_unknown_modes=True)
    return str(raised.value)


def nothing_written() -> bool:
    imported = get_user_model().objects.filter(username__contains="/")
    return not Annotation.objects.exists() and not Assignment.objects.exists() and not imported.exists()


@pytest.mark.parametrize("where", PLACES)
@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["nul", "surrogate"])
def test_the_command_refuses_an_unstorable_label_naming_file_line_and_field(tmp_path, project, where, text):
    traces_in(project)
    good = {"trace": "t1", "annotator": "a1", "no_failure": True}
    message = cli_error(project, labels_file(tmp_path, good, line(where, text)))
    assert f"labels.jsonl, line 2, field '{where}': " in message
    assert ("NUL character (U+0000)" if text == NUL else "lone surrogate (U+D800)") in message
    assert "Internal error" not in message
    assert nothing_written()  # the good first line too: all or nothing


def test_an_escaped_nul_in_the_file_is_refused_and_the_spelled_escape_is_kept(tmp_path, project):
    traces_in(project)
    path = tmp_path / "labels.jsonl"
    # The file's text holds JSON's escape \u0000 (a NUL once parsed) in the note.
    path.write_bytes(b'{"trace": "t0", "annotator": "a1", "no_failure": true, "note": "x\\u0000"}\n')
    assert "line 1, field 'note': holds a NUL character" in cli_error(project, path)
    assert nothing_written()
    # Six characters that spell the escape (a backslash, then u0000) are ordinary text.
    labels_file(tmp_path, {"trace": "t0", "annotator": "a1", "no_failure": True, "note": ESCAPED_NUL})
    call_command("import_annotations", str(path), project=project.slug)
    assert Annotation.objects.get().note == ESCAPED_NUL


def test_a_key_in_an_attribution_is_named_by_the_file(tmp_path, project):
    traces_in(project)
    record = line("labels[0].attribution.reason", "r")
    record["labels"][0]["attribution"] = {"agent": "x", "step": 1, NUL: 1}
    message = cli_error(project, labels_file(tmp_path, record))
    # The JSONL reader refuses an unknown attribution key before the string is looked at: still by line.
    assert "labels.jsonl, line 1, field 'labels[0].attribution'" in message
    assert nothing_written()


def test_labels_inside_a_trace_file_are_refused_by_record_and_field(tmp_path, project):
    """A native trace file's labels (matched to traces already imported) go through the same rule."""
    trace = {"id": "run-1", "task": "t", "steps": [{"kind": "message", "content": "hi"}]}
    clean = tmp_path / "runs.jsonl"
    clean.write_text(json.dumps(trace) + "\n")
    call_command("import_traces", str(clean), batch="runs", project=project.slug)
    labelled = tmp_path / "labelled.jsonl"
    note = {"annotator": "a1", "labels": [{"mode": "FM-1.3", "steps": [0], "note": SURROGATE}]}
    labelled.write_text(json.dumps({**trace, "annotations": [note]}) + "\n")
    message = cli_error(project, labelled)
    assert "labelled.jsonl, line 1, field 'annotations[0].labels[0].note': holds a lone surrogate" in message
    assert not Annotation.objects.exists()


def test_the_api_answers_400_naming_file_line_and_field(client, tmp_path, project, owner):
    traces_in(project)
    client.force_login(owner)
    body = json.dumps(line("labels[0].note", NUL)).encode()
    response = client.post(
        f"/api/projects/{project.slug}/label-imports/",
        {"files": [SimpleUploadedFile("labels.jsonl", body, content_type="application/jsonl")]},
    )
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert detail.startswith("Nothing imported: labels.jsonl, line 1, field 'labels[0].note': holds a NUL")
    assert "Internal error" not in detail and "/tmp" not in detail
    assert nothing_written()


@pytest.mark.parametrize("text", [NUL, "b\udcff"], ids=["nul", "argv-bytes-not-utf8"])
def test_a_batch_name_the_database_cannot_hold_is_a_clear_error(tmp_path, project, text):
    """A NUL reaches a command through call_command; a lone surrogate through argv bytes that are not UTF-8."""
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"id": "r", "steps": [{"kind": "message", "content": "hi"}]}) + "\n")
    with pytest.raises(CommandError) as raised:
        call_command("import_traces", str(path), batch=text, project=project.slug)
    assert str(raised.value).startswith("Nothing imported: --batch holds a ")
    with pytest.raises(CommandError, match="--map-rater holds a "):
        call_command("import_traces", str(path), batch="b", map_rater=[f"{text}=alice"])
    assert not Trace.objects.exists() and not Batch.objects.exists()


@pytest.mark.parametrize("option", ["project", "map_rater"])
def test_a_nul_typed_for_import_annotations_is_a_clear_error(tmp_path, project, option):
    path = labels_file(tmp_path, {"trace": "t0", "annotator": "a1", "no_failure": True})
    options = {"project": project.slug, option: NUL if option == "project" else [f"{NUL}=alice"]}
    with pytest.raises(CommandError, match=f"--{option.replace('_', '-')} holds a NUL"):
        call_command("import_annotations", str(path), **options)


def test_a_nul_in_an_uploaded_file_name_never_reaches_the_import(client, project, owner):
    """Django's multipart reader drops a NUL from a file name (the guard, annotator.middleware, would
    refuse one that came through): the import names the file without it."""
    client.force_login(owner)
    upload = SimpleUploadedFile("a\x00b.jsonl", b"{}\n", content_type="application/jsonl")
    response = client.post(f"/api/projects/{project.slug}/label-imports/", {"files": [upload]})
    assert response.status_code == 400
    assert response.json()["detail"].startswith("Nothing imported: ab.jsonl: ")


@pytest.mark.postgres
@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["nul", "surrogate"])
def test_postgres_refuses_every_place_before_writing(tmp_path, project, text):
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    traces_in(project)
    for where in PLACES:
        message = cli_error(project, labels_file(tmp_path, line(where, text)))
        assert f"labels.jsonl, line 1, field '{where}': " in message
        assert nothing_written()
    with pytest.raises(CommandError, match="--batch holds a "):
        call_command("import_traces", str(tmp_path / "labels.jsonl"), batch=text)


@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["nul", "surrogate"])
def test_a_value_the_database_refuses_still_names_the_data_not_internal_error(
    client, tmp_path, project, owner, monkeypatch, text
):
    """Defence in depth: were the check missing, the database's refusal is the file's error (CLI and API),
    never a traceback or a 500. SQLite stores a NUL, so that case needs PostgreSQL."""
    if text == NUL and connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    from traces.importers import storable

    monkeypatch.setattr(storable, "check_annotation", lambda *args, **kwargs: None)
    traces_in(project)
    message = cli_error(project, labels_file(tmp_path, line("note", text)))
    assert message.startswith("Nothing imported: the database refused a value: ")
    client.force_login(owner)
    body = json.dumps(line("labels[0].note", text)).encode()
    response = client.post(
        f"/api/projects/{project.slug}/label-imports/",
        {"files": [SimpleUploadedFile("labels.jsonl", body, content_type="application/jsonl")]},
    )
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith("Nothing imported: the database refused a value: ")
    assert nothing_written()


def test_two_primary_labels_in_one_record_are_refused_by_line(tmp_path, project):
    """An annotation has at most one primary failure: a file that marks two is told so (it was an
    IntegrityError, a 500 through the API)."""
    traces_in(project)
    labels = [{"mode": "FM-1.3", "primary": True}, {"mode": "FM-2.1", "primary": True}]
    message = cli_error(project, labels_file(tmp_path, {"trace": "t0", "annotator": "a1", "labels": labels}))
    assert "labels.jsonl, line 1: annotator 'a1' marks 2 labels primary (FM-1.3, FM-2.1)" in message
    assert nothing_written()


def test_two_primary_labels_inside_a_trace_file_fail_the_trace_import_by_name(tmp_path, project):
    """The same refusal when the labels come with the traces (import_traces --project, the page, the API)."""
    labels = [{"mode": "FM-1.3", "primary": True}, {"mode": "FM-2.1", "primary": True}]
    trace = {"id": "run-1", "steps": [{"kind": "message", "content": "hi"}]}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({**trace, "annotations": [{"annotator": "a1", "labels": labels}]}) + "\n")
    with pytest.raises(CommandError) as raised:
        call_command("import_traces", str(path), batch="runs", project=project.slug)
    assert "runs.jsonl, trace 'run-1': annotator 'a1' marks 2 labels primary" in str(raised.value)
    assert not Trace.objects.exists() and nothing_written()


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"note": {"a": 1}}, "note"),
        ({"labels": [{"mode": "FM-1.3", "note": ["why"]}]}, "labels[0].note"),
        ({"confidence": True}, "confidence"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_rather_than_stored_as_its_python_text(
    tmp_path, project, record, field
):
    """A note given as an object was stored as "{'a': 1}", and a confidence of true as 1: invented text."""
    traces_in(project)
    body = {"trace": "t0", "annotator": "a1", "labels": [{"mode": "FM-1.3"}], **record}
    message = cli_error(project, labels_file(tmp_path, body))
    assert "labels.jsonl" in message and "line 1" in message and field in message
    assert nothing_written()
