"""A project holds exactly the traces put into it (issue 28, item 1): importing files into a project adds
those files' traces, new or already imported, and nothing else of the batches holding them; attaching a
batch adds that batch, and a trace imported into it later joins; detaching removes its traces. Every reader
counts what the project holds."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from annotator.access import ProjectAccess
from annotator.models import Assignment, ProjectTrace
from annotator.services.exports.options import ExportOptions, ExportOptionsError, clean_options
from annotator.services.exports.rows import selected_traces
from annotator.services.imports import do_import_traces
from annotator.services.projects import do_attach_batches
from annotator.services.reports.filters import ReportFilterError, clean_filters
from tests.factories import ProjectFactory, TraceFactory, UserFactory, add_member
from traces.importers._writers import write_inspect_eval, write_openai_chat_jsonl, write_otel_json
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch, Trace


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def mixed_files(folder: Path) -> dict[str, Path]:
    """Four files of four formats, 3 traces each, none sharing content."""
    folder.mkdir()
    native = folder / "native.jsonl"
    native.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(3, steps=4, seed=1))))
    chat = folder / "chat.jsonl"
    write_openai_chat_jsonl(synthetic_traces(3, steps=4, seed=2), chat)
    otel = folder / "otel.json"
    write_otel_json(synthetic_traces(3, steps=4, seed=3), otel)
    inspect = folder / "run.eval"
    write_inspect_eval(synthetic_traces(3, steps=4, seed=4), inspect)
    return {"native": native, "chat": chat, "otel": otel, "inspect": inspect}


def held(project) -> set[int]:
    return set(Trace.objects.in_project(project).values_list("pk", flat=True))


@pytest.fixture
def all_formats(db, tmp_path):
    """The issue's world: one batch of mixed formats already imported, outside any project."""
    files = mixed_files(tmp_path / "all")
    run("import_traces", *map(str, files.values()), "--batch", "all")
    assert Trace.objects.count() == 12
    return files


def test_importing_some_files_of_a_mixed_batch_adds_exactly_their_traces(project, owner, all_formats):
    native = set(Trace.objects.filter(source_format="native").values_list("pk", flat=True))
    assert len(native) == 3

    output = run("import_traces", str(all_formats["native"]), "--batch", "wwp", "--project", project.slug)

    assert "3 traces already imported were added to the project demo-project" in output
    assert "Batches added" not in output
    assert held(project) == native
    assert not project.batches.exists()  # it follows no batch: nothing else of "all" comes in later
    assert not Batch.objects.filter(name="wwp").exists()  # no trace was new, so no batch was made
    # Assigned, exported and counted: the same three traces everywhere.
    assert set(Assignment.objects.filter(project=project).values_list("trace_id", flat=True)) == native
    assert set(selected_traces(project, ExportOptions()).values_list("pk", flat=True)) == native
    page = Client()
    page.force_login(owner)
    assert page.get(f"/p/{project.slug}/").context["counts"]["total"] == 3 * project.overlap
    # The batch holding them is one the project's filters accept, by name.
    assert list(Batch.objects.in_project(project).values_list("name", flat=True)) == ["all"]
    assert clean_filters(project, {"batch": "all"})["batch"] == "all"
    assert clean_options(project, {"batches": ["all"]}).batches == ("all",)


def test_a_project_import_of_old_and_new_files_holds_both_and_follows_its_new_batch(
    project, all_formats, tmp_path
):
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(2, steps=3, seed=9))))
    native = set(Trace.objects.filter(source_format="native").values_list("pk", flat=True))

    result, _ = do_import_traces(
        [(all_formats["native"], "native.jsonl"), (fresh, "fresh.jsonl")], batch_name="mine", project=project
    )

    new = set(Trace.objects.filter(batch__name="mine").values_list("pk", flat=True))
    assert (result.traces, result.duplicates, result.added_to_project) == (2, 3, 3)
    assert held(project) == native | new and len(new) == 2
    assert list(project.batches.values_list("name", flat=True)) == ["mine"]
    assert result.as_dict()["already_imported_added_to_project"] == 3
    # Importing the same files again adds nothing: the project holds them already.
    again, _ = do_import_traces(
        [(all_formats["native"], "native.jsonl"), (fresh, "fresh.jsonl")], batch_name="mine", project=project
    )
    assert (again.traces, again.added_to_project) == (0, 0) and held(project) == native | new


def test_a_batch_name_no_project_follows_gets_the_new_traces_but_the_project_only_its_own(
    project, all_formats, tmp_path
):
    """Appending to an existing batch no project follows: the project gets this import's traces, not the
    batch's older ones."""
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(2, steps=3, seed=9))))

    result, _ = do_import_traces([(fresh, "fresh.jsonl")], batch_name="all", project=project)

    assert result.batch.name == "all" and result.traces == 2 and not result.new_batch
    assert Trace.objects.filter(batch__name="all").count() == 14
    assert held(project) == set(
        Trace.objects.filter(batch__name="all").order_by("-pk").values_list("pk", flat=True)[:2]
    )
    assert not project.batches.exists()


def test_attaching_a_batch_adds_its_traces_and_later_ones_join(project, all_formats, tmp_path):
    batch = Batch.objects.get(name="all")
    do_attach_batches(project, [batch])
    assert held(project) == set(batch.traces.values_list("pk", flat=True))
    assert Assignment.objects.filter(project=project).count() == 12 * project.overlap

    # Imported later into the batch it follows, without naming the project: it joins.
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(2, steps=3, seed=9))))
    run("import_traces", str(fresh), "--batch", "all")
    assert len(held(project)) == 14
    # Any writer, not only the import (a row written by the ORM joins the same way).
    late = TraceFactory(batch=batch)
    assert late.pk in held(project)
    # A project that does not follow the batch gets none of it.
    other = ProjectFactory(taxonomy_version=project.taxonomy_version, slug="other")
    assert not held(other)


def test_detaching_a_batch_removes_its_traces(project, all_formats, tmp_path):
    """The rule: membership rows carry no origin, so detaching a batch removes all its traces from the
    project, those also imported file by file included; other batches' traces stay."""
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(2, steps=3, seed=9))))
    do_import_traces([(fresh, "fresh.jsonl")], batch_name="mine", project=project)
    batch = Batch.objects.get(name="all")
    project.batches.add(batch)
    assert len(held(project)) == 14
    project.batches.remove(batch)
    assert held(project) == set(Trace.objects.filter(batch__name="mine").values_list("pk", flat=True))


def test_a_project_holding_part_of_a_batch_refuses_other_batches_by_name(project, all_formats):
    run("import_traces", str(all_formats["native"]), "--batch", "x", "--project", project.slug)
    Batch.objects.create(name="elsewhere")
    with pytest.raises(ReportFilterError):
        clean_filters(project, {"batch": "elsewhere"})
    with pytest.raises(ExportOptionsError):
        clean_options(project, {"batches": ["elsewhere"]})


def test_members_reach_only_the_traces_the_project_holds(project, owner, annotator_a, all_formats):
    run("import_traces", str(all_formats["chat"]), "--batch", "x", "--project", project.slug)
    inside = held(project)
    outside = Trace.objects.exclude(pk__in=inside).first()
    access = ProjectAccess.load(owner, project.slug)
    assert set(access.traces().values_list("pk", flat=True)) == inside
    assert set(access.label_traces().values_list("pk", flat=True)) == inside
    assert list(access.batches().values_list("name", flat=True)) == ["all"]
    page = Client()
    page.force_login(owner)
    assert page.get(f"/p/{project.slug}/t/{outside.pk}/review/").status_code == 404
    assert page.get(f"/p/{project.slug}/t/{min(inside)}/review/").status_code == 200


def test_deleting_a_trace_or_a_project_deletes_its_membership(project, all_formats):
    project.batches.add(Batch.objects.get(name="all"))
    Trace.objects.filter(source_format="native").delete()
    assert ProjectTrace.objects.filter(project=project).count() == 9
    project.delete()
    assert not ProjectTrace.objects.exists()


def test_a_co_owner_importing_what_the_project_holds_adds_no_copy(project, owner, tmp_path):
    """The project's traces count as already imported even when they sit in a batch the importer cannot see
    as a batch (another owner imported it outside any project)."""
    other_owner = UserFactory(username="olga")
    add_member(project, other_owner, "owner")
    path = tmp_path / "run.jsonl"
    path.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(3, steps=3, seed=5))))
    do_import_traces([(path, "run.jsonl")], batch_name="private", user=other_owner)
    do_import_traces([(path, "run.jsonl")], batch_name="shared", user=other_owner, project=project)
    assert len(held(project)) == 3 and not project.batches.exists()

    result, _ = do_import_traces([(path, "run.jsonl")], batch_name="mine", user=owner, project=project)

    assert (result.traces, result.duplicates, result.added_to_project) == (0, 3, 0)
    assert Trace.objects.count() == 3 and len(held(project)) == 3


def test_a_trace_moved_between_batches_follows_them(project, mast):
    """No verb moves a trace, but a shell may: it leaves the projects following its old batch and joins those
    following the new one (trace-level rows carry no origin, as when a batch is detached)."""
    old, new = Batch.objects.create(name="old"), Batch.objects.create(name="new")
    other = ProjectFactory(taxonomy_version=mast, slug="other")
    project.batches.add(old)
    other.batches.add(new)
    trace = TraceFactory(batch=old)
    assert held(project) == {trace.pk} and not held(other)
    trace.batch = new
    trace.save(update_fields=["batch"])
    assert not held(project) and held(other) == {trace.pk}
    trace.save(update_fields=["task"])  # an update that keeps the batch changes nothing
    assert held(other) == {trace.pk}
