"""The export folder loads with `datasets` as it is, and every config's rows are what the database holds."""

from __future__ import annotations

import json

import pytest

from annotator.models import Annotation, GoldLabel
from annotator.services.exports import ExportOptions, build_export
from annotator.services.exports.dataset import mode_columns
from traces.models import Step, Trace


def load(folder, config, tmp_path):
    import datasets

    return list(datasets.load_dataset(str(folder), config, split="train", cache_dir=str(tmp_path / "cache")))


def expected_traces(project, *, include_text=True):
    rows = []
    for trace in Trace.objects.filter(batch__projects=project).select_related("batch").order_by("id"):
        steps = []
        for s in Step.objects.filter(trace=trace).order_by("index"):
            steps.append(
                {
                    "index": s.index,
                    "parent": s.parent_index,
                    "agent": s.agent,
                    "role": s.role,
                    "kind": s.kind,
                    "content": s.content if include_text else "",
                    "tool_name": s.tool_name,
                    "tool_args": json.dumps(s.tool_args)
                    if include_text and s.tool_args is not None
                    else None,
                    "tool_call_id": s.tool_call_id,
                    "timestamp": s.timestamp or None,
                    "tokens": s.tokens,
                    "duration_ms": s.duration_ms,
                }
            )
        rows.append(
            {
                "trace_uid": trace.content_hash,
                "id": trace.external_id,
                "batch": trace.batch.name,
                "benchmark": trace.benchmark,
                "system": trace.system,
                "model": trace.model,
                "task": trace.task,
                "outcome": trace.outcome,
                "score": trace.score,
                "step_count": trace.step_count,
                "metadata": json.dumps(trace.metadata, sort_keys=True),
                "steps": steps,
            }
        )
    return rows


def test_every_config_loads_by_name_and_equals_the_database(
    labelled, annotator_a, annotator_b, adjudicator, tmp_path
):
    folder = tmp_path / "out"
    summary = build_export(labelled, ExportOptions(), folder)
    assert {c.name: c.rows for c in summary.configs} == {"traces": 4, "annotations": 4, "gold": 2}

    assert load(folder, "traces", tmp_path) == expected_traces(labelled)

    pseudonym = {annotator_a.pk: "annotator-1", annotator_b.pk: "annotator-2"}
    assert annotator_a.pk < annotator_b.pk
    columns = mode_columns(labelled.taxonomy_version.modes.order_by("order").values_list("code", "name"))
    annotations = load(folder, "annotations", tmp_path)
    submitted = Annotation.objects.filter(assignment__project=labelled, status="submitted").order_by(
        "assignment__trace_id", "assignment__annotator_id"
    )
    assert len(annotations) == submitted.count() == 4
    for row, annotation in zip(annotations, submitted, strict=True):
        labels = list(annotation.labels.order_by("mode__order"))
        assert row["trace_uid"] == annotation.assignment.trace.content_hash
        assert row["annotator"] == pseudonym[annotation.assignment.annotator_id]
        assert row["labels"] == [la.mode.code for la in labels]
        assert row["evidence_steps"] == sorted({s for la in labels for s in la.evidence_steps})
        assert (row["ambiguous"], row["confidence"], row["note"], row["no_failure"]) == (
            annotation.ambiguous,
            annotation.confidence,
            annotation.note,
            annotation.no_failure,
        )
        assert [d["note"] for d in row["label_details"]] == [la.note for la in labels]
        for column in columns:
            assert row[column.column] == int(column.code in row["labels"])
    assert annotations[2]["label_details"][1]["quotes"] == ["all done"]

    gold = load(folder, "gold", tmp_path)
    assert [(g["trace_id"], g["status"], g["labels"]) for g in gold] == [
        ("t1", "agreed", ["FM-1.1"]),
        ("t2", "resolved", ["FM-2.2"]),
    ]
    decided = GoldLabel.objects.get(item__trace__external_id="t2")
    assert gold[1]["label_details"][0] | {"steps": None} == {
        "mode": "FM-2.2",
        "primary": False,
        "steps": None,
        "source": decided.source,
        "reason_code": "",
        "note": "",
        "decided_by": "adjudicator-1",
    }
    assert gold[1]["adjudicator"] == "adjudicator-1" and gold[1]["disputed"] == ["FM-2.2", "FM-3.3"]
    assert gold[0]["label_fm_1_1"] == 1 and gold[0]["label_fm_2_2"] == 0
    assert (folder / "taxonomy.yaml").read_text().startswith("slug: mast")


def test_gold_only_without_text_and_with_real_names(labelled, annotator_a, tmp_path):
    folder = tmp_path / "gold"
    options = ExportOptions(gold_only=True, include_text=False, real_names=True)
    summary = build_export(labelled, options, folder)
    assert [(c.name, c.rows) for c in summary.configs] == [("traces", 2), ("gold", 2)]
    assert not (folder / "annotations").exists()
    traces = load(folder, "traces", tmp_path)
    assert [t["id"] for t in traces] == ["t1", "t2"]
    assert all(s["content"] == "" and s["tool_args"] is None for t in traces for s in t["steps"])
    assert load(folder, "gold", tmp_path)[1]["adjudicator"] == "ada-adjudicator"


def test_a_batch_without_labels_exports_traces_only(labelled, tmp_path):
    folder = tmp_path / "run2"
    summary = build_export(labelled, ExportOptions(batches=("run-2",)), folder)
    assert [(c.name, c.rows) for c in summary.configs] == [("traces", 1), ("annotations", 0), ("gold", 0)]
    assert [t["id"] for t in load(folder, "traces", tmp_path)] == ["u1"]
    card = (folder / "README.md").read_text()
    assert "The `annotations` config is absent" in card and "The `gold` config is absent" in card


def test_shards_and_row_groups_keep_memory_to_one_chunk(tmp_path):
    import pyarrow.parquet as pq

    from annotator.services.exports.dataset import TRACES_SCHEMA, write_config

    rows = (
        {
            "trace_uid": str(i),
            "id": str(i),
            "steps": [{"index": 0, "kind": "message", "content": "x" * 100}],
            "_bytes": 100,
        }
        for i in range(25)
    )
    written = write_config(tmp_path, "traces", TRACES_SCHEMA, rows, rows_per_group=4, rows_per_file=10)
    assert written.rows == 25
    assert written.files == [f"traces/train-{n:05d}.parquet" for n in range(3)]
    assert [pq.ParquetFile(tmp_path / f).metadata.num_rows for f in written.files] == [10, 10, 5]
    assert pq.ParquetFile(tmp_path / written.files[0]).metadata.num_row_groups == 3


@pytest.mark.parametrize(
    ("codes", "columns"),
    [
        (["FM-1.3", "FM_1_3", "fm 1.3"], ["label_fm_1_3", "label_fm_1_3_2", "label_fm_1_3_3"]),
        (["A1", "!!"], ["label_a1", "label_mode"]),
    ],
)
def test_mode_columns_are_safe_and_unique(codes, columns):
    assert [c.column for c in mode_columns((code, code) for code in codes)] == columns
