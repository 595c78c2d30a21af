"""OpenHands event streams: one event per step, observations nested under their cause."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.importers.conftest import need, truncate
from traces.importers import detect_format, iter_records, openhands
from traces.importers.records import TraceFormatError


def test_basic(datasets_dir: Path):
    path = need(datasets_dir / "openhands/basic.json")
    assert detect_format(path) == "openhands"
    (rec,) = iter_records(path)
    # 4 events: user message, edit action, edit observation (cause 3), finish.
    assert [s.kind for s in rec.steps] == ["message", "tool_call", "tool_result", "message"]
    assert rec.steps[2].parent == 1 and rec.steps[2].tool_call_id == rec.steps[1].tool_call_id
    assert (
        rec.steps[1].tool_name == "str_replace_editor"
        and rec.steps[1].tool_args["path"] == "/workspace/game_2048.py"
    )
    assert rec.model == "claude-3-5-sonnet-20241022" and rec.system == "OpenHands"
    assert rec.task.startswith("Please create a simple 2048 game.")
    assert rec.steps[1].tokens and rec.steps[2].tokens is None


def test_gui_mode(datasets_dir: Path):
    path = need(datasets_dir / "openhands/basic_gui_mode.json")
    (rec,) = iter_records(path)
    assert len(rec.steps) == 18  # 18 events
    # Every observation with a cause points at the step of that event id (ids 0..17 here).
    raw = json.loads(path.read_text())
    for step, event in zip(rec.steps, raw, strict=True):
        if event.get("cause") is not None:
            assert step.parent == event["cause"]
    assert sum(s.kind == "tool_result" for s in rec.steps) == 4
    assert [s.agent for s in rec.steps[:2]] == ["environment", "environment"]


def test_truncated_and_corrupted(datasets_dir: Path, tmp_path: Path):
    cut = truncate(need(datasets_dir / "openhands/basic_gui_mode.json"), tmp_path / "oh.json")
    with pytest.raises(TraceFormatError, match=r"oh\.json, record \d+: malformed JSON"):
        list(iter_records(cut, "openhands"))
    bad = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "x"}},
        {"id": 1, "source": "agent", "args": []},
    ]
    with pytest.raises(TraceFormatError, match=r"e\.json, record 1, field '\[1\]\.args': expected an object"):
        list(openhands.parse(io.BytesIO(json.dumps(bad).encode()), "e.json"))
