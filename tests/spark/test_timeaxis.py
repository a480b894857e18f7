"""The report's time axis fits the data from a minute to a week: the period's buckets,
the ticks and their labels, and a chart drawn over it (no Spark here)."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta

import pytest

from spark_jobs import charts
from spark_jobs.timeaxis import MAX_POINTS, MAX_TICKS, Timeline, axis_label, ticks
from tests.spark.support import tick_labels

T0 = datetime(2026, 1, 1, 12, 0, 13, 250_000, tzinfo=UTC)


def ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def axis(length: timedelta) -> tuple[Timeline, list[tuple[datetime, str]]]:
    period = Timeline.over(ms(T0), ms(T0 + length))
    return period, ticks(period.first, period.last)


@pytest.mark.parametrize(
    ("length", "bucket_s", "tick_s", "labels"),
    [
        # A one-minute export: its two minutes, ticked every 15 s.
        (timedelta(minutes=1), 60, 15, ["12:00:00", "12:00:15", "12:00:30", "12:00:45", "12:01:00"]),
        (timedelta(hours=1), 60, 600, ["12:00", "12:10", "12:20", "12:30", "12:40", "12:50", "13:00"]),
        # A day from noon: 5-minute points, every 3 hours, the new day named at midnight.
        (timedelta(days=1), 300, 3 * 3600, ["12:00", "15:00", "18:00", "21:00", "Jan 02", "03:00"]),
        (timedelta(weeks=1), 1800, 86_400, ["Jan 02", "Jan 03", "Jan 04", "Jan 05", "Jan 06", "Jan 07"]),
    ],
)
def test_ticks_fit_the_data_from_a_minute_to_a_week(
    length: timedelta, bucket_s: int, tick_s: int, labels: list[str]
) -> None:
    period, marks = axis(length)
    assert period.step == bucket_s
    # The axis starts at the first point's bucket and ends with the last point's.
    assert period.first <= T0 < period.first + timedelta(seconds=bucket_s)
    assert period.last - timedelta(seconds=bucket_s) <= T0 + length < period.last
    assert len(period.buckets()) <= MAX_POINTS
    assert 4 <= len(marks) <= MAX_TICKS
    assert all(period.first <= at <= period.last for at, _ in marks)
    steps = {(b[0] - a[0]).total_seconds() for a, b in itertools.pairwise(marks)}
    assert steps == {tick_s}
    assert all(at.timestamp() % tick_s == 0 for at, _ in marks)
    assert [label for _, label in marks][: len(labels)] == labels


def test_the_axis_caption_names_the_day_or_days() -> None:
    minute, _ = axis(timedelta(minutes=1))
    assert axis_label(minute.first, minute.last) == "UTC, 2026-01-01"
    week, _ = axis(timedelta(weeks=1))
    assert axis_label(week.first, week.last) == "UTC, 2026-01-01 to 2026-01-08"
    # An axis that ends at midnight shows one day.
    day = datetime(2026, 1, 1, tzinfo=UTC)
    assert axis_label(day, day + timedelta(days=1)) == "UTC, 2026-01-01"


def test_what_a_point_stands_for_in_words() -> None:
    assert [Timeline(0, 0, s).per() for s in (60, 300, 3600, 7200, 1800 * 3)] == [
        "min",
        "5 min",
        "h",
        "2 h",
        "90 min",
    ]


def test_a_one_minute_chart_is_drawn_over_its_minute_not_years() -> None:
    """A one-minute export has one per-minute point: matplotlib's date locator drew it on
    an axis from 2024 to 2030."""
    period, _ = axis(timedelta(seconds=40))
    one = {"/queue/a": ([period.first], [120.0])}
    svg = charts.line_chart("Enqueued per minute", "messages", one, period)
    minute = [f"12:00:{s:02}" for s in range(0, 60, 10)] + ["12:01:00"]
    assert tick_labels(svg) == [*minute, "UTC, 2026-01-01"]
    assert not re.search(r">20(2[0-9]|30)<", svg), "no year ticks"


def test_a_week_chart_is_ticked_by_day() -> None:
    period, _ = axis(timedelta(weeks=1))
    times = [datetime.fromtimestamp(t, UTC) for t in period.buckets()]
    svg = charts.line_chart("Depth", "messages", {"/queue/a": (times, [1.0] * len(times))}, period)
    assert tick_labels(svg)[:2] == ["Jan 02", "Jan 03"]
    spans = [("/queue/a", T0 + timedelta(days=1), T0 + timedelta(days=2))]
    assert tick_labels(charts.timeline("Flow-control episodes", spans, period))[:2] == ["Jan 02", "Jan 03"]
