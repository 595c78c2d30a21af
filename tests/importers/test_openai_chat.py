"""OpenAI chat transcripts and tau-bench result files."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.importers.conftest import need, truncate
from traces.importers import detect_format, iter_records, openai_chat
from traces.importers.records import TraceFormatError
from traces.importers.synthetic import synthetic_traces, write_openai_chat_jsonl

TAU = "tau_bench/gpt-4o-airline.subset27.json"


@pytest.fixture
def tau_file(datasets_dir: Path) -> Path:
    return need(datasets_dir / TAU)


def test_tau_bench_counts_and_outcomes(tau_file: Path):
    records = list(iter_records(tau_file))
    assert detect_format(tau_file) == "openai_chat"
    assert len(records) == 27
    # 735 steps, counted from the messages by hand: 27 system + 199 user + 183 assistant turns with
    # text (172 text-only + 11 that also call tools) + 163 tool calls + 163 tool results.
    assert sum(len(r.steps) for r in records) == 735
    kinds = Counter(s.kind for r in records for s in r.steps)
    assert kinds == {"message": 409, "tool_call": 163, "tool_result": 163}
    # PROVENANCE.md: 14 results with reward 1.0, 13 with 0.0, in this order of task/trial.
    assert Counter(r.outcome for r in records) == {"success": 14, "failure": 13}
    assert [r.external_id for r in records[:3]] == ["5-0", "6-0", "15-0"]
    assert records[1].score == 1.0 and records[0].score == 0.0
    assert all(r.benchmark == "tau-bench" for r in records)
    first = records[0]
    assert first.task.startswith("You are omar_rossi_1241.")
    assert first.metadata["info"]["source"] and "reward_info" in first.metadata["info"]
    # Every tool result points back at the call with the same id.
    for r in records:
        for s in r.steps:
            if s.kind == "tool_result":
                assert r.steps[s.parent].tool_call_id == s.tool_call_id


def test_tau_bench_tool_call_arguments_are_parsed(tau_file: Path):
    rec = next(iter(iter_records(tau_file)))
    call = next(s for s in rec.steps if s.kind == "tool_call")
    assert isinstance(call.tool_args, dict) and call.tool_name and call.tool_call_id.startswith("call_")


def test_tau_bench_truncated(tau_file: Path, tmp_path: Path):
    cut = truncate(tau_file, tmp_path / "tau.json")
    with pytest.raises(TraceFormatError) as err:
        list(iter_records(cut, "openai_chat"))
    assert str(err.value).startswith(f"{cut}, record ")
    assert "truncated JSON" in str(err.value)


def test_tau_bench_corrupted_record_names_the_field(tau_file: Path, tmp_path: Path):
    records = json.loads(tau_file.read_text())
    records[3]["traj"][2]["role"] = 17
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    with pytest.raises(
        TraceFormatError, match=r"bad\.json, record 4, field 'traj\[2\]\.role': expected a string"
    ):
        list(iter_records(bad, "openai_chat"))


def test_messages_jsonl_with_tool_calls(tmp_path: Path):
    path = tmp_path / "chat.jsonl"
    recs = list(synthetic_traces(6, steps=10, seed=5))
    write_openai_chat_jsonl(recs, path)
    assert detect_format(path) == "openai_chat"
    parsed = list(iter_records(path))
    assert [p.external_id for p in parsed] == [r.external_id for r in recs]
    for orig, got in zip(recs, parsed, strict=True):
        calls = [s for s in orig.steps if s.kind == "tool_call"]
        got_calls = [s for s in got.steps if s.kind == "tool_call"]
        assert [(c.tool_name, c.tool_args, c.tool_call_id) for c in got_calls] == [
            (c.tool_name, c.tool_args, c.tool_call_id) for c in calls
        ]
        assert got.outcome == (orig.outcome if orig.score is not None else "unknown")


def test_message_with_text_and_two_calls_and_json_array_input():
    doc = [
        {
            "messages": [
                {"role": "system", "content": "be nice"},
                {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
                {
                    "role": "assistant",
                    "content": "checking",
                    "reasoning_content": "need the tool",
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "get", "arguments": '{"city": "Oslo"}'},
                        },
                        {"id": "b", "type": "function", "function": {"name": "get", "arguments": "not json"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "b", "content": "rain"},
            ],
            "model": "gpt-4o",
        }
    ]
    (rec,) = openai_chat.parse(io.BytesIO(json.dumps(doc).encode()), "chats.json")
    assert [s.kind for s in rec.steps] == [
        "message",
        "message",
        "reasoning",
        "message",
        "tool_call",
        "tool_call",
        "tool_result",
    ]
    assert rec.steps[4].tool_args == {"city": "Oslo"} and rec.steps[5].tool_args == "not json"
    assert rec.steps[6].parent == 5 and rec.task == "weather?" and rec.model == "gpt-4o"
    assert rec.external_id == "chats-1"


def test_missing_messages_is_a_field_error():
    with pytest.raises(
        TraceFormatError, match=r"x\.jsonl, line 2, field 'messages': required field is missing"
    ):
        list(openai_chat.parse(io.BytesIO(b'{"messages": []}\n{"id": 1}\n'), "x.jsonl"))
