"""Charts for report.html: matplotlib figures rendered to inline SVG (no files, no CDN).

Text stays text in the SVG (``svg.fonttype: none``), so the report is small, searchable
and readable offline. Figures are built with ``matplotlib.figure.Figure`` directly, not
pyplot, so nothing global is touched.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Final

import matplotlib as mpl
from matplotlib import ticker
from matplotlib.figure import Figure

from spark_jobs import timeaxis

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from matplotlib.axes import Axes

    from spark_jobs.timeaxis import Timeline

WIDTH: Final = 9.0
#: rcParams for every chart (typed Any: matplotlib types rc keys as a Literal of every name).
STYLE: Final[Any] = {
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    with mpl.rc_context(STYLE):
        figure.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure(height: float) -> tuple[Figure, Axes]:
    with mpl.rc_context(STYLE):
        figure = Figure(figsize=(WIDTH, height))
        axes = figure.add_subplot()
    return figure, axes


def _seconds(when: datetime) -> float:
    return when.timestamp()


def _time_axis(axes: Axes, period: Timeline) -> None:
    """x from the period's first bucket to the end of its last, ticked for its length
    (never matplotlib's date locator: it widens a one-point axis to four years)."""
    first, last = period.first, period.last
    axes.set_xlim(_seconds(first), _seconds(last))
    marks = timeaxis.ticks(first, last)
    axes.set_xticks([_seconds(at) for at, _ in marks], [label for _, label in marks])
    axes.set_xlabel(timeaxis.axis_label(first, last))


#: Units of a bytes axis, the largest first: decimal, as the report's other sizes ("MB").
BYTE_UNITS: Final = (("GB", 1e9), ("MB", 1e6), ("KB", 1e3))


def in_bytes_unit(
    series: Mapping[str, tuple[Sequence[datetime], Sequence[float]]],
) -> tuple[dict[str, tuple[Sequence[datetime], list[float]]], str]:
    """``series`` of byte counts in the unit its largest value reads best in (GB, MB, KB
    or bytes), and that unit: an axis of "6.2 GB", not of "6.2e9" or "+6.2e9" and offsets."""
    top = max((y for _, ys in series.values() for y in ys if y == y), default=0.0)
    unit, scale = next(((name, size) for name, size in BYTE_UNITS if top >= size), ("bytes", 1.0))
    scaled = {label: (xs, [y / scale for y in ys]) for label, (xs, ys) in series.items()}
    return scaled, unit


def line_chart(
    title: str,
    ylabel: str,
    series: Mapping[str, tuple[Sequence[datetime], Sequence[float]]],
    period: Timeline,
) -> str:
    """One line per series over time (x: the UTC starts of ``period``'s buckets), each
    value drawn flat across its bucket: a per-minute count covers its minute.  The y axis
    writes plain numbers: no scientific notation, no offset above it."""
    figure, axes = _figure(3.2)
    with mpl.rc_context(STYLE):
        for label, (xs, ys) in series.items():
            if not xs:
                continue
            # The last bucket's value runs to that bucket's end.
            edges = [_seconds(x) for x in xs] + [_seconds(xs[-1]) + period.step]
            axes.step(edges, [*ys, ys[-1]], where="post", label=label, linewidth=1.2)
        axes.set_title(title, loc="left")
        axes.set_ylabel(ylabel)
        axes.set_ylim(bottom=0)
        axes.yaxis.set_major_formatter(ticker.FuncFormatter(_plain))
        axes.grid(alpha=0.3)
        _time_axis(axes, period)
        if len(series) > 1:
            axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _svg(figure)


def _plain(value: float, _position: object = None) -> str:
    """A tick's number as people write it: ``1,500``, ``2.5``, never ``1e6``."""
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


#: Durations a latency axis is ticked at (ms) and how each is written.
DURATION_TICKS: Final = (
    (0.1, "0.1 ms"),
    (1, "1 ms"),
    (10, "10 ms"),
    (100, "100 ms"),
    (1_000, "1 s"),
    (10_000, "10 s"),
    (60_000, "1 min"),
    (600_000, "10 min"),
    (3_600_000, "1 h"),
    (36_000_000, "10 h"),
    (86_400_000, "1 day"),
    (864_000_000, "10 days"),
)


def bar_chart(
    title: str,
    xlabel: str,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    durations_ms: bool = False,
) -> str:
    """Grouped horizontal bars: one group per label, one bar per series.

    ``durations_ms``: the values are milliseconds, on a log axis ticked in durations (1 ms,
    1 s, 1 min ...), so that one 20-minute p99 does not flatten every other bar to nothing;
    a value of 0 (or below the axis) is drawn as no bar."""
    figure, axes = _figure(0.9 + 0.32 * len(labels) * max(1, len(series)) ** 0.5)
    with mpl.rc_context(STYLE):
        height = 0.8 / max(1, len(series))
        floor = _log_floor(series) if durations_ms else 0.0
        for i, (name, values) in enumerate(series.items()):
            offsets = [n + (i - (len(series) - 1) / 2) * height for n in range(len(labels))]
            widths = [max(v - floor, 0.0) for v in values]
            axes.barh(offsets, widths, height=height, left=floor, label=name)
        if durations_ms:
            top = max((v for values in series.values() for v in values), default=1.0)
            axes.set_xscale("log")
            axes.set_xlim(floor, max(top, floor * 10) * 1.5)
            marks = [(at, text) for at, text in DURATION_TICKS if floor <= at <= top * 1.5]
            axes.set_xticks([at for at, _ in marks], [text for _, text in marks])
            axes.xaxis.set_minor_formatter(ticker.NullFormatter())
        else:
            axes.xaxis.set_major_formatter(ticker.FuncFormatter(_plain))
        axes.set_yticks(range(len(labels)), labels)
        axes.invert_yaxis()
        axes.set_title(title, loc="left")
        axes.set_xlabel(xlabel)
        axes.grid(axis="x", alpha=0.3)
        if len(series) > 1:
            axes.legend(fontsize=8, loc="lower right", frameon=False)
    return _svg(figure)


def _log_floor(series: Mapping[str, Sequence[float]]) -> float:
    """Where a log axis of ``series`` starts: a tick at or below a third of its smallest
    value above 0 (bars grow from there), at least 0.1 ms."""
    smallest = min((v for values in series.values() for v in values if v > 0), default=1.0)
    return max((at for at, _ in DURATION_TICKS if at <= smallest / 3), default=DURATION_TICKS[0][0])


def timeline(title: str, rows: Sequence[tuple[str, datetime, datetime]], period: Timeline) -> str:
    """Horizontal spans, one lane per label (flow-control episodes per destination)."""
    lanes = sorted({label for label, _, _ in rows})
    figure, axes = _figure(0.9 + 0.35 * len(lanes))
    with mpl.rc_context(STYLE):
        for lane, label in enumerate(lanes):
            for name, start, end in rows:
                if name == label:
                    left, right = _seconds(start), _seconds(end)
                    axes.barh(lane, right - left, left=left, height=0.6, color="tab:red", alpha=0.7)
        axes.set_yticks(range(len(lanes)), lanes)
        axes.invert_yaxis()
        axes.set_title(title, loc="left")
        axes.grid(axis="x", alpha=0.3)
        _time_axis(axes, period)
    return _svg(figure)
