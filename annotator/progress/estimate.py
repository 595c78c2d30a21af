"""Throughput and an estimated finish date from daily submission counts. No Django: numbers in, numbers out."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta

# The window the rate is read from: long enough to smooth a day off, short enough to follow a change of pace.
RATE_DAYS = 7


@dataclass(frozen=True)
class Throughput:
    """Submissions per day over the last `len(per_day)` days (oldest first) and what they promise."""

    per_day: tuple[int, ...]
    days: tuple[date, ...]
    rate: float  # submissions per day over the last RATE_DAYS days
    remaining: int
    finish: date | None  # None: nothing left (done) or no recent pace to extrapolate from

    @property
    def peak(self) -> int:
        return max(self.per_day, default=0)

    @property
    def bars(self) -> list[tuple[date, int, int]]:
        """(day, count, height in percent of the busiest day) for a small bar chart."""
        peak = self.peak or 1
        return [(day, n, round(100 * n / peak)) for day, n in zip(self.days, self.per_day, strict=True)]


def throughput(
    daily: Mapping[date, int], *, today: date, remaining: int, days: int = 14, rate_days: int = RATE_DAYS
) -> Throughput:
    """The last `days` days of `daily` (submissions per calendar day, days without any missing) and the
    finish date at the pace of the last `rate_days` days; no pace, no date (nothing is invented)."""
    span = tuple(today - timedelta(days=offset) for offset in range(days - 1, -1, -1))
    per_day = tuple(int(daily.get(day, 0)) for day in span)
    recent = per_day[-rate_days:]
    rate = sum(recent) / len(recent) if recent else 0.0
    finish = None
    if remaining > 0 and rate > 0:
        finish = today + timedelta(days=math.ceil(remaining / rate))
    return Throughput(per_day=per_day, days=span, rate=rate, remaining=remaining, finish=finish)


def median(values: Iterable[float]) -> float | None:
    """The median, or None for no values (the SQLite fallback of the service's percentile)."""
    values = list(values)
    return statistics.median(values) if values else None


def percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0
