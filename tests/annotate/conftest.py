"""A small project world for the annotation tests: a batch of traces, assigned to both annotators."""

from __future__ import annotations

import pytest

from annotator.models import Assignment
from annotator.services.assignment import do_assign
from tests.factories import BatchFactory, trace_with_steps


@pytest.fixture
def traces(project):
    batch = BatchFactory(name="run-1")
    project.batches.add(batch)
    made = [trace_with_steps(8, batch=batch) for _ in range(4)]
    do_assign(project)
    return made


@pytest.fixture
def slot_a(project, traces, annotator_a):
    """Annotator A's assignment on the first trace (B has one on the same trace: overlap 2)."""
    return Assignment.objects.get(project=project, annotator=annotator_a, trace=traces[0])


@pytest.fixture
def slot_b(project, traces, annotator_b):
    return Assignment.objects.get(project=project, annotator=annotator_b, trace=traces[0])
