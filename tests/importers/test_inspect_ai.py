"""Inspect AI logs: the real JSON log and a synthetic .eval ZIP built here."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from tests.importers.conftest import need, truncate
from traces.importers import detect_format, inspect_ai, iter_records
from traces.importers.records import TraceFormatError
from traces.importers.synthetic import synthetic_traces, write_inspect_eval

LOG = "inspect_ai/2025-05-12T20-27-36-04-00_browser.json"


def test_json_log(datasets_dir: Path):
    path = need(datasets_dir / LOG)
    assert detect_format(path) == "inspect_ai"
    (rec,) = iter_records(path)
    assert rec.external_id == "1-e1"
    assert rec.model == "openai/gpt-4o-mini" and rec.benchmark == "browser"
    # PROVENANCE.md: score "includes" = C.
    assert rec.outcome == "success" and rec.score == 1.0
    # 10 messages: user, 4 x (assistant tool call + tool result), final assistant answer.
    assert [s.kind for s in rec.steps] == ["message"] + ["tool_call", "tool_result"] * 4 + ["message"]
    assert [s.tool_name for s in rec.steps if s.kind == "tool_call"] == ["web_browser_go"] + [
        "web_browser_click"
    ] * 3
    assert rec.steps[1].tool_args == {"url": "https://www.aisi.gov.uk/"}
    assert all(rec.steps[i].parent == i - 1 for i in (2, 4, 6, 8))
    assert rec.task.startswith("Use the web browser tool")


def test_json_log_truncated(datasets_dir: Path, tmp_path: Path):
    cut = truncate(need(datasets_dir / LOG), tmp_path / "log.json")
    with pytest.raises(TraceFormatError, match=r"log\.json, record 1: malformed JSON: truncated"):
        list(iter_records(cut, "inspect_ai"))


def test_eval_zip(tmp_path: Path):
    recs = list(synthetic_traces(3, steps=9, seed=2))
    path = tmp_path / "run.eval"
    assert write_inspect_eval(recs, path, epochs=2) == 6
    assert detect_format(path) == "inspect_ai"
    parsed = list(iter_records(path))
    assert [p.external_id for p in parsed] == ["1-e1", "1-e2", "2-e1", "2-e2", "3-e1", "3-e2"]
    assert {p.model for p in parsed} == {"openai/gpt-4o"} and {p.benchmark for p in parsed} == {"synthetic"}
    for orig, got in zip([r for r in recs for _ in range(2)], parsed, strict=True):
        want = {"success": "success", "failure": "failure"}.get(orig.outcome, "unknown")
        assert got.outcome == want
        assert sum(s.kind == "tool_call" for s in got.steps) == sum(s.kind == "tool_call" for s in orig.steps)
    # The synthetic sample puts a reasoning block in the first assistant turn.
    assert any(s.kind == "reasoning" and s.content == "Let me think first." for s in parsed[0].steps)


def test_eval_zip_from_a_non_seekable_stream(tmp_path: Path):
    path = tmp_path / "run.eval"
    write_inspect_eval(synthetic_traces(2, steps=4), path)

    class OneWay(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self._b = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buf) -> int:
            data = self._b.read(len(buf))
            buf[: len(data)] = data
            return len(data)

    assert len(list(inspect_ai.parse(io.BufferedReader(OneWay(path.read_bytes())), "run.eval"))) == 2


def test_eval_zip_errors(tmp_path: Path):
    path = tmp_path / "bad.eval"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("header.json", json.dumps({"eval": {"model": "m", "task": "t"}}))
        zf.writestr("samples/1_epoch_1.json", '{"id": 1, "epoch": 1, "messages": [')
    with pytest.raises(
        TraceFormatError, match=r"bad\.eval:samples/1_epoch_1\.json, record 1: malformed JSON"
    ):
        list(iter_records(path))
    truncated = tmp_path / "cut.eval"
    write_inspect_eval(synthetic_traces(5, steps=6), truncated)
    data = truncated.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match=r"cut\.eval.*not a valid \.eval archive"):
        list(iter_records(truncated, "inspect_ai"))


@pytest.mark.parametrize(
    ("value", "outcome", "score"),
    [
        ("C", "success", 1.0),
        ("I", "failure", 0.0),
        (1, "success", 1.0),
        (True, "success", 1.0),
        (0, "failure", 0.0),
        ("P", "unknown", 0.5),
        (0.25, "unknown", 0.25),
        ({"acc": "C"}, "success", 1.0),
    ],
)
def test_score_mapping(value, outcome: str, score: float):
    assert inspect_ai.score_outcome({"s": {"value": value}}) == (outcome, score)
