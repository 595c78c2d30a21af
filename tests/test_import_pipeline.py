"""Importing traces: all or nothing, de-duplicated, exported back byte for byte, labels included."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import Annotation, LabelApplication
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch, Step, Trace


def write_native(path: Path, n: int = 6, steps: int = 8, seed: int = 1) -> Path:
    path.write_text(
        "".join(line + "\n" for line in native_lines(synthetic_traces(n, steps=steps, seed=seed)))
    )
    return path


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_it_imports_a_native_file_and_prints_a_summary(db, tmp_path):
    path = write_native(tmp_path / "run.jsonl", n=6, steps=8)
    output = run("import_traces", str(path), "--batch", "run-1")
    batch = Batch.objects.get(name="run-1")
    assert batch.trace_count == Trace.objects.count() == 6
    assert batch.step_count == Step.objects.count() == 48
    assert "6 traces and 48 steps added" in output


def test_a_second_import_of_the_same_file_adds_nothing_and_says_so(db, tmp_path):
    path = write_native(tmp_path / "run.jsonl")
    run("import_traces", str(path), "--batch", "run-1")
    output = run("import_traces", str(path), "--batch", "run-1")
    assert Trace.objects.count() == 6
    assert "Nothing new" in output
    assert "6 duplicates skipped" in output


def test_a_corrupted_record_names_the_line_and_leaves_the_database_unchanged(db, tmp_path):
    good = write_native(tmp_path / "good.jsonl", n=3, seed=2)
    bad = write_native(tmp_path / "bad.jsonl", n=4, seed=3)
    lines = bad.read_text().splitlines()
    record = json.loads(lines[2])
    record["steps"][1]["kind"] = "telepathy"
    lines[2] = json.dumps(record)
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(CommandError) as error:
        run("import_traces", str(good), str(bad), "--batch", "mixed")
    message = str(error.value)
    assert "bad.jsonl" in message and "line 3" in message and "steps[1].kind" in message
    assert error.value.returncode == 2
    assert Trace.objects.count() == 0 and not Batch.objects.exists()


def test_a_truncated_file_fails_with_the_record_named(db, tmp_path):
    path = write_native(tmp_path / "cut.jsonl", n=5)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(CommandError, match=r"cut\.jsonl, line \d+"):
        run("import_traces", str(path), "--batch", "cut")
    assert Trace.objects.count() == 0


def test_every_broken_file_is_reported_at_once(db, tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text('{"id": "a", "steps": "nope"}\n')
    two = tmp_path / "two.jsonl"
    two.write_text('{"id": "b", "steps": [{"kind": "message", "content": 5}]}\n')
    with pytest.raises(CommandError) as error:
        run("import_traces", str(one), str(two), "--batch", "x", "--format", "native")
    assert "one.jsonl" in str(error.value) and "two.jsonl" in str(error.value)


def test_an_unknown_format_is_a_clear_error(db, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n")
    with pytest.raises(CommandError, match=r"notes\.txt"):
        run("import_traces", str(path), "--batch", "x")


def test_native_files_round_trip_exactly_through_export(db, tmp_path):
    path = write_native(tmp_path / "run.jsonl", n=5, steps=12, seed=9)
    run("import_traces", str(path), "--batch", "rt")
    out = tmp_path / "out.jsonl"
    call_command("export_traces", "--batch", "rt", "--format", "jsonl", "--out", str(out), stderr=StringIO())
    assert out.read_bytes() == path.read_bytes()


def test_labels_inside_native_files_become_annotations_of_the_project(project, tmp_path):
    record = {
        "id": "with-labels",
        "steps": [{"kind": "message", "content": "plan"}, {"kind": "tool_call", "tool_name": "search"}],
        "annotations": [
            {"annotator": "earlier rater", "labels": [{"mode": "Step repetition", "steps": [1]}]},
            {"annotator": "second rater", "labels": [], "no_failure": True},
        ],
    }
    path = tmp_path / "labelled.jsonl"
    path.write_text(json.dumps(record) + "\n")
    output = run("import_traces", str(path), "--batch", "lab", "--project", project.slug)
    assert "2 annotations imported" in output
    label = LabelApplication.objects.get()
    assert label.mode.code == "FM-1.3" and label.evidence_steps == [1]
    assert label.annotation.assignment.annotator.username == "labelled/earlier-rater"  # namespaced by file
    assert not label.annotation.assignment.annotator.is_active
    assert Annotation.objects.filter(no_failure=True).count() == 1


def test_an_unknown_mode_fails_the_whole_import_unless_told_to_skip_it(project, tmp_path):
    record = {
        "id": "t",
        "steps": [{"content": "x"}],
        "annotations": [{"annotator": "r", "labels": [{"mode": "Bogus"}]}],
    }
    path = tmp_path / "bogus.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(CommandError, match="'Bogus'"):
        run("import_traces", str(path), "--batch", "b", "--project", project.slug)
    assert not Trace.objects.exists()
    output = run(
        "import_traces", str(path), "--batch", "b", "--project", project.slug, "--ignore-unknown-modes"
    )
    assert "ignored 1 labels of unknown mode 'Bogus'" in output


def test_import_annotations_reads_the_generic_jsonl(project, tmp_path):
    path = write_native(tmp_path / "run.jsonl", n=3, steps=5, seed=4)
    run("import_traces", str(path), "--batch", "g", "--project", project.slug)
    external = list(Trace.objects.order_by("id").values_list("external_id", flat=True))
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "\n".join(
            json.dumps(
                {"trace": ext, "annotator": name, "labels": [{"mode": mode, "steps": [2]}], "confidence": 4}
            )
            for ext in external
            for name, mode in (("sheet-a", "FM-1.3"), ("sheet-b", "FM-3.3"))
        )
        + "\n"
    )
    output = run("import_annotations", str(labels), "--project", project.slug)
    assert "6 annotations with 6 labels imported" in output
    again = run("import_annotations", str(labels), "--project", project.slug)
    assert "0 annotations" in again and "6 already present" in again


def test_import_annotations_never_overwrites_a_different_annotation(project, tmp_path):
    path = write_native(tmp_path / "run.jsonl", n=1, steps=3, seed=5)
    run("import_traces", str(path), "--batch", "g", "--project", project.slug)
    ext = Trace.objects.get().external_id
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"trace": ext, "annotator": "a", "labels": [{"mode": "FM-1.1"}]}) + "\n")
    run("import_annotations", str(labels), "--project", project.slug)
    labels.write_text(json.dumps({"trace": ext, "annotator": "a", "labels": [{"mode": "FM-1.2"}]}) + "\n")
    with pytest.raises(CommandError, match="never overwritten"):
        run("import_annotations", str(labels), "--project", project.slug)
    assert LabelApplication.objects.get().mode.code == "FM-1.1"


def test_import_annotations_names_the_line_of_a_bad_label(project, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('\n{"trace": "y", "labels": []}\n')
    with pytest.raises(CommandError, match=r"labels.jsonl, line 2, field 'annotator'"):
        run("import_annotations", str(labels), "--project", project.slug)


@pytest.mark.parametrize("command", ["import_traces", "export_traces", "import_annotations", "seed_demo"])
def test_every_command_explains_itself(command, capsys):
    with pytest.raises(SystemExit):
        call_command(command, "--help")
    assert len(capsys.readouterr().out) > 200
