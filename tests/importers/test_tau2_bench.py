"""tau2-bench results: simulations streamed from one big object, tasks looked up by id."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.importers.conftest import need, truncate
from traces.importers import detect_format, iter_records, tau2_bench
from traces.importers.records import TraceFormatError

FILE = "tau2_bench/gpt-4.1_retail_defautl_gpt-4.1_1trials.json"


@pytest.fixture(scope="module")
def records(datasets_dir: Path) -> list:
    return list(iter_records(need(datasets_dir / FILE)))


def test_counts_outcomes_and_model(records: list, datasets_dir: Path):
    assert detect_format(datasets_dir / FILE) == "tau2_bench"
    assert len(records) == 40
    # 1178 = 290 user + 290 assistant text turns + 299 tool calls + 299 tool messages
    # (12 of which carry error=true and become "error" steps).
    assert sum(len(r.steps) for r in records) == 1178
    kinds = Counter(s.kind for r in records for s in r.steps)
    assert kinds == {"message": 580, "tool_call": 299, "tool_result": 287, "error": 12}
    # PROVENANCE.md: reward 1.0 on 34 tasks, 0.0 on 6.
    assert Counter(r.outcome for r in records) == {"success": 34, "failure": 6}
    assert {r.model for r in records} == {"gpt-4.1"}
    assert {r.benchmark for r in records} == {"tau2-bench/retail"}
    assert {r.metadata["termination_reason"] for r in records} == {"user_stop"}


def test_task_text_and_links(records: list):
    first = records[0]
    assert first.external_id == "40-0"
    assert first.task.startswith("You want to know how much balance does your gift card have.")
    for r in records:
        for s in r.steps:
            if s.kind in ("tool_result", "error"):
                assert r.steps[s.parent].tool_call_id == s.tool_call_id
    assert first.steps[2].timestamp.startswith("2025-08-01T16:16:")


def test_truncated(datasets_dir: Path, tmp_path: Path):
    cut = truncate(need(datasets_dir / FILE), tmp_path / "tau2.json")
    with pytest.raises(TraceFormatError) as err:
        list(iter_records(cut, "tau2_bench"))
    assert str(err.value).startswith(f"{cut}, record ") and "truncated JSON" in str(err.value)


def test_corrupted_simulation_names_the_field():
    doc = {
        "info": {},
        "tasks": [{"id": "1", "description": "d"}],
        "simulations": [
            {"task_id": "1", "messages": [], "reward_info": {"reward": 1}},
            {"task_id": "1", "messages": "oops"},
        ],
    }
    stream = io.BytesIO(json.dumps(doc).encode())
    with pytest.raises(
        TraceFormatError, match=r"r\.json, record 2, field 'simulations\[1\]\.messages': expected a list"
    ):
        list(tau2_bench.parse(stream, "r.json"))


def test_tool_results_carry_the_name_of_the_tool_they_answer():
    # tau2 names the tool only on the assistant's call; its answer must still say which tool spoke.
    doc = {
        "info": {},
        "tasks": [{"id": "1", "description": "d"}],
        "simulations": [
            {
                "task_id": "1",
                "messages": [
                    {"role": "assistant", "tool_calls": [{"id": "c1", "name": "get_order", "arguments": {}}]},
                    {"role": "tool", "id": "c1", "content": "{}"},
                ],
            }
        ],
    }
    (rec,) = tau2_bench.parse(io.BytesIO(json.dumps(doc).encode()), "r.json")
    _call, answer = rec.steps
    assert (answer.kind, answer.tool_name, answer.agent, answer.parent) == (
        "tool_result",
        "get_order",
        "tool",
        0,
    )


def test_real_tool_results_are_named(records: list):
    answers = [(r, s) for r in records for s in r.steps if s.kind in ("tool_result", "error")]
    assert len(answers) == 299
    assert all(s.tool_name and s.tool_name == r.steps[s.parent].tool_name for r, s in answers)
    assert {s.agent for _, s in answers} == {"tool"}
