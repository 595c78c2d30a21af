"""Figure 4: which modes come together (co-occurrence) and the most common exact sets of modes.

Co-occurrence is one matrix product (``L.T @ L`` counts, for every pair, the traces carrying both).
Failure vectors pack each trace's row of the label matrix into bytes and count identical rows with
``np.unique``, so the work is proportional to the number of traces, never to the 2**modes possible sets.
"""

from __future__ import annotations

import numpy as np

from annotator.signatures.inputs import FAILURE, SignatureInput
from annotator.signatures.results import Cooccurrence, FailureVector, FailureVectors

__all__ = ["TOP_VECTORS", "cooccurrence", "failure_vectors"]

TOP_VECTORS = 10


def cooccurrence(data: SignatureInput) -> Cooccurrence:
    """Counts of traces with both modes, with lift and Jaccard index.

    Lift is ``None`` where either mode never occurs (it divides by both prevalences). Jaccard is defined
    as soon as either mode occurs: a mode that never occurs beside one that does shares none of its
    traces, which is 0, not unknown; only when neither occurs is it ``None`` (0 / 0)."""
    matrix = data.labels_float
    both = np.rint(matrix.T @ matrix).astype(np.int64)
    single = np.diag(both).astype(np.float64)
    n = data.n_traces
    with np.errstate(divide="ignore", invalid="ignore"):
        lift = both * float(n) / np.outer(single, single)
        jaccard = both / (single[:, None] + single[None, :] - both)
    occurs = single > 0
    return Cooccurrence(
        keys=tuple(mode.code for mode in data.modes),
        n_traces=n,
        both=tuple(tuple(int(v) for v in row) for row in both),
        lift=_nullable(lift, np.logical_and.outer(occurs, occurs)),
        jaccard=_nullable(jaccard, np.logical_or.outer(occurs, occurs)),
    )


def failure_vectors(data: SignatureInput, top: int = TOP_VECTORS) -> FailureVectors:
    """The `top` most frequent exact mode sets among traces with at least one mode.

    Ties are broken by taxonomy order of the sets' modes (the set whose first differing mode comes earlier
    in the taxonomy first), so the list is stable from run to run.
    """
    labels = data.labels
    with_modes = labels.any(axis=1)
    n_with = int(with_modes.sum())
    if n_with == 0:
        return FailureVectors(data.n_traces, 0, 0, ())
    distinct, inverse, counts = _distinct_rows(labels[with_modes])
    failed = np.bincount(inverse, weights=(data.outcome[with_modes] == FAILURE), minlength=len(counts))
    members = distinct
    codes = [mode.code for mode in data.modes]
    # Only vectors at least as frequent as the top-th one can make the list; sort just those.
    threshold = np.sort(counts)[::-1][min(top, len(counts)) - 1] if top > 0 else np.inf
    candidates = np.flatnonzero(counts >= threshold)
    order = sorted(candidates.tolist(), key=lambda v: (-counts[v], tuple(np.flatnonzero(members[v]))))
    vectors = tuple(
        FailureVector(
            modes=tuple(codes[j] for j in np.flatnonzero(members[v])),
            count=int(counts[v]),
            n_failed=round(float(failed[v])),
            share=float(counts[v] / n_with),
        )
        for v in order[:top]
    )
    return FailureVectors(data.n_traces, n_with, len(counts), vectors)


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct rows, index of each row's distinct row, counts). Up to 64 modes a row packs into one
    uint64 key, and a 1-D ``np.unique`` over integers is several times faster than ``np.unique(axis=0)``."""
    n_modes = rows.shape[1]
    packed = np.packbits(rows, axis=1, bitorder="little")
    if n_modes <= 64:
        padded = np.zeros((len(rows), 8), dtype=np.uint8)
        padded[:, : packed.shape[1]] = packed
        keys, inverse, counts = np.unique(padded.view("<u8").ravel(), return_inverse=True, return_counts=True)
        distinct_packed = keys.astype("<u8").view(np.uint8).reshape(-1, 8)
    else:
        distinct_packed, inverse, counts = np.unique(packed, axis=0, return_inverse=True, return_counts=True)
    distinct = np.unpackbits(distinct_packed, axis=1, count=n_modes, bitorder="little").astype(bool)
    return distinct, inverse.reshape(-1), counts


def _nullable(values: np.ndarray, defined: np.ndarray) -> tuple[tuple[float | None, ...], ...]:
    return tuple(
        tuple(float(v) if ok else None for v, ok in zip(row, mask, strict=True))
        for row, mask in zip(values, defined, strict=True)
    )
