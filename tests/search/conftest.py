"""A small project with traces in every state the filters tell apart (tests/search)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from annotator.models import Assignment
from annotator.raters import get_llm_rater
from annotator.services.adjudication import do_check_trace
from tests.factories import BatchFactory, trace_with_steps
from tests.labels import submit
from traces.models import Step, Trace


@dataclass
class World:
    project: object
    gold: Trace  # both annotators: FM-1.3 (evidence on the kubectl call) -> agreed gold
    disputed: Trace  # FM-1.1 vs FM-1.5 -> in adjudication
    fresh: Trace  # nobody assigned
    started: Trace  # ana assigned, nothing submitted


def _trace(project, batch, external_id, **fields) -> Trace:
    trace = trace_with_steps(6, batch=batch, external_id=external_id, **fields)
    project.batches.add(batch)
    return trace


@pytest.fixture
def world(project, annotator_a, annotator_b) -> World:
    alpha, beta = BatchFactory(name="alpha"), BatchFactory(name="beta")
    gold = _trace(
        project,
        alpha,
        "sre-1",
        model="gpt-4o",
        outcome="failure",
        score=0.2,
        benchmark="sre",
        metadata={"split": "test", "lang": "en"},
    )
    Step.objects.filter(trace=gold, index=3).update(
        kind="tool_call",
        tool_name="bash",
        tool_args={"cmd": "kubectl delete ns prod"},
        content="Running <b>kubectl</b> delete namespace prod now",
    )
    disputed = _trace(
        project,
        alpha,
        "sre-2",
        model="claude",
        outcome="success",
        score=0.9,
        benchmark="sre",
        metadata={"split": "dev"},
    )
    Step.objects.filter(trace=disputed, index=1).update(content="kubectl get pods shows two restarts")
    fresh = _trace(project, beta, "web-1", model="gpt-4o", outcome="unknown", benchmark="web")
    started = _trace(project, beta, "web-2", model="gpt-4o", outcome="failure", score=0.5, benchmark="web")
    Trace.objects.filter(pk=started.pk).update(step_count=40)
    submit(project, gold, annotator_a, {"FM-1.3": [3]})
    submit(project, gold, annotator_b, {"FM-1.3": [3]})
    submit(project, disputed, annotator_a, {"FM-1.1": [1]})
    submit(project, disputed, annotator_b, {"FM-1.5": [2]})
    # The check runs after commit in the product; a test's transaction never commits, so run it here.
    do_check_trace(project.pk, gold.pk)
    do_check_trace(project.pk, disputed.pk)
    Assignment.objects.create(project=project, trace=started, annotator=annotator_a)
    submit(project, fresh, get_llm_rater("judge-model"), {"FM-2.2": [0]})
    return World(project, gold, disputed, fresh, started)
