"""report.html's charts and the report's Spark session, without Spark (issue 40): the
latency chart's log axis, a bytes axis in MB or GB, plain tick numbers, no stage bar."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from spark_jobs import charts
from spark_jobs.cli import session_settings
from spark_jobs.timeaxis import Timeline

T0 = 1_767_225_600_000


def texts(svg: str) -> list[str]:
    """The text an SVG shows (matplotlib writes it as text: ``svg.fonttype: none``)."""
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def exponent(words: list[str]) -> list[str]:
    """Scientific notation or an axis offset (``1e6``, ``+6.2e9``, ``10^6``)."""
    return [w for w in words if re.search("\\de[+-]?\\d|^[+\u2212-]\\d|10\\^|\u00d7", w)]


def test_one_twenty_minute_p99_does_not_flatten_the_other_bars() -> None:
    """A linear axis to 1,200,000 ms ("1e6" above it) left 4 ms and 20 ms as no bar at all."""
    series = {"p50": [4.0, 0.0], "p95": [12.0, 300_000.0], "p99": [20.0, 1_200_000.0]}
    svg = charts.bar_chart(
        "Latency percentiles", "latency (log scale)", ["/queue/a", "/queue/slow"], series, durations_ms=True
    )
    words = texts(svg)
    assert exponent(words) == []
    assert [w for w in words if w[0].isdigit()] == [
        "1 ms",
        "10 ms",
        "100 ms",
        "1 s",
        "10 s",
        "1 min",
        "10 min",
    ]


def test_a_bytes_axis_is_in_the_unit_its_values_read_best_in() -> None:
    period = Timeline.over(T0, T0 + 600_000)
    times = [datetime.fromtimestamp(t, UTC) for t in period.buckets()]
    usage = {
        "memory": (times, [6_200_000_000.0 + i for i in range(len(times))]),
        "store": (times, [5_000_000_000.0] * len(times)),
    }
    scaled, unit = charts.in_bytes_unit(usage)
    assert unit == "GB" and scaled["store"][1][0] == 5.0
    words = texts(charts.line_chart("Usage (peak)", unit, scaled, period))
    assert exponent(words) == [] and "GB" in words and "6" in words
    assert charts.in_bytes_unit({"temp": (times[:1], [52_000_000.0])})[1] == "MB"
    assert charts.in_bytes_unit({"temp": (times[:1], [700.0])})[1] == "bytes"
    assert charts.in_bytes_unit({})[1] == "bytes"


def test_counts_in_the_billions_are_written_out() -> None:
    period = Timeline.over(T0, T0 + 600_000)
    times = [datetime.fromtimestamp(t, UTC) for t in period.buckets()]
    words = texts(charts.line_chart("Enqueued", "messages", {"a": (times, [3e9] * len(times))}, period))
    assert exponent(words) == [] and "3,000,000,000" in words


def test_spark_s_stage_bar_is_off_even_without_quiet() -> None:
    """Its "[Stage 3:==>  (2 + 2) / 4]" redraws went into the middle of the progress lines."""
    assert session_settings("local[2]")["spark.ui.showConsoleProgress"] == "false"
    assert (
        session_settings(None, conf={"spark.ui.showConsoleProgress": "true"})["spark.ui.showConsoleProgress"]
        == "true"
    )  # a --conf of the user's still wins
