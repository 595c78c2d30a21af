"""Issue 32, part 1, on the real files of ../shared/datasets: the Who&When attributions imported into a MAST
project (nothing about MAST in them), and MAST's own human-labelled release imported into a project with two
annotators. Assignments and agreement figures before (what the import used to store, rebuilt here) and after."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotator.models import AdjudicationItem, Annotation, Assignment, LabelApplication
from annotator.raters import get_imported_rater
from annotator.services.adjudication import do_check_traces
from annotator.services.assignment import do_assign
from annotator.services.projects import do_update_settings
from tests.factories import ProjectFactory, add_member
from tests.labels import submit
from tests.services import datasets_dir, missing
from traces.models import Batch, Trace


def import_traces(*args: str) -> str:
    out = io.StringIO()
    call_command("import_traces", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def agreement(project) -> dict:
    out = io.StringIO()
    call_command("agreement", project.slug, "--json", stdout=out)
    return json.loads(out.getvalue())


def dataset(relative: str):
    path = datasets_dir() / relative
    if not path.exists():
        missing(str(path), "The issue-32 tests read Who&When and MAST from ../shared/datasets/.")
    return path


def mode_rows(report: dict) -> dict[str, dict]:
    return {row["code"]: row for row in report["modes"]}


def figures(report: dict) -> dict[str, tuple]:
    """Per mode: (observed agreement, Cohen's kappa, Krippendorff's alpha) as the report prints them."""
    return {
        code: (
            row["observed_agreement"]["value"],
            row["cohen_kappa"]["value"],
            row["krippendorff_alpha"]["value"],
        )
        for code, row in mode_rows(report).items()
    }


def per_trace(project, people) -> Counter:
    """How many of `people` hold a slot on each trace of the project: {slots per trace: traces}."""
    held = Counter(
        Assignment.objects.work()
        .filter(project=project, annotator__in=people)
        .values_list("trace_id", flat=True)
    )
    return Counter(held[pk] for pk in Trace.objects.in_project(project).values_list("pk", flat=True))


def team(project, annotator_a, annotator_b) -> None:
    add_member(project, annotator_a, "annotator")
    add_member(project, annotator_b, "annotator")


# --- Who&When into a MAST project ------------------------------------------------------------------------


def test_who_and_when_into_a_mast_project_invents_no_rater_and_takes_no_slot(mast, annotator_a, annotator_b):
    folder = dataset("who_and_when")
    project = ProjectFactory(taxonomy_version=mast, slug="mast-ww")
    team(project, annotator_a, annotator_b)
    output = import_traces(str(folder), "--batch", "ww", "--project", project.slug, "--ignore-unknown-modes")
    traces = list(Trace.objects.in_project(project).order_by("external_id"))
    assert len(traces) == 40
    # Before: 40 submitted annotations without a label by who_and_when/who_and_when.
    assert not Annotation.objects.exists()
    assert (
        "40 records had nothing usable" in output
        and "ignored 40 labels of unknown mode 'decisive-error'" in output
    )
    # Before: the imported rater held one of each trace's two slots, so each trace went to ana *or* ben.
    assert per_trace(project, [annotator_a, annotator_b]) == Counter({2: 40})

    # The same ten traces labelled by both people; the report and the queue are those of a project where
    # nothing was imported (the control holds the same traces and the same two people).
    control = ProjectFactory(taxonomy_version=mast, slug="mast-control")
    team(control, annotator_a, annotator_b)
    control.batches.add(Batch.objects.get(name="ww"))
    do_assign(control)
    for n, trace in enumerate(traces[:10]):
        for target in (project, control):
            submit(target, trace, annotator_a, {"FM-1.1": [0]})
            submit(target, trace, annotator_b, {"FM-1.1": [0]} if n < 7 else {"FM-2.6": [0]})
    for target in (project, control):
        do_check_traces(target.pk, [trace.pk for trace in traces])
    after, expected = agreement(project), agreement(control)
    assert [r["username"] for r in after["raters"]] == ["ana-annotator", "ben-annotator"]
    assert figures(after) == figures(expected)
    assert after["counts"] == expected["counts"]

    def queue(target):
        return sorted(
            (item.trace.external_id, item.status, item.disputed)
            for item in AdjudicationItem.objects.filter(project=target).select_related("trace")
        )

    assert queue(project) == queue(control) and len(queue(project)) == 10
    assert Counter(status for _, status, _ in queue(project)) == Counter({"agreed": 7, "open": 3})


def test_what_the_empty_who_and_when_annotations_used_to_do_to_the_report(mast, annotator_a):
    """The figures of the issue, rebuilt: an empty submitted annotation by the imported rater on each of the
    40 traces (what the import stored before) and ana's FM-1.1 on ten. The import no longer stores them."""
    folder = dataset("who_and_when")
    before = ProjectFactory(taxonomy_version=mast, slug="mast-before")
    add_member(before, annotator_a, "annotator")
    import_traces(str(folder), "--batch", "ww", "--project", before.slug, "--ignore-unknown-modes")
    rater, _ = get_imported_rater("who_and_when", "who_and_when")
    add_member(before, rater, "annotator")
    traces = list(Trace.objects.in_project(before).order_by("external_id"))
    for trace in traces:
        slot, _ = Assignment.objects.get_or_create(project=before, trace=trace, annotator=rater)
        Assignment.objects.filter(pk=slot.pk).update(status=Assignment.Status.SUBMITTED)
        Annotation.objects.create(
            assignment=slot,
            status=Annotation.Status.SUBMITTED,
            submitted_at=timezone.now(),
            provenance={
                "source": "who_and_when",
                "unknown_labels": [{"mode": "decisive-error", "steps": [1]}],
            },
        )
    for trace in traces[:10]:
        submit(before, trace, annotator_a, {"FM-1.1": [0]})
    rows = mode_rows(agreement(before))
    assert rows["FM-1.1"]["cohen_kappa"]["value"] == pytest.approx(0.0)
    assert rows["FM-1.1"]["krippendorff_alpha"]["value"] == pytest.approx(-0.9)
    assert all(rows[code]["observed_agreement"]["value"] == 1.0 for code in rows if code != "FM-1.1")

    # After: the same import into a fresh project stores none of them, and ana alone is no agreement.
    after = ProjectFactory(taxonomy_version=mast, slug="mast-after")
    add_member(after, annotator_a, "annotator")
    after.batches.add(*before.batches.all())
    output = import_traces(str(folder), "--batch", "ww", "--project", after.slug, "--ignore-unknown-modes")
    assert "40 records had nothing usable" in output
    assert not Annotation.objects.filter(assignment__project=after).exists()
    for trace in traces[:10]:
        submit(after, trace, annotator_a, {"FM-1.1": [0]})
    report = agreement(after)
    assert [r["username"] for r in report["raters"]] == ["ana-annotator"]
    assert all(row["cohen_kappa"]["value"] is None for row in report["modes"])


# --- MAST's human-labelled release into a project with two annotators -------------------------------------


def test_the_mast_file_leaves_the_people_their_work_unless_it_reproduces_the_study(
    mast, annotator_a, annotator_b, django_capture_on_commit_callbacks
):
    path = dataset("mast/MAD_human_labelled_dataset.json")
    project = ProjectFactory(taxonomy_version=mast, slug="mast-repro")
    team(project, annotator_a, annotator_b)
    with django_capture_on_commit_callbacks(execute=True):
        import_traces(str(path), "--batch", "mast", "--project", project.slug, "--ignore-unknown-modes")
    assert Annotation.objects.count() == 57 and LabelApplication.objects.exists()
    people = [annotator_a, annotator_b]
    # Default (off): before, ana and ben got no work at all; now every trace goes to both of them, and the
    # published raters' disagreements wait for them instead of filling the adjudication queue.
    assert per_trace(project, people) == Counter({2: 19})
    assert not AdjudicationItem.objects.filter(project=project).exists()
    published = agreement(project)
    assert [r["username"] for r in published["raters"]] == [
        f"MAD_human_labelled_dataset/annotator_{n}" for n in (1, 2, 3)
    ]
    fleiss = {code: row["fleiss_kappa"]["value"] for code, row in mode_rows(published).items()}

    # ana submits one trace; then the project says the file reproduces the study: the published raters fill
    # every trace, the people keep only what they submitted, and the queue holds the published disagreements.
    first = Trace.objects.in_project(project).order_by("pk").first()
    done = submit(project, first, annotator_a, {"FM-1.1": [0]})
    settings = dict(name=project.name, overlap=2, reservation_minutes=30, guidelines="")
    with django_capture_on_commit_callbacks(execute=True):
        do_update_settings(project, **settings, imported_labels_count_toward_overlap=True)
    assert per_trace(project, people) == Counter({0: 18, 1: 1})
    assert Annotation.objects.filter(pk=done.pk, status=Annotation.Status.SUBMITTED).exists()
    items = AdjudicationItem.objects.filter(project=project)
    assert items.count() == 19 and items.filter(status=AdjudicationItem.Status.OPEN).exists()
    # The report compares every rater who said something, whatever the setting: the published figures hold.
    reproduced = agreement(project)
    assert {r["username"] for r in reproduced["raters"]} >= {r["username"] for r in published["raters"]}

    # Off again: both people on every trace, ana's submitted work kept, the unstarted items withdrawn.
    with django_capture_on_commit_callbacks(execute=True):
        do_update_settings(project, **settings, imported_labels_count_toward_overlap=False)
    assert per_trace(project, people) == Counter({2: 19})
    assert Annotation.objects.filter(pk=done.pk, status=Annotation.Status.SUBMITTED).exists()
    do_check_traces(project.pk, Trace.objects.in_project(project).values_list("pk", flat=True))
    assert not AdjudicationItem.objects.filter(project=project).exists()
    Annotation.objects.filter(pk=done.pk).delete()  # back to the published raters alone
    assert {
        code: row["fleiss_kappa"]["value"] for code, row in mode_rows(agreement(project)).items()
    } == fleiss
