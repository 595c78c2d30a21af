"""A project with three gold traces (one agreed, one adjudicated with reasons, one agreed "no failure") and
a fresh annotator, Carl, who has labelled none of them."""

from __future__ import annotations

import pytest

from annotator.models import AdjudicationItem
from annotator.services.adjudication import do_check_trace
from annotator.services.calibration import do_add_items
from annotator.services.gold import Decision, ModeDecision, do_decide
from tests.factories import BatchFactory, UserFactory, add_member, trace_with_steps
from tests.labels import submit


@pytest.fixture
def carl(project):
    user = UserFactory(username="carl-calibrating")
    add_member(project, user, "annotator")
    return user


@pytest.fixture
def gold_traces(project, annotator_a, annotator_b, adjudicator):
    batch = BatchFactory(name="gold-batch")
    project.batches.add(batch)
    t1, t2, t3 = (trace_with_steps(6, batch=batch) for _ in range(3))
    submit(project, t1, annotator_a, {"FM-1.1": [1], "FM-3.1": [4]})
    submit(project, t1, annotator_b, {"FM-1.1": [2], "FM-3.1": [4]})
    submit(project, t2, annotator_a, {"FM-1.1": [2]})
    submit(project, t2, annotator_b, {"FM-1.2": [3]})
    submit(project, t3, annotator_a, {})
    submit(project, t3, annotator_b, {})
    for trace in (t1, t2, t3):
        do_check_trace(project.pk, trace.pk)
    item = AdjudicationItem.objects.get(project=project, trace=t2)
    do_decide(
        item,
        Decision(
            modes=(
                ModeDecision("FM-1.1", "a", reason_code="evidence", note="Step 2 repeats the task verbatim"),
                ModeDecision("FM-1.2", "absent", reason_code="no_evidence", note="No role was ignored"),
            ),
            note="Mostly a repetition problem",
        ),
        actor=adjudicator,
        base_version=item.version,
    )
    return [t1, t2, t3]


@pytest.fixture
def calibrated(project, gold_traces, owner):
    do_add_items(project, all_gold=True, actor=owner)
    return gold_traces
