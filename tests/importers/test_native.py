"""Native JSONL: strict validation, exact round trip, bounded memory while streaming."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import pytest

from traces.importers import iter_records, native
from traces.importers.records import (
    AnnotationRecord,
    LabelRecord,
    StepRecord,
    TraceFormatError,
    TraceRecord,
)
from traces.importers.synthetic import synthetic_traces, write_native_jsonl


def _parse_text(text: str, name: str = "traces.jsonl") -> list[TraceRecord]:
    return list(native.parse(io.BytesIO(text.encode()), name))


def _line(**overrides) -> str:
    base = {
        "id": "t1",
        "steps": [{"agent": "planner", "content": "hi"}, {"kind": "tool_call", "tool_name": "x"}],
    }
    base.update(overrides)
    return json.dumps(base)


def test_minimal_record_defaults():
    (rec,) = _parse_text(json.dumps({"id": 7, "steps": [{}]}) + "\n")
    assert rec.external_id == "7"
    assert rec.steps == [StepRecord(kind="message")]
    assert rec.outcome == "unknown" and rec.score is None and rec.record_no == 1


def test_round_trip_is_exact_and_canonical_file_is_byte_identical(tmp_path: Path):
    records = list(synthetic_traces(40, steps=12, seed=3))
    records[0].annotations = [
        AnnotationRecord(
            annotator="ana",
            labels=[
                LabelRecord(mode="1.3", steps=[0, 2], primary=True, note="loop"),
                LabelRecord(mode="2.6"),
            ],
            ambiguous=True,
            note="unsure",
        ),
        AnnotationRecord(annotator="bob", no_failure=True),
    ]
    records[1].steps[0].tool_args = {}  # empty args and parent 0 must survive the round trip
    records[1].steps[1].parent = 0
    records[2].score = 0.0
    first = tmp_path / "first.jsonl"
    write_native_jsonl(records, first)
    parsed = list(iter_records(first, "native"))
    for orig, got in zip(records, parsed, strict=True):
        orig.raw = got.raw
        orig.record_no = got.record_no
        assert got == orig
    again = tmp_path / "again.jsonl"
    with open(again, "w", encoding="utf-8") as fh:
        for rec in parsed:
            fh.write(json.dumps(native.dump_native(rec), ensure_ascii=False) + "\n")
    assert again.read_bytes() == first.read_bytes()
    assert list(iter_records(again)) == parsed


def test_dump_omits_defaults_and_keeps_key_order():
    rec = TraceRecord(
        external_id="a", steps=[StepRecord(kind="message", content="x"), StepRecord(kind="error")]
    )
    assert native.dump_native(rec) == {"id": "a", "steps": [{"content": "x"}, {"kind": "error"}]}
    rec.outcome, rec.model, rec.task = "failure", "m", "t"
    assert list(native.dump_native(rec)) == ["id", "task", "model", "outcome", "steps"]


@pytest.mark.parametrize(
    ("line", "field", "fragment"),
    [
        (_line(steps=[{}, {}, {}, {"kind": "foo"}]), "steps[3].kind", "expected one of message, reasoning"),
        (json.dumps({"steps": []}), "id", "required field is missing"),
        (_line(steps="nope"), "steps", "expected a list"),
        (_line(outcome="won"), "outcome", "expected one of success, failure, unknown"),
        (_line(score="high"), "score", "expected an integer or a number"),
        (_line(steps=[{"parent": 5}]), "steps[0].parent", "index of another step"),
        (_line(steps=[{"tokens": True}]), "steps[0].tokens", "got boolean"),
        (_line(steps=[{"knd": "message"}]), "steps[0].knd", "unknown field"),
        (_line(annotations=[{"labels": []}]), "annotations[0].annotator", "required"),
        (
            _line(annotations=[{"annotator": "a", "labels": [{"mode": "1.1", "steps": [9]}]}]),
            "annotations[0].labels[0].steps[0]",
            "step index",
        ),
    ],
)
def test_invalid_records_name_file_line_and_field(line: str, field: str, fragment: str):
    text = _line() + "\n\n" + line + "\n"
    with pytest.raises(TraceFormatError) as err:
        _parse_text(text)
    msg = str(err.value)
    assert msg.startswith(f"traces.jsonl, line 3, field '{field}': ")
    assert fragment in msg
    assert err.value.line == 3 and err.value.field == field


def test_malformed_json_line_is_reported_with_its_line_number():
    with pytest.raises(TraceFormatError, match=r"^traces\.jsonl, line 2: malformed JSON: .*column"):
        _parse_text(_line() + "\n" + '{"id": "x", "steps": [\n')


def test_truncated_native_file(tmp_path: Path):
    path = tmp_path / "cut.jsonl"
    write_native_jsonl(synthetic_traces(3, steps=5), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match=r"cut\.jsonl, line 2: malformed JSON"):
        list(iter_records(path))


def test_nan_in_native_becomes_null():
    (rec,) = _parse_text('{"id": "n", "score": NaN, "steps": []}\n')
    assert rec.score is None


def _write_many(path: Path, n: int) -> None:
    # Repeat a few canonical lines with fresh ids: generating 10k distinct traces would dominate.
    lines = [json.dumps(native.dump_native(r)) for r in synthetic_traces(20, steps=4)]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(lines[i % 20].replace('"id": "syn-0-', f'"id": "n{i}-', 1) + "\n")


def _peak(path: Path) -> int:
    tracemalloc.start()
    try:
        count = sum(1 for _rec in iter_records(path, "native"))
        assert count > 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_streaming_memory_does_not_grow_with_file_size(tmp_path: Path):
    """Parsing a 10x larger file must not need (much) more memory: records are streamed. Memory only:
    how fast it parses is measured by bench/bench_parse.py, never asserted by a test."""
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    _write_many(small, 1_000)
    _write_many(large, 10_000)
    peak_small, peak_large = _peak(small), _peak(large)
    assert large.stat().st_size > 9 * small.stat().st_size
    assert peak_large < 2 * peak_small, (peak_small, peak_large)


def test_unknown_key_still_detects_as_native_and_is_reported(tmp_path: Path):
    from traces.importers import detect_format

    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "a", "steps": [], "colour": "red"}) + "\n")
    assert detect_format(path) == "native"
    with pytest.raises(TraceFormatError, match=r"t\.jsonl, line 1, field 'colour': unknown field"):
        list(iter_records(path))


def test_missing_datasets_skip_locally_and_fail_in_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from tests.importers.conftest import need

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not found"):
        need(tmp_path / "absent")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and real trace dataset not found"):
        need(tmp_path / "absent")
