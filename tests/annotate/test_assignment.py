"""do_assign (the ORM bridge), removing annotators, and claiming the next slot under concurrency."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import timedelta
from itertools import combinations

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from annotator.assignment_strategy import pair_counts
from annotator.models import Annotation, Assignment, Membership
from annotator.services.assignment import do_add_member, do_assign, do_claim_next, do_remove_annotator
from tests.factories import BatchFactory, UserFactory, add_member, trace_with_steps
from tests.locks import row_locked_elsewhere


def make_traces(project, n, name="batch"):
    batch = BatchFactory(name=name)
    project.batches.add(batch)
    return [trace_with_steps(2, batch=batch) for _ in range(n)]


def finish(assignment):
    Annotation.objects.create(assignment=assignment, status=Annotation.Status.SUBMITTED, no_failure=True)
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.SUBMITTED)


def snapshot(project):
    return set(Assignment.objects.filter(project=project).values_list("trace_id", "annotator_id", "status"))


def test_it_assigns_each_trace_to_overlap_annotators_balanced_with_shared_pairs(project):
    carl = UserFactory(username="carl")
    add_member(project, carl, "annotator")
    make_traces(project, 12)
    assert do_assign(project) == 24
    rows = list(Assignment.objects.filter(project=project).values_list("trace_id", "annotator_id"))
    assert set(Counter(t for t, _ in rows).values()) == {2}
    load = Counter(a for _, a in rows)
    assert sorted(load.values()) == [8, 8, 8]
    pairs = pair_counts(rows)
    assert all(pairs[p] >= 1 for p in combinations(sorted(load), 2))


def test_it_is_idempotent(project):
    make_traces(project, 5)
    do_assign(project)
    before = snapshot(project)
    assert do_assign(project) == 0
    assert snapshot(project) == before


def test_it_gives_nothing_to_owners_adjudicators_or_inactive_users(project, owner, adjudicator):
    ghost = UserFactory(username="imported-labeller", is_active=False)
    add_member(project, ghost, "annotator")
    make_traces(project, 3)
    do_assign(project)
    holders = set(Assignment.objects.filter(project=project).values_list("annotator__username", flat=True))
    assert holders == {"ana-annotator", "ben-annotator"}


def test_it_extends_to_new_traces_without_touching_finished_work(project, annotator_a):
    make_traces(project, 4)
    do_assign(project)
    done = Assignment.objects.filter(project=project, annotator=annotator_a).first()
    finish(done)
    before = snapshot(project)
    make_traces(project, 3, name="batch-2")
    assert do_assign(project) == 6
    assert before <= snapshot(project)


def test_adding_an_annotator_moves_only_untouched_work_to_them(project, annotator_a, annotator_b):
    traces = make_traces(project, 10)
    do_assign(project)
    mine = list(Assignment.objects.filter(project=project, annotator=annotator_a).order_by("trace_id"))
    finish(mine[0])
    Assignment.objects.filter(pk=mine[1].pk).update(status=Assignment.Status.IN_PROGRESS)
    Assignment.objects.filter(pk=mine[2].pk).update(reserved_until=timezone.now() + timedelta(minutes=5))
    kept = {mine[0].pk, mine[1].pk, mine[2].pk}
    carl = UserFactory(username="carl")
    do_add_member(project, carl, "annotator")
    assert set(Assignment.objects.filter(pk__in=kept).values_list("pk", flat=True)) == kept
    load = Counter(Assignment.objects.filter(project=project).values_list("annotator__username", flat=True))
    assert max(load.values()) - min(load.values()) <= 1
    per_trace = Counter(Assignment.objects.filter(project=project).values_list("trace_id", flat=True))
    assert per_trace == Counter({t.pk: 2 for t in traces})


def test_removing_an_annotator_reassigns_only_their_unfinished_traces(project, annotator_a, annotator_b):
    carl = UserFactory(username="carl")
    add_member(project, carl, "annotator")
    make_traces(project, 9)
    do_assign(project)
    a_slots = list(Assignment.objects.filter(project=project, annotator=annotator_a).order_by("trace_id"))
    finish(a_slots[0])
    others_before = set(
        Assignment.objects.filter(project=project).exclude(annotator=annotator_a).values_list("pk", flat=True)
    )
    do_remove_annotator(project, annotator_a)
    remaining = Assignment.objects.filter(project=project, annotator=annotator_a)
    assert list(remaining.values_list("pk", flat=True)) == [a_slots[0].pk]  # finished work stays
    assert others_before <= set(Assignment.objects.filter(project=project).values_list("pk", flat=True))
    per_trace = Counter(Assignment.objects.filter(project=project).values_list("trace_id", flat=True))
    assert set(per_trace.values()) == {2}
    assert not Membership.objects.get(project=project, user=annotator_a, role="annotator").active


def test_it_claims_in_queue_order_and_reserves(project, annotator_a):
    traces = make_traces(project, 3)
    do_assign(project)
    first = do_claim_next(project, annotator_a)
    assert first.trace_id == traces[0].pk
    assert first.reserved_until > timezone.now()
    second = do_claim_next(project, annotator_a)
    assert second.trace_id == traces[1].pk


def test_an_expired_reservation_is_claimable_again(project, annotator_a):
    make_traces(project, 1)
    do_assign(project)
    slot = do_claim_next(project, annotator_a)
    assert do_claim_next(project, annotator_a) is None
    later = timezone.now() + timedelta(minutes=project.reservation_minutes + 1)
    assert do_claim_next(project, annotator_a, now=later).pk == slot.pk


def test_it_never_claims_finished_or_other_peoples_slots(project, annotator_a, annotator_b, outsider):
    make_traces(project, 2)
    do_assign(project)
    for slot in Assignment.objects.filter(project=project, annotator=annotator_a):
        finish(slot)
    assert do_claim_next(project, annotator_a) is None
    assert do_claim_next(project, outsider) is None
    assert do_claim_next(project, annotator_b).annotator_id == annotator_b.pk


@pytest.mark.django_db(transaction=True)
def test_a_slot_held_by_another_claim_is_passed_by_not_waited_for(project, annotator_a):
    """A slot another request holds at that moment (its row locked mid-claim, or the claim's statement
    not yet committed) is skipped: the claim takes the next slot at once instead of queueing behind it."""
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip("SQLite has no row locks: one writing statement at a time decides there")
    make_traces(project, 3)
    do_assign(project)
    first = Assignment.objects.filter(project=project, annotator=annotator_a).order_by("trace_id").first()
    with row_locked_elsewhere(Assignment, first.pk):
        mine = do_claim_next(project, annotator_a)
    assert mine is not None and mine.pk != first.pk
    assert mine.trace_id > first.trace_id
    # Once the rival is gone, the slot it held is the next one again.
    assert do_claim_next(project, annotator_a).pk == first.pk


def test_the_claimed_slot_answers_with_its_trace_name_and_batch_only(project, annotator_a):
    traces = make_traces(project, 2, name="week-1")
    do_assign(project)
    slot = do_claim_next(project, annotator_a)
    stored = Assignment.objects.get(pk=slot.pk)
    assert (slot.trace.external_id, slot.trace.batch.name) == (traces[0].external_id, "week-1")
    assert (slot.status, slot.purpose, slot.reserved_until) == (stored.status, "work", stored.reserved_until)
    assert "raw" in slot.trace.get_deferred_fields()


def _claim_with_retry(project, user):
    # The test database on SQLite is an in-memory shared cache, where a concurrent writer fails at once
    # with "table is locked" instead of waiting as a file database (busy timeout) or PostgreSQL does.
    for _ in range(200):
        try:
            return do_claim_next(project, user)
        except OperationalError as error:
            if "locked" not in str(error):
                raise
            time.sleep(0.005)
    raise AssertionError("could not claim: database stayed locked")


@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_never_get_the_same_slot(project, annotator_a):
    make_traces(project, 8)
    do_assign(project)
    claimed, errors = [], []
    start = threading.Barrier(6)

    def claim():
        try:
            start.wait()
            slot = _claim_with_retry(project, annotator_a)
            claimed.append(slot.pk if slot else None)
        except Exception as error:  # surfaced by the assertion below
            errors.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=claim) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert None not in claimed
    assert len(set(claimed)) == 6
