"""Folders everywhere: every command that reads files also takes folders, walked recursively in path order
(hidden files and files of other kinds skipped), all files imported together or not at all."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import CommandError

from annotator.management.paths import TRACE_SUFFIXES, files_in
from annotator.models import LabelApplication
from taxonomy.models import Taxonomy
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Trace


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_folder_is_walked_recursively_in_path_order(tmp_path):
    for name in ("b/2.jsonl", "a/1.json", "a/deep/3.traj", "README.md", ".hidden/4.json", "a/.5.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    found = [p.relative_to(tmp_path).as_posix() for p in files_in(tmp_path, TRACE_SUFFIXES)]
    assert found == ["a/1.json", "a/deep/3.traj", "b/2.jsonl"]


def test_a_folder_takes_links_to_files_but_follows_no_link_to_a_folder(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.traj").write_text("{}")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "b.json").write_text("{}")
    (tmp_path / "runs" / "linked.json").symlink_to(tmp_path / "elsewhere" / "b.json")
    (tmp_path / "runs" / "folder-link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "runs" / "broken.json").symlink_to(tmp_path / "missing.json")
    (tmp_path / "runs" / "dir.json").mkdir()  # a folder named like a trace file is walked, not taken
    (tmp_path / "runs" / "dir.json" / "c.JSONL").write_text("{}")
    found = [p.relative_to(tmp_path / "runs").as_posix() for p in files_in(tmp_path / "runs", TRACE_SUFFIXES)]
    assert found == ["a.traj", "dir.json/c.JSONL", "linked.json"]


def test_import_annotations_takes_a_folder(project, tmp_path):
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(2, steps=4, seed=8))))
    run("import_traces", str(traces), "--batch", "g", "--project", project.slug)
    first, second = Trace.objects.order_by("id").values_list("external_id", flat=True)
    sheets = tmp_path / "labels"
    (sheets / "round-2").mkdir(parents=True)
    (sheets / "round-1.jsonl").write_text(
        json.dumps({"trace": first, "annotator": "sheet-a", "labels": [{"mode": "FM-1.3"}]}) + "\n"
    )
    (sheets / "round-2" / "more.jsonl").write_text(
        json.dumps({"trace": second, "annotator": "sheet-b", "labels": [{"mode": "FM-3.3"}]}) + "\n"
    )
    (sheets / "notes.md").write_text("not a label file")
    output = run("import_annotations", str(sheets), "--project", project.slug)
    assert "2 annotations with 2 labels imported" in output
    sheets_labels = LabelApplication.objects.filter(
        annotation__assignment__annotator__username__contains="/sheet-"
    )
    assert sorted(sheets_labels.values_list("mode__code", flat=True)) == ["FM-1.3", "FM-3.3"]


def test_import_annotations_from_a_folder_is_all_or_nothing(project, tmp_path):
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(1, steps=4, seed=9))))
    run("import_traces", str(traces), "--batch", "g", "--project", project.slug)
    ext = Trace.objects.get().external_id
    sheets = tmp_path / "labels"
    sheets.mkdir()
    (sheets / "a.jsonl").write_text(
        json.dumps({"trace": ext, "annotator": "x", "labels": [{"mode": "FM-1.3"}]}) + "\n"
    )
    (sheets / "b.jsonl").write_text(json.dumps({"trace": "absent", "annotator": "y", "labels": []}) + "\n")
    before = LabelApplication.objects.count()
    with pytest.raises(CommandError, match=r"b\.jsonl, line 1: no trace 'absent'"):
        run("import_annotations", str(sheets), "--project", project.slug)
    assert LabelApplication.objects.count() == before
    assert not LabelApplication.objects.filter(annotation__assignment__annotator__username="x").exists()


def test_a_folder_without_files_to_read_is_an_error(project, tmp_path):
    (tmp_path / "empty").mkdir()
    for command in (["import_annotations", "--project", project.slug], ["import_traces", "--batch", "b"]):
        with pytest.raises(CommandError, match=r"no .* files in this folder") as error:
            run(command[0], str(tmp_path / "empty"), *command[1:])
        assert error.value.returncode == 2


def test_import_taxonomy_takes_a_folder(taxonomies, tmp_path):
    folder = tmp_path / "taxonomies"
    (folder / "more").mkdir(parents=True)
    for slug, path in (("kami", folder / "kami-copy.json"), ("mast", folder / "more" / "mast-copy.yaml")):
        data = json.loads(run("export_taxonomy", slug, "--format", "json"))
        data["slug"] = f"{slug}-copy"
        path.write_text(json.dumps(data))
    output = run("import_taxonomy", str(folder))
    assert "kami-copy version 1" in output and "mast-copy version 1" in output
    assert Taxonomy.objects.filter(slug__in=["kami-copy", "mast-copy"]).count() == 2
    with pytest.raises(CommandError, match="--slug names one taxonomy"):
        run("import_taxonomy", str(folder), "--slug", "one")


# Commands whose file arguments are not inputs to import: guidelines are one document shown as written.
NOT_IMPORTS = {("create_project", "guidelines")}


def test_every_command_that_reads_files_says_it_takes_folders():
    ours = {name: app for name, app in get_commands().items() if app in ("annotator", "taxonomy", "traces")}
    readers = []
    for name, app in sorted(ours.items()):
        parser = load_command_class(app, name).create_parser("manage.py", name)
        for action in parser._actions:
            is_input = action.type is Path or action.dest in ("path", "paths", "file", "files")
            if is_input and action.dest not in ("out",) and (name, action.dest) not in NOT_IMPORTS:
                readers.append(name)
                assert action.nargs == "+", f"{name} {action.dest} takes one path only"
                assert "folder" in (action.help or ""), f"{name} {action.dest}: help does not mention folders"
    assert {"import_traces", "import_annotations", "import_taxonomy"} <= set(readers)
