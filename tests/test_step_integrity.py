"""A step always belongs to a trace that exists, though the database checks it per statement rather than with a
per-row foreign key (migration traces 0010): on PostgreSQL and SQLite alike."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from tests.factories import StepFactory, TraceFactory
from traces.models import Step, Trace

pytestmark = pytest.mark.django_db


def _missing_trace_id() -> int:
    return (Trace.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1000


def test_it_refuses_a_step_of_a_trace_that_does_not_exist():
    with pytest.raises(IntegrityError, match="trace that does not exist"), transaction.atomic():
        Step.objects.create(trace_id=_missing_trace_id(), index=0)
    assert not Step.objects.exists()


def test_it_refuses_a_bulk_insert_where_one_step_names_a_missing_trace():
    trace = TraceFactory()
    rows = [
        Step(trace=trace, index=0),
        Step(trace_id=_missing_trace_id(), index=1),
        Step(trace=trace, index=2),
    ]
    with pytest.raises(IntegrityError), transaction.atomic():
        Step.objects.bulk_create(rows)
    assert not Step.objects.exists()


def test_it_refuses_moving_a_step_to_a_missing_trace():
    step = StepFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Step.objects.filter(pk=step.pk).update(trace_id=_missing_trace_id())
    step.refresh_from_db()
    assert Trace.objects.filter(pk=step.trace_id).exists()


def test_it_deletes_a_traces_steps_when_the_trace_is_deleted_in_sql():
    kept, gone = StepFactory(index=0), StepFactory(index=0)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM traces_trace WHERE id = %s", [gone.trace_id])
    assert list(Step.objects.values_list("pk", flat=True)) == [kept.pk]


def test_it_deletes_a_traces_steps_when_the_trace_is_deleted_by_the_orm():
    step = StepFactory(index=0)
    StepFactory(trace=step.trace, index=1)
    step.trace.delete()
    assert not Step.objects.exists()


def test_it_accepts_steps_written_after_their_trace_in_one_transaction():
    with transaction.atomic():
        trace = TraceFactory()
        Step.objects.bulk_create([Step(trace=trace, index=i) for i in range(3)])
    assert Step.objects.filter(trace=trace).count() == 3
