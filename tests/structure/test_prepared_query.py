"""A prepared query (annotator.prepared) runs the ORM's own statement with the caller's values and gives the
objects the ORM would: the hot API reads (token, access, modes, lock) depend on it."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.db.models import Count, F
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from annotator.models import Assignment, Membership
from annotator.prepared import PreparedQuery
from annotator.services.assignment import do_assign
from tests.factories import BatchFactory, trace_with_steps

MEMBERSHIPS = PreparedQuery(
    lambda slug, user: (
        Membership.objects.filter(project__slug=slug, user_id=user, active=True)
        .select_related("project__taxonomy_version__taxonomy")
        .annotate(trace_steps=Count("project__batches__traces__steps"))
        .order_by("role")
    ),
    slug=str,
    user=int,
)


def orm_memberships(slug: str, user: int):
    return list(
        Membership.objects.filter(project__slug=slug, user_id=user, active=True)
        .select_related("project__taxonomy_version__taxonomy")
        .annotate(trace_steps=Count("project__batches__traces__steps"))
        .order_by("role")
    )


def statements(run) -> tuple[list[str], object]:
    with CaptureQueriesContext(connection) as queries:
        result = run()
    return [q["sql"] for q in queries.captured_queries], result


def described(memberships) -> list[tuple]:
    return [
        (
            m.pk,
            m.role,
            m.trace_steps,
            m.project.slug,
            m.project.overlap,
            m.project.taxonomy_version.taxonomy.slug,
            m.project.created_at,
            m._state.adding,
            m._state.db,
        )
        for m in memberships
    ]


@pytest.fixture
def world(project, annotator_a, adjudicator):
    batch = BatchFactory()
    project.batches.add(batch)
    trace_with_steps(4, batch=batch)
    trace_with_steps(3, batch=batch)
    Membership.objects.create(project=project, user=annotator_a, role="viewer")
    return project


def test_a_prepared_query_sends_the_orms_statement_with_each_calls_values(world, annotator_a, adjudicator):
    for user in (annotator_a, adjudicator, annotator_a):  # the second call of each reuses the compiled SQL
        ours, prepared = statements(lambda user=user: MEMBERSHIPS.objects(slug=world.slug, user=user.pk))
        theirs, orm = statements(lambda user=user: orm_memberships(world.slug, user.pk))
        assert ours == theirs and len(ours) == 1
        assert described(prepared) == described(orm)
        assert described(prepared)
    assert MEMBERSHIPS.objects(slug="no-such-project", user=annotator_a.pk) == []
    assert [m.role for m in MEMBERSHIPS.objects(slug=world.slug, user=annotator_a.pk)] == [
        "annotator",
        "viewer",
    ]
    assert MEMBERSHIPS.objects(slug=world.slug, user=annotator_a.pk)[0].trace_steps == 7


@pytest.mark.django_db(transaction=True)  # outside the test's own transaction, as in production
def test_the_lock_read_locks_and_refuses_to_run_outside_a_transaction(world, annotator_a):
    do_assign(world)
    slot = Assignment.objects.filter(project=world, annotator=annotator_a).first()
    lock = PreparedQuery(
        lambda pk: (
            Assignment.objects.select_for_update(of=("self",))
            .filter(pk=pk)
            .annotate(steps=F("trace__step_count"))
        ),
        pk=int,
    )
    with transaction.atomic():
        sql, found = statements(lambda: lock.objects(pk=slot.pk))
    assert [(a.pk, a.steps) for a in found] == [(slot.pk, slot.trace.step_count)]
    if connection.features.has_select_for_update:
        assert "FOR UPDATE" in sql[0]
    with pytest.raises(TransactionManagementError):
        lock.objects(pk=slot.pk)


def test_a_value_the_queryset_changes_is_refused_rather_than_frozen_into_the_sql(world):
    upper = PreparedQuery(lambda slug: Membership.objects.filter(project__slug=slug.upper()), slug=str)
    with pytest.raises(TypeError, match="did not reach"):
        upper.objects(slug=world.slug)
    with pytest.raises(TypeError, match="expected values"):
        MEMBERSHIPS.objects(slug=world.slug)
