"""Every figure from count tables: what lets a refresh update the figures by the changed traces alone.

Each figure is a function of counts that are sums over traces (or over evidence points): per group and
mode, per outcome and number of modes, per pair of modes, per exact mode set, per mode and decile, per
agent, per batch. :func:`tally` computes those counts from a :class:`SignatureInput`; counts of disjoint
sets of traces add up (:func:`combine`, with ``sign=-1`` to take traces out), and :func:`figures_from`
turns counts into the figures. ``compute_signatures(data)`` is ``signatures_from(tally(data))``, so a
refresh that takes the changed traces' old rows out and their new rows in gives exactly what a full
computation gives. The tables' size depends on the modes, groups and agents, never on the traces.

Counts are keyed by *names* (of groups, agents, batches; mode sets as packed bits), not codes, so tables
from different loads combine; a key whose counts fall to zero is dropped, as a full load would never
have seen it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from annotator.signatures._common import proportions
from annotator.signatures.contrast import (
    batch_comparison,
    contrast_from_counts,
)
from annotator.signatures.inputs import FAILURE, ModeInfo, SignatureInput
from annotator.signatures.position import UNKNOWN_AGENT, decile_counts
from annotator.signatures.prevalence import ALL, OUTCOMES, _from_histogram
from annotator.signatures.results import (
    AgentCount,
    BatchComparison,
    CategoryInfo,
    Cooccurrence,
    EvidencePositions,
    FailureVector,
    FailureVectors,
    GroupRates,
    ModesPerTrace,
    OutcomeContrast,
    Prevalence,
)
from annotator.signatures.structure import TOP_VECTORS, _nullable

__all__ = ["Tallies", "combine", "figures_from", "tally"]

DIMENSIONS = ("model", "system", "benchmark")
PER_TRACE_DIMENSION = "model"
_OUTCOME_ROWS = 3  # outcome code + 1: unknown (-1), success (0), failure (1)

Counts = Mapping[str, NDArray[np.int64]]


@dataclass(frozen=True)
class Tallies:
    """The counts behind every figure (see the module docstring); ``groups[dimension][name]`` is
    ``[traces, traces with each mode..., traces with each category...]`` over the selected traces,
    ``batches[name]`` the same without categories over every row (the comparison reads every row)."""

    modes: tuple[ModeInfo, ...]
    dimensions: tuple[str, ...]  # of DIMENSIONS, those the input carried
    has_attributed: bool
    n_traces: int
    groups: Mapping[str, Counts]
    mode_counts: Counts  # group of the per-trace dimension (or ALL) -> (3 outcomes, modes + 1) histogram
    outcome: NDArray[np.int64]  # (3 outcomes, 1 + modes): traces, then traces with each mode
    both: NDArray[np.int64]
    vectors: Counts  # packed mode set (bytes as latin-1 text) -> [traces, failed traces]
    by_mode: NDArray[np.int64]  # (modes, deciles)
    n_invalid: int
    agents: Counts
    attributed: Counts
    batches: Counts


def tally(data: SignatureInput) -> Tallies:
    """The counts of `data` (its selected rows; the batches over every row)."""
    modes = data.modes
    n_modes = len(modes)
    batches = _by_name(data.batch.codes, data.batch.names, data.labels) if data.batch is not None else {}
    data = data.selected()
    labels = data.labels
    member = _category_member(modes)
    category = (
        (labels.astype(np.float32) @ member) > 0 if member.shape[1] else np.zeros((len(labels), 0), bool)
    )
    with_categories = np.concatenate([labels, category], axis=1)
    dimensions = tuple(name for name in DIMENSIONS if name in data.groups)
    groups = {ALL: {ALL: _row(with_categories)} if data.n_traces else {}}
    for name in dimensions:
        grouping = data.groups[name]
        groups[name] = _by_name(grouping.codes, grouping.names, with_categories)
    k = np.count_nonzero(labels, axis=1)
    outcome_row = data.outcome.astype(np.intp) + 1
    per_trace = data.groups.get(PER_TRACE_DIMENSION) if PER_TRACE_DIMENSION in dimensions else None
    mode_counts = {ALL: _histogram(outcome_row, k, n_modes)} if data.n_traces else {}
    if per_trace is not None:
        for code in np.unique(per_trace.codes).tolist():
            chosen = per_trace.codes == code
            mode_counts[f"group:{per_trace.names[code]}"] = _histogram(
                outcome_row[chosen], k[chosen], n_modes
            )
    outcome = np.zeros((_OUTCOME_ROWS, 1 + n_modes), dtype=np.int64)
    for row in range(_OUTCOME_ROWS):
        outcome[row] = _row(labels[outcome_row == row]) if data.n_traces else 0
    as_float = labels.astype(np.float32)  # float32 sums of 0/1 are exact below 2**24 traces per pair
    both = (
        np.rint(as_float.T.astype(np.float64) @ as_float.astype(np.float64)).astype(np.int64)
        if len(labels) >= 2**24
        else np.rint(as_float.T @ as_float).astype(np.int64)
    )
    return Tallies(
        modes=modes,
        dimensions=dimensions,
        has_attributed=data.evidence.attributed is not None,
        n_traces=data.n_traces,
        groups=groups,
        mode_counts=mode_counts,
        outcome=outcome,
        both=both,
        vectors=_vectors(labels, data.outcome),
        **_positions(data),
        batches=batches,
    )


def combine(total: Tallies, part: Tallies, sign: int = 1) -> Tallies:
    """`total` with the counts of `part` added (``sign=1``) or taken out (``sign=-1``)."""
    if total.modes != part.modes:
        raise ValueError("tallies of different modes do not combine")

    def merged(a: Counts, b: Counts) -> dict[str, NDArray[np.int64]]:
        out = dict(a)
        for key, value in b.items():
            out[key] = out[key] + sign * value if key in out else sign * value
            if not out[key].any():
                del out[key]
        return out

    return Tallies(
        modes=total.modes,
        dimensions=total.dimensions,
        has_attributed=total.has_attributed or part.has_attributed,
        n_traces=total.n_traces + sign * part.n_traces,
        groups={name: merged(total.groups.get(name, {}), part.groups.get(name, {})) for name in total.groups},
        mode_counts=merged(total.mode_counts, part.mode_counts),
        outcome=total.outcome + sign * part.outcome,
        both=total.both + sign * part.both,
        vectors=merged(total.vectors, part.vectors),
        by_mode=total.by_mode + sign * part.by_mode,
        n_invalid=total.n_invalid + sign * part.n_invalid,
        agents=merged(total.agents, part.agents),
        attributed=merged(total.attributed, part.attributed),
        batches=merged(total.batches, part.batches),
    )


def figures_from(t: Tallies, compare: tuple[str, str] | None = None) -> dict:
    """Figures 1-6 from the counts: the fields of :class:`~annotator.signatures.report.Signatures`."""
    keys = [mode.code for mode in t.modes]
    categories = tuple(CategoryInfo(code, name) for code, name in _categories(t.modes))
    contrast = _outcome_contrast(t, keys)
    tables = [_prevalence(t, ALL, keys)] + [_prevalence(t, name, keys) for name in t.dimensions]
    return dict(
        modes=t.modes,
        categories=categories,
        n_traces=t.n_traces,
        n_failed=contrast.n_failed,
        n_successful=contrast.n_successful,
        n_unknown=contrast.n_unknown,
        prevalence=tuple(tables),
        modes_per_trace=_modes_per_trace(t),
        contrast=contrast,
        cooccurrence=_cooccurrence(t, keys),
        vectors=_failure_vectors(t, keys),
        positions=_evidence_positions(t),
        comparison=_compare_batches(t, keys, *compare) if compare else None,
    )


# --- counting -------------------------------------------------------------------------------------


def _row(matrix: NDArray[np.bool_]) -> NDArray[np.int64]:
    """[rows, column sums...] of a 0/1 matrix."""
    return np.concatenate([[len(matrix)], matrix.sum(axis=0, dtype=np.int64)]).astype(np.int64)


def _by_name(codes: NDArray[np.intp], names: tuple[str, ...], matrix: NDArray[np.bool_]) -> dict:
    """name -> [rows, column sums...] for each name some row carries (one sort, then sums per run)."""
    if not len(codes):
        return {}
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    sums = np.add.reduceat(matrix[order], starts, axis=0, dtype=np.int64)
    sizes = np.diff(np.r_[starts, len(codes)])
    return {
        names[int(sorted_codes[s])]: np.concatenate([[sizes[i]], sums[i]]).astype(np.int64)
        for i, s in enumerate(starts.tolist())
    }


def _histogram(outcome_row: NDArray[np.intp], k: NDArray, n_modes: int) -> NDArray[np.int64]:
    flat = outcome_row * (n_modes + 1) + k
    return np.bincount(flat, minlength=_OUTCOME_ROWS * (n_modes + 1)).reshape(_OUTCOME_ROWS, n_modes + 1)


def _vectors(labels: NDArray[np.bool_], outcome: NDArray[np.int8]) -> dict[str, NDArray[np.int64]]:
    with_modes = labels.any(axis=1)
    if not with_modes.any():
        return {}
    packed = np.packbits(labels[with_modes], axis=1, bitorder="little")
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    distinct, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    failed = np.bincount(inverse.reshape(-1), weights=outcome[with_modes] == FAILURE, minlength=len(counts))
    return {
        bytes(key).decode("latin-1"): np.array([count, round(f)], dtype=np.int64)
        for key, count, f in zip(distinct, counts.tolist(), failed.tolist(), strict=True)
    }


def _positions(data: SignatureInput) -> dict:
    ev = data.evidence
    n_modes = len(data.modes)
    valid, mode, by_mode = decile_counts(data)
    attributed = {}
    if ev.attributed is not None:
        codes = ev.attributed.codes[valid]
        has = (
            np.array([bool(name) for name in ev.attributed.names], dtype=bool)[codes]
            if len(codes)
            else codes.astype(bool)
        )
        attributed = _per_agent(codes[has], ev.attributed.names, mode[has], n_modes)
    return {
        "by_mode": by_mode.astype(np.int64),
        "n_invalid": int((~valid).sum()),
        "agents": _per_agent(ev.agent.codes[valid], ev.agent.names, mode, n_modes),
        "attributed": attributed,
    }


def _per_agent(agent: NDArray, names: tuple[str, ...], mode: NDArray, n_modes: int) -> dict:
    table = np.bincount(agent * n_modes + mode, minlength=len(names) * n_modes).reshape(len(names), n_modes)
    return {names[a]: table[a].astype(np.int64) for a in range(len(names)) if table[a].any()}


def _category_member(modes: tuple[ModeInfo, ...]) -> NDArray[np.float32]:
    index = {code: i for i, (code, _) in enumerate(_categories(modes))}
    member = np.zeros((len(modes), len(index)), dtype=np.float32)
    for j, mode in enumerate(modes):
        if mode.category:
            member[j, index[mode.category]] = 1.0
    return member


def _categories(modes: tuple[ModeInfo, ...]) -> list[tuple[str, str]]:
    names: dict[str, str] = {}
    for mode in modes:
        if mode.category:
            names.setdefault(mode.category, mode.category_name or mode.category)
    return list(names.items())


# --- figures from counts --------------------------------------------------------------------------


def _prevalence(t: Tallies, dimension: str, keys: list[str]) -> Prevalence:
    n_modes = len(keys)
    category_keys = [code for code, _ in _categories(t.modes)]
    groups = tuple(
        GroupRates(
            value=name,
            n_traces=int(row[0]),
            modes=proportions(keys, row[1 : 1 + n_modes], row[0]),
            categories=proportions(category_keys, row[1 + n_modes :], row[0]),
        )
        for name, row in sorted(t.groups[dimension].items(), key=lambda item: str(item[0]))
        if row[0] > 0
    )
    return Prevalence(dimension, groups)


def _modes_per_trace(t: Tallies) -> ModesPerTrace:
    overall = t.mode_counts.get(ALL)
    seen = np.flatnonzero(overall.sum(axis=0)) if overall is not None else np.zeros(0, np.intp)
    n_bins = int(seen.max()) + 1 if len(seen) else 1
    rows = []
    for label, code in OUTCOMES:
        histogram = overall[code + 1, :n_bins] if overall is not None else np.zeros(n_bins, np.int64)
        rows.append(_from_histogram(ALL, label, histogram))
    if PER_TRACE_DIMENSION not in t.dimensions:
        return ModesPerTrace(ALL, tuple(rows))
    per_group = sorted(
        ((key[len("group:") :], value) for key, value in t.mode_counts.items() if key.startswith("group:")),
        key=lambda item: str(item[0]),
    )
    for label, code in OUTCOMES:
        rows.extend(_from_histogram(name, label, value[code + 1, :n_bins]) for name, value in per_group)
    return ModesPerTrace(PER_TRACE_DIMENSION, tuple(rows))


def _outcome_contrast(t: Tallies, keys: list[str]) -> OutcomeContrast:
    failed, successful = t.outcome[FAILURE + 1], t.outcome[0 + 1]
    return contrast_from_counts(
        keys, (failed[1:], int(failed[0])), (successful[1:], int(successful[0])), t.n_traces
    )


def _cooccurrence(t: Tallies, keys: list[str]) -> Cooccurrence:
    both = t.both
    single = np.diag(both).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        lift = both * float(t.n_traces) / np.outer(single, single)
        jaccard = both / (single[:, None] + single[None, :] - both)
    occurs = single > 0
    return Cooccurrence(
        keys=tuple(keys),
        n_traces=t.n_traces,
        both=tuple(tuple(int(v) for v in row) for row in both),
        lift=_nullable(lift, np.logical_and.outer(occurs, occurs)),
        jaccard=_nullable(jaccard, np.logical_or.outer(occurs, occurs)),
    )


def _failure_vectors(t: Tallies, keys: list[str], top: int = TOP_VECTORS) -> FailureVectors:
    n_with = sum(int(value[0]) for value in t.vectors.values())
    if n_with == 0:
        return FailureVectors(t.n_traces, 0, 0, ())

    def members(key: str) -> tuple[int, ...]:
        bits = np.unpackbits(
            np.frombuffer(key.encode("latin-1"), np.uint8), count=len(keys), bitorder="little"
        )
        return tuple(np.flatnonzero(bits).tolist())

    ranked = sorted(t.vectors.items(), key=lambda item: -int(item[1][0]))
    threshold = int(ranked[min(top, len(ranked)) - 1][1][0]) if top > 0 else None
    candidates = [(key, value) for key, value in ranked if threshold is not None and value[0] >= threshold]
    order = sorted(
        ((members(key), value) for key, value in candidates), key=lambda mv: (-int(mv[1][0]), mv[0])
    )
    vectors = tuple(
        FailureVector(
            modes=tuple(keys[j] for j in mode_set),
            count=int(value[0]),
            n_failed=int(value[1]),
            share=float(value[0] / n_with),
        )
        for mode_set, value in order[:top]
    )
    return FailureVectors(t.n_traces, n_with, len(t.vectors), vectors)


def _evidence_positions(t: Tallies) -> EvidencePositions:
    attributed = _agent_counts(t.attributed) if t.has_attributed else ()
    return EvidencePositions(
        n_points=int(t.by_mode.sum()),
        n_invalid=t.n_invalid,
        deciles=tuple(int(c) for c in t.by_mode.sum(axis=0)),
        by_mode=tuple(tuple(int(c) for c in row) for row in t.by_mode),
        agents=_agent_counts(t.agents),
        attributed_agents=attributed,
        n_attributed=int(sum(int(v.sum()) for v in t.attributed.values())) if t.has_attributed else 0,
    )


def _agent_counts(per_agent: Counts) -> tuple[AgentCount, ...]:
    named = sorted(((name or UNKNOWN_AGENT, name) for name in per_agent), key=lambda pair: pair[1])
    rows = [(shown, per_agent[name]) for shown, name in named]
    rows.sort(key=lambda row: (-int(row[1].sum()), row[0]))
    return tuple(
        AgentCount(shown, int(counts.sum()), tuple(int(c) for c in counts)) for shown, counts in rows
    )


def _compare_batches(t: Tallies, keys: list[str], a: str, b: str) -> BatchComparison:
    empty = np.zeros(1 + len(keys), dtype=np.int64)
    side_a, side_b = t.batches.get(a, empty), t.batches.get(b, empty)
    return batch_comparison(keys, a, b, (side_a[1:], side_b[1:]), (int(side_a[0]), int(side_b[0])))
