"""How long a run has left, from the pace it has kept so far (pure: numbers in, numbers out)."""

from __future__ import annotations

import math


def seconds_left(processed: int, elapsed: float, remaining: int) -> float | None:
    """Seconds until `remaining` more traces are processed at the pace of `processed` in `elapsed` seconds;
    None before the first trace is back (no pace yet), 0 when nothing remains."""
    if remaining <= 0:
        return 0.0
    if processed <= 0 or elapsed <= 0:
        return None
    return remaining * elapsed / processed


def describe(seconds: float | None) -> str:
    """'about 3 min', 'about 2 h 10 min', 'under a minute'; 'estimating' without a pace yet."""
    if seconds is None:
        return "estimating"
    if seconds < 60:
        return "under a minute"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min" if minutes else f"about {hours} h"
