"""An import of several OpenTelemetry files reads them as one: a trace whose spans are in two files, or whose
GenAI log events are in a file of their own, is one trace; a logs file with nothing to join is refused by name."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from tests.importers.otel_shapes import TRACE, jsonl, openai_v2_run, span, traces_doc
from tests.services import missing
from traces.models import Batch, Trace


def folder(tmp_path, files: dict[str, bytes]):
    root = tmp_path / "export"
    root.mkdir()
    for name, body in files.items():
        (root / name).write_bytes(body)
    return root


@pytest.mark.django_db
def test_spans_and_their_log_events_in_two_files_are_one_trace(tmp_path, capsys):
    spans, logs = openai_v2_run()
    other = json.dumps({"id": "chat-1", "messages": [{"role": "user", "content": "hi"}]}) + "\n"
    root = folder(
        tmp_path,
        {"traces.jsonl": jsonl(spans), "logs.jsonl": jsonl(logs), "chat.jsonl": other.encode()},
    )
    call_command("import_traces", str(root), batch="run")
    trace = Trace.objects.get(external_id=TRACE)
    steps = list(trace.steps.order_by("index").values_list("kind", "role", "content", "tool_name"))
    assert steps == [
        ("observation", "", "", ""),
        ("message", "system", "You are a weather assistant.", ""),
        ("message", "user", "What is the weather in Paris?", ""),
        ("tool_call", "assistant", "", "get_weather"),
        ("tool_result", "tool", "18°C and sunny", "get_weather"),
        ("message", "assistant", "It is 18°C.", ""),
    ]
    assert trace.source_format == "otel" and trace.model == "gpt-4o-mini-2024-07-18"
    assert trace.metadata["files"] == [str(root / "logs.jsonl"), str(root / "traces.jsonl")]
    assert Trace.objects.filter(external_id="chat-1").exists()
    assert Batch.objects.get().trace_count == 2


@pytest.mark.django_db
def test_a_trace_cut_between_two_files_is_one_trace_and_the_same_file_twice_adds_nothing(tmp_path):
    root_span = span("0000000000000001", "agent", None, 0)
    late = span("0000000000000002", "late", "0000000000000001", 1)
    root = folder(tmp_path, {"1.jsonl": jsonl(traces_doc(root_span)), "2.jsonl": jsonl(traces_doc(late))})
    (root / "2-copy.jsonl").write_bytes((root / "2.jsonl").read_bytes())  # a batch the exporter sent twice
    call_command("import_traces", str(root), batch="run")
    (trace,) = Trace.objects.all()
    assert list(trace.steps.order_by("index").values_list("agent", "parent_index")) == [
        ("agent", None),
        ("late", 0),
    ]


@pytest.mark.django_db
def test_a_logs_file_with_nothing_to_join_is_refused_naming_it(tmp_path):
    _, logs = openai_v2_run()
    unrelated = span("0000000000000001", "agent", None, 0, trace="a" * 32)
    root = folder(tmp_path, {"logs.jsonl": jsonl(logs), "spans.jsonl": jsonl(traces_doc(unrelated))})
    with pytest.raises(CommandError) as raised:
        call_command("import_traces", str(root), batch="run")
    assert (
        f"{root / 'logs.jsonl'}, record 1: 8 OpenTelemetry log records (GenAI events) have nothing to join: the "
        f"import holds no spans for 1 of their traces (first: trace {TRACE})"
    ) in str(raised.value), str(raised.value)
    assert not Trace.objects.exists() and not Batch.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_group_is_read_beside_a_parallel_import(tmp_path):
    """Over a megabyte of other files goes to worker processes; the OpenTelemetry files are still read as one."""
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    spans, logs = openai_v2_run()
    pad = "".join(
        json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": "x" * 2000}]}) + "\n"
        for i in range(600)
    )
    root = folder(tmp_path, {"pad.jsonl": pad.encode(), "t.jsonl": jsonl(spans), "l.jsonl": jsonl(logs)})
    call_command("import_traces", str(root), batch="run")
    assert Trace.objects.count() == 601
    assert Trace.objects.get(external_id=TRACE).steps.count() == 6
