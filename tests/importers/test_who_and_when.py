"""Who&When failure-attribution logs: one trace per file, attribution as an annotation."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.importers.conftest import need, truncate
from traces.importers import detect_format, iter_records, who_and_when
from traces.importers.records import TraceFormatError


@pytest.fixture(scope="module")
def files(datasets_dir: Path) -> list[Path]:
    root = need(datasets_dir / "who_and_when")
    return sorted(root.glob("*/*.json"), key=lambda p: (p.parent.name, int(p.stem)))


def test_counts_per_subset(files: list[Path]):
    records = {p: next(iter(iter_records(p))) for p in files}
    assert all(detect_format(p) == "who_and_when" for p in files)
    by_subset = Counter(r.metadata["subset"] for r in records.values())
    assert by_subset == {"Hand-Crafted": 17, "Algorithm-Generated": 23}
    # Steps = history entries: 319 in the 17 Hand-Crafted files, 176 in the 23 Algorithm-Generated ones.
    steps = Counter()
    for r in records.values():
        steps[r.metadata["subset"]] += len(r.steps)
    assert steps == {"Hand-Crafted": 319, "Algorithm-Generated": 176}
    assert {r.outcome for r in records.values()} == {"failure"}
    assert {r.system for r in records.values()} == {"Magentic-One", "CaptainAgent (AG2)"}


def test_attribution_is_an_annotation_pinned_on_the_mistake_step(files: list[Path]):
    for path in files:
        rec = next(iter(iter_records(path)))
        raw = json.loads(path.read_text())
        (ann,) = rec.annotations
        (label,) = ann.labels
        assert ann.annotator == "who_and_when" and label.mode == "decisive-error" and label.primary
        assert label.steps == [int(raw["mistake_step"])]
        assert label.note == f"{raw['mistake_agent']}: {raw['mistake_reason']}"
        assert rec.metadata["mistake_agent"] == raw["mistake_agent"]
        # In every file of this sample the pinned step was spoken by the blamed agent.
        assert rec.steps[label.steps[0]].agent == raw["mistake_agent"]
        assert rec.external_id == f"{path.parent.name}/{path.stem}"
        assert rec.task == raw["question"]


def test_hand_crafted_roles_are_split_into_agent_and_kind(datasets_dir: Path):
    rec = next(iter(iter_records(need(datasets_dir / "who_and_when/Hand-Crafted/4.json"))))
    assert rec.steps[0].agent == "human" and rec.steps[0].role == "user"
    assert (
        rec.steps[1].agent == "Orchestrator" and rec.steps[1].kind == "reasoning"
    )  # "Orchestrator (thought)"
    assert rec.annotations[0].labels[0].steps == [8]


def test_truncated_file(datasets_dir: Path, tmp_path: Path):
    src = need(datasets_dir / "who_and_when/Hand-Crafted/14.json")
    cut = truncate(src, tmp_path / "14.json")
    with pytest.raises(TraceFormatError, match=r"14\.json, record 1: malformed JSON: .*line \d+, column \d+"):
        list(iter_records(cut, "who_and_when"))


def test_out_of_range_mistake_step_names_the_field():
    doc = {"history": [{"role": "human", "content": "q"}], "mistake_agent": "X", "mistake_step": "4"}
    with pytest.raises(
        TraceFormatError, match=r"^w\.json, record 1, field 'mistake_step': expected a history index 0\.\.0"
    ):
        list(who_and_when.parse(io.BytesIO(json.dumps(doc).encode()), "w.json"))
    doc["history"] = [{"role": 3, "content": "q"}]
    with pytest.raises(TraceFormatError, match=r"field 'history\[0\]\.role'"):
        list(who_and_when.parse(io.BytesIO(json.dumps(doc).encode()), "w.json"))


def test_subset_is_inferred_when_the_path_lacks_it(datasets_dir: Path):
    for sub in ("Hand-Crafted", "Algorithm-Generated"):
        path = need(datasets_dir / f"who_and_when/{sub}/12.json")
        with open(path, "rb") as fh:
            (rec,) = who_and_when.parse(fh, "12.json")
        assert rec.external_id == f"{sub}/12"
