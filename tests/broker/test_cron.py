"""AMQ_SCHEDULED_CRON entries: ActiveMQ's syntax, and next times checked against a slow,
obviously correct search."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.base.cron import FIELDS, BadCron, Cron

# One field as (its text, the values it names), built the way ActiveMQ reads it.
Field = tuple[str, frozenset[int]]


@st.composite
def fields(draw: st.DrawFn, low: int, high: int) -> Field:
    def item() -> tuple[str, set[int]]:
        kind = draw(st.sampled_from(["number", "range", "star"]))
        if kind == "star":
            return draw(st.sampled_from(["*", "?"])), set(range(low, high + 1))
        a = draw(st.integers(low, high))
        if kind == "number":
            return str(a), {a}
        b = draw(st.integers(a, high))
        return f"{a}-{b}", set(range(a, b + 1))

    items = [item() for _ in range(draw(st.integers(1, 3)))]
    text = ",".join(t for t, _ in items)
    values: set[int] = set().union(*(v for _, v in items))
    if draw(st.integers(0, 3)) == 0:
        step = draw(st.integers(1, high))
        kept = {v for v in values if v % step == 0}
        if kept:
            text, values = f"{text}/{step}", kept
    return text, frozenset(values)


@st.composite
def entries(draw: st.DrawFn) -> tuple[str, list[Field]]:
    # Mostly "*" so that entries name times often enough to meet within the search.
    parts = [
        draw(st.one_of(st.just(("*", frozenset(range(lo, hi + 1)))), fields(lo, hi))) for _, lo, hi in FIELDS
    ]
    return " ".join(text for text, _ in parts), parts


def slow_next(ms: int, parts: list[Field]) -> int | None:
    """Minute by minute in UTC (a whole day at a time where the day cannot match)."""
    minutes, hours, days, months, weekdays = (values for _, values in parts)
    restricted = [not text.startswith(("*", "?")) for text, _ in parts]
    t = datetime.fromtimestamp(ms // 60_000 * 60, UTC) + timedelta(minutes=1)
    end = t + timedelta(days=12 * 366)
    while t < end:
        in_month, on_weekday = t.day in days, t.isoweekday() % 7 in weekdays
        day_ok = (in_month or on_weekday) if restricted[2] and restricted[4] else (in_month and on_weekday)
        if not (t.month in months and day_ok):
            t = datetime(t.year, t.month, t.day, tzinfo=UTC) + timedelta(days=1)
            continue
        if t.hour in hours and t.minute in minutes:
            return int(t.timestamp()) * 1000
        t += timedelta(minutes=1)
    return None


epochs = st.integers(946_684_800_000, 4_102_444_800_000)  # 2000 to 2100


@given(entries())
def test_parse_names_the_values_activemq_reads(entry: tuple[str, list[Field]]) -> None:
    text, parts = entry
    try:
        cron = Cron.parse(text)
    except BadCron as exc:
        assert "names no date" in str(exc)
        return
    assert [set(cron.minutes), set(cron.hours), cron.days, cron.months, cron.weekdays] == [
        v for _, v in parts
    ]


@given(entries(), epochs)
def test_next_time_agrees_with_a_slow_search(entry: tuple[str, list[Field]], ms: int) -> None:
    text, parts = entry
    try:
        cron = Cron.parse(text)
    except BadCron:
        assert slow_next(0, parts) is None
        return
    assert cron.next_after(ms, UTC) == slow_next(ms, parts)


@given(epochs)
def test_every_minute_is_the_top_of_the_next_minute(ms: int) -> None:
    # ActiveMQ 5.17 fires "* * * * *" at the top of the minute (checked against it).
    assert Cron.parse("* * * * *").next_after(ms, UTC) == (ms // 60_000 + 1) * 60_000


def at(text: str, tz: object = UTC) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()) * 1000  # type: ignore[arg-type]


def iso(ms: int | None, tz: object = UTC) -> str:
    assert ms is not None
    return datetime.fromtimestamp(ms / 1000, tz).isoformat()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entry", "now", "expected"),
    [
        ("*/15 * * * *", "2026-11-23T09:13:32", "2026-11-23T09:15:00+00:00"),
        # A step keeps the values divisible by it (ActiveMQ), not every n-th from the start.
        ("0 0 * */5 *", "2026-01-10T00:00:00", "2026-05-01T00:00:00+00:00"),
        ("0 0 1-10/4 * *", "2026-01-01T12:00:00", "2026-01-04T00:00:00+00:00"),
        ("0 0 29 2 *", "2026-03-01T00:00:00", "2028-02-29T00:00:00+00:00"),
        # Both day fields restricted: either may match (Friday the 27th before the 13th).
        ("0 0 13 * 5", "2026-11-23T00:00:00", "2026-11-27T00:00:00+00:00"),
        # Day of month "*": the day of week alone decides.
        ("30 8 * * 1-5", "2026-11-21T09:00:00", "2026-11-23T08:30:00+00:00"),
        ("59 23 31 12 *", "2026-12-31T23:59:00", "2027-12-31T23:59:00+00:00"),
    ],
)
def test_next_times(entry: str, now: str, expected: str) -> None:
    assert iso(Cron.parse(entry).next_after(at(now), UTC)) == expected


def test_daylight_saving_changes() -> None:
    new_york = ZoneInfo("America/New_York")
    # 02:30 does not exist when clocks go forward: read with the offset before (03:30).
    spring = Cron.parse("30 2 * * *").next_after(at("2026-03-08T01:00:00", new_york), new_york)
    assert iso(spring, new_york) == "2026-03-08T03:30:00-04:00"
    # 01:30 happens twice when they go back: it fires once.
    fall = Cron.parse("30 1 * * *")
    first = fall.next_after(at("2026-11-01T00:00:00", new_york), new_york)
    assert iso(first, new_york) == "2026-11-01T01:30:00-04:00"
    assert iso(fall.next_after(first or 0, new_york), new_york) == "2026-11-02T01:30:00-05:00"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("bogus", "has 1 field; a cron entry has 5"),
        ("* * * * * *", "has 6 fields"),
        ("61 * * * *", "minute field '61' has 61, outside 0-59"),
        ("* 24 * * *", "hour field '24' has 24, outside 0-23"),
        ("* * 0 * *", "day of month field '0' has 0, outside 1-31"),
        ("* * * 13 *", "month field '13' has 13, outside 1-12"),
        ("* * * * 7", "day of week field '7' has 7, outside 0-6"),
        ("* * * JAN *", "has 'JAN' where a number 1-12 (or *) belongs"),
        ("1,,2 * * * *", "has '' where a number"),
        ("5-1 * * * *", "range '5-1', which runs backwards"),
        ("*/0 * * * *", "the step '0'"),
        ("1-10/20 * * * *", "no value in it is divisible by 20"),
        ("0 0 30 2 *", "names no date that exists"),
        ("0 0 31 4,6,9,11 *", "names no date that exists"),
    ],
)
def test_bad_entries_say_what_is_wrong(entry: str, problem: str) -> None:
    with pytest.raises(BadCron, match=re.escape(problem)):
        Cron.parse(entry)
