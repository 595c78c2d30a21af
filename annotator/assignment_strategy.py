"""Who labels which trace: a pure, deterministic plan (ints in, frozen dataclasses out, no Django).

Goals, in priority order:

1. Every trace gets `overlap` different annotators (or all of them when there are fewer).
2. Work is balanced: annotators' totals differ by at most one whenever the movable work allows it.
3. Pairs rotate: among equally loaded candidates we prefer the one who has shared the fewest traces with
   the annotators already on the trace, so every pair of annotators ends up sharing traces (pairwise
   agreement needs overlapping items for every pair, not just for a few fixed teams).
4. Nothing finished is disturbed: only slots the caller marks movable (never opened, not reserved) may be
   handed to someone else, and only to even out the load (e.g. when an annotator joins late), or dropped
   when asked to (`trim`) from a trace that holds more than its overlap (e.g. once imported labels count).

The ORM bridge is `annotator.services.assignment.do_assign`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

# Rebalancing looks at this many of the busiest annotator's movable slots per move: enough to find a
# pair-friendly trace, bounded so a 100,000-trace project plans in seconds, not minutes.
_MOVE_SCAN = 64


@dataclass(frozen=True, order=True)
class Slot:
    trace_id: int
    annotator_id: int


@dataclass(frozen=True)
class Plan:
    add: tuple[Slot, ...]
    # Movable slots given to someone else (each has a matching entry in `add`).
    remove: tuple[Slot, ...]


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


class _State:
    """Holders per trace, load per candidate and shared-trace counts per pair, kept in step."""

    def __init__(
        self,
        annotators: Sequence[int],
        existing: Iterable[tuple[int, int]],
        unavailable: Iterable[tuple[int, int]] = (),
    ):
        self.annotators = list(annotators)
        self.barred: dict[int, set[int]] = defaultdict(set)
        for trace, annotator in unavailable:
            self.barred[trace].add(annotator)
        self.rank = {a: i for i, a in enumerate(self.annotators)}
        self.active = set(self.annotators)
        self.holders: dict[int, set[int]] = defaultdict(set)
        self.load: Counter[int] = Counter({a: 0 for a in self.annotators})
        self.pairs: Counter[tuple[int, int]] = Counter()
        for trace, annotator in existing:
            self.add(trace, annotator)

    def add(self, trace: int, annotator: int) -> None:
        for other in self.holders[trace] & self.active:
            if annotator in self.active:
                self.pairs[_pair(annotator, other)] += 1
        self.holders[trace].add(annotator)
        if annotator in self.active:
            self.load[annotator] += 1

    def remove(self, trace: int, annotator: int) -> None:
        self.holders[trace].discard(annotator)
        if annotator in self.active:
            self.load[annotator] -= 1
            for other in self.holders[trace] & self.active:
                self.pairs[_pair(annotator, other)] -= 1

    def shared(self, annotator: int, others: Iterable[int]) -> int:
        return sum(self.pairs[_pair(annotator, other)] for other in others if other != annotator)

    def pick(self, trace: int, position: int) -> int | None:
        """The best new annotator for `trace`: least loaded, then fewest shared traces, then rotation."""
        on_trace = self.holders[trace] | self.barred[trace]
        candidates = [a for a in self.annotators if a not in on_trace]
        if not candidates:
            return None
        n = len(self.annotators)
        active_on_trace = on_trace & self.active
        return min(
            candidates,
            key=lambda a: (self.load[a], self.shared(a, active_on_trace), (self.rank[a] - position) % n),
        )


def plan_assignments(
    trace_ids: Sequence[int],
    annotator_ids: Sequence[int],
    overlap: int,
    existing: Iterable[tuple[int, int]] = (),
    movable: Iterable[tuple[int, int]] = (),
    unavailable: Iterable[tuple[int, int]] = (),
    *,
    trim: bool = False,
) -> Plan:
    """Plan the slots to create (and movable slots to hand over) so that every trace in `trace_ids` has
    `min(overlap, len(annotator_ids))` annotators.

    `existing` holds every (trace, annotator) slot that stays, of anyone (annotators who left and imported
    labellers count as holders but never receive work); `movable` is the subset of `existing` that may be
    handed to another candidate to balance the load. `annotator_ids` are the candidates for new work.
    `unavailable` holds (trace, annotator) pairs that must not receive that trace although they are no
    holders (an annotator who saw its gold answer as a calibration item).
    """
    annotators = sorted(set(annotator_ids))
    target = min(overlap, len(annotators))
    if target <= 0:
        return Plan(add=(), remove=())
    initial = set(existing)
    state = _State(annotators, initial, unavailable)
    if trim:
        _trim(state, initial & set(movable), target)
    planned: set[tuple[int, int]] = set()
    for position, trace in enumerate(trace_ids):
        while len(state.holders[trace]) < target:
            annotator = state.pick(trace, position)
            if annotator is None:
                break
            state.add(trace, annotator)
            planned.add((trace, annotator))
    # Slots planned just now are as movable as untouched old ones.
    _rebalance(state, (initial & set(movable)) | planned)
    # The net effect only: a slot planned and moved away again within this plan is never created.
    final = {(trace, annotator) for trace, people in state.holders.items() for annotator in people}
    return Plan(
        add=tuple(Slot(t, a) for t, a in sorted(final - initial)),
        remove=tuple(Slot(t, a) for t, a in sorted(initial - final)),
    )


def _trim(state: _State, movable: set[tuple[int, int]], target: int) -> None:
    """Drop movable slots from traces holding more than `target`, the busiest holder's first."""
    by_trace: dict[int, list[int]] = defaultdict(list)
    for trace, annotator in sorted(movable):
        by_trace[trace].append(annotator)
    for trace, annotators in sorted(by_trace.items()):
        while len(state.holders[trace]) > target and annotators:
            busiest = max(annotators, key=lambda a: (state.load[a], -state.rank.get(a, -1)))
            annotators.remove(busiest)
            state.remove(trace, busiest)


def _rebalance(state: _State, movable: set[tuple[int, int]]) -> None:
    """Move movable slots from the busiest to the idlest annotator until loads differ by at most one."""
    by_annotator: dict[int, list[int]] = defaultdict(list)
    for trace, annotator in sorted(movable):
        if annotator in state.active:
            by_annotator[annotator].append(trace)
    while True:
        busiest = max(state.annotators, key=lambda a: (state.load[a], -state.rank[a]))
        idlest = min(state.annotators, key=lambda a: (state.load[a], state.rank[a]))
        if state.load[busiest] - state.load[idlest] <= 1:
            break
        trace = _best_move(state, by_annotator[busiest], idlest)
        if trace is None:
            # The busiest cannot give anything to the idlest; stop rather than search every pairing.
            break
        by_annotator[busiest].remove(trace)
        state.remove(trace, busiest)
        state.add(trace, idlest)


def _best_move(state: _State, traces: list[int], receiver: int) -> int | None:
    best, best_key = None, None
    for trace in traces[-_MOVE_SCAN:]:
        if receiver in state.holders[trace] or receiver in state.barred[trace]:
            continue
        key = state.shared(receiver, state.holders[trace] & state.active)
        if best_key is None or key < best_key:
            best, best_key = trace, key
            if key == 0:
                break
    return best


def pair_counts(slots: Iterable[tuple[int, int]]) -> Counter[tuple[int, int]]:
    """How many traces each annotator pair shares (for tests, reports and the owner's page)."""
    holders: dict[int, set[int]] = defaultdict(set)
    for trace, annotator in slots:
        holders[trace].add(annotator)
    counts: Counter[tuple[int, int]] = Counter()
    for people in holders.values():
        counts.update(combinations(sorted(people), 2))
    return counts
