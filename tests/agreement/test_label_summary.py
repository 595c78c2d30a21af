"""The label summary the database keeps (one packed row per annotation, migration 0020) always says what
the label tables say, whoever wrote them: the annotation service, plain ORM writes (as the admin, the label
import or a taxonomy evolution make them), deletions of labels, annotations or traces' assignments. The
agreement report read from the summary equals the report read from the label tables."""

from __future__ import annotations

import random

import numpy as np
import pytest
from django.db import connection

from annotator.models import Annotation, Assignment, LabelApplication
from annotator.services import reports
from annotator.services.reports import data as report_data
from annotator.services.reports import state as report_state
from taxonomy.models import FailureMode
from tests.agreement.test_incremental import random_labels, same
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the label summary is PostgreSQL's (elsewhere the tables are read)",
)

COLUMNS = (
    "annotation_id, project_id, batch_id, trace_id, annotator_id, purpose, status, version, updated_at, head, body, "
    "missing"
)


def summary_rows() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {COLUMNS} FROM annotator_labelsummary ORDER BY annotation_id")
        return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cursor.fetchall()]


def recomputed_rows() -> list[tuple]:
    """The summary rebuilt from the tables (inside the test's transaction, then rolled back to here)."""
    with connection.cursor() as cursor:
        cursor.execute("SAVEPOINT rebuild")
        cursor.execute("DELETE FROM annotator_labelsummary")
        cursor.execute("SELECT annotator_labelsummary_refresh(ARRAY(SELECT id FROM annotator_annotation))")
        rows = summary_rows()
        cursor.execute("ROLLBACK TO SAVEPOINT rebuild")
    return rows


def assert_same_input(project, filters=None) -> None:
    filters = filters or {}
    a = report_data.load_report_input(project, filters, source="summary")
    b = report_data.load_report_input(project, filters, source="tables")
    assert np.array_equal(a.data.ratings, b.data.ratings)
    assert a.data.raters == b.data.raters and a.rater_ids == b.rater_ids
    assert np.array_equal(a.trace_ids, b.trace_ids)
    assert (a.data.primary is None) == (b.data.primary is None)
    if a.data.primary is not None:
        assert np.array_equal(a.data.primary, b.data.primary)
    ev = [
        np.lexsort([getattr(x.data.evidence, f) for f in ("step", "mode", "rater", "item")]) for x in (a, b)
    ]
    for name in ("item", "rater", "mode", "step"):
        assert np.array_equal(getattr(a.data.evidence, name)[ev[0]], getattr(b.data.evidence, name)[ev[1]])
    cols = [report_data.annotation_columns(project, filters, source=s) for s in ("summary", "tables")]
    assert np.array_equal(*(c[np.lexsort(c.T[::-1])] for c in cols))


def report_from(project, source: str, monkeypatch) -> dict:
    real = report_data.load_report_input
    monkeypatch.setattr(report_state, "load_report_input", lambda *a, **k: real(*a, **k, source=source))
    report = reports.do_compute_report(reports.do_request_report(project, {}, force=True, enqueue=False).pk)
    monkeypatch.undo()
    assert report.status == "succeeded", report.error
    return report.results


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_after_random_inserts_edits_and_deletions_the_summary_says_what_the_tables_say(
    project, annotator_a, annotator_b, mast, seed, monkeypatch
):
    rng = random.Random(seed)
    modes = list(FailureMode.objects.filter(version=mast))
    codes = [mode.code for mode in modes]
    rater_c = UserFactory(username="cat-annotator")
    add_member(project, rater_c, "annotator")
    raters = [annotator_a, annotator_b, rater_c]
    traces = [project_trace(project) for _ in range(12)]
    for trace in traces:
        for user in raters:
            if rng.random() < 0.7:
                submit(project, trace, user, random_labels(rng, codes), primary=None)
    for _ in range(5):
        for _ in range(rng.randint(3, 8)):
            annotations = Annotation.objects.filter(assignment__project=project)
            victim = annotations.order_by("?").first()
            action = rng.choice(
                [
                    "submit",
                    "submit",
                    "evidence",
                    "add label",
                    "drop label",
                    "missing",
                    "draft",
                    "calibration",
                    "delete",
                ]
            )
            if action == "submit" or victim is None:
                submit(project, rng.choice(traces), rng.choice(raters), random_labels(rng, codes))
            elif action == "evidence":  # an ORM edit of the evidence list, odd entries included
                evidence = [{"step": rng.randint(-2, 9)}, {"step": "7"}, 3, {"quote": "x"}, {"step": 2.5}]
                LabelApplication.objects.filter(annotation=victim).update(evidence=rng.sample(evidence, 3))
            elif action == "add label":
                taken = set(victim.labels.values_list("mode_id", flat=True))
                free = [mode for mode in modes if mode.id not in taken]
                if free:
                    LabelApplication.objects.create(
                        annotation=victim, mode=rng.choice(free), evidence=[{"step": rng.randint(0, 9)}]
                    )
            elif action == "drop label":
                victim.labels.filter(pk__in=victim.labels.values("pk")[:1]).delete()
            elif action == "missing":
                Annotation.objects.filter(pk=victim.pk).update(
                    provenance={"missing_modes": [*rng.sample(codes, 2), "NOT-A-MODE"]}
                )
            elif action == "calibration":  # a gold calibration answer is no agreement data
                Assignment.objects.filter(pk=victim.assignment_id).update(
                    purpose=Assignment.Purpose.CALIBRATION
                )
            elif action == "draft":
                Annotation.objects.filter(pk=victim.pk).update(status=Annotation.Status.DRAFT)
            else:
                victim.assignment.delete()  # the annotation and its labels go with it
        assert summary_rows() == recomputed_rows()
        assert_same_input(project)
        assert_same_input(project, {"annotators": [annotator_a.username, rater_c.username]})
    same(report_from(project, "summary", monkeypatch), report_from(project, "tables", monkeypatch))


def test_a_trace_moved_to_a_batch_outside_the_project_leaves_the_report(project, annotator_a, annotator_b):
    traces = [project_trace(project) for _ in range(3)]
    for trace in traces:
        submit(project, trace, annotator_a, {"FM-1.1": [1]})
        submit(project, trace, annotator_b, {"FM-1.2": [2]})
    outside = project_trace(project).batch
    project.batches.remove(outside)
    traces[0].batch = outside
    traces[0].save(update_fields=["batch"])
    assert summary_rows() == recomputed_rows()
    assert len(report_data.load_report_input(project, {}).trace_ids) == 2
    assert_same_input(project)


def test_a_bulk_write_and_single_edits_make_the_same_summary(project, annotator_a, mast):
    """Up to 100 annotations are refreshed with a plan kept per connection, more with one made for the
    statement (migration 0024): both give the same rows, evidence points in the same order."""
    modes = list(FailureMode.objects.filter(version=mast).order_by("order")[:3])
    rng = random.Random(5)
    assignments = Assignment.objects.bulk_create(
        Assignment(project=project, trace=project_trace(project, n_steps=4), annotator=annotator_a)
        for _ in range(120)
    )
    annotations = Annotation.objects.bulk_create(
        Annotation(assignment=assignment, version=1, status=Annotation.Status.SUBMITTED)
        for assignment in assignments
    )
    LabelApplication.objects.bulk_create(  # one statement: its trigger refreshes all 120 at once
        LabelApplication(
            annotation=annotation,
            mode=mode,
            evidence=[{"step": step} for step in rng.sample(range(9), 6)],
        )
        for annotation in annotations
        for mode in modes
    )
    # A bulk edit too (as a taxonomy evolution makes): the edited labels' rows move in the table.
    LabelApplication.objects.filter(annotation__in=annotations[::2], mode=modes[0]).update(
        evidence=[{"step": 7}, {"step": 1}, {"step": 3}]
    )
    in_bulk = summary_rows()
    assert len(in_bulk) == 120
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM annotator_labelsummary")
        for annotation in annotations:
            cursor.execute("SELECT annotator_labelsummary_refresh(ARRAY[%s]::bigint[])", [annotation.pk])
    assert summary_rows() == in_bulk == recomputed_rows()
