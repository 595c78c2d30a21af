"""The fast import path stores exactly what the careful one did: awkward text survives the COPY text
format, folders go in by the chunk with each file's counts right, the de-duplication key is unchanged,
an unusual step still gets the careful parser's verdict, and the import command starts without loading
what it does not use."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from traces import batching, services
from traces.exports import stored_content_hash
from traces.importers import native
from traces.importers._util import Ctx
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch, Step, Trace

ROOT = Path(__file__).resolve().parent.parent

AWKWARD = "tab\there, new\nline, cr\rreturn, back\\slash, a literal \\N, \\t escaped, é ✓ 🙂"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def awkward_trace() -> dict:
    return {
        "id": "odd\tid\\1",
        "task": AWKWARD,
        "model": "m\\odel",
        "score": 0.25,
        "metadata": {"note": AWKWARD, "nested": {"k": [1, 2.5, None, True]}},
        "steps": [
            {
                "agent": "plan\tner",
                "role": "assistant",
                "content": AWKWARD,
                "timestamp": "2025-01-01T00:00:00Z",
            },
            {
                "kind": "tool_call",
                "agent": "planner",
                "tool_name": "sh\\ell",
                "tool_args": {"cmd": "printf 'a\\tb\\n'", "path": "C:\\dir", "n": 12345678901234567890123},
                "tool_call_id": "c\n1",
                "tokens": 7,
                "duration_ms": 0,
            },
            {"kind": "tool_result", "agent": "tool", "content": "", "parent": 1},
        ],
    }


def test_text_with_tabs_newlines_and_backslashes_is_stored_exactly(db, tmp_path):
    record = awkward_trace()
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    run("import_traces", str(path), "--batch", "odd")
    trace = Trace.objects.get()
    assert (trace.external_id, trace.task, trace.model, trace.score) == (
        "odd\tid\\1",
        AWKWARD,
        "m\\odel",
        0.25,
    )
    assert trace.metadata == record["metadata"]
    assert trace.raw == record
    steps = list(Step.objects.filter(trace=trace).order_by("index"))
    assert [s.content for s in steps] == [AWKWARD, "", ""]
    assert steps[0].agent == "plan\tner"
    assert steps[1].tool_name == "sh\\ell" and steps[1].tool_call_id == "c\n1"
    assert steps[1].tool_args == record["steps"][1]["tool_args"]  # the 23-digit integer stays exact
    assert (steps[1].tokens, steps[1].duration_ms, steps[2].parent_index, steps[2].depth) == (7, 0, 1, 1)
    # The key stored at import is the key of the stored content (what an export brings back).
    assert trace.content_hash == stored_content_hash(trace)


def test_a_folder_of_one_trace_files_goes_in_by_the_chunk_with_each_files_counts(db, tmp_path, monkeypatch):
    monkeypatch.setattr(batching, "TRACES_PER_CHUNK", 3)  # several chunks, each spanning files
    folder = tmp_path / "runs"
    folder.mkdir()
    lines = list(native_lines(synthetic_traces(7, steps=4, seed=5)))
    for i, line in enumerate(lines):
        (folder / f"t{i}.jsonl").write_text(line + "\n")
    (folder / "t7-again.jsonl").write_text(lines[2] + "\n")  # the same trace in a second file
    output = run("import_traces", str(folder), "--batch", "folder")
    batch = Batch.objects.get(name="folder")
    assert batch.trace_count == Trace.objects.count() == 7
    assert batch.step_count == Step.objects.count() == sum(t.step_count for t in Trace.objects.all())
    assert "t7-again.jsonl: native, 0 traces, 0 steps added, 1 already imported" in output
    assert all(f"t{i}.jsonl: native, 1 traces" in output for i in range(7))
    # Each trace's steps belong to it, in order.
    for trace in Trace.objects.all():
        assert list(trace.steps.values_list("index", flat=True)) == list(range(trace.step_count))


def chunk_sizes(monkeypatch) -> list[int]:
    """The number of traces in each chunk the import writes (and in each empty flush, as 0), in order."""
    sizes: list[int] = []
    flush = batching.flush
    monkeypatch.setattr(
        batching, "flush", lambda pending, *rest: (sizes.append(len(pending.items)), flush(pending, *rest))
    )
    return sizes


def test_chunks_start_small_and_double_up_to_their_bound(db, tmp_path, monkeypatch):
    """PostgreSQL starts storing after a few traces; later chunks are larger, so the COPY pauses less often."""
    monkeypatch.setattr(batching, "FIRST_CHUNK_TRACES", 2)
    monkeypatch.setattr(batching, "TRACES_PER_CHUNK", 5)
    sizes = chunk_sizes(monkeypatch)
    source = tmp_path / "many.jsonl"
    source.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(17, steps=3, seed=4))))
    run("import_traces", str(source), "--batch", "grown")
    assert [size for size in sizes if size] == [2, 4, 5, 5, 1]
    assert Trace.objects.count() == 17


def test_a_chunk_is_written_once_its_copy_text_reaches_the_byte_bound(db, tmp_path, monkeypatch):
    monkeypatch.setattr(batching, "BYTES_PER_CHUNK", 1)  # every trace is a chunk of its own
    sizes = chunk_sizes(monkeypatch)
    source = tmp_path / "few.jsonl"
    source.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(3, steps=3, seed=4))))
    run("import_traces", str(source), "--batch", "bytes")
    expected = [1, 1, 1] if connection.vendor == "postgresql" else [3]  # SQLite's rows are not COPY text
    assert [size for size in sizes if size] == expected


def test_a_bad_file_after_full_chunks_leaves_the_database_unchanged(db, tmp_path, monkeypatch):
    monkeypatch.setattr(batching, "TRACES_PER_CHUNK", 2)
    good = tmp_path / "a-good.jsonl"
    good.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(5, steps=3, seed=6))))
    bad = tmp_path / "b-bad.jsonl"
    bad.write_text('{"id": "x", "steps": [{"kind": "telepathy"}]}\n')
    with pytest.raises(CommandError, match=r"b-bad\.jsonl"):
        run("import_traces", str(good), str(bad), "--batch", "mixed")
    assert not Trace.objects.exists() and not Step.objects.exists() and not Batch.objects.exists()


def old_content_hash(record) -> str:
    """content_hash as it was written before the fast path (each step's values as a list): the digests
    already stored in databases were made this way, so de-duplication against them depends on it."""
    identity = {
        "id": record.external_id[:255],
        "task": record.task,
        "system": record.system[:120],
        "model": record.model[:120],
        "benchmark": record.benchmark[:120],
        "outcome": record.outcome,
        "score": record.score,
        "steps": [list(values) for values in services._step_values(record)],
    }
    canonical = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_the_content_key_is_the_same_digest_as_before():
    records = [
        native.from_dict(awkward_trace(), Ctx("odd.jsonl")),
        *synthetic_traces(5, steps=6, seed=11),
    ]
    for record in records:
        assert services.content_hash(record) == old_content_hash(record)


@pytest.mark.parametrize(
    ("step", "field", "message"),
    [
        ({"kind": 3}, "steps[0].kind", "expected a string"),
        ({"content": ["a"]}, "steps[0].content", "expected a string"),
        ({"tokens": True}, "steps[0].tokens", "expected an integer"),
        ({"tokens": 1.5}, "steps[0].tokens", "expected an integer"),
        ({"parent": 0}, "steps[0].parent", "index of another step"),
        ({"colour": "red"}, "steps[0].colour", "unknown field"),
        ({"kind": "telepathy"}, "steps[0].kind", "expected one of"),
    ],
)
def test_an_unusual_step_gets_the_careful_parsers_verdict(step, field, message):
    with pytest.raises(native.TraceFormatError) as error:
        native.from_dict({"id": "t", "steps": [step]}, Ctx("f.jsonl", record=1, line=1))
    assert error.value.field == field and message in error.value.message


def test_a_plain_step_reads_the_same_on_both_paths():
    raw = {
        "kind": "tool_call",
        "agent": "a",
        "role": "assistant",
        "content": "c",
        "tool_name": "t",
        "tool_args": {"x": [1]},
        "tool_call_id": "id",
        "timestamp": "2025-01-01",
        "parent": 1,
        "tokens": 3,
        "duration_ms": 4,
    }
    ctx = Ctx("f.jsonl")
    assert native._plain_step(raw, 0, 2) == native._checked_step(ctx, raw, 0, 2)
    assert native._plain_step({}, 0, 1) == native._checked_step(ctx, {}, 0, 1)


def test_the_import_commands_start_without_the_export_report_and_llm_code():
    """Start-up: no system checks; loading the import commands loads neither Celery (with kombu and redis)
    nor numpy, which a one-trace import never needs; and registering the Celery tasks on the first send
    loads none of the services they call (the export code and pyarrow, the LLM client), while every task is
    still registered by name."""
    code = (
        "import sys, django; django.setup()\n"
        "from django.core.management import load_command_class\n"
        "for name in ('import_traces', 'import_annotations'):\n"
        "    assert load_command_class('annotator', name).requires_system_checks == [], name\n"
        "early = sorted(m for m in ('celery', 'kombu', 'redis', 'numpy') if m in sys.modules)\n"
        "assert not early, early\n"
        "from annotator.services.enqueue import celery_app\n"
        "app = celery_app()\n"
        "assert {'annotator.run_import_job', 'annotator.exports.run', 'annotator.llm.run',\n"
        "        'annotator.jobs.reconcile'} <= set(app.tasks), sorted(app.tasks)\n"
        "heavy = ('pyarrow', 'datasets', 'annotator.llm.client', 'annotator.services.exports')\n"
        "heavy = sorted(m for m in heavy if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
