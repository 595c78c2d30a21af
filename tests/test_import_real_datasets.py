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
        assert label.annotation.assignment.annotator.username == "who_and_when"


def test_mast_human_labels_import_with_old_mode_names_mapped(mast):
    project = ProjectFactory(taxonomy_version=mast)
    path = datasets_dir() / "mast" / "MAD_human_labelled_dataset.json"
    output = import_traces(str(path), "--batch", "mast", "--project", project.slug, "--ignore-unknown-modes")
    assert Trace.objects.count() == 19 and Step.objects.count() == 1389
    assert Annotation.objects.count() == 57
    assert set(Annotation.objects.values_list("assignment__annotator__username", flat=True)) == {
        "annotator_1",
        "annotator_2",
        "annotator_3",
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
