"""The ratings tensor: validation and the missing-rating sentinel.

Why a module of its own: every per-mode statistic (``stats``) and summary
(``summaries``) reads the same ``(n_items, n_raters, n_modes)`` tensor, and
validating it in one place keeps a stray ``2`` or ``nan`` from being silently
counted as "not chosen" anywhere.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MISSING", "as_ratings"]

MISSING = -1
"""Sentinel in the ratings tensor for "this rater did not rate this item"."""


def as_ratings(ratings: ArrayLike) -> NDArray[np.int8]:
    """Validate a ratings tensor and return it as ``int8``.

    Values: ``1`` chosen, ``0`` not chosen, ``-1`` (:data:`MISSING`) not
    rated. A boolean tensor means "every rater rated every item".
    """
    arr = np.asarray(ratings)
    if arr.ndim != 3:
        raise ValueError(f"ratings must have shape (n_items, n_raters, n_modes); got {arr.shape}")
    if arr.dtype == np.bool_:
        return arr.astype(np.int8)
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"ratings must be integers in {{-1, 0, 1}}; got dtype {arr.dtype}")
    ok = (arr == 0) | (arr == 1) | (arr == MISSING)
    if not ok.all():
        bad = arr[~ok][:5].tolist()
        raise ValueError(f"ratings must be 1, 0 or {MISSING} (missing); found {bad}")
    return arr.astype(np.int8)
