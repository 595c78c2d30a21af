"""import_traces on Hugging Face datasets: a folder is one source, mapped columns, all or nothing."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from traces.models import Batch, Step, Trace

ROWS = [
    {
        "trace_id": "a",
        "conversation": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "resolved": None,
    },
    {"trace_id": "b", "conversation": [{"role": "user", "content": "plan"}], "resolved": True},
    {"trace_id": "c", "conversation": [{"role": "user", "content": "again"}], "resolved": False},
]


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def save(tmp_path, rows=ROWS, *, split="train"):
    import datasets

    folder = tmp_path / "saved"
    datasets.DatasetDict({split: datasets.Dataset.from_list(rows)}).save_to_disk(str(folder))
    return folder


def test_a_save_to_disk_folder_is_one_source_with_a_mapping_and_a_split(db, tmp_path):
    folder = save(tmp_path, split="test")
    output = run(
        "import_traces",
        str(folder),
        "--batch",
        "hf-1",
        "--format",
        "hf_dataset",
        "--columns",
        "id=trace_id,steps=conversation",
        "--split",
        "test",
    )
    assert f"{folder}: hf_dataset, 3 traces, 4 steps added" in output
    batch = Batch.objects.get(name="hf-1")
    assert (batch.trace_count, batch.step_count, batch.format) == (3, 4, "hf_dataset")
    traces = {t.external_id: t for t in Trace.objects.all()}
    assert traces["b"].outcome == "success" and traces["c"].outcome == "failure"
    assert traces["a"].task == "hi"
    assert list(Step.objects.filter(trace=traces["a"]).values_list("role", "content")) == [
        ("user", "hi"),
        ("assistant", "yo"),
    ]
    assert "Nothing new" in run(
        "import_traces", str(folder), "--batch", "hf-1", "--columns", "steps=conversation,id=trace_id"
    )


def test_a_parquet_folder_is_detected_without_format(db, tmp_path):
    import datasets

    folder = tmp_path / "pq"
    folder.mkdir()
    rows = [{"id": "x", "messages": [{"role": "user", "content": "q"}]}]
    datasets.Dataset.from_list(rows).to_parquet(str(folder / "train.parquet"))
    assert "pq: hf_dataset, 1 traces" in run("import_traces", str(folder), "--batch", "auto")
    # One parquet file named explicitly is a file: sniffed by its magic bytes and streamed like any other.
    other = tmp_path / "one.parquet"
    datasets.Dataset.from_list([{"id": "y", "messages": ["just text"]}]).to_parquet(str(other))
    assert "one.parquet: hf_dataset, 1 traces, 1 steps added" in run(
        "import_traces", str(other), "--batch", "file"
    )


def test_a_bad_mapping_exits_2_naming_the_column_and_imports_nothing(db, tmp_path):
    folder = save(tmp_path)
    with pytest.raises(CommandError) as error:
        run(
            "import_traces",
            str(folder),
            "--batch",
            "bad",
            "--format",
            "hf_dataset",
            "--columns",
            "steps=messages",
        )
    assert error.value.returncode == 2
    assert "'messages'" in str(error.value) and "conversation" in str(error.value)
    assert not Trace.objects.exists() and not Batch.objects.exists()
    with pytest.raises(CommandError, match="--columns, --split and --config apply to"):
        run("import_traces", str(folder), "--batch", "bad", "--format", "native", "--split", "train")


def test_a_repo_id_under_format_hf_dataset_goes_to_the_hub_and_offline_says_so(db, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    with pytest.raises(CommandError) as error:
        run("import_traces", "someone/agent-traces", "--batch", "hub", "--format", "hf_dataset")
    message = str(error.value)
    assert "hf://someone/agent-traces" in message and "could not read the Hugging Face dataset" in message
    assert "someone/agent-traces" in message and "reach" in message
    assert not Batch.objects.exists()
