"""Migration traces 0011 keys a step by its place, (trace, index), on PostgreSQL and SQLite alike: the rows
survive both ways, the key still refuses a second step at one place, and the step triggers of 0010 survive
the table's rebuild."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("traces", "0010_step_trace_checked_by_statement")]
AFTER = [("traces", "0011_step_keyed_by_place")]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def _rows(Step, trace_id):
    return list(
        Step.objects.filter(trace_id=trace_id)
        .order_by("index")
        .values_list("index", "parent_index", "kind", "content", "tool_args")
    )


@pytest.mark.django_db(transaction=True)
def test_steps_keep_their_rows_and_their_guarantees_across_the_new_key_both_ways():
    try:
        old = _migrate(BEFORE)
        Batch, Trace, Step = (old.get_model("traces", name) for name in ("Batch", "Trace", "Step"))
        trace = Trace.objects.create(batch=Batch.objects.create(name="b"), external_id="t", content_hash="h")
        Step.objects.bulk_create(
            [
                Step(trace=trace, index=0, kind="message", content="a\ttab"),
                Step(trace=trace, index=1, parent_index=0, kind="tool_call", tool_args={"q": [1, None]}),
            ]
        )
        kept = _rows(Step, trace.pk)

        new = _migrate(AFTER)
        Step = new.get_model("traces", "Step")
        assert _rows(Step, trace.pk) == kept
        assert Step.objects.get(pk=(trace.pk, 1)).kind == "tool_call"
        with pytest.raises(IntegrityError), transaction.atomic():
            Step.objects.create(trace_id=trace.pk, index=1)
        with pytest.raises(IntegrityError, match="trace that does not exist"), transaction.atomic():
            Step.objects.create(trace_id=trace.pk + 1000, index=0)

        old = _migrate(BEFORE)
        Step = old.get_model("traces", "Step")
        assert _rows(Step, trace.pk) == kept
        assert all(Step.objects.filter(trace_id=trace.pk).values_list("id", flat=True))
        with pytest.raises(IntegrityError), transaction.atomic():
            Step.objects.create(trace_id=trace.pk, index=0)
        Step.objects.create(trace_id=trace.pk, index=2)  # the id column numbers new rows again
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
