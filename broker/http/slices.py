"""Work over every destination, connection or subscription, done in slices on the loop.

With 100,000 destinations or 19,000 connections, building one list of all of them, or
sorting it, or writing it out as JSON, holds the event loop for tenths of a second: every
client waits.  Here each step does ``SLICE`` items, then lets the loop serve others.
"""

from __future__ import annotations

import asyncio
import heapq
import json
from typing import TYPE_CHECKING, Any, Final, TypeVar

from aiohttp import web

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

T = TypeVar("T")
R = TypeVar("R")

#: Items per slice: a millisecond or two of work each.
SLICE: Final = 500


async def collect(items: Iterable[T], make: Callable[[T], R]) -> list[R]:
    """``make(item)`` for each of ``items`` (a list taken now: it may change meanwhile)."""
    out: list[R] = []
    for count, item in enumerate(list(items), 1):
        out.append(make(item))
        if count % SLICE == 0:
            await asyncio.sleep(0)
    return out


async def ordered(items: list[T], key: Callable[[T], Any]) -> list[T]:
    """``items`` sorted by ``key``: each slice sorted alone, then merged a slice at a time
    (one ``sort`` of them all would hold the loop as long as it takes)."""
    runs = []
    for start in range(0, len(items), SLICE):
        runs.append(sorted(items[start : start + SLICE], key=key))
        await asyncio.sleep(0)
    out: list[T] = []
    for count, item in enumerate(heapq.merge(*runs, key=key), 1):
        out.append(item)
        if count % SLICE == 0:
            await asyncio.sleep(0)
    return out


async def json_list(
    request: web.Request, field: str, rows: list[Any], as_json: Callable[[Any], Any]
) -> web.StreamResponse:
    """``{field: [as_json(row), ...]}`` written out a slice of rows at a time."""
    response = web.StreamResponse(headers={"Content-Type": "application/json; charset=utf-8"})
    await response.prepare(request)
    await response.write(b'{"%s": [' % field.encode())
    # Fewer rows a step than ``SLICE``: a row made and encoded costs ~20 us.
    step = SLICE // 5
    for start in range(0, len(rows), step):
        chunk = json.dumps([as_json(row) for row in rows[start : start + step]])[1:-1]
        await response.write((", " if start else "").encode() + chunk.encode())
        await asyncio.sleep(0)
    await response.write(b"]}")
    await response.write_eof()
    return response
