"""The report's time axis: the period every chart spans, its buckets, and its ticks.

Standard library only. matplotlib's own date locator widens an axis that holds a single
point to four years (a one-minute export drew its one per-minute point between 2024 and
2030), and its ticks are only as good as the limits it is given: so the charts are given
both, from here, for any period from a minute to weeks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

MINUTE: Final = 60
HOUR: Final = 3600
DAY: Final = 86_400
#: Minutes a chart point may stand for: whole minutes (the tables are per minute) that
#: divide a day or a week.
BUCKETS: Final = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10_080)
#: At most this many points on a chart's line.
MAX_POINTS: Final = 400
#: Seconds between ticks, each aligned to its own multiple of UTC midnight.
TICK_STEPS: Final = (
    1,
    2,
    5,
    10,
    15,
    30,
    MINUTE,
    2 * MINUTE,
    5 * MINUTE,
    10 * MINUTE,
    15 * MINUTE,
    30 * MINUTE,
    HOUR,
    2 * HOUR,
    3 * HOUR,
    6 * HOUR,
    12 * HOUR,
    DAY,
    2 * DAY,
    7 * DAY,
    14 * DAY,
    28 * DAY,
)
#: At most this many ticks (labels) on an axis.
MAX_TICKS: Final = 10


@dataclass(frozen=True, slots=True)
class Timeline:
    """The x axis every chart of one report shares: ``[start, end)`` in epoch seconds, in
    buckets of ``step`` seconds (``start`` a multiple of it), one chart point a bucket."""

    start: int
    end: int
    step: int

    @classmethod
    def over(cls, first_ms: int, last_ms: int) -> Timeline:
        """The buckets from the one ``first_ms`` falls in to the one ``last_ms`` falls in."""
        minutes = (last_ms - first_ms) / 60_000 / MAX_POINTS
        step = MINUTE * next((b for b in BUCKETS if b >= minutes), math.ceil(minutes))
        start = first_ms // 1000 // step * step
        end = (last_ms // 1000 // step + 1) * step
        return cls(start, end, step)

    def buckets(self) -> range:
        return range(self.start, self.end, self.step)

    @property
    def first(self) -> datetime:
        return datetime.fromtimestamp(self.start, UTC)

    @property
    def last(self) -> datetime:
        return datetime.fromtimestamp(self.end, UTC)

    def per(self) -> str:
        """What one point stands for, in words: ``min``, ``30 min``, ``2 h``."""
        minutes = self.step // MINUTE
        if minutes == 1:
            return "min"
        if minutes % 60:
            return f"{minutes} min"
        return "h" if minutes == 60 else f"{minutes // 60} h"


def tick_step(seconds: float) -> int:
    """The smallest step that puts at most MAX_TICKS ticks on a span of ``seconds``."""
    return next((s for s in TICK_STEPS if seconds / s <= MAX_TICKS - 1), TICK_STEPS[-1])


def ticks(first: datetime, last: datetime) -> list[tuple[datetime, str]]:
    """Where an axis from ``first`` to ``last`` (UTC) gets a tick, and its label.

    Labels say as much as the step needs: ``12:00:30`` under a minute, ``12:30`` under a
    day, ``Jan 02`` from a day; a sub-day axis that crosses midnight names the new day
    at its midnight tick, so the reader never loses the date.
    """
    lo, hi = first.timestamp(), last.timestamp()
    step = tick_step(hi - lo)
    out = []
    at = math.ceil(lo / step) * step
    while at <= hi:
        when = datetime.fromtimestamp(at, UTC)
        out.append((when, _label(when, step)))
        at += step
    return out


def _label(when: datetime, step: int) -> str:
    if step >= DAY or (when.hour, when.minute, when.second) == (0, 0, 0):
        return when.strftime("%b %d")
    if step < MINUTE:
        return when.strftime("%H:%M:%S")
    return when.strftime("%H:%M")


def axis_label(first: datetime, last: datetime) -> str:
    """The axis's caption: the zone and the day (or days) it shows (``last`` is excluded)."""
    to = max(first, last - timedelta(seconds=1))
    if to.date() == first.date():
        return f"UTC, {first:%Y-%m-%d}"
    return f"UTC, {first:%Y-%m-%d} to {to:%Y-%m-%d}"
