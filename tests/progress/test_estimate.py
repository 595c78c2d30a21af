"""The pace and finish date, pure: submissions per day in, a rate and a date out; no pace, no date."""

from __future__ import annotations

from datetime import date, timedelta

from annotator.progress.estimate import median, throughput

TODAY = date(2026, 12, 7)


def test_the_finish_date_follows_the_last_seven_days_pace():
    daily = {TODAY - timedelta(days=d): 10 for d in range(7)}  # 10 a day all week
    pace = throughput(daily, today=TODAY, remaining=25)
    assert pace.rate == 10
    assert pace.finish == TODAY + timedelta(days=3)  # 25 left at 10 a day: three more days


def test_no_recent_submissions_means_no_finish_date():
    pace = throughput({TODAY - timedelta(days=10): 50}, today=TODAY, remaining=25)
    assert pace.rate == 0
    assert pace.finish is None
    assert pace.per_day[3] == 50  # still drawn among the last fourteen days


def test_nothing_left_means_done_without_a_date():
    pace = throughput({TODAY: 4}, today=TODAY, remaining=0)
    assert pace.finish is None and pace.remaining == 0


def test_bars_are_scaled_to_the_busiest_day():
    pace = throughput({TODAY: 4, TODAY - timedelta(days=1): 2}, today=TODAY, remaining=1, days=3)
    assert [(n, height) for _, n, height in pace.bars] == [(0, 0), (2, 50), (4, 100)]


def test_median_of_nothing_is_none():
    assert median([]) is None
    assert median([30, 10, 20]) == 20
