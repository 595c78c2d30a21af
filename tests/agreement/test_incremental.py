"""The incremental refresh of the agreement report gives the same report as a full recomputation.

A refresh after annotations change reloads only the changed traces and moves them between the stored
distinct rows (annotator.services.reports). These tests make random inserts, edits and deletions and
compare every number of the refreshed report with a report computed from scratch.
"""

from __future__ import annotations

import datetime as dt
import math
import random

import pytest
from django.utils import timezone

from annotator.models import Annotation, ReportRows
from annotator.services import reports
from annotator.services.reports import data as report_data
from annotator.services.reports import refresh as report_refresh
from annotator.services.reports import state as report_state
from taxonomy.models import FailureMode
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit

VOLATILE = {"computed_at", "software"}


def same(a, b, path="report"):
    """Equal JSON, floats to 1e-9."""
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys differ: {set(a) ^ set(b)}"
        for key in a:
            if key not in VOLATILE:
                same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{path}: lengths differ"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{k}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (
            f"{path}: {a} != {b}"
        )
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def full_report(project) -> dict:
    """The report computed from scratch (no stored rows to start from)."""
    ReportRows.objects.filter(project=project).delete()
    report = reports.do_compute_report(reports.do_request_report(project, {}, force=True, enqueue=False).pk)
    assert report.status == "succeeded", report.error
    return report.results


def refreshed(project) -> dict:
    report = reports.do_refresh_reports(project.pk)
    assert report.status == "succeeded", report.error
    return report.results


@pytest.fixture
def rater_c(project):
    user = UserFactory(username="cat-annotator")
    add_member(project, user, "annotator")
    return user


@pytest.fixture
def spy(monkeypatch):
    """Which loads were restricted to some traces (incremental) and how many traces they read."""
    calls: list[int | None] = []
    real = report_data.load_report_input

    def load(*args, traces=None, **kwargs):
        calls.append(None if traces is None else len(traces))
        return real(*args, traces=traces, **kwargs)

    for module in (report_state, report_refresh):  # the full load, and the refresh's load of changed traces
        monkeypatch.setattr(module, "load_report_input", load)
    return calls


def random_labels(rng: random.Random, codes: list[str]) -> dict[str, list[int]]:
    chosen = rng.sample(codes, rng.choice([0, 0, 1, 1, 2, 3]))
    return {code: rng.sample(range(8), rng.choice([0, 1, 1, 2])) for code in chosen}


def backdate(project) -> None:
    """Annotations saved long before the stored snapshot, as in a project labelled over weeks."""
    Annotation.objects.filter(assignment__project=project).update(
        updated_at=timezone.now() - dt.timedelta(days=3)
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_refresh_after_random_inserts_edits_and_deletions_equals_a_full_recomputation(
    project, annotator_a, annotator_b, rater_c, mast, spy, seed
):
    rng = random.Random(seed)
    codes = list(FailureMode.objects.filter(version=mast).values_list("code", flat=True))
    raters = [annotator_a, annotator_b, rater_c]
    traces = [project_trace(project) for _ in range(25)]
    for trace in traces:
        for user in raters:
            if rng.random() < 0.8:
                submit(project, trace, user, random_labels(rng, codes))
    backdate(project)
    refreshed(project)  # the first computation is full and stores the rows

    pure = 0
    for round_ in range(6):
        count = rng.randint(1, 5)
        for k in range(count):
            deleting = round_ % 2 and k == 0  # every other round deletes one annotation
            action = "delete" if deleting else rng.choice(["insert", "edit", "edit", "new trace"])
            if action == "new trace":
                traces.append(project_trace(project))
                submit(project, traces[-1], rng.choice(raters), random_labels(rng, codes))
            elif action == "delete":
                # Deleting a submitted annotation (never done by the app) empties the stored rows' key:
                # the refresh starts from a full computation.
                victim = Annotation.objects.filter(assignment__project=project).order_by("?").first()
                trace = victim.assignment.trace
                victim.delete()
                others = [
                    u
                    for u in raters
                    if Annotation.objects.filter(assignment__trace=trace, assignment__annotator=u).exists()
                ]
                if others:
                    submit(project, trace, rng.choice(others), random_labels(rng, codes))
            else:
                submit(project, rng.choice(traces), rng.choice(raters), random_labels(rng, codes))
        calls_before = len(spy)
        incremental = refreshed(project)
        loads = spy[calls_before:]
        pure += loads == [None] if round_ % 2 else loads == [loads[0]] and loads[0] is not None
        same(incremental, full_report(project))
        backdate(project)
        refreshed(project)  # stores rows again after the full report above dropped them
    assert pure == 6, "deletions give one full load; other changes one restricted load"


def test_a_deleted_submitted_annotation_means_a_full_recomputation(
    project, annotator_a, annotator_b, mast, spy
):
    codes = list(FailureMode.objects.filter(version=mast).values_list("code", flat=True))
    rng = random.Random(5)
    for _ in range(8):
        trace = project_trace(project)
        for user in (annotator_a, annotator_b):
            submit(project, trace, user, random_labels(rng, codes))
    backdate(project)
    refreshed(project)
    # Deleted without touching any other annotation: nothing newer than the snapshot shows it, but the
    # database's trigger empties the stored rows' key.
    Annotation.objects.filter(assignment__project=project).order_by("id").first().delete()
    assert ReportRows.objects.get(project=project).key == ""
    before = len(spy)
    results = refreshed(project)
    assert spy[before:] == [None]
    same(results, full_report(project))


def test_a_new_rater_falls_back_to_a_full_recomputation(project, annotator_a, annotator_b, rater_c, spy):
    trace = project_trace(project)
    submit(project, trace, annotator_a, {"FM-1.1": [1]})
    submit(project, trace, annotator_b, {"FM-1.1": [2]})
    backdate(project)
    refreshed(project)
    submit(project, trace, rater_c, {"FM-1.2": [3]})
    results = refreshed(project)
    assert [r["username"] for r in results["raters"]] == ["ana-annotator", "ben-annotator", "cat-annotator"]
    same(results, full_report(project))


def test_a_stored_report_is_current_until_an_annotation_changes(project, annotator_a, annotator_b):
    trace = project_trace(project)
    submit(project, trace, annotator_a, {"FM-1.1": [1]})
    submit(project, trace, annotator_b, {"FM-1.1": [1]})
    report = reports.do_refresh_reports(project.pk)
    assert reports.report_is_current(project, report)
    submit(project, trace, annotator_b, {"FM-1.2": [4]})
    assert not reports.report_is_current(project, report)
    assert reports.report_is_current(project, reports.do_refresh_reports(project.pk))


def test_an_imported_annotation_with_every_vote_missing_still_counts_after_a_refresh(
    project, annotator_a, annotator_b, mast, spy
):
    """An imported annotation whose source gave no vote on any mode (MAST's NaN row) leaves no mark in the
    distinct rows, but it is still a submitted annotation: the refreshed report's fingerprint must be the
    one the database's aggregate gives, and its numbers those of a full recomputation."""
    codes = list(FailureMode.objects.filter(version=mast).values_list("code", flat=True))
    rng = random.Random(11)
    traces = [project_trace(project) for _ in range(6)]
    for trace in traces:
        for user in (annotator_a, annotator_b):
            submit(project, trace, user, random_labels(rng, codes))
    all_missing = Annotation.objects.get(assignment__trace=traces[0], assignment__annotator=annotator_a)
    some_missing = Annotation.objects.get(assignment__trace=traces[1], assignment__annotator=annotator_b)
    Annotation.objects.filter(pk=all_missing.pk).update(provenance={"missing_modes": codes})
    Annotation.objects.filter(pk=some_missing.pk).update(provenance={"missing_modes": codes[:3]})
    backdate(project)
    refreshed(project)

    submit(project, traces[0], annotator_b, random_labels(rng, codes))  # the all-missing trace changes
    submit(project, traces[2], annotator_a, random_labels(rng, codes))
    before = len(spy)
    report = reports.do_refresh_reports(project.pk)
    assert spy[before:] == [2], "one load restricted to the two changed traces"
    assert report.fingerprint == reports.inputs_fingerprint(project, {})
    same(report.results, full_report(project))
