"""Format registry: detection is unambiguous across every real and synthetic file."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.importers.conftest import need
from traces.importers import FORMATS, detect_format, iter_records, read_head
from traces.importers._json import NanFilter
from traces.importers.records import TraceFormatError
from traces.importers.synthetic import (
    synthetic_traces,
    write_codex_rollout,
    write_inspect_eval,
    write_mast_full_json,
    write_native_jsonl,
    write_openai_chat_jsonl,
    write_otel_json,
)

REAL = {
    "inspect_ai": ["inspect_ai/*.json"],
    "mast_labelled": ["mast/*.json"],
    "openhands": ["openhands/*.json"],
    "swe_agent": ["swe_agent/**/*.traj"],
    "tau2_bench": ["tau2_bench/*.json"],
    "openai_chat": ["tau_bench/*.json"],
    "who_and_when": ["who_and_when/*/*.json"],
}


def _synthetic(tmp_path: Path) -> dict[str, Path]:
    recs = list(synthetic_traces(4, steps=8, seed=6))
    files = {
        "native": tmp_path / "n.jsonl",
        "openai_chat": tmp_path / "c.jsonl",
        "otel": tmp_path / "o.json",
        "codex": tmp_path / "rollout.jsonl",
        "inspect_ai": tmp_path / "r.eval",
        "mast_full": tmp_path / "mad.json",
    }
    write_native_jsonl(recs, files["native"])
    write_openai_chat_jsonl(recs, files["openai_chat"])
    write_otel_json(recs, files["otel"])
    write_codex_rollout(recs[0], files["codex"])
    write_inspect_eval(recs, files["inspect_ai"])
    write_mast_full_json(recs, files["mast_full"])
    return files


def test_every_real_file_matches_exactly_one_format(datasets_dir: Path):
    seen = 0
    for fmt, patterns in REAL.items():
        for pattern in patterns:
            paths = sorted(datasets_dir.glob(pattern))
            assert paths, pattern
            for path in paths:
                head = read_head(path)
                matches = [name for name, mod in FORMATS.items() if mod.sniff(head, str(path))]
                assert matches == [fmt], (path, matches)
                assert detect_format(path) == fmt
                seen += 1
    assert seen == 1 + 1 + 2 + 5 + 1 + 1 + 40


def test_every_synthetic_file_matches_exactly_one_format(tmp_path: Path):
    for fmt, path in _synthetic(tmp_path).items():
        head = read_head(path)
        matches = [name for name, mod in FORMATS.items() if mod.sniff(head, path.name)]
        assert matches == [fmt], (path, matches)
        assert list(iter_records(path)), fmt


def test_unknown_format_lists_the_known_ones(tmp_path: Path):
    path = tmp_path / "notes.txt"
    path.write_text("just some words\n")
    with pytest.raises(TraceFormatError) as err:
        detect_format(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: unknown format")
    assert all(name in msg for name in FORMATS)


def test_forcing_and_unknown_format_name(tmp_path: Path, datasets_dir: Path):
    with pytest.raises(
        TraceFormatError, match=r"unknown format 'csv'; choose one of inspect_ai, codex, otel, native"
    ):
        list(iter_records(tmp_path / "x", "csv"))
    # Forcing a wrong format says what was expected and what the file is, not a crash nor 0 traces.
    tau = need(datasets_dir / "tau_bench/gpt-4o-airline.subset27.json")
    with pytest.raises(
        TraceFormatError, match=r"wrong format: expected mast_labelled .* found .* openai_chat"
    ):
        list(iter_records(tau, "mast_labelled"))


def test_formats_expose_the_interface():
    for name, mod in FORMATS.items():
        assert name == mod.FORMAT and mod.LABEL and callable(mod.sniff) and callable(mod.parse)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 4096])
def test_nan_filter_leaves_strings_alone(chunk: int):
    src = b'[{"a": NaN, "b": "NaN and \\"NaN\\" \\\\", "c": [Infinity, -Infinity], "d": "x\\\\"}, NaN]'

    class Slow(io.RawIOBase):
        def __init__(self) -> None:
            self._b = io.BytesIO(src)

        def read(self, n: int = -1) -> bytes:
            return self._b.read(min(chunk, n if n > 0 else chunk))

    out = b""
    f = NanFilter(Slow())
    while data := f.read(5):
        out += data
    assert out == b'[{"a": null, "b": "NaN and \\"NaN\\" \\\\", "c": [null, null], "d": "x\\\\"}, null]'


def _nan_to_none(obj):
    if (isinstance(obj, float) and obj != obj) or obj in (float("inf"), float("-inf")):
        return None
    if isinstance(obj, list):
        return [_nan_to_none(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    return obj


@pytest.mark.parametrize("seed", range(6))
def test_nan_filter_matches_python_json_on_random_documents(seed: int):
    import json
    import random

    rng = random.Random(seed)
    atoms = ["NaN", "\\", '"', "Infinity", "-Infinity", "x", " ", '\\"', "é", "\n"]

    def value(depth: int):
        r = rng.random()
        if depth > 3 or r < 0.3:
            return rng.choice([float("nan"), float("inf"), -float("inf"), 1.5, 7, True, None])
        if r < 0.6:
            return "".join(rng.choice(atoms) for _ in range(rng.randint(0, 12)))
        if r < 0.8:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {f"k{i}": value(depth + 1) for i in range(rng.randint(0, 4))}

    doc = [value(0) for _ in range(200)]
    raw = json.dumps(doc).encode()
    for chunk in (1, 5, 64, 70_000):

        class Slow(io.RawIOBase):
            def __init__(self) -> None:
                self._b = io.BytesIO(raw)

            def read(self, n: int = -1, _c: int = chunk) -> bytes:
                return self._b.read(_c)

        f = NanFilter(Slow())
        out = b"".join(iter(lambda f=f: f.read(4096), b""))
        assert json.loads(out) == _nan_to_none(doc)


def _tool_answers(records) -> list:
    return [
        s
        for r in records
        for s in r.steps
        if s.kind == "tool_result" or (s.kind == "error" and s.role == "tool")
    ]


def test_a_tool_result_is_spoken_by_the_tool_agent_in_every_format(tmp_path: Path, datasets_dir: Path):
    """One convention (records.TOOL_AGENT): the agent of a tool's answer is "tool"; its name is tool_name."""
    from traces.importers.records import TOOL_AGENT

    files = list(_synthetic(tmp_path).values())
    files += [
        p for patterns in REAL.values() for pattern in patterns for p in sorted(datasets_dir.glob(pattern))
    ]
    formats_with_answers = set()
    for path in files:
        answers = _tool_answers(iter_records(path))
        if answers:
            formats_with_answers.add(detect_format(path))
        assert {s.agent for s in answers} <= {TOOL_AGENT}, path
    assert {
        "native",
        "openai_chat",
        "codex",
        "tau2_bench",
        "openhands",
        "mast_labelled",
    } <= formats_with_answers


def test_a_tool_result_names_the_tool_of_its_call_in_every_format(tmp_path: Path, datasets_dir: Path):
    files = list(_synthetic(tmp_path).values())
    files += [
        p for patterns in REAL.values() for pattern in patterns for p in sorted(datasets_dir.glob(pattern))
    ]
    for path in files:
        for record in iter_records(path):
            for step in record.steps:
                if step.kind == "tool_result" and step.parent is not None:
                    call = record.steps[step.parent]
                    if call.kind == "tool_call" and call.tool_name:
                        assert step.tool_name == call.tool_name, (path, record.external_id, step)


def test_each_head_is_answered_by_its_own_first_line():
    # The sniffers share the last parse of a head: another head, even an equal one, is parsed afresh.
    from traces.importers._json import first_line

    first = b'{"id": "a", "steps": []}\n'
    assert first_line(first) == {"id": "a", "steps": []}
    assert first_line(first) is first_line(first)
    assert first_line(b'{"id": "b"}\n') == {"id": "b"}
    assert first_line(b"not json\n") is None
    equal = (first + b" ")[:-1]  # the same bytes, another object
    assert equal is not first and first_line(equal) == {"id": "a", "steps": []}
    assert first_line(equal) is not first_line(first)
