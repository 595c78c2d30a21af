"""`manage.py create_project`: create, extend idempotently, report created users, fail clearly."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotator.models import Assignment, Project
from tests.factories import BatchFactory, trace_with_steps


def run(*args):
    out = StringIO()
    call_command("create_project", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def batches(db):
    made = []
    for name, n in (("run-a", 6), ("run-b", 3)):
        batch = BatchFactory(name=name)
        for _ in range(n):
            trace_with_steps(2, batch=batch)
        made.append(batch)
    return made


def test_it_creates_a_project_with_members_and_assignments(mast, batches):
    out = run("study", "--taxonomy", "mast", "--batch", "run-a", "--annotators", "alice,bob,cem",
              "--adjudicators", "dora", "--owner", "olga", "--name", "A study")  # fmt: skip
    project = Project.objects.get(slug="study")
    assert project.name == "A study" and project.overlap == 2
    assert "Users created without a password: olga, alice, bob, cem, dora" in out
    alice = get_user_model().objects.get(username="alice")
    assert not alice.has_usable_password()
    assert Assignment.objects.filter(project=project).count() == 12
    assert "Assignments created: 12" in out


def test_rerunning_extends_without_touching_existing_work(mast, batches):
    run("study", "--taxonomy", "mast", "--batch", "run-a", "--annotators", "alice,bob")
    before = set(Assignment.objects.values_list("pk", flat=True))
    out = run(
        "study", "--taxonomy", "mast", "--batch", "run-a", "--batch", "run-b", "--annotators", "alice,bob"
    )
    assert "Batches added: run-b" in out and "Assignments created: 6" in out
    assert before <= set(Assignment.objects.values_list("pk", flat=True))
    assert "Assignments created: 0" in run("study", "--taxonomy", "mast", "--batch", "run-b")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--taxonomy", "mast", "--batch", "nope"], "No batch named 'nope'"),
        (["--taxonomy", "unknown-tax"], "load_taxonomies"),
        (["--taxonomy", "mast", "--overlap", "0"], "at least 1"),
    ],
)
def test_it_fails_clearly(mast, batches, args, message):
    with pytest.raises(CommandError, match=message):
        run("study", *args)


def test_the_taxonomy_of_a_project_cannot_change(taxonomies, batches):
    run("study", "--taxonomy", "mast")
    with pytest.raises(CommandError, match="cannot change"):
        run("study", "--taxonomy", "kami")


def test_the_command_sets_and_switches_whether_imported_labels_count_toward_overlap(mast, batches):
    from collections import Counter

    from annotator.services.label_import import IncomingAnnotation, do_import_annotations
    from traces.importers.records import AnnotationRecord, LabelRecord

    out = run("repro", "--taxonomy", "mast", "--batch", "run-b", "--annotators", "alice,bob")
    project = Project.objects.get(slug="repro")
    assert not project.imported_labels_count_toward_overlap and "imported labels" not in out
    traces = list(project.batches.get().traces.order_by("id"))
    records = [
        IncomingAnnotation(trace, AnnotationRecord(name, labels=[LabelRecord("FM-1.1")]), source="paper")
        for trace in traces
        for name in ("p1", "p2")
    ]
    do_import_annotations(project, records)

    def people_per_trace() -> set[int]:
        rows = Assignment.objects.filter(project=project, annotator__username__in=["alice", "bob"])
        counts = Counter(rows.values_list("trace_id", flat=True))
        return {counts[trace.pk] for trace in traces}

    assert people_per_trace() == {2}
    out = run("repro", "--taxonomy", "mast", "--imported-labels-count-toward-overlap")
    project.refresh_from_db()
    assert project.imported_labels_count_toward_overlap and "imported labels count toward it" in out
    assert people_per_trace() == {0}  # the published raters fill every trace; untouched slots went back
    run("repro", "--taxonomy", "mast", "--no-imported-labels-count-toward-overlap")
    project.refresh_from_db()
    assert not project.imported_labels_count_toward_overlap and people_per_trace() == {2}
