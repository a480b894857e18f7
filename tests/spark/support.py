"""What several Spark test modules read off a report's charts (moved here from
test_timeaxis.py)."""

from __future__ import annotations

import re


def tick_labels(svg: str) -> list[str]:
    """The x tick labels of a chart (text stays text: svg.fonttype none)."""
    xtick = svg[svg.index('id="matplotlib.axis_1"') : svg.index('id="matplotlib.axis_2"')]
    return re.findall(r"<text[^>]*>([^<]*)</text>", xtick)
