"""Krippendorff's alpha over *sets* of labels with the MASI distance.

Why: when each rater picks a set of modes per item, per-mode binary kappas
ignore partial overlap ({a, b} vs {a} is closer than {a} vs {c}). MASI
(Passonneau 2006) scores that: ``1 - J * m`` with Jaccard ``J`` and
``m = 1`` (identical), ``2/3`` (one set contains the other), ``1/3`` (they
overlap), ``0`` (disjoint). It matches
``nltk.metrics.agreement.AnnotationTask(distance=masi_distance).alpha()``
wherever nltk is defined. nltk divides by zero for two empty sets; here two
empty sets are identical, so their distance is ``0``.

Vectorised by encoding each distinct set as a row of 64-bit words (one bit
per label) so that intersections are ``popcount(a & b)`` over whole arrays.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotator.agreement.ratings import as_ratings
from annotator.agreement.results import NO_VARIATION, TOO_FEW_PAIRABLE, Estimate

__all__ = ["MasiAlpha", "masi_alpha", "masi_alpha_from_ratings", "masi_distance"]

# Bound on (rows x distinct sets x words) per block of the expected-disagreement sum.
_BLOCK_ELEMENTS = 1 << 22


@dataclass(frozen=True, slots=True)
class MasiAlpha:
    """Krippendorff's alpha with MASI distance.

    ``n_items`` counts items with at least two label sets (pairable items);
    ``n_values`` counts the label sets on them. The disagreements are the
    ``D_o`` and ``D_e`` of the alpha formula (``None`` with the alpha reason
    when undefined).
    """

    alpha: Estimate
    n_items: int
    n_values: int
    observed_disagreement: float | None
    expected_disagreement: float | None


def masi_distance(a: AbstractSet[Hashable], b: AbstractSet[Hashable]) -> float:
    """Scalar MASI distance (nltk's formula; two empty sets are at distance 0)."""
    inter = len(a & b)
    union = len(a | b)
    if union == 0:
        return 0.0
    if len(a) == len(b) == inter:
        m = 1.0
    elif inter == min(len(a), len(b)):
        m = 2 / 3
    elif inter > 0:
        m = 1 / 3
    else:
        m = 0.0
    return 1.0 - inter / union * m


def _masi_from_counts(
    size_a: NDArray[np.int64], size_b: NDArray[np.int64], inter: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Element-wise MASI distance from set sizes and intersection sizes."""
    union = size_a + size_b - inter
    m = np.where(
        (size_a == size_b) & (inter == size_a),
        1.0,
        np.where(inter == np.minimum(size_a, size_b), 2 / 3, np.where(inter > 0, 1 / 3, 0.0)),
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        d = 1.0 - inter / union * m
    return np.where(union == 0, 0.0, d)


def _encode(label_sets: Sequence[Sequence[AbstractSet[Hashable] | None]]) -> tuple[NDArray, NDArray]:
    """Return ``ids`` (items x max raters, -1 = missing) and ``words`` (distinct sets x 64-bit words)."""
    set_ids: dict[frozenset, int] = {}
    n_raters = max((len(row) for row in label_sets), default=0)
    ids = np.full((len(label_sets), n_raters), -1, dtype=np.int64)
    for i, row in enumerate(label_sets):
        for j, value in enumerate(row):
            if value is not None:
                ids[i, j] = set_ids.setdefault(frozenset(value), len(set_ids))
    label_bits: dict[Hashable, int] = {}
    for distinct in set_ids:
        for label in distinct:
            label_bits.setdefault(label, len(label_bits))
    n_words = max(1, (len(label_bits) + 63) // 64)
    bits = np.zeros((len(set_ids), n_words * 64), dtype=bool)
    for distinct, k in set_ids.items():
        bits[k, [label_bits[label] for label in distinct]] = True
    words = np.packbits(bits.reshape(len(set_ids), n_words, 64), axis=-1, bitorder="little")
    return ids, words.view(np.uint64).reshape(len(set_ids), n_words)


def masi_alpha(label_sets: Sequence[Sequence[AbstractSet[Hashable] | None]]) -> MasiAlpha:
    """Krippendorff's alpha over label sets with MASI distance.

    ``label_sets[i][j]`` is rater ``j``'s set for item ``i`` or ``None`` when
    the rater did not label the item (rows may differ in length). Items with
    fewer than two sets are ignored, as Krippendorff prescribes. Undefined
    (``None`` + reason) with fewer than 2 pairable values or when every
    pairable set is identical (expected disagreement 0).
    """
    return _masi_encoded(*_encode(label_sets))


def masi_alpha_from_ratings(ratings: ArrayLike, weights: ArrayLike | None = None) -> MasiAlpha:
    """:func:`masi_alpha` straight from a ``(n_items, n_raters, n_modes)`` ratings tensor.

    Rater ``j``'s set for item ``i`` is the modes rated 1; a rater whose
    row is all missing (-1) did not label the item. Why a second entry point:
    building Python sets for 100,000 traces costs more than the statistic,
    so here the sets are bit-packed rows of the tensor and the distinct sets
    come from ``np.unique`` over those rows -- no per-item Python. ``weights`` (one whole number per
    row) counts each row as that many identical items.
    """
    r = as_ratings(ratings)
    n_items, n_raters, n_modes = r.shape
    n_words = max(1, (n_modes + 63) // 64)
    bits = np.zeros((n_items, n_raters, n_words * 64), dtype=bool)
    bits[:, :, :n_modes] = r == 1
    packed = np.packbits(bits, axis=-1, bitorder="little").view(np.uint64)  # (items, raters, words)
    present = (r >= 0).any(axis=2)
    flat = packed.reshape(-1, n_words)
    if n_words == 1:  # up to 64 modes: a 1-D unique of the words, far faster than rows
        words, inverse = np.unique(flat[present.ravel(), 0], return_inverse=True)
        words = words[:, None]
    else:
        words, inverse = np.unique(flat[present.ravel()], axis=0, return_inverse=True)
    ids = np.full(n_items * n_raters, -1, dtype=np.int64)
    ids[present.ravel()] = inverse.ravel()
    w = None if weights is None else np.asarray(weights, dtype=np.int64)
    if w is not None and w.shape != (n_items,):
        raise ValueError(f"weights must have one entry per row ({n_items}); got shape {w.shape}")
    return _masi_encoded(ids.reshape(n_items, n_raters), words.reshape(-1, n_words), w)


def _masi_encoded(
    ids: NDArray[np.int64], words: NDArray[np.uint64], weights: NDArray[np.int64] | None = None
) -> MasiAlpha:
    """The alpha itself, on sets encoded as ids (items x raters, -1 missing) into rows of bit words;
    row i counts ``weights[i]`` times (once when None)."""
    w = np.ones(ids.shape[0], dtype=np.int64) if weights is None else weights
    sizes = np.bitwise_count(words).sum(axis=1, dtype=np.int64)
    present = ids >= 0
    m = present.sum(axis=1)
    pair = m >= 2
    n_values = int((m[pair] * w[pair]).sum())
    n_items = int(w[pair].sum())

    def undefined(code: str, reason: str) -> MasiAlpha:
        return MasiAlpha(Estimate.undefined(code, reason), n_items, n_values, None, None)

    if n_values < 2:
        return undefined(TOO_FEW_PAIRABLE, "fewer than 2 pairable values: no item has at least 2 label sets")
    pair_ids, pair_w = ids[pair], w[pair]
    value_w = np.broadcast_to(pair_w[:, None], pair_ids.shape)[pair_ids >= 0]
    values = pair_ids[pair_ids >= 0]
    freq = np.bincount(values, weights=value_w, minlength=len(words)).astype(np.int64)
    used = np.flatnonzero(freq)
    if len(used) == 1:
        return undefined(
            NO_VARIATION, "no variation: every pairable label set is identical (expected disagreement is 0)"
        )

    # Observed: sum over items of sum over ordered rater pairs d / (m_i - 1), divided by n.
    pm = m[pair].astype(np.float64)
    observed_sum = 0.0
    for a in range(pair_ids.shape[1]):  # loop over rater pairs, each vectorised over all items
        for b in range(a + 1, pair_ids.shape[1]):
            both = (pair_ids[:, a] >= 0) & (pair_ids[:, b] >= 0)
            ia, ib = pair_ids[both, a], pair_ids[both, b]
            inter = np.bitwise_count(words[ia] & words[ib]).sum(axis=1, dtype=np.int64)
            d = _masi_from_counts(sizes[ia], sizes[ib], inter) / (pm[both] - 1.0)
            observed_sum += 2.0 * (d * pair_w[both] if weights is not None else d).sum()
    observed = observed_sum / n_values

    # Expected: sum_{j,l} n_j n_l d(j, l) / (n (n - 1)) over distinct pairable sets, in blocks.
    uw, us, uf = words[used], sizes[used], freq[used].astype(np.float64)
    expected_sum = _expected_by_sizes(uw, us, freq[used])
    if expected_sum is None:
        block = max(1, _BLOCK_ELEMENTS // (len(used) * words.shape[1]))
        expected_sum = 0.0
        for start in range(0, len(used), block):
            stop = start + block
            inter = np.bitwise_count(uw[start:stop, None, :] & uw[None, :, :]).sum(axis=2, dtype=np.int64)
            d = _masi_from_counts(us[start:stop, None], us[None, :], inter)
            expected_sum += float(uf[start:stop] @ d @ uf)
    expected = expected_sum / (n_values * (n_values - 1.0))
    return MasiAlpha(Estimate.of(1.0 - observed / expected), n_items, n_values, observed, expected)


# Up to this many labels, the expected disagreement is counted over subsets of the labels (below).
_SUBSET_LABELS = 16


def _expected_by_sizes(
    words: NDArray[np.uint64], sizes: NDArray[np.int64], freq: NDArray[np.int64]
) -> float | None:
    """sum over ordered pairs of distinct sets (j, l) of freq_j freq_l MASI(j, l), or None when the sets
    use more than _SUBSET_LABELS labels (or the counts could overflow).

    Why: MASI depends only on |A|, |B| and |A & B|, so the sum is a sum over those size triples of how
    many pairs have them times the distance. The pair counts come from superset sums: F[a, S], the
    frequency of sets of size a containing S (a zeta transform over the 2^labels subsets), gives the pairs
    with A, B containing S as F[a, S] F[b, S]; summed over the S of size k that is the sum over pairs of
    C(|A & B|, k), and a binomial inversion gives the pairs with |A & B| = i exactly. Linear in the subsets
    instead of quadratic in the distinct sets (thousands of distinct sets at a million traces)."""
    if words.shape[1] != 1:
        return None
    labels = int(np.bitwise_or.reduce(words[:, 0])).bit_length() if len(words) else 0
    total = int(freq.sum())
    if labels > _SUBSET_LABELS or total * total * (1 << labels) >= 2**62:
        return None
    subsets = np.arange(1 << labels, dtype=np.int64)
    table = np.zeros((labels + 1, 1 << labels), dtype=np.int64)
    np.add.at(table, (sizes, words[:, 0].astype(np.int64)), freq)
    for bit in range(labels):
        without = subsets[(subsets >> bit) & 1 == 0]
        table[:, without] += table[:, without | (1 << bit)]
    per_size = np.bitwise_count(subsets)
    # containing[a, b, k] = sum over pairs (A, B) with |A| = a, |B| = b of C(|A & B|, k)
    containing = [[[0] * (labels + 1) for _ in range(labels + 1)] for _ in range(labels + 1)]
    for k in range(labels + 1):
        block = table[:, per_size == k]
        products = block @ block.T
        for a in range(labels + 1):
            for b in range(labels + 1):
                containing[a][b][k] = int(products[a, b])
    binomial = [[1 if i in (0, k) else 0 for i in range(labels + 1)] for k in range(labels + 1)]
    for k in range(2, labels + 1):
        for i in range(1, k):
            binomial[k][i] = binomial[k - 1][i - 1] + binomial[k - 1][i]
    a_grid, b_grid, i_grid, counts = [], [], [], []
    for a in range(labels + 1):
        for b in range(labels + 1):
            for i in range(min(a, b) + 1):
                exact = sum(
                    (-1) ** (k - i) * binomial[k][i] * containing[a][b][k] for k in range(i, min(a, b) + 1)
                )
                if exact:
                    a_grid.append(a)
                    b_grid.append(b)
                    i_grid.append(i)
                    counts.append(exact)
    if not counts:
        return 0.0
    d = _masi_from_counts(np.array(a_grid), np.array(b_grid), np.array(i_grid))
    return float(np.array(counts, dtype=np.float64) @ d)
