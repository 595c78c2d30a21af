"""What the report reads from the database: the same ratings and evidence steps on every database."""

from __future__ import annotations

import numpy as np

from annotator.models import LabelApplication
from annotator.services.reports.data import load_report_input
from tests.labels import project_trace, submit


def test_only_whole_number_steps_count_as_evidence(project, annotator_a, annotator_b):
    trace = project_trace(project)
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    label = submit(project, trace, annotator_b, {"FM-1.1": [3]}).labels.get()
    # Written around the service (an older import, a hand edit): only {"step": <whole number>} is a step.
    LabelApplication.objects.filter(pk=label.pk).update(
        evidence=[{"step": 5}, {"step": "7"}, {"step": 1.5}, 9, {"quote": "no step"}, {"step": None}]
    )
    loaded = load_report_input(project, {})
    evidence = loaded.data.evidence
    assert sorted(zip(evidence.rater.tolist(), evidence.step.tolist(), strict=True)) == [(0, 2), (1, 5)]


def test_restricted_to_some_traces_and_raters_the_rows_match_the_full_load(project, annotator_a, annotator_b):
    traces = [project_trace(project) for _ in range(3)]
    submit(project, traces[0], annotator_a, {"FM-1.1": [1]})
    submit(project, traces[1], annotator_b, {"FM-1.2": [2], "FM-2.1": []})
    submit(project, traces[2], annotator_a, {})
    submit(project, traces[2], annotator_b, {"FM-1.1": [4]})
    full = load_report_input(project, {})
    some = load_report_input(project, {}, traces=[traces[1].pk, traces[2].pk], rater_ids=full.rater_ids)
    assert some.trace_ids.tolist() == [traces[1].pk, traces[2].pk]
    assert np.array_equal(some.data.ratings, full.data.ratings[1:])
    assert load_report_input(project, {}, traces=[], rater_ids=full.rater_ids).data.ratings.shape[0] == 0
