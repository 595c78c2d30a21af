"""Every string an import stores is one the database can hold: a NUL (raw or escaped) or a lone surrogate
anywhere in a record refuses the import with an error naming file, record and field, through the command
line, the upload page (Celery eager) and the API, on SQLite and on PostgreSQL (whose text and jsonb cannot
hold U+0000). Nothing is imported, and no import ends in "Internal error"."""

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
from traces.models import Batch, Step, Trace

GOOD = {"id": "fine", "task": "t", "steps": [{"kind": "message", "content": "ok"}]}


def bad(where: str, text: str) -> dict:
    """A native record holding `text` in the place `where` names (as the issue's table lists them)."""
    step = {"kind": "tool_call", "content": "c", "tool_name": "run", "tool_args": {"cmd": "ls"}}
    record = {"id": "bad", "task": "t", "metadata": {"k": "v"}, "steps": [step]}
    if where == "content":
        step["content"] = text
    elif where == "metadata key":
        record["metadata"] = {text: "v"}
    elif where == "metadata value":
        record["metadata"] = {"k": ["x", {"deep": text}]}
    elif where == "tool name":
        step["tool_name"] = text
    elif where == "tool-argument key":
        step["tool_args"] = {text: "ls"}
    elif where == "id":
        record["id"] = text
    elif where == "task":
        record["task"] = text
    return record


PLACES = ["content", "metadata key", "metadata value", "tool name", "tool-argument key", "id", "task"]
# As the file spells them: JSON escapes (json.dumps writes "\u0000" and "\ud800").
NUL, SURROGATE = "a\x00b", "a\ud800b"


def jsonl(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def cli_error(tmp_path, body: bytes, name: str = "run.jsonl") -> str:
    path = tmp_path / name
    path.write_bytes(body)
    with pytest.raises(CommandError) as raised:
        call_command("import_traces", str(path), batch="b")
    return str(raised.value)


@pytest.mark.django_db
@pytest.mark.parametrize("where", PLACES)
@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["nul", "surrogate"])
def test_the_command_refuses_an_unstorable_string_naming_file_line_and_field(tmp_path, where, text):
    message = cli_error(tmp_path, jsonl(GOOD, bad(where, text)))
    assert "run.jsonl, line 2, field " in message
    assert ("NUL character (U+0000)" if text == NUL else "lone surrogate (U+D800)") in message
    assert "Internal error" not in message
    assert not Trace.objects.exists() and not Batch.objects.exists()  # all or nothing


@pytest.mark.django_db
def test_the_field_is_named_as_the_file_names_it(tmp_path):
    message = cli_error(tmp_path, jsonl(bad("tool-argument key", NUL)))
    assert "field 'steps[0].tool_args': the key \"a\u2400b\" holds a NUL character" in message
    message = cli_error(tmp_path, jsonl(bad("metadata value", SURROGATE)))
    assert "field 'metadata.k[1].deep': holds a lone surrogate" in message


@pytest.mark.django_db
def test_a_nul_inside_json_found_in_a_field_is_refused_too(tmp_path):
    """OpenAI chat tool arguments are JSON inside a string: the NUL is escaped twice in the file."""
    arguments = json.dumps({"path": NUL})
    record = {
        "id": "chat-1",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "function": {"name": "read", "arguments": arguments}}],
            },
        ],
    }
    message = cli_error(tmp_path, jsonl(record), "chat.jsonl")
    assert "chat.jsonl, line 1, field 'steps[1].tool_args.path': holds a NUL character" in message


@pytest.mark.django_db
def test_text_that_only_spells_an_escape_is_kept_as_written(tmp_path):
    """Six characters `\\u0000` in a step (code that talks about NUL) are ordinary text."""
    path = tmp_path / "ok.jsonl"
    record = {"id": "code", "steps": [{"kind": "message", "content": "use '\\u0000' to end a C string"}]}
    path.write_bytes(jsonl(record))
    call_command("import_traces", str(path), batch="b")
    assert Step.objects.get().content == "use '\\u0000' to end a C string"


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("where", PLACES)
def test_postgres_refuses_every_place_on_the_copy_path_and_in_worker_processes(tmp_path, where):
    """The same refusal on PostgreSQL, on the COPY path (one process) and in the import's worker processes
    (a file large enough to be parsed in parallel)."""
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    message = cli_error(tmp_path, jsonl(GOOD, bad(where, NUL)))
    assert "run.jsonl, line 2, field " in message and "NUL character" in message
    # Over a megabyte: cut into pieces parsed by worker processes (traces.import_pool).
    padding = [{"id": f"pad-{i}", "steps": [{"kind": "message", "content": "x" * 2000}]} for i in range(600)]
    message = cli_error(tmp_path, jsonl(*padding, bad(where, SURROGATE)), "big.jsonl")
    assert "big.jsonl, line 601, field " in message and "lone surrogate" in message
    assert not Trace.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_value_the_database_refuses_still_names_the_files(tmp_path, monkeypatch):
    """Defence in depth: were the check missing, PostgreSQL's refusal is reported as the files' error,
    not a traceback."""
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    from traces.importers import storable

    monkeypatch.setattr(storable, "text_may_be_unstorable", lambda data: False)
    message = cli_error(tmp_path, jsonl(GOOD, bad("metadata value", NUL)))
    assert "run.jsonl: the database refused a value" in message
    assert not Trace.objects.exists()


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def upload(body: bytes, name: str = "run.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, body, content_type="application/jsonl")


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain form"])
def test_the_upload_page_shows_the_error_instead_of_a_500(client, project, owner, committed, htmx):
    client.force_login(owner)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    with committed():
        response = client.post(
            f"/p/{project.slug}/import/",
            {"batch": "b", "files": [upload(jsonl(GOOD, bad("tool name", NUL)))]},
            **headers,
        )
    assert response.status_code == 200
    job = ImportJob.objects.get()
    assert job.status == "failed" and "Internal error" not in job.error
    [error] = job.errors
    assert error["file"] == "run.jsonl" and "line 2, field 'steps[0].tool_name'" in error["error"]
    page = client.get(f"/p/{project.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "steps[0].tool_name" in page and "NUL character" in page
    assert not Trace.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain form"])
def test_the_eager_upload_answers_with_the_error_at_once(client, project, owner, htmx):
    """With real commits the eager task runs inside the request: its answer already shows the failure."""
    client.force_login(owner)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = client.post(
        f"/p/{project.slug}/import/",
        {"batch": "b", "files": [upload(jsonl(bad("metadata key", SURROGATE)))]},
        **headers,
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "failed" in page and "run.jsonl" in page and "lone surrogate (U+D800)" in page
    assert "queued" not in page.split("Recent imports")[0]


def test_the_api_job_fails_naming_file_record_and_field(client, project, owner, committed):
    auth = {"HTTP_AUTHORIZATION": f"Token {api_token(owner)}"}
    with committed():
        response = client.post(
            f"/api/projects/{project.slug}/imports/",
            {"batch": "api", "files": [upload(jsonl(bad("id", NUL)))]},
            **auth,
        )
    assert response.status_code == 202
    status = client.get(f"/api/projects/{project.slug}/imports/{response.json()['id']}/", **auth).json()
    assert status["status"] == "failed" and "Internal error" not in status["error"]
    assert status["errors"] == [
        {
            "file": "run.jsonl",
            "error": "run.jsonl, line 1, field 'id': holds a NUL character (U+0000), which the database "
            "cannot store; remove it from the file, or replace it, and import again",
        }
    ]


@pytest.mark.django_db
def test_a_parsers_slip_on_an_unexpected_value_is_an_error_naming_the_record(tmp_path, monkeypatch):
    """A value a parser did not expect must still end in an error naming file and record, not a traceback
    (and, in a job, not "Internal error")."""
    from traces.importers import native

    parse = native.parse

    def slipping(stream, filename, **options):
        records = parse(stream, filename, **options)
        yield next(records)
        raise TypeError("'int' object is not subscriptable")

    monkeypatch.setattr(native, "parse", slipping)
    message = cli_error(tmp_path, jsonl(GOOD, bad("task", "plain")))
    assert "run.jsonl, record 2: the record could not be read (TypeError: 'int' object" in message
    assert not Trace.objects.exists()


def test_labels_that_come_with_the_data_are_held_to_the_same_rule(tmp_path, project):
    """A rater's name or a label's note is stored by the project's import of the labels: checked too."""
    record = {
        "id": "labelled",
        "steps": [{"kind": "message", "content": "ok"}],
        "annotations": [{"annotator": "rater\x00one", "labels": [{"mode": "1.1", "note": "n"}]}],
    }
    path = tmp_path / "labelled.jsonl"
    path.write_bytes(jsonl(record))
    with pytest.raises(CommandError) as raised:
        call_command("import_traces", str(path), batch="b", project=project.slug)
    assert "labelled.jsonl, line 1, field 'annotations[0].annotator': holds a NUL character" in str(
        raised.value
    )
    assert not Trace.objects.exists()
