"""Frozen result types of the signature figures.

A rate is never a bare float: ``rate`` is an :class:`~annotator.agreement.results.Estimate` (a number, or
``None`` with a machine-readable code and a human reason, the convention of the agreement package), and
every count comes with the total it was taken over, so each figure can be checked and re-derived.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotator.agreement.results import Estimate

__all__ = [
    "AgentCount",
    "BatchComparison",
    "CategoryInfo",
    "Cooccurrence",
    "EvidencePositions",
    "FailureVector",
    "FailureVectors",
    "GroupRates",
    "ModeChange",
    "ModeContrast",
    "ModeCountDistribution",
    "ModesPerTrace",
    "OutcomeContrast",
    "Prevalence",
    "Proportion",
]

# Reason codes (stable strings: safe to store and compare).
NO_TRACES = "no_traces"
NEVER_IN_SUCCESSES = "never_in_successes"
NO_SUCCESSFUL_TRACES = "no_successful_traces"
NO_FAILED_TRACES = "no_failed_traces"


@dataclass(frozen=True, slots=True)
class CategoryInfo:
    code: str
    name: str


@dataclass(frozen=True, slots=True)
class Proportion:
    """``count`` of ``total`` traces, the rate and its Wilson 95% score interval (``None`` when total is 0).

    ``key`` names what is counted (a mode or category code) so a list of proportions reads on its own.
    """

    key: str
    count: int
    total: int
    rate: Estimate
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class GroupRates:
    """Prevalence inside one group (one model, system or benchmark; ``"all"`` for the whole selection)."""

    value: str
    n_traces: int
    modes: tuple[Proportion, ...]
    categories: tuple[Proportion, ...]


@dataclass(frozen=True, slots=True)
class Prevalence:
    """Figure 1: how often each mode (and each category: any of its modes) appears, per group."""

    dimension: str
    groups: tuple[GroupRates, ...]


@dataclass(frozen=True, slots=True)
class ModeCountDistribution:
    """How many modes a trace carries, for the failed (or the successful) traces of one group.

    ``histogram[k]`` is the number of traces with exactly ``k`` modes; traces with none count in bin 0.
    """

    group: str
    outcome: str
    n_traces: int
    mean: Estimate
    histogram: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ModesPerTrace:
    """Figure 2: modes per failed and per successful trace, per model and overall (``group == "all"``)."""

    dimension: str
    rows: tuple[ModeCountDistribution, ...]


@dataclass(frozen=True, slots=True)
class ModeContrast:
    """Figure 3, one mode: its rate in failed versus successful traces and what that makes it.

    ``relative_increase`` is ``(rate_failed - rate_successful) / rate_successful``; undefined with reason
    ``never_in_successes`` ("only in failures") when the mode never appears in a successful trace.
    ``classification`` is one of ``fatal``, ``benign``, ``not_observed`` or ``undetermined`` (see
    :mod:`annotator.signatures.contrast` for the thresholds); ``warnings`` say when the counts are too thin
    to trust it.
    """

    key: str
    in_failed: Proportion
    in_successful: Proportion
    relative_increase: Estimate
    classification: str
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OutcomeContrast:
    n_failed: int
    n_successful: int
    n_unknown: int
    fatal_min_relative_increase: float
    min_traces_per_outcome: int
    modes: tuple[ModeContrast, ...]


@dataclass(frozen=True, slots=True)
class Cooccurrence:
    """Figure 4a: ``both[i][j]`` traces carry modes i and j (the diagonal: traces with mode i).

    ``lift`` is ``P(i and j) / (P(i) P(j))`` (1 = independent, above 1 = they come together) and ``jaccard``
    ``|i and j| / |i or j|``. Lift is ``None`` on pairs where either mode never occurs; Jaccard is 0 when
    only one of the two occurs and ``None`` only when neither does.
    """

    keys: tuple[str, ...]
    n_traces: int
    both: tuple[tuple[int, ...], ...]
    lift: tuple[tuple[float | None, ...], ...]
    jaccard: tuple[tuple[float | None, ...], ...]


@dataclass(frozen=True, slots=True)
class FailureVector:
    """One exact set of modes and how many traces carry exactly that set (``n_failed`` of them failed)."""

    modes: tuple[str, ...]
    count: int
    n_failed: int
    share: float  # of the traces that carry at least one mode


@dataclass(frozen=True, slots=True)
class FailureVectors:
    """Figure 4b: the most common failure vectors (top ``len(top)``), ties broken by taxonomy order."""

    n_traces: int
    n_with_modes: int
    n_distinct: int
    top: tuple[FailureVector, ...]


@dataclass(frozen=True, slots=True)
class AgentCount:
    agent: str
    count: int
    by_mode: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EvidencePositions:
    """Figure 5: where in the trace the evidence steps sit.

    ``deciles[d]`` counts evidence points with ``floor(10 * step / step_count) == d``; ``by_mode[j]`` is the
    same per mode; ``agents`` counts them by the agent of the step, most frequent first. Points whose step
    is outside the trace are left out and counted in ``n_invalid``.

    ``attributed_agents`` counts the same points by the agent their label's imported attribution names
    (Who&When's ``mistake_agent``), beside the step's own agent: the two differ when the source says so.
    ``n_attributed`` is how many points carry an attribution (the others are not in that figure).
    """

    n_points: int
    n_invalid: int
    deciles: tuple[int, ...]
    by_mode: tuple[tuple[int, ...], ...]
    agents: tuple[AgentCount, ...]
    attributed_agents: tuple[AgentCount, ...] = ()
    n_attributed: int = 0


@dataclass(frozen=True, slots=True)
class ModeChange:
    """Figure 6, one mode: its rate in batch A and in batch B, and ``rate_b - rate_a`` with Newcombe's
    hybrid score 95% interval (``significant``: the interval excludes 0)."""

    key: str
    a: Proportion
    b: Proportion
    difference: Estimate
    low: float | None
    high: float | None
    significant: bool


@dataclass(frozen=True, slots=True)
class BatchComparison:
    a: str
    b: str
    n_a: int
    n_b: int
    method: str
    modes: tuple[ModeChange, ...]
