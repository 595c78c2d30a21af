"""The pure assignment plan: balanced, overlap respected, every pair shares traces, finished work kept."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest

from annotator.assignment_strategy import Slot, pair_counts, plan_assignments


def slots(plan, existing=()):
    """The slots after applying a plan to `existing`."""
    result = set(existing) - {(s.trace_id, s.annotator_id) for s in plan.remove}
    return result | {(s.trace_id, s.annotator_id) for s in plan.add}


def loads(pairs):
    return Counter(annotator for _, annotator in pairs)


@pytest.mark.parametrize(
    ("traces", "annotators", "overlap"), [(12, 4, 2), (20, 5, 2), (30, 6, 3), (100, 7, 2), (9, 3, 3)]
)
def test_it_gives_every_trace_overlap_distinct_annotators(traces, annotators, overlap):
    plan = plan_assignments(range(traces), range(annotators), overlap)
    per_trace = Counter(s.trace_id for s in plan.add)
    assert set(per_trace.values()) == {overlap}
    assert len(plan.add) == len(set(plan.add)) == traces * overlap
    assert plan.remove == ()


@pytest.mark.parametrize(
    ("traces", "annotators", "overlap"), [(12, 4, 2), (21, 5, 2), (30, 6, 3), (101, 7, 2)]
)
def test_it_balances_the_load_within_one(traces, annotators, overlap):
    counts = loads(slots(plan_assignments(range(traces), range(annotators), overlap)))
    assert len(counts) == annotators
    assert max(counts.values()) - min(counts.values()) <= 1


@pytest.mark.parametrize(
    ("traces", "annotators", "overlap"), [(6, 4, 2), (20, 5, 2), (30, 6, 3), (100, 7, 2)]
)
def test_it_rotates_pairs_so_every_pair_shares_traces(traces, annotators, overlap):
    pairs = pair_counts(slots(plan_assignments(range(traces), range(annotators), overlap)))
    for pair in combinations(range(annotators), 2):
        assert pairs[pair] >= 1, f"pair {pair} shares no trace"
    assert max(pairs.values()) - min(pairs.values()) <= 4


def test_it_caps_overlap_at_the_number_of_annotators():
    plan = plan_assignments(range(5), [7, 8], 3)
    assert Counter(s.trace_id for s in plan.add) == Counter({t: 2 for t in range(5)})


def test_it_plans_nothing_without_annotators_or_traces():
    assert plan_assignments(range(5), [], 2).add == ()
    assert plan_assignments([], [1, 2], 2).add == ()


def test_it_extends_to_new_traces_without_touching_existing_slots():
    first = slots(plan_assignments(range(10), range(4), 2))
    plan = plan_assignments(range(16), range(4), 2, existing=first)
    assert plan.remove == ()
    assert {s.trace_id for s in plan.add} == set(range(10, 16))
    counts = loads(slots(plan, first))
    assert max(counts.values()) - min(counts.values()) <= 1


def test_it_rebalances_only_movable_slots_when_an_annotator_joins():
    first = sorted(slots(plan_assignments(range(30), [1, 2], 2)))
    finished = set(first[:20])  # traces 0-9 done by both
    movable = set(first[20:])
    plan = plan_assignments(range(30), [1, 2, 3], 2, existing=first, movable=movable)
    assert not {(s.trace_id, s.annotator_id) for s in plan.remove} & finished
    after = slots(plan, first)
    assert finished <= after
    counts = loads(after)
    assert counts[3] >= 15  # the newcomer takes a fair share of what is not started
    assert max(counts.values()) - min(counts.values()) <= 1
    assert set(Counter(t for t, _ in after).values()) == {2}


def test_it_counts_departed_holders_towards_overlap_but_gives_them_nothing():
    # Annotator 9 left after finishing trace 0; traces 1-3 need two of the remaining annotators.
    plan = plan_assignments(range(4), [1, 2, 3], 2, existing=[(0, 9)])
    after = slots(plan, [(0, 9)])
    assert Counter(t for t, _ in after) == Counter({0: 2, 1: 2, 2: 2, 3: 2})
    assert 9 not in {s.annotator_id for s in plan.add}


def test_it_is_deterministic():
    assert plan_assignments(range(50), range(5), 2) == plan_assignments(range(50), range(5), 2)


def test_it_returns_plain_frozen_values():
    plan = plan_assignments([1], [1, 2], 2)
    assert plan.add == (Slot(1, 1), Slot(1, 2))
    with pytest.raises(AttributeError):
        plan.add[0].trace_id = 3


def test_an_unavailable_annotator_is_never_planned_on_that_trace():
    plan = plan_assignments([1, 2, 3], [10, 20, 30], 2, unavailable=[(1, 10), (2, 10)])
    holders = {(s.trace_id, s.annotator_id) for s in plan.add}
    assert (1, 10) not in holders and (2, 10) not in holders
    assert all(sum(1 for t, _ in holders if t == trace) == 2 for trace in (1, 2, 3))
