"""Hugging Face datasets: built offline with `datasets`, read back through the column mapping."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from traces.importers import FORMATS, detect_format, detect_source, is_source, iter_records, iter_source
from traces.importers.hf_dataset import parse_columns, parse_source
from traces.importers.records import TraceFormatError

ROWS = [
    {
        "trace_id": "t-1",
        "messages": [
            {"role": "user", "content": "Fix the failing test"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": '{"cmd": "pytest"}'}}],
            },
            {"role": "tool", "content": "1 failed", "tool_call_id": "c1", "name": "bash"},
        ],
        "resolved": False,
        "model_name": "gpt-4o",
        "reward": 0.0,
        "difficulty": "hard",
    },
    {
        "trace_id": "t-2",
        "messages": [
            {"role": "user", "content": "Say hi"},
            {"role": "assistant", "content": "hi"},
        ],
        "resolved": True,
        "model_name": "claude",
        "reward": 1.0,
        "difficulty": "easy",
    },
]


def _dataset(rows=ROWS):
    import datasets

    return datasets.Dataset.from_list(rows)


@pytest.fixture
def parquet_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "pq"
    (folder / "data").mkdir(parents=True)
    _dataset().to_parquet(str(folder / "data" / "train-00000.parquet"))
    return folder


def test_it_reads_a_parquet_folder_with_guessed_columns(parquet_folder):
    records = list(parse_source(str(parquet_folder)))
    assert [r.external_id for r in records] == ["t-1", "t-2"]
    first = records[0]
    assert [s.kind for s in first.steps] == ["message", "tool_call", "tool_result"]
    assert first.steps[1].tool_name == "bash" and first.steps[1].tool_args == {"cmd": "pytest"}
    assert first.steps[2].parent == 1
    assert (first.outcome, first.model, first.score, first.task) == (
        "failure",
        "gpt-4o",
        0.0,
        "Fix the failing test",
    )
    assert records[1].outcome == "success"
    assert first.metadata == {"difficulty": "hard"}


def test_it_reads_a_save_to_disk_folder_and_applies_an_explicit_mapping(tmp_path):
    folder = tmp_path / "disk"
    _dataset().save_to_disk(str(folder))
    assert is_source(folder) and detect_source(folder) == "hf_dataset"
    records = list(parse_source(str(folder), columns="id=difficulty,steps=messages,outcome=resolved"))
    assert [r.external_id for r in records] == ["hard", "easy"]
    assert [r.outcome for r in records] == ["failure", "success"]


def test_a_bad_mapping_names_the_missing_column_and_lists_the_real_ones(parquet_folder):
    with pytest.raises(TraceFormatError) as error:
        list(parse_source(str(parquet_folder), columns={"steps": "conversation"}))
    message = str(error.value)
    assert "'conversation'" in message and "trace_id" in message and "messages" in message
    with pytest.raises(TraceFormatError, match="unknown field 'colour'"):
        parse_columns("colour=red")


def test_without_any_steps_column_it_says_how_to_map_one(tmp_path):
    folder = tmp_path / "nosteps"
    folder.mkdir()
    _dataset([{"id": "x", "text": "hello"}]).to_parquet(str(folder / "train.parquet"))
    with pytest.raises(TraceFormatError, match="--columns steps=COLUMN"):
        list(parse_source(str(folder)))


@pytest.mark.parametrize(
    ("value", "kinds"),
    [
        ("just one blob of text", ["message"]),
        (["first", "second"], ["message", "message"]),
        ([{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}], ["message", "message"]),
        (
            [{"thought": "hmm", "action": "ls", "observation": "a.py"}],
            ["reasoning", "tool_call", "observation"],
        ),
        ([{"kind": "tool_call", "tool_name": "ls", "agent": "coder"}], ["tool_call"]),
    ],
)
def test_steps_may_be_text_turns_trajectories_or_native_steps(tmp_path, value, kinds):
    path = tmp_path / "one.jsonl"
    _dataset([{"id": "a", "steps": value}]).to_json(str(path))
    (record,) = parse_source(str(path))
    assert [s.kind for s in record.steps] == kinds


def test_a_single_parquet_file_is_sniffed_and_streamed_like_any_file(parquet_folder):
    path = parquet_folder / "data" / "train-00000.parquet"
    assert detect_format(path) == "hf_dataset"
    assert [r.external_id for r in iter_records(path)] == ["t-1", "t-2"]
    assert "hf_dataset" in FORMATS


def test_a_hub_repo_that_cannot_be_reached_fails_naming_the_repo(monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    with pytest.raises(TraceFormatError) as error:
        list(iter_source("hf://someone/agent-traces", "hf_dataset"))
    assert "someone/agent-traces" in str(error.value) and "reach" in str(error.value)
    with pytest.raises(TraceFormatError, match="not a Hub dataset id"):
        list(iter_source("hf://not a repo", "hf_dataset"))


_MEASURE = """
import sys, tracemalloc
from traces.importers.hf_dataset import parse_source
assert len(list(parse_source(sys.argv[1]))) == 1  # the modules the parser imports on first use, loaded
count = 0
tracemalloc.start()
for record in parse_source(sys.argv[2]):
    count += 1
    del record
print(count, tracemalloc.get_traced_memory()[1])
"""


def test_iteration_is_streamed_not_loaded_whole(tmp_path):
    """12 MB of step text; the Python heap must stay well under it while every trace goes by. Measured in a
    fresh interpreter: tracemalloc counts every thread, and a test session has others (the live server)."""
    folder = tmp_path / "big"
    folder.mkdir()
    # Text that does not compress hundreds of times (that would be refused as a decompression bomb).
    rows = [{"id": f"r{i}", "steps": [os.urandom(200).hex() * 10]} for i in range(3000)]
    _dataset(rows).to_parquet(str(folder / "train.parquet"), batch_size=200)
    del rows
    warm = tmp_path / "warm"
    warm.mkdir()
    _dataset([{"id": "w", "steps": ["x"]}]).to_parquet(str(warm / "train.parquet"))
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(warm), str(folder)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=True,
    )
    count, peak = map(int, done.stdout.split())
    assert count == 3000
    assert peak < 4 * 1024 * 1024, peak
