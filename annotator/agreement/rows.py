"""The report's input and its distinct item rows: what every statistic of the report is a sum over.

Pure numpy, no Django. Why a module of its own: turning a million traces into their few tens of thousands
of distinct rows (and the localisation codes those rows carry) is most of the report's numpy time, and the
incremental refresh reuses it, while `report` only assembles statistics from the rows.

Speed, stated once: both steps here are linear passes over dense arrays plus sorts of plain integers. The
localisation codes mark which (item, mode) cells each rater pinned in dense boolean tables instead of
set-membership tests; the distinct rows are found by sorting integer keys that order rows exactly as their
bytes do (see `distinct_rows`), not by sorting the rows as opaque byte strings, which numpy compares one
call at a time.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from annotator.agreement.ratings import as_ratings

__all__ = [
    "NEITHER_PINNED",
    "NOT_BOTH",
    "ONLY_A_PINNED",
    "ONLY_B_PINNED",
    "EvidenceRows",
    "ItemRows",
    "ModeInfo",
    "ReportInput",
    "compress",
    "distinct_rows",
    "localisation_codes",
    "merge_rows",
    "unique_ints",
]

# Integer keys stay below this, so that key * base + digit never overflows int64.
_KEY_LIMIT = 1 << 62


@dataclass(frozen=True)
class ModeInfo:
    code: str
    name: str
    category: str = ""
    category_name: str = ""
    parent: str | None = None
    fatal: bool = False


@dataclass(frozen=True)
class EvidenceRows:
    """One row per (label, evidence step): which item, rater and mode pinned which step."""

    item: NDArray[np.int64]
    rater: NDArray[np.int64]
    mode: NDArray[np.int64]
    step: NDArray[np.int64]


@dataclass(frozen=True)
class ReportInput:
    """``ratings`` is (items, raters, modes) with 1/0/-1; ``primary`` (single-primary taxonomies only) is
    (items, raters) holding the index of the primary mode, ``len(modes)`` for "no primary label", -1 missing."""

    ratings: NDArray[np.int8]
    raters: tuple[str, ...]
    modes: tuple[ModeInfo, ...]
    primary: NDArray[np.int64] | None = None
    evidence: EvidenceRows | None = None


@dataclass(frozen=True)
class ItemRows:
    """The report's input reduced to what every statistic reads: distinct item rows and how many items
    each stands for.

    Why: every number of the report is a sum over items of a function of the item's row (its ratings,
    its primary labels and, per rater pair and mode, how close the pinned steps are), so identical rows
    can be counted instead of repeated. A million traces collapse to a few thousand rows, and an
    incremental refresh only has to move the changed traces from one row's count to another's.

    ``ratings`` is (rows, raters, modes) as in :class:`ReportInput`; ``primary`` (rows, raters) or None;
    ``closest`` (rows, rater pairs, modes) holds :func:`localisation_codes`; ``weight`` (rows,) the counts.
    """

    ratings: NDArray[np.int8]
    weight: NDArray[np.int64]
    primary: NDArray[np.int64] | None
    closest: NDArray[np.int16]


# Localisation codes of one (item, rater pair, mode) cell; a code >= 0 is the smallest distance between a
# step pinned by one rater and a step pinned by the other, capped at max(windows) + 1.
NOT_BOTH, NEITHER_PINNED, ONLY_A_PINNED, ONLY_B_PINNED = -4, -3, -2, -1


def _windows(windows: Sequence[int]) -> list[int]:
    return list(windows) or [0]


def unique_ints(values: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``np.unique(values, return_inverse=True)`` for whole numbers: when they span a range not much
    larger than their count (ids, step numbers), a table of which occur replaces the sort -- the same
    result in linear time, which matters for millions of values."""
    values = np.asarray(values, dtype=np.int64).reshape(-1)
    if len(values) == 0:
        return values.copy(), np.zeros(0, dtype=np.int64)
    low, high = int(values.min()), int(values.max())
    if high - low > max(4 * len(values), 1 << 20):
        distinct, inverse = np.unique(values, return_inverse=True)
        return distinct, inverse.reshape(-1).astype(np.int64)
    present = np.zeros(high - low + 1, dtype=bool)
    present[values - low] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present).astype(np.int64) + low, rank[values - low]


def _pinned_by_rater(
    evidence: EvidenceRows | None, n_raters: int, n_modes: int, n_cells: int
) -> tuple[list[tuple[NDArray[np.int64], NDArray[np.int64]]], int, NDArray[np.int64] | None]:
    """Per rater, the (item, mode) cell and step key of each pinned step; the keys' span, and the step of
    each key when keys are ranks (None when a key is the step minus the smallest step).

    A key is ``cell * span + step key``, so that sorting keys groups the steps by cell, in step order."""
    empty = np.zeros(0, dtype=np.int64)
    if evidence is None or not len(evidence.step):
        return [(empty, empty)] * n_raters, 1, None
    cell = np.asarray(evidence.item, dtype=np.int64) * n_modes + np.asarray(evidence.mode, dtype=np.int64)
    step = np.asarray(evidence.step, dtype=np.int64)
    rater = np.asarray(evidence.rater, dtype=np.int64)
    low, high = int(step.min()), int(step.max())
    span, steps = high - low + 1, None
    if span > max(len(step), 1) and span * max(n_cells, 1) >= _KEY_LIMIT:
        steps, step = unique_ints(step)  # far-apart step numbers: their ranks keep the keys small
        span = len(steps)
    else:
        step = step - low
    return [(cell[rater == k], step[rater == k]) for k in range(n_raters)], span, steps


def localisation_codes(
    ratings: NDArray[np.int8], evidence: EvidenceRows | None, windows: Sequence[int]
) -> NDArray[np.int16]:
    """Per (item, rater pair, mode): NOT_BOTH unless both raters chose the mode; then who pinned a step
    (NEITHER_PINNED, ONLY_A_PINNED, ONLY_B_PINNED) or, when both did, the smallest distance between a
    step of one and a step of the other, capped at max(windows) + 1 (all that the windows can tell).

    Vectorised: per rater pair, dense tables over the (item, mode) cells say which cells both raters
    chose and which each of them pinned; the steps of the cells both pinned become sorted integer keys
    (cell, step), and one ``searchsorted`` finds each step's nearest neighbour among the other rater's
    steps of the same cell."""
    n_items, n_raters, n_modes = ratings.shape
    pairs = list(combinations(range(n_raters), 2))
    cap = max(_windows(windows)) + 1
    n_cells = n_items * n_modes
    codes = np.full((n_items, len(pairs), n_modes), NOT_BOTH, dtype=np.int16)
    pinned, span, steps = _pinned_by_rater(evidence, n_raters, n_modes, n_cells)
    chosen = ratings == 1
    for p, (a, b) in enumerate(pairs):
        both = (chosen[:, a] & chosen[:, b]).reshape(-1)
        sides, marks = [], []
        for rater in (a, b):
            cell, step = pinned[rater]
            inside = both[cell]
            cell, step = cell[inside], step[inside]
            mark = np.zeros(n_cells, dtype=bool)
            mark[cell] = True
            sides.append((cell, step))
            marks.append(mark)
        # NOT_BOTH -4, NEITHER_PINNED -3, ONLY_A_PINNED -2, ONLY_B_PINNED -1; both pinned: 0 for now.
        code = np.full(n_cells, NOT_BOTH, dtype=np.int16)
        code += both
        code += marks[0]
        code += 2 * marks[1].view(np.int8)
        both_pinned = marks[0] & marks[1]
        (cell_a, step_a), (cell_b, step_b) = sides
        keep_a, keep_b = both_pinned[cell_a], both_pinned[cell_b]
        cell_a, step_a, cell_b, step_b = cell_a[keep_a], step_a[keep_a], cell_b[keep_b], step_b[keep_b]
        if len(cell_a):
            key_b = np.sort(cell_b * span + step_b)
            best = np.full(len(cell_a), cap, dtype=np.int64)
            pos = np.searchsorted(key_b, cell_a * span + step_a)
            for cand in (pos - 1, pos):  # the nearest step of b is just below or at/above
                c = np.clip(cand, 0, len(key_b) - 1)
                near_cell, near_step = np.divmod(key_b[c], span)
                same = (cand >= 0) & (cand < len(key_b)) & (near_cell == cell_a)
                if steps is None:
                    distance = np.abs(near_step - step_a)
                else:
                    distance = np.abs(steps[near_step] - steps[step_a])
                best = np.where(same, np.minimum(best, distance), best)
            code[cell_a] = cap
            np.minimum.at(code, cell_a, best.astype(np.int16))
        codes[:, p, :] = code.reshape(n_items, n_modes)
    return codes


def _byte_order_key(column: NDArray) -> NDArray:
    """Unsigned integers that sort as the native bytes of `column`'s values do (memcmp order)."""
    unsigned = column.view(np.dtype(f"u{column.dtype.itemsize}"))
    return unsigned.byteswap() if sys.byteorder == "little" and column.dtype.itemsize > 1 else unsigned


def _digits(field: NDArray) -> tuple[NDArray[np.integer], int]:
    """Each value of a 2-d integer array as its rank among the distinct values of the array in byte
    order, and how many distinct values there are."""
    flat = np.ascontiguousarray(field).reshape(-1)
    if flat.dtype.itemsize <= 2:  # a table over every possible value: no sort
        unsigned = flat.view(np.dtype(f"u{flat.dtype.itemsize}"))
        present = np.zeros(1 << (8 * flat.dtype.itemsize), dtype=bool)
        present[unsigned] = True
        values = np.flatnonzero(present).astype(unsigned.dtype)
        order = np.argsort(_byte_order_key(values), kind="stable")
        table = np.zeros(len(present), dtype=np.uint8 if len(values) <= 256 else np.uint16)
        table[values[order]] = np.arange(len(values))
        return table[unsigned].reshape(field.shape), len(values)
    values, inverse = np.unique(flat, return_inverse=True)
    rank = np.empty(len(values), dtype=np.int64)
    rank[np.argsort(_byte_order_key(values), kind="stable")] = np.arange(len(values))
    return rank[inverse.reshape(-1)].reshape(field.shape), len(values)


def _row_digits(
    ratings: NDArray[np.int8], closest: NDArray[np.int16], primary: NDArray[np.int64] | None
) -> list[tuple[NDArray[np.integer], int]]:
    """A row's parts in the order its bytes are compared (ratings, localisation codes, primary labels),
    each as digits that order as those bytes do, with their base (see `distinct_rows`)."""
    n = len(ratings)
    # Ratings are 0, 1 or -1 (as_ratings checks): bytes 0x00 < 0x01 < 0xff, digits 0 < 1 < 2.
    flat = ratings.reshape(n, ratings.shape[1] * ratings.shape[2]).view(np.uint8)
    parts = [(np.minimum(flat, np.uint8(2)), 3)]
    codes = closest.reshape(n, closest.shape[1] * closest.shape[2])
    high = int(codes.max()) if codes.size else 0
    if sys.byteorder == "little" and high < 256 + NOT_BOTH and (codes.size == 0 or codes.min() >= NOT_BOTH):
        # Little-endian int16 whose low byte decides: 0..high, then -4..-1 (0xfc..0xff) after them.
        top = np.uint8(max(high, 0) + 1)
        low = codes.view(np.uint8)[:, 0::2]
        digits = low - (low > high) * np.uint8(256 + NOT_BOTH - top)
        parts.append((digits, int(top) - NOT_BOTH))
    else:
        parts.append(_digits(codes))
    if primary is not None:
        parts.append(_digits(primary.reshape(n, primary.shape[1])))
    return parts


def _ranks(key: NDArray[np.int64]) -> tuple[NDArray[np.int64], int]:
    distinct, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), len(distinct)


# Rows per block when digits are read as integers (bounds the int64 copy of the digits).
_FOLD_ROWS = 1 << 16


def _fold(digits: NDArray[np.integer], base: int) -> NDArray[np.int64]:
    """Each row of digits (most significant first) as one integer in base `base` (below 2**62)."""
    weights = base ** np.arange(digits.shape[1] - 1, -1, -1, dtype=np.int64)
    out = np.empty(len(digits), dtype=np.int64)
    for start in range(0, len(digits), _FOLD_ROWS):
        block = digits[start : start + _FOLD_ROWS]
        out[start : start + len(block)] = block.astype(np.int64) @ weights
    return out


def distinct_rows(
    parts: Sequence[tuple[NDArray[np.integer], int]],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The distinct rows of digit arrays side by side (each (rows, columns) with its base; digits that
    order as the row's bytes do, see `_row_digits`), in that order: one row index standing for each
    distinct row, each row's distinct row, and the counts.

    Why not ``np.unique`` over the packed rows as void: it sorts opaque byte strings, one comparison
    call at a time (seconds at a million rows). Here the digits of a row are read as one mixed-radix
    integer (several integers, each below 2**62, when they do not fit in one) and integers are sorted:
    the same order as the bytes', since each digit keeps its byte's order."""
    n = len(parts[0][0]) if parts else 0
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    # Runs of columns whose digits fit in one integer: (part, first column, last column + 1).
    groups: list[list[tuple[int, int, int]]] = [[]]
    size = 1
    for p, (digits, base) in enumerate(parts):
        for k in range(digits.shape[1]):
            if size * base >= _KEY_LIMIT:
                groups.append([])
                size = 1
            if groups[-1] and groups[-1][-1][0] == p:
                groups[-1][-1] = (p, groups[-1][-1][1], k + 1)
            else:
                groups[-1].append((p, k, k + 1))
            size *= base
    keys, sizes = [], []
    for group in groups:
        key, size = np.zeros(n, dtype=np.int64), 1
        for p, first, last in group:
            digits, base = parts[p]
            if base > 1:
                key *= base ** (last - first)
                key += _fold(digits[:, first:last], base)
                size *= base ** (last - first)
        keys.append(key)
        sizes.append(size)
    # Lexicographic over the keys: the rank of the keys so far, then the next key (or its rank).
    combined = keys[0]
    for key, size in zip(keys[1:], sizes[1:], strict=True):
        left, n_left = _ranks(combined)
        if n_left * size >= _KEY_LIMIT:
            key, size = _ranks(key)
        combined = left * size + key
    _, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1).astype(np.int64)
    first = np.empty(len(counts), dtype=np.int64)
    first[inverse] = np.arange(n)  # some row of each: they are all the same
    return first, inverse, counts.astype(np.int64)


def compress(data: ReportInput, windows: Sequence[int]) -> tuple[ItemRows, NDArray[np.int64]]:
    """The distinct item rows of `data` with their counts, and for each item the index of its row."""
    r = as_ratings(data.ratings)
    n_items = r.shape[0]
    closest = localisation_codes(r, data.evidence, windows)
    primary = None if data.primary is None else np.asarray(data.primary, dtype=np.int64)
    first, inverse, counts = distinct_rows(_row_digits(r, closest, primary))
    if n_items == 0:
        first = np.zeros(0, dtype=np.int64)
    return (
        ItemRows(
            ratings=r[first],
            weight=counts,
            primary=None if primary is None else primary[first],
            closest=closest[first],
        ),
        inverse,
    )


def merge_rows(parts: Sequence[ItemRows]) -> tuple[ItemRows, list[NDArray[np.int64]]]:
    """Several ItemRows (same raters and modes) as one, identical rows merged; for each part, the index
    in the result of each of its rows."""
    ratings = np.concatenate([p.ratings for p in parts])
    closest = np.concatenate([p.closest for p in parts])
    primary = None if parts[0].primary is None else np.concatenate([p.primary for p in parts])
    weight = np.concatenate([p.weight for p in parts])
    first, inverse, _ = distinct_rows(_row_digits(ratings, closest, primary))
    merged = ItemRows(
        ratings=ratings[first],
        weight=np.bincount(inverse, weights=weight, minlength=len(first)).astype(np.int64),
        primary=None if primary is None else primary[first],
        closest=closest[first],
    )
    bounds = np.cumsum([0, *(len(p.weight) for p in parts)])
    return merged, [inverse[bounds[k] : bounds[k + 1]] for k in range(len(parts))]
