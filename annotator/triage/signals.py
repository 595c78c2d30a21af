"""Three triage signals over the LLM raters' answers, and the queue order each gives. Pure: plain data in,
frozen dataclasses out.

Each signal scores a trace the model answered (higher = a person should look sooner) and says why in one
line (for the owner's triage page, never for an annotator). A trace the signal knows nothing about gets no
score and is left out of the ranking; the queue puts it after the ranked ones, in trace order.

- **uncertain**: how unsure the models are. Per trace, the larger of (a) 1 - the lowest confidence any LLM
  rater gave for its answer (`confidence` of annotator.llm.parse) and (b) the mean pairwise Jaccard distance
  between the LLM raters' mode sets (two models, or two prompt variants stored as different raters; 0 when
  they agree, 1 when they share no mode). No confidence and a single rater: no score.
- **gold_disagreement**: how often the model's calls here were wrong on similar traces. Similar = the same
  group (the trace's batch: the same benchmark run or dataset, which is what makes failures look alike).
  For each mode, the model made a call on this trace (present or absent); on the group's gold traces where
  it made the same call, the share that gold contradicts is that call's error rate. The score is the sum
  over modes of those rates: the expected number of wrong calls on this trace. The trace's own gold, if any,
  is left out (leave one out). Per LLM rater; the trace gets the highest. No gold trace in the group that the
  rater answered: no score.
- **rare_modes**: the model marked a mode people have rarely shown. A mode's count is the number of traces on
  which any human annotation or the gold has it; a marked mode scores 1 / (1 + count) (1.0 for a mode no
  person ever marked, 0.5 for one marked once ...), the trace the highest of its marked modes, and 0.0 when
  the model marked nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

UNCERTAIN = "uncertain"
GOLD_DISAGREEMENT = "gold_disagreement"
RARE_MODES = "rare_modes"
SIGNALS = (UNCERTAIN, GOLD_DISAGREEMENT, RARE_MODES)


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """One LLM rater's submitted answer on one trace."""

    trace: int
    rater: str
    modes: frozenset[str]
    confidence: float | None = None


@dataclass(frozen=True, slots=True)
class Score:
    trace: int
    value: float
    reason: str


@dataclass(frozen=True, slots=True)
class TriageInputs:
    """What the signals read. `gold` and `human` map a trace to the modes marked on it (gold: the settled
    labels; human: the union of the modes the human raters marked); `group` maps a trace to its similarity
    group (its batch)."""

    answers: Sequence[ModelAnswer]
    gold: Mapping[int, frozenset[str]]
    human: Mapping[int, frozenset[str]]
    group: Mapping[int, Hashable]


def _by_trace(answers: Iterable[ModelAnswer]) -> dict[int, list[ModelAnswer]]:
    out: dict[int, list[ModelAnswer]] = defaultdict(list)
    for answer in answers:
        out[answer.trace].append(answer)
    return out


def _jaccard_distance(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return 1.0 - len(a & b) / len(union) if union else 0.0


def uncertain(inputs: TriageInputs) -> dict[int, Score]:
    out = {}
    for trace, answers in _by_trace(inputs.answers).items():
        parts: list[tuple[float, str]] = []
        given = [a for a in answers if a.confidence is not None]
        if given:
            least = min(given, key=lambda a: (a.confidence, a.rater))
            parts.append((1.0 - least.confidence, f"{least.rater} gave confidence {least.confidence:.2f}"))
        if len(answers) >= 2:
            pairs = list(combinations(sorted(answers, key=lambda a: a.rater), 2))
            distance = sum(_jaccard_distance(a.modes, b.modes) for a, b in pairs) / len(pairs)
            split = sorted(
                set().union(*(a.modes for a in answers)) - frozenset.intersection(*(a.modes for a in answers))
            )
            what = ", ".join(split) if split else "nothing"
            parts.append(
                (distance, f"{len(answers)} LLM raters disagree on {what} (distance {distance:.2f})")
            )
        if parts:
            value, reason = max(parts, key=lambda part: part[0])
            out[trace] = Score(trace, value, reason)
    return out


def gold_disagreement(inputs: TriageInputs, modes: Sequence[str]) -> dict[int, Score]:
    # calls[(rater, group, mode, said_present)] = [calls on gold traces, of which gold contradicts]
    calls: dict[tuple[str, Hashable, str, bool], list[int]] = defaultdict(lambda: [0, 0])
    for answer in inputs.answers:
        gold = inputs.gold.get(answer.trace)
        if gold is None:
            continue
        group = inputs.group.get(answer.trace)
        for mode in modes:
            said = mode in answer.modes
            tally = calls[(answer.rater, group, mode, said)]
            tally[0] += 1
            tally[1] += said != (mode in gold)
    out: dict[int, Score] = {}
    for answer in inputs.answers:
        group = inputs.group.get(answer.trace)
        own = inputs.gold.get(answer.trace)
        expected, worst, seen = 0.0, (-1.0, "", False, 0, 0), 0
        for mode in modes:
            said = mode in answer.modes
            n, wrong = calls.get((answer.rater, group, mode, said), (0, 0))
            if own is not None:  # leave this trace's own gold out of its estimate
                n, wrong = n - 1, wrong - (said != (mode in own))
            if n <= 0:
                continue
            seen += 1
            rate = wrong / n
            expected += rate
            if rate > worst[0]:
                worst = (rate, mode, said, wrong, n)
        if not seen:
            continue
        rate, mode, said, wrong, n = worst
        reason = (
            f"{answer.rater}: about {expected:.2f} wrong calls expected; its call on {mode} "
            f"({'present' if said else 'absent'}) was wrong on {wrong} of {n} gold traces of the same batch"
        )
        if answer.trace not in out or expected > out[answer.trace].value:
            out[answer.trace] = Score(answer.trace, expected, reason)
    return out


def rare_modes(inputs: TriageInputs) -> dict[int, Score]:
    count: dict[str, int] = defaultdict(int)
    for trace in set(inputs.human) | set(inputs.gold):
        for mode in inputs.human.get(trace, frozenset()) | inputs.gold.get(trace, frozenset()):
            count[mode] += 1
    out: dict[int, Score] = {}
    for trace, answers in _by_trace(inputs.answers).items():
        marked = sorted(set().union(*(a.modes for a in answers)))
        if not marked:
            out[trace] = Score(trace, 0.0, "the model marked no mode")
            continue
        rarest = min(marked, key=lambda mode: (count[mode], mode))
        value = 1.0 / (1 + count[rarest])
        out[trace] = Score(trace, value, f"marks {rarest}, which people marked on {count[rarest]} traces")
    return out


def scores(signal: str, inputs: TriageInputs, modes: Sequence[str]) -> dict[int, Score]:
    """The named signal's scores (one of SIGNALS)."""
    if signal == UNCERTAIN:
        return uncertain(inputs)
    if signal == GOLD_DISAGREEMENT:
        return gold_disagreement(inputs, modes)
    if signal == RARE_MODES:
        return rare_modes(inputs)
    raise ValueError(f"unknown triage signal {signal!r}")


def ranking(found: Mapping[int, Score]) -> list[Score]:
    """Highest score first; equal scores in trace order, so the ranking is the same on every run."""
    return sorted(found.values(), key=lambda score: (-score.value, score.trace))
