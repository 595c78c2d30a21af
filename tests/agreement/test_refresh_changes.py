"""Refresh after refresh: the stored state keeps the last full computation plus what refreshes changed
since (annotator.services.reports.state.Changes), folded into a new base once it grows; every refreshed
report equals a full recomputation."""

from __future__ import annotations

import random

import pytest

from annotator.models import ReportRows
from annotator.services.reports import refresh as report_refresh
from taxonomy.models import FailureMode
from tests.agreement.test_incremental import backdate, full_report, random_labels, refreshed, same
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit


def full_report_keeping_state(project) -> dict:
    """A full report, with the stored state put back afterwards (a full computation rewrites it)."""
    state = ReportRows.objects.get(project=project)
    results = full_report(project)
    ReportRows.objects.filter(project=project).delete()
    state.pk = None
    state.save()
    return results


@pytest.mark.parametrize("fold_after", [1000, 3])
def test_consecutive_refreshes_equal_a_full_recomputation(
    project, annotator_a, annotator_b, mast, monkeypatch, fold_after
):
    monkeypatch.setattr(report_refresh, "FOLD_AFTER", fold_after)
    rng = random.Random(fold_after)
    codes = list(FailureMode.objects.filter(version=mast).values_list("code", flat=True))
    rater_c = UserFactory(username="cat-annotator")
    add_member(project, rater_c, "annotator")
    raters = [annotator_a, annotator_b, rater_c]
    traces = [project_trace(project) for _ in range(15)]
    for trace in traces:
        for user in raters:
            if rng.random() < 0.8:
                submit(project, trace, user, random_labels(rng, codes))
    backdate(project)
    refreshed(project)
    folded = 0
    for _ in range(6):
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.3:
                traces.append(project_trace(project))
            submit(project, rng.choice(traces), rng.choice(raters), random_labels(rng, codes))
        incremental = refreshed(project)
        state = ReportRows.objects.get(project=project)
        folded += not bytes(state.changes)
        same(incremental, full_report_keeping_state(project))
        backdate(project)  # the next refresh reloads only what changes next
    if fold_after == 3:
        assert folded, "the changes were folded into a new base at least once"
