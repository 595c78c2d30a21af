"""The figures are stored and answered again until the project's data changes."""

from __future__ import annotations

import pytest

from annotator.services.signatures import SignatureQuery
from annotator.services.signatures import report as signature_report
from tests.labels import project_trace, submit

pytestmark = pytest.mark.django_db


def test_stored_figures_are_answered_until_an_annotation_changes(project, annotator_a, monkeypatch):
    submit(project, project_trace(project), annotator_a, {"FM-1.1": [1]})
    first = signature_report.build_report(project, SignatureQuery("union"))
    assert first.signatures.n_traces == 1

    computed = []
    real = signature_report.report_of  # every computation of figures, in full or refreshed
    monkeypatch.setattr(signature_report, "report_of", lambda *a, **k: computed.append(1) or real(*a, **k))
    assert signature_report.build_report(project, SignatureQuery("union")) == first
    assert computed == []  # answered from the stored figures

    submit(project, project_trace(project), annotator_a, {"FM-1.2": [2]})
    assert signature_report.build_report(project, SignatureQuery("union")).signatures.n_traces == 2
    assert computed == [1]


def test_gold_figures_do_not_wait_for_annotations_that_change_no_gold(project, annotator_a):
    trace = project_trace(project)
    assert signature_report.build_report(project, SignatureQuery()).signatures is None
    key = signature_report._stored_key(project, SignatureQuery(), False)
    submit(project, trace, annotator_a, {"FM-1.1": [1]})  # one annotation: no gold yet
    assert signature_report._stored_key(project, SignatureQuery(), False) == key
