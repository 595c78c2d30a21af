"""A small labelled project built straight in the database (no services in the way), and the stand-in Hub.

The world: batch run-1 with three traces (t1 agreed, t2 adjudicated, t3 only a draft), batch run-2 with
one unlabelled trace. Ana (annotator-1) and Ben (annotator-2) labelled t1 and t2.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotator.models import AdjudicationItem, Annotation, Assignment, GoldLabel, LabelApplication
from taxonomy.models import FailureMode
from tests.exports.hub_standin import StandInHub
from tests.factories import BatchFactory, trace_with_steps
from traces.models import Step


@pytest.fixture(autouse=True)
def _small_exports(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    settings.AGREEMENT_BOOTSTRAP = 50
    settings.AGREEMENT_PAIR_BOOTSTRAP = 20


def _annotate(project, trace, user, labels, *, status="submitted", **fields):
    assignment = Assignment.objects.create(project=project, trace=trace, annotator=user, status=status)
    annotation = Annotation.objects.create(
        assignment=assignment,
        status=status,
        no_failure=not labels,
        submitted_at=timezone.now() if status == "submitted" else None,
        **fields,
    )
    for code, evidence, note in labels:
        LabelApplication.objects.create(
            annotation=annotation,
            mode=FailureMode.objects.get(version=project.taxonomy_version, code=code),
            evidence=evidence,
            note=note,
        )
    return annotation


def _gold(project, trace, status, labels, *, adjudicator=None, disputed=()):
    item = AdjudicationItem.objects.create(
        project=project,
        trace=trace,
        status=status,
        disputed=list(disputed),
        resolved_by=adjudicator,
        resolved_at=timezone.now() if adjudicator else None,
    )
    for code, evidence, source in labels:
        GoldLabel.objects.create(
            item=item,
            mode=FailureMode.objects.get(version=project.taxonomy_version, code=code),
            evidence=evidence,
            source=source,
            decided_by=adjudicator,
        )
    return item


@pytest.fixture
def labelled(project, annotator_a, annotator_b, adjudicator):
    run1 = BatchFactory(name="run-1")
    run2 = BatchFactory(name="run-2")
    project.batches.add(run1, run2)
    t1 = trace_with_steps(
        5, batch=run1, external_id="t1", model="gpt-4o", outcome="failure", metadata={"seed": 3}
    )
    t2 = trace_with_steps(6, batch=run1, external_id="t2", model="gpt-4o", outcome="failure", score=0.25)
    t3 = trace_with_steps(4, batch=run1, external_id="t3", model="claude", outcome="success")
    trace_with_steps(3, batch=run2, external_id="u1", model="claude", outcome="unknown")
    Step.objects.filter(trace=t2, index=1).update(
        kind="tool_call", tool_name="search", tool_args={"q": "flights", "n": 3}, tool_call_id="c1"
    )
    Step.objects.filter(trace=t2, index=2).update(kind="tool_result", parent_index=1, role="tool", tokens=42)

    _annotate(project, t1, annotator_a, [("FM-1.1", [{"step": 1}], "repeats the spec")], confidence=4)
    _annotate(project, t1, annotator_b, [("FM-1.1", [{"step": 1}, {"step": 2}], "")], ambiguous=True)
    _annotate(
        project,
        t2,
        annotator_a,
        [("FM-2.2", [{"step": 0}], ""), ("FM-3.3", [{"step": 4, "quote": "all done"}], "claims success")],
        note="stops early",
    )
    _annotate(project, t2, annotator_b, [])
    _annotate(project, t3, annotator_a, [("FM-1.3", [], "")], status="draft")
    _gold(project, t1, "agreed", [("FM-1.1", [{"step": 1}], "agreed")])
    _gold(
        project,
        t2,
        "resolved",
        [("FM-2.2", [{"step": 0}], "accept_a")],
        adjudicator=adjudicator,
        disputed=["FM-2.2", "FM-3.3"],
    )
    return project


@pytest.fixture
def hub():
    with StandInHub() as server:
        yield server
