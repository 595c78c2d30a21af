"""How a model's Cohen's kappa against gold moves as gold arrives, per mode. Pure: no Django.

The gold traces the model also answered are taken in the order their gold was first decided; the kappa is
computed on the first 10, 20, 40, 80 ... of them and on all. Exact counts, no sampling: the value at n equals
sklearn.metrics.cohen_kappa_score on the same n traces.

"Good enough?" rule (`GOOD_KAPPA`, `STABLE_DELTA`): the last two points are both defined, both at least 0.8,
and within 0.05 of each other. It is a hint, not a verdict: a mode the gold rarely shows has a kappa that a
few more traces can still move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

FIRST_POINT = 10
GOOD_KAPPA = 0.8
STABLE_DELTA = 0.05


@dataclass(frozen=True, slots=True)
class CurvePoint:
    n_gold: int
    kappa: float | None  # None: undefined (both sides constant and the same: nothing to agree about)


@dataclass(frozen=True, slots=True)
class ModeCurve:
    code: str
    points: tuple[CurvePoint, ...]

    @property
    def good_enough(self) -> bool:
        if len(self.points) < 2:
            return False
        last, before = self.points[-1].kappa, self.points[-2].kappa
        if last is None or before is None:
            return False
        return last >= GOOD_KAPPA and before >= GOOD_KAPPA and abs(last - before) <= STABLE_DELTA


def checkpoints(n: int) -> list[int]:
    """10, 20, 40 ... below n, then n itself (just n when n is at most 10)."""
    out, size = [], FIRST_POINT
    while size < n:
        out.append(size)
        size *= 2
    return [*out, n] if n else []


def kappa_curves(codes: Sequence[str], model: ArrayLike, gold: ArrayLike) -> list[ModeCurve]:
    """`model` and `gold`: 0/1 arrays [trace, mode], rows in the order the gold arrived."""
    model = np.asarray(model, dtype=np.int64).reshape(-1, len(codes))
    gold = np.asarray(gold, dtype=np.int64).reshape(-1, len(codes))
    n_total = model.shape[0]
    sizes = checkpoints(n_total)
    if not sizes:
        return [ModeCurve(code, ()) for code in codes]
    at = np.array(sizes) - 1
    both = np.cumsum(model & gold, axis=0)[at]  # traces marked by both, up to each checkpoint
    by_model = np.cumsum(model, axis=0)[at]
    by_gold = np.cumsum(gold, axis=0)[at]
    n = np.array(sizes, dtype=np.int64)[:, None]
    # In whole numbers (n^2 times the usual fractions): observed = n (n - m - g + 2 both), chance = m g +
    # (n - m)(n - g); kappa = (observed - chance) / (n^2 - chance), undefined when chance = n^2.
    observed = n * (n - by_model - by_gold + 2 * both)
    chance = by_model * by_gold + (n - by_model) * (n - by_gold)
    denominator = n * n - chance
    curves = []
    for j, code in enumerate(codes):
        points = tuple(
            CurvePoint(
                int(size),
                None
                if denominator[i, j] == 0
                else float((observed[i, j] - chance[i, j]) / denominator[i, j]),
            )
            for i, size in enumerate(sizes)
        )
        curves.append(ModeCurve(code, points))
    return curves


def polyline(kappas: Sequence[float | None], *, width: int = 120, height: int = 36, pad: int = 3) -> str:
    """SVG polyline coordinates for a kappa curve: points evenly spaced (each checkpoint doubles the gold,
    so this is a log axis), kappa -1..1 bottom to top; undefined points are left out. Formatted with a dot
    whatever the locale."""
    if not kappas:
        return ""
    step = (width - 2 * pad) / max(1, len(kappas) - 1)
    coords = []
    for i, kappa in enumerate(kappas):
        if kappa is None:
            continue
        y = pad + (1 - (max(-1.0, min(1.0, kappa)) + 1) / 2) * (height - 2 * pad)
        coords.append(f"{pad + i * step:.1f},{y:.1f}")
    return " ".join(coords)
