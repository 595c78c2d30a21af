"""The claim under a triage order stays one statement that passes by a locked slot (PostgreSQL's SKIP LOCKED
with the rank join: FOR UPDATE OF the assignment only)."""

from __future__ import annotations

import pytest
from django.db import connection

from annotator.models import Assignment, Project, QueueOrder, TriageRank
from annotator.services.assignment import do_assign, do_claim_next
from tests.factories import BatchFactory, trace_with_steps
from tests.locks import row_locked_elsewhere


@pytest.mark.django_db(transaction=True)
def test_a_locked_first_ranked_slot_is_passed_by_for_the_next_rank(project, annotator_a):
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip("SQLite has no row locks: one writing statement at a time decides there")
    batch = BatchFactory(name="ranked")
    project.batches.add(batch)
    traces = [trace_with_steps(2, batch=batch) for _ in range(3)]
    do_assign(project)
    # Reverse trace order: the last trace is first.
    TriageRank.objects.bulk_create(
        TriageRank(project=project, trace=trace, rank=place)
        for place, trace in enumerate(reversed(traces), 1)
    )
    Project.objects.filter(pk=project.pk).update(queue_order=QueueOrder.LLM_UNCERTAIN)
    project.refresh_from_db()
    first = Assignment.objects.get(project=project, annotator=annotator_a, trace=traces[2])
    with row_locked_elsewhere(Assignment, first.pk):
        mine = do_claim_next(project, annotator_a)
    assert mine is not None and mine.trace_id == traces[1].pk  # the second rank, not trace order
    assert do_claim_next(project, annotator_a).pk == first.pk
    assert do_claim_next(project, annotator_a).trace_id == traces[0].pk
