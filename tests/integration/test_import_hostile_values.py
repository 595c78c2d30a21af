"""On a real worker (started by .ci/run, PostgreSQL): a file holding a string the database cannot store, or
reusing a trace id of another file of the import, fails its job with an error naming file, record and
field, never "Internal error", and the worker imports the next job."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_import_worker import queue_files, wait_for_job
from tests.services import require_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def jsonl(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_unstorable_strings_and_ids_across_files_fail_their_jobs_by_name(project, owner):
    require_worker()
    from traces.models import Trace

    def queue(batch: str, **files: bytes):
        named = {name.replace("_", "."): body for name, body in files.items()}
        return wait_for_job(queue_files(project, owner, batch, named).pk)

    step = {"kind": "tool_call", "content": "c", "tool_name": "run", "tool_args": {"a\x00b": 1}}
    nul = queue("nul", run_jsonl=jsonl({"id": "ok", "steps": []}, {"id": "x", "steps": [step]}))
    surrogate = queue("surrogate", run_jsonl=jsonl({"id": "y", "task": "a\ud800", "steps": []}))
    twice = queue(
        "twice",
        a_jsonl=jsonl({"id": "t1", "steps": [{"kind": "message", "content": "one"}]}),
        b_jsonl=jsonl({"id": "t1", "steps": [{"kind": "message", "content": "two"}]}),
    )
    for job in (nul, surrogate, twice):
        assert job.status == "failed" and "Internal error" not in job.error, job.error
    assert nul.errors[0]["file"] == "run.jsonl"
    assert "line 2, field 'steps[0].tool_args': the key" in nul.errors[0]["error"]
    assert "line 1, field 'task': holds a lone surrogate" in surrogate.errors[0]["error"]
    assert twice.errors == [
        {
            "file": "b.jsonl",
            "error": "b.jsonl, line 1: duplicate trace id 't1': the file a.jsonl of this import holds a "
            "different trace with this id; every trace in an import needs its own id (identical traces "
            "are skipped as duplicates)",
        }
    ]
    assert not Trace.objects.exists()
    good = queue("good", run_jsonl=jsonl({"id": "fine", "steps": [{"kind": "message", "content": "ok"}]}))
    assert good.status == "succeeded" and Trace.objects.count() == 1
