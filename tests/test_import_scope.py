"""Imports stay inside what the importer may see, raters from files are never real users, missing stays
missing, and the same content is the same trace whatever container it came in (issues 11 and 12)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotator.models import Annotation, Assignment, Membership, RaterKind
from annotator.raters import get_llm_rater, human_q, is_llm_rater
from annotator.services.assignment import annotator_ids, do_assign
from annotator.services.imports import do_import_traces
from annotator.services.label_import import IncomingAnnotation, LabelImportError, do_import_annotations
from tests.factories import ProjectFactory, UserFactory, add_member, trace_with_steps
from traces import importers
from traces.importers._writers import write_openai_chat_jsonl
from traces.importers.records import AnnotationRecord, LabelRecord
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch, Trace


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def write_native(path: Path, n: int = 4, seed: int = 1) -> Path:
    path.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(n, steps=5, seed=seed))))
    return path


def write_labelled(path: Path, annotations: list[dict], trace_id: str = "labelled-1") -> Path:
    record = {
        "id": trace_id,
        "steps": [
            {"kind": "message", "content": f"plan of {trace_id}"},
            {"kind": "tool_call", "tool_name": "s"},
        ],
        "annotations": annotations,
    }
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.fixture
def team(mast):
    """Two owners, each with a project the other cannot see."""
    olga, bob = UserFactory(username="olga"), UserFactory(username="bob")
    first = ProjectFactory(taxonomy_version=mast, slug="first")
    second = ProjectFactory(taxonomy_version=mast, slug="second")
    add_member(first, olga, "owner")
    add_member(second, bob, "owner")
    return olga, first, bob, second


# --- Batches belong to someone (issue 11, point 3) ---


def test_a_second_project_importing_the_same_file_gets_its_own_traces_and_learns_nothing(team, tmp_path):
    olga, first, bob, second = team
    path = write_native(tmp_path / "run.jsonl")
    do_import_traces([(path, "run.jsonl")], batch_name="run-1", user=olga, project=first)
    result, _ = do_import_traces([(path, "run.jsonl")], batch_name="mine", user=bob, project=second)
    # Before: "0 traces, 4 duplicates", telling bob the content exists elsewhere.
    assert (result.traces, result.duplicates, result.added_to_project) == (4, 0, 0)
    assert Trace.objects.in_project(second).count() == 4
    assert set(Trace.objects.in_project(second)).isdisjoint(Trace.objects.in_project(first))


def test_importing_under_another_projects_batch_name_never_appends_to_it(team, tmp_path):
    olga, first, bob, second = team
    do_import_traces(
        [(write_native(tmp_path / "a.jsonl"), "a.jsonl")], batch_name="run-1", user=olga, project=first
    )
    theirs = Batch.objects.get(name="run-1")
    path = write_native(tmp_path / "b.jsonl", seed=2)
    result, _ = do_import_traces([(path, "b.jsonl")], batch_name="run-1", user=bob, project=second)
    assert result.batch != theirs and result.batch.name == "run-1"
    theirs.refresh_from_db()
    assert theirs.trace_count == 4 and theirs.traces.count() == 4
    assert list(second.batches.all()) == [result.batch]


def test_an_owner_extends_a_batch_of_their_own_project_by_name(team, tmp_path):
    olga, first, _, _ = team
    do_import_traces(
        [(write_native(tmp_path / "a.jsonl"), "a.jsonl")], batch_name="run-1", user=olga, project=first
    )
    path = write_native(tmp_path / "b.jsonl", seed=2)
    result, _ = do_import_traces([(path, "b.jsonl")], batch_name="run-1", user=olga, project=first)
    assert Batch.objects.filter(name="run-1").count() == 1 and result.batch.trace_count == 8


# --- Imported raters are never real users (issue 11, point 5; issue 12, point 8) ---


def test_a_label_in_a_real_users_name_is_by_an_imported_rater_who_gets_no_work(project, tmp_path):
    real = UserFactory(username="a1")
    path = write_labelled(tmp_path / "labels.jsonl", [{"annotator": "a1", "labels": [{"mode": "FM-1.3"}]}])
    output = run("import_traces", str(path), "--batch", "lab", "--project", project.slug)
    annotation = Annotation.objects.get()
    rater = annotation.assignment.annotator
    assert rater != real and rater.username == "labels/a1" and not rater.is_active
    assert rater.rater.kind == RaterKind.IMPORTED and rater.rater.source == "labels"
    assert not Membership.objects.filter(user=real).exists()  # before: a1 was enrolled and received work
    assert "new imported raters (inactive, never given work): labels/a1" in output
    do_assign(project)
    assert rater.pk not in annotator_ids(project)
    assert Assignment.objects.filter(annotator=rater).count() == 1  # only the slot of its own label


def test_the_summary_is_the_same_whether_or_not_an_account_of_that_name_exists(mast, tmp_path):
    summaries = []
    for n, make_user in enumerate((False, True)):
        project = ProjectFactory(taxonomy_version=mast, slug=f"p{n}")
        if make_user:
            UserFactory(username="ghost")
        path = write_labelled(
            tmp_path / "labels.jsonl", [{"annotator": "ghost", "no_failure": True}], f"t{n}"
        )
        summaries.append(
            run("import_traces", str(path), "--batch", f"b{n}", "--project", project.slug).replace(
                f"t{n}", ""
            )
        )
        get_user_model().objects.filter(rater__kind=RaterKind.IMPORTED).delete()  # a clean slate
    assert summaries[0].replace("b0", "b1") == summaries[1]


def test_only_staff_may_map_a_rater_to_an_account(project, owner, annotator_a, tmp_path):
    trace = trace_with_steps(2)
    project.batches.add(trace.batch)
    item = IncomingAnnotation(trace, AnnotationRecord("a1", [LabelRecord("FM-1.3")]), source="labels")
    with pytest.raises(LabelImportError, match="Only staff"):
        do_import_annotations(project, [item], actor=owner, rater_map={"a1": annotator_a.username})
    owner.is_staff = True
    owner.save()
    do_import_annotations(project, [item], actor=owner, rater_map={"a1": annotator_a.username})
    assert Annotation.objects.get().assignment.annotator == annotator_a


def test_map_rater_on_the_command_line_attributes_labels_to_an_account(project, tmp_path):
    alice = UserFactory(username="alice")
    path = write_labelled(tmp_path / "labels.jsonl", [{"annotator": "a1", "labels": [{"mode": "FM-1.3"}]}])
    run("import_traces", str(path), "--batch", "lab", "--project", project.slug, "--map-rater", "a1=alice")
    assert Annotation.objects.get().assignment.annotator == alice
    assert Membership.objects.filter(project=project, user=alice, role="annotator").exists()
    with pytest.raises(CommandError, match="no user 'nobody'"):
        path = write_labelled(tmp_path / "more.jsonl", [{"annotator": "a2", "no_failure": True}], "t2")
        run(
            "import_traces",
            str(path),
            "--batch",
            "lab",
            "--project",
            project.slug,
            "--map-rater",
            "a2=nobody",
        )


def test_the_same_pseudonym_in_two_datasets_is_two_raters(project, tmp_path):
    for name in ("dataset-one", "dataset-two"):
        path = write_labelled(
            tmp_path / f"{name}.jsonl", [{"annotator": "annotator-1", "no_failure": True}], name
        )
        run("import_traces", str(path), "--batch", name, "--project", project.slug)
    raters = set(Annotation.objects.values_list("assignment__annotator__username", flat=True))
    assert raters == {"dataset-one/annotator-1", "dataset-two/annotator-1"}  # before: one "annotator-1"


# --- The rater kind is a column (issue 13, point 6) ---


def test_the_rater_kind_is_a_column_not_a_name(db):
    pretender = UserFactory(username="llm:pretender")
    model = get_llm_rater("qwen2.5-7b")
    assert not is_llm_rater(pretender) and is_llm_rater(model)
    humans = set(type(pretender).objects.filter(human_q()).values_list("username", flat=True))
    assert "llm:pretender" in humans and model.username not in humans


# --- Missing is missing (issue 12, point 3) ---


def test_only_what_a_rater_said_is_stored(project, tmp_path):
    path = write_labelled(
        tmp_path / "labels.jsonl",
        [
            {"annotator": "silent", "labels": []},
            {"annotator": "elsewhere", "labels": [{"mode": "A mode no taxonomy has", "steps": [1]}]},
            {"annotator": "clean", "no_failure": True},
        ],
    )
    output = run(
        "import_traces", str(path), "--batch", "lab", "--project", project.slug, "--ignore-unknown-modes"
    )
    by = {
        a.assignment.annotator.username: a for a in Annotation.objects.select_related("assignment__annotator")
    }
    # Before: "silent" became "no failure observed"; later "elsewhere", whose only label was left out, became
    # a submitted annotation without labels, which every report read as "no mode chosen" (issue 32).
    assert set(by) == {"labels/clean"}
    assert by["labels/clean"].no_failure
    assert "2 records had nothing usable" in output and "ignored 1 labels of unknown mode" in output


# --- One definition of the project's traces (issue 12, point 2) ---


def test_labels_never_land_on_a_trace_outside_the_project(project):
    trace = trace_with_steps(2, external_id="stray")
    item = IncomingAnnotation(trace, AnnotationRecord("r", [LabelRecord("FM-1.3")]), source="labels")
    with pytest.raises(LabelImportError, match=f"trace 'stray' is in batch '{trace.batch.name}'"):
        do_import_annotations(project, [item])
    assert not Annotation.objects.exists()


def test_labels_of_already_imported_traces_bring_those_traces_into_the_project(project, tmp_path):
    path = write_labelled(tmp_path / "labels.jsonl", [{"annotator": "r1", "labels": [{"mode": "FM-1.3"}]}])
    run("import_traces", str(path), "--batch", "a")
    output = run("import_traces", str(path), "--batch", "b", "--project", project.slug)
    # The trace, not its batch (issue 28): the project follows no batch, and no empty batch "b" was made.
    assert "1 traces already imported were added to the project demo-project" in output
    assert not project.batches.exists() and not Batch.objects.filter(name="b").exists()
    annotation = Annotation.objects.get()
    assert Trace.objects.in_project(project).filter(pk=annotation.assignment.trace_id).exists()


# --- Nothing empty left behind (issue 12, point 7) ---


def test_an_import_that_adds_nothing_creates_no_batch(db, tmp_path):
    path = write_native(tmp_path / "run.jsonl")
    run("import_traces", str(path), "--batch", "first")
    output = run("import_traces", str(path), "--batch", "second")
    assert "no batch was created" in output
    assert list(Batch.objects.values_list("name", flat=True)) == ["first"]


def test_a_failed_import_leaves_no_batch(db, tmp_path):
    good = write_native(tmp_path / "good.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "steps": [{"kind": "nonsense"}]}\n')
    with pytest.raises(CommandError):
        run("import_traces", str(good), str(bad), "--batch", "broken", "--format", "native")
    assert not Batch.objects.exists() and not Trace.objects.exists()


# --- A batch may mix every format (issue 12, point 1) ---


def test_a_batch_records_every_format_it_holds(db, tmp_path):
    field = Batch._meta.get_field("format")
    assert field.max_length is None or field.max_length >= len(",".join(importers.ALL_FORMATS))
    records = list(synthetic_traces(2, steps=4, seed=5))
    write_openai_chat_jsonl(records[:1], tmp_path / "chat.jsonl")
    write_native(tmp_path / "native.jsonl", seed=6)
    run("import_traces", str(tmp_path / "chat.jsonl"), str(tmp_path / "native.jsonl"), "--batch", "mixed")
    assert Batch.objects.get(name="mixed").format == "native,openai_chat"


# --- Content identity independent of the container (issue 12, point 5) ---


def test_export_traces_then_import_traces_adds_no_trace(db, tmp_path):
    write_openai_chat_jsonl(list(synthetic_traces(3, steps=6, seed=7)), tmp_path / "chat.jsonl")
    run("import_traces", str(tmp_path / "chat.jsonl"), "--batch", "chat")
    out = tmp_path / "export.jsonl"
    call_command("export_traces", "--batch", "chat", "--out", str(out), stdout=StringIO(), stderr=StringIO())
    output = run("import_traces", str(out), "--batch", "chat-again")
    assert Trace.objects.count() == 3 and "3 duplicates skipped" in output  # before: 3 more traces


# --- Provenance of raters (issue 12) ---


def test_the_dataset_card_says_which_labels_were_imported(project, tmp_path):
    path = write_labelled(tmp_path / "labels.jsonl", [{"annotator": "a1", "labels": [{"mode": "FM-1.3"}]}])
    run("import_traces", str(path), "--batch", "lab", "--project", project.slug)
    out = tmp_path / "published"
    run("export_dataset", project.slug, "--out", str(out), "--license", "cc0-1.0")
    card = (out / "README.md").read_text()
    assert "1 annotation by 1 rater were imported with the data" in card
    assert Annotation.objects.get().provenance["source"] == "labels"


def test_import_label_and_report_count_the_same_traces_in_every_reader(
    project, owner, tmp_path, django_capture_on_commit_callbacks
):
    """Issue 12, point 2: traces imported first without a project, then again with labels into one. Before,
    the labels went into the project while the traces stayed outside it, and the readers disagreed."""
    from annotator.models import AdjudicationItem
    from annotator.services.exports.options import ExportOptions
    from annotator.services.exports.rows import selected_traces
    from annotator.services.reports.data import load_report_input
    from annotator.services.signatures import parse_signature_query
    from annotator.services.signatures.report import build_report

    lines = []
    for n in range(5):
        record = {
            "id": f"t{n}",
            "steps": [{"kind": "message", "content": f"task {n}"}, {"kind": "tool_call", "tool_name": "s"}],
            "annotations": [
                {"annotator": "r1", "labels": [{"mode": "FM-1.3", "steps": [1]}]},
                {"annotator": "r2", "labels": [{"mode": "FM-1.3" if n % 2 else "FM-1.1", "steps": [1]}]},
            ],
        }
        lines.append(json.dumps(record))
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(lines) + "\n")
    # A reproduction of the file's study: its raters fill the overlap and the adjudication queue (issue 32).
    project.imported_labels_count_toward_overlap = True
    project.save()
    run("import_traces", str(path), "--batch", "a")
    with django_capture_on_commit_callbacks(execute=True):  # the adjudication check runs after commit
        run("import_traces", str(path), "--batch", "b", "--project", project.slug)

    traces = set(Trace.objects.in_project(project).values_list("pk", flat=True))
    assert len(traces) == 5
    assert set(Annotation.objects.values_list("assignment__trace_id", flat=True)) == traces
    report = load_report_input(project, {})
    assert report.data.ratings.shape[0] == 5
    assert build_report(project, parse_signature_query({"source": "union"})).signatures.n_traces == 5
    assert set(selected_traces(project, ExportOptions()).values_list("pk", flat=True)) == traces
    assert set(AdjudicationItem.objects.filter(project=project).values_list("trace_id", flat=True)) == traces
    project_page = Client()
    project_page.force_login(owner)
    counts = project_page.get(f"/p/{project.slug}/").context["counts"]
    assert counts["submitted"] == 10


def test_a_project_import_never_extends_another_projects_batch_of_that_name(project, mast, tmp_path):
    other = ProjectFactory(taxonomy_version=mast, slug="other")
    run("import_traces", str(write_native(tmp_path / "a.jsonl")), "--batch", "run-1", "--project", other.slug)
    path = write_native(tmp_path / "b.jsonl", seed=2)
    run("import_traces", str(path), "--batch", "run-1", "--project", project.slug)
    theirs, ours = other.batches.get(), project.batches.get()
    assert theirs != ours and theirs.traces.count() == ours.traces.count() == 4
    assert not project.batches.filter(pk=theirs.pk).exists()
