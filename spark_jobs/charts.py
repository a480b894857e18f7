"""Charts for report.html: matplotlib figures rendered to inline SVG (no files, no CDN).

Text stays text in the SVG (``svg.fonttype: none``), so the report is small, searchable
and readable offline. Figures are built with ``matplotlib.figure.Figure`` directly, not
pyplot, so nothing global is touched.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Final

import matplotlib as mpl
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


def line_chart(
    title: str,
    ylabel: str,
    series: Mapping[str, tuple[Sequence[datetime], Sequence[float]]],
    period: Timeline,
) -> str:
    """One line per series over time (x: the UTC starts of ``period``'s buckets), each
    value drawn flat across its bucket: a per-minute count covers its minute."""
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
        axes.grid(alpha=0.3)
        _time_axis(axes, period)
        if len(series) > 1:
            axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _svg(figure)


def bar_chart(title: str, xlabel: str, labels: Sequence[str], series: Mapping[str, Sequence[float]]) -> str:
    """Grouped horizontal bars: one group per label, one bar per series."""
    figure, axes = _figure(0.9 + 0.32 * len(labels) * max(1, len(series)) ** 0.5)
    with mpl.rc_context(STYLE):
        height = 0.8 / max(1, len(series))
        for i, (name, values) in enumerate(series.items()):
            offsets = [n + (i - (len(series) - 1) / 2) * height for n in range(len(labels))]
            axes.barh(offsets, values, height=height, label=name)
        axes.set_yticks(range(len(labels)), labels)
        axes.invert_yaxis()
        axes.set_title(title, loc="left")
        axes.set_xlabel(xlabel)
        axes.grid(axis="x", alpha=0.3)
        if len(series) > 1:
            axes.legend(fontsize=8, loc="lower right", frameon=False)
    return _svg(figure)


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
