"""Every real public trace file in ../shared/datasets imports through the whole pipeline (CLI -> database)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from annotator.models import Annotation, LabelApplication
from taxonomy.services import resolve_version
from tests.factories import ProjectFactory
from tests.services import datasets_dir
from traces.models import Batch, Step, Trace


def import_traces(*args: str) -> str:
    out = StringIO()
    call_command("import_traces", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.parametrize(
    "folder,traces,steps,outcomes",
    [
        ("tau_bench", 27, 735, {"success": 14, "failure": 13}),
        ("tau2_bench", 40, 1178, {"success": 34, "failure": 6}),
        ("swe_agent", 5, 145, None),
        ("openhands", 2, 22, None),
        ("inspect_ai", 1, 10, {"success": 1}),
    ],
)
def test_a_real_dataset_imports_with_the_right_counts(db, folder, traces, steps, outcomes):
    source = datasets_dir() / folder
    files = [
        p
        for p in sorted(source.rglob("*"))
        if p.is_file() and p.suffix in {".json", ".traj", ".jsonl", ".eval"}
    ]
    import_traces(*map(str, files), "--batch", folder)
    batch = Batch.objects.get(name=folder)
    assert (batch.trace_count, batch.step_count) == (traces, steps)
    assert Step.objects.filter(trace__batch=batch).count() == steps
    if outcomes:
        for outcome, count in outcomes.items():
            assert Trace.objects.filter(batch=batch, outcome=outcome).count() == count


def test_who_and_when_attribution_becomes_an_annotation_pinned_on_the_mistake_step(taxonomies):
    project = ProjectFactory(taxonomy_version=resolve_version("decisive-error"))
    output = import_traces(str(datasets_dir() / "who_and_when"), "--batch", "ww", "--project", project.slug)
    assert Trace.objects.count() == 40 and Step.objects.count() == 495
    assert "40 annotations imported" in output
    for label in LabelApplication.objects.select_related("annotation__assignment__trace"):
        trace = label.annotation.assignment.trace
        assert label.mode.code == "DE-1"
        # The attribution is the answer key: kept apart from the metadata annotators see.
        assert label.evidence_steps == [int(trace.answer_key["mistake_step"])]
        assert "mistake_step" not in trace.metadata
        assert label.annotation.assignment.annotator.username == "who_and_when/who_and_when"


def test_mast_human_labels_import_with_old_mode_names_mapped(mast):
    project = ProjectFactory(taxonomy_version=mast)
    path = datasets_dir() / "mast" / "MAD_human_labelled_dataset.json"
    output = import_traces(str(path), "--batch", "mast", "--project", project.slug, "--ignore-unknown-modes")
    assert Trace.objects.count() == 19 and Step.objects.count() == 1389
    assert Annotation.objects.count() == 57
    assert set(Annotation.objects.values_list("assignment__annotator__username", flat=True)) == {
        "MAD_human_labelled_dataset/annotator_1",
        "MAD_human_labelled_dataset/annotator_2",
        "MAD_human_labelled_dataset/annotator_3",
    }
    codes = set(LabelApplication.objects.values_list("mode__code", flat=True))
    assert codes <= {mode.code for mode in mast.modes.all()} and len(codes) >= 10
    assert "ignored" in output  # the four retired early-round modes are reported, not silently dropped
    # The human verdicts are the answer key, kept apart from the metadata annotators see.
    for trace in Trace.objects.all():
        assert "failure_modes" in trace.answer_key and "failure_modes" not in trace.metadata


def test_importing_the_same_real_files_twice_adds_nothing(db):
    path = datasets_dir() / "tau_bench"
    files = [str(p) for p in path.glob("*.json")]
    import_traces(*files, "--batch", "tau")
    output = import_traces(*files, "--batch", "tau")
    assert Trace.objects.count() == 27
    assert "Nothing new" in output


SIX_FORMATS = ("tau_bench", "tau2_bench", "swe_agent", "openhands", "inspect_ai", "who_and_when")


def test_all_six_real_formats_in_one_batch_then_a_project_count_the_same_traces_everywhere(
    taxonomies, tmp_path
):
    """Issue 12: one batch of every format (its format list outgrew a 40-character field), then a project
    import that finds every trace already there: those traces join the project (issue 28: the traces, not
    their batch), and the agreement report, the signatures, the LLM selection and the dataset export all
    count the same traces."""
    from annotator.services.exports.options import ExportOptions
    from annotator.services.exports.rows import selected_traces
    from annotator.services.reports.data import load_report_input
    from annotator.services.signatures import parse_signature_query
    from annotator.services.signatures.report import build_report

    folders = [str(datasets_dir() / name) for name in SIX_FORMATS]
    import_traces(*folders, "--batch", "all")
    batch = Batch.objects.get(name="all")
    formats = batch.format.split(",")
    assert {"tau2_bench", "swe_agent", "inspect_ai", "who_and_when"} <= set(formats) and len(formats) >= 5
    assert len(batch.format) > 40  # a DataError on PostgreSQL with the old 40-character field
    project = ProjectFactory(taxonomy_version=resolve_version("decisive-error"))
    output = import_traces(*folders, "--batch", "all-again", "--project", project.slug)
    assert (
        "Nothing new" in output
        and f"115 traces already imported were added to the project {project.slug}" in output
    )
    assert not project.batches.exists()
    assert not Batch.objects.filter(name="all-again").exists()

    in_project = set(Trace.objects.in_project(project).values_list("pk", flat=True))
    assert len(in_project) == Trace.objects.count() == 27 + 40 + 5 + 2 + 1 + 40
    labelled = set(Annotation.objects.values_list("assignment__trace_id", flat=True))
    assert len(labelled) == 40 and labelled <= in_project

    ratings = load_report_input(project, {}).data.ratings
    signatures = build_report(project, parse_signature_query({"source": "union"})).signatures
    exported = set(selected_traces(project, ExportOptions()).values_list("pk", flat=True))
    assert ratings.shape[0] == signatures.n_traces == len(labelled) == 40
    assert exported == in_project
    out = tmp_path / "dataset"
    written = StringIO()
    call_command("export_dataset", project.slug, "--out", str(out), "--license", "cc0-1.0", stdout=written)
    assert f"traces {len(in_project)} rows, annotations 40 rows" in written.getvalue()
    # Re-importing the published folder into the same database adds no trace (content, not container).
    again = import_traces(str(out), "--batch", "published", "--project", project.slug)
    assert Trace.objects.count() == len(in_project) and "Nothing new" in again


def test_ten_who_and_when_files_of_a_mixed_batch_bring_only_their_traces(taxonomies, tmp_path):
    """Issue 28's report: ten Who&When files imported into a project, their traces already sitting in a batch
    of six formats. Before, the project held the whole batch (115 traces here); now exactly those ten, and
    nothing else is assigned, exported or counted."""
    from annotator.models import Assignment
    from annotator.services.exports.options import ExportOptions
    from annotator.services.exports.rows import selected_traces

    import_traces(*(str(datasets_dir() / name) for name in SIX_FORMATS), "--batch", "all6")
    folder = datasets_dir() / "who_and_when" / "Hand-Crafted"
    ten = sorted(folder.glob("*.json"), key=lambda p: p.name)[:10]
    project = ProjectFactory(taxonomy_version=resolve_version("decisive-error"), slug="wwp")
    output = import_traces(*map(str, ten), "--batch", "ww", "--project", "wwp")

    assert "10 traces already imported were added to the project wwp" in output
    assert "Batches added" not in output
    held = Trace.objects.in_project(project)
    assert held.count() == 10 and set(held.values_list("source_format", flat=True)) == {"who_and_when"}
    assert Trace.objects.filter(batch__name="all6").count() == 115
    assert not Assignment.objects.filter(project=project).exclude(trace__in=held).exists()
    assert set(selected_traces(project, ExportOptions()).values_list("pk", flat=True)) == set(
        held.values_list("pk", flat=True)
    )


@pytest.mark.parametrize("folder", ["tau_bench", "tau2_bench", "swe_agent", "openhands", "inspect_ai"])
def test_export_traces_of_a_real_dataset_imports_back_as_the_same_traces(db, folder, tmp_path):
    import_traces(str(datasets_dir() / folder), "--batch", folder)
    count = Trace.objects.count()
    out = tmp_path / "export.jsonl"
    call_command("export_traces", "--batch", folder, "--out", str(out), stdout=StringIO(), stderr=StringIO())
    output = import_traces(str(out), "--batch", f"{folder}-again")
    assert Trace.objects.count() == count and f"{count} duplicates skipped" in output
