"""ActiveMQ's ``AMQ_SCHEDULED_CRON``: a five-field cron entry, and the next time it names.

The syntax is what ActiveMQ's ``CronParser`` reads: five whitespace-separated fields,
minute (0-59), hour (0-23), day of month (1-31), month (1-12) and day of week (0-6,
0 is Sunday).  A field is ``*`` (or ``?``), a number, a range ``a-b``, or a comma list
of those, optionally followed by ``/n``.  A step keeps the values divisible by ``n``,
which is ActiveMQ's meaning (``*/15`` minutes: 0, 15, 30, 45; ``*/2`` months: Feb,
Apr, ...), where Vixie cron counts from the start of the range.  Names (``JAN``,
``MON``) and ``7`` for Sunday are not ActiveMQ's, so they are refused, as are values
out of range: ActiveMQ lets minute 60 and hour 24 through, and they never match.

Times are wall-clock minutes in the broker's time zone (ActiveMQ uses the JVM's).  When
both day fields are restricted (neither starts with ``*`` or ``?``), a day matches if
either does, as POSIX crontab says and as ActiveMQ's parser means to (its code
approximates it); otherwise both must.  A wall-clock time that a DST change skips is
read with the offset from before the change (02:30 on the night clocks go forward
fires at 03:30, as Java's lenient calendar has it); one that a change repeats fires once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import tzinfo

#: (name, lowest, highest) of the five fields, in order.
FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 6),
)
#: Every date comes round within this many days (February 29th, across 2100, within 8 years).
_DAYS_SEARCHED = 9 * 366
_ONE_DAY = timedelta(days=1)
_ONE_MINUTE = timedelta(minutes=1)


class BadCron(ValueError):
    """A cron entry ActiveMQ's syntax does not allow, or one that names no time at all."""


@dataclass(frozen=True, slots=True)
class Cron:
    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    #: Both day fields restricted: a day matches if either does.
    either_day: bool

    @classmethod
    def parse(cls, text: str) -> Cron:
        tokens = text.split()
        if len(tokens) != len(FIELDS):
            raise BadCron(
                f"{text!r} has {len(tokens)} field{'s' if len(tokens) != 1 else ''}; a cron entry "
                "has 5: minute hour day-of-month month day-of-week"
            )
        values = [_field(text, token, *field) for token, field in zip(tokens, FIELDS, strict=True)]
        minutes, hours, days, months, weekdays = values
        cron = cls(
            text,
            tuple(sorted(minutes)),
            tuple(sorted(hours)),
            frozenset(days),
            frozenset(months),
            frozenset(weekdays),
            not tokens[2].startswith(("*", "?")) and not tokens[4].startswith(("*", "?")),
        )
        if cron.next_after(0) is None:
            raise BadCron(f"{text!r} names no date that exists (day of month and month never meet)")
        return cron

    def day_matches(self, day: date) -> bool:
        in_month = day.day in self.days
        on_weekday = day.isoweekday() % 7 in self.weekdays
        return (in_month or on_weekday) if self.either_day else (in_month and on_weekday)

    def next_after(self, ms: int, tz: tzinfo | None = None) -> int | None:
        """The first whole minute strictly after ``ms`` (epoch ms) that the entry names,
        in epoch ms, reading wall-clock time in ``tz`` (None: the local time zone); None
        if there is none (only for an entry ``parse`` refuses)."""
        first = datetime.fromtimestamp(ms // 1000, tz).replace(second=0, microsecond=0) + _ONE_MINUTE
        day = first.date()
        for _ in range(_DAYS_SEARCHED):
            if day.month not in self.months:
                day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
                continue
            if self.day_matches(day):
                found = self._first_time(day, first if day == first.date() else None, ms, tz)
                if found is not None:
                    return found
            day += _ONE_DAY
        return None

    def _first_time(self, day: date, after: datetime | None, ms: int, tz: tzinfo | None) -> int | None:
        """The first named minute of ``day`` not before ``after`` and later than ``ms``."""
        for hour in self.hours:
            if after is not None and hour < after.hour:
                continue
            for minute in self.minutes:
                if after is not None and hour == after.hour and minute < after.minute:
                    continue
                at = int(datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz).timestamp()) * 1000
                # Past ``ms`` already: only where a DST change moved the clock back.
                if at > ms:
                    return at
        return None


def _field(text: str, token: str, name: str, low: int, high: int) -> set[int]:
    def bad(why: str) -> BadCron:
        return BadCron(f"{text!r}: the {name} field {token!r} {why}")

    base, slash, step_text = token.partition("/")
    values: set[int] = set()
    for item in base.split(","):
        if item in ("*", "?"):
            values.update(range(low, high + 1))
            continue
        first, dash, last = item.partition("-")
        for number in (first, last) if dash else (first,):
            if not (number.isascii() and number.isdigit()):
                raise bad(f"has {number!r} where a number {low}-{high} (or *) belongs")
            if not low <= int(number) <= high:
                raise bad(f"has {int(number)}, outside {low}-{high}")
        start, stop = int(first), int(last if dash else first)
        if start > stop:
            raise bad(f"has the range {item!r}, which runs backwards")
        values.update(range(start, stop + 1))
    if slash:
        if not (step_text.isascii() and step_text.isdigit() and int(step_text) > 0):
            raise bad(f"has the step {step_text!r}; a step is a whole number above 0")
        step = int(step_text)
        values = {value for value in values if value % step == 0}
        if not values:
            raise bad(f"names no {name}: no value in it is divisible by {step}")
    return values
