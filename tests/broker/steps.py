"""Count the work an operation does, not the time it takes: lines of the broker's own
code executed (``sys.settrace``), so a test can say "linear in N" without a clock.

A quadratic loop hidden in a per-item step shows as 16x the steps for 4x the items;
linear work as about 4x.  (Work done inside C, such as ``list.remove``, is not counted:
those places are tested by what they are built on.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import broker
import protocol
import store

_OURS = tuple(str(Path(package.__file__).parent) for package in (broker, protocol, store))


def steps(operation: Callable[[], Any]) -> int:
    """How many lines of broker, protocol and store code ``operation`` executes."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(_OURS) else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        operation()
    finally:
        sys.settrace(previous)
    return count


def growth(build: Callable[[int], Callable[[], Any]], n: int = 200, factor: int = 4) -> float:
    """Steps of ``build(factor * n)()`` over steps of ``build(n)()``: about ``factor`` when the
    work is linear in n, ``factor ** 2`` when it is quadratic.  ``build(n)`` sets the scene
    (not counted) and returns the operation to count."""
    small = steps(build(n))
    large = steps(build(factor * n))
    return large / max(small, 1)
