"""OpenTelemetry (GenAI and OpenInference) and Codex CLI rollouts, from synthetic fixtures."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from traces.importers import codex, detect_format, iter_records, otel
from traces.importers.records import TraceFormatError
from traces.importers.synthetic import otel_document, synthetic_traces, write_codex_rollout, write_otel_json


@pytest.mark.parametrize("convention", ["genai", "openinference"])
def test_otel_groups_spans_by_trace_and_nests_them(tmp_path: Path, convention: str):
    recs = list(synthetic_traces(4, steps=7, seed=9))
    path = tmp_path / "spans.json"
    write_otel_json(recs, path, convention)
    assert detect_format(path) == "otel"
    parsed = list(iter_records(path))
    assert len(parsed) == 4
    for orig, got in zip(recs, parsed, strict=True):
        assert len(got.steps) == 8  # root agent span + one span per step
        root, *children = got.steps
        assert root.parent is None and all(s.parent == 0 for s in children)
        # Spans were written in reverse; steps come back in start-time order.
        assert [s.timestamp for s in children] == sorted(s.timestamp for s in children)
        assert got.task == orig.task and got.model == orig.model and got.system == "synthetic-crew"
        calls = [s for s in children if s.kind == "tool_call"]
        assert [(c.tool_name, c.tool_args) for c in calls] == [
            (s.tool_name, s.tool_args) for s in orig.steps if s.kind == "tool_call"
        ]
        assert sum(s.kind == "error" for s in children) == sum(s.kind == "error" for s in orig.steps)
        msgs = [s for s in children if s.kind == "message"]
        assert msgs and all(s.tokens == 42 for s in msgs)  # 30 in + 12 out, or llm.token_count.total
        assert all(s.duration_ms == 500 for s in children)


def test_otel_jsonl_and_missing_ids(tmp_path: Path):
    docs = [otel_document([r]) for r in synthetic_traces(3, steps=3)]
    for i, d in enumerate(docs):  # distinct trace ids per line
        for s in d["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            s["traceId"] = f"{i:032x}"
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    assert detect_format(path) == "otel"
    assert [r.external_id for r in iter_records(path)] == [f"{i:032x}" for i in range(3)]
    del docs[1]["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"]
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    with pytest.raises(TraceFormatError, match=r"export\.jsonl, line 2, field 'spans\[2\]\.spanId'"):
        list(iter_records(path))


def test_otel_truncated(tmp_path: Path):
    path = tmp_path / "spans.json"
    write_otel_json(synthetic_traces(3, steps=5), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    pattern = r"spans\.json, record \d+: malformed JSON: truncated"
    with pytest.raises(TraceFormatError, match=pattern), open(path, "rb") as fh:
        list(otel.parse(fh, str(path)))


def test_codex_rollout(tmp_path: Path):
    (rec,) = synthetic_traces(1, steps=15, seed=4)
    path = tmp_path / "rollout-2025-09-01.jsonl"
    write_codex_rollout(rec, path, session_id="0199-abc")
    assert detect_format(path) == "codex"
    (got,) = iter_records(path)
    assert got.external_id == "0199-abc" and got.model == rec.model and got.system == "Codex CLI"
    # The injected <environment_context> user message is a step but not the task.
    assert got.steps[0].content.startswith("<environment_context>")
    assert got.task == rec.task
    assert len(got.steps) == len(rec.steps) + 1
    for s in got.steps:
        if s.kind in ("tool_result", "error") and s.tool_call_id:
            assert got.steps[s.parent].tool_call_id == s.tool_call_id
    assert got.metadata["total_tokens"] > 0


def test_codex_errors():
    lines = (
        b'{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}\n'
        b'{"type": "response_item", "payload": 3}\n'
    )
    with pytest.raises(TraceFormatError, match=r"r\.jsonl, line 2, field 'payload': expected an object"):
        list(codex.parse(io.BytesIO(lines), "r.jsonl"))
    with pytest.raises(TraceFormatError, match=r"r\.jsonl, line 2: malformed JSON"):
        list(codex.parse(io.BytesIO(lines.replace(b"3}", b"{")), "r.jsonl"))
