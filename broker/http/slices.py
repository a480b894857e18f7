"""Work over every destination, connection or subscription, done in slices on the loop.

With 100,000 destinations or 19,000 connections, building one list of all of them, or
sorting it, or writing it out as JSON, holds the event loop for tenths of a second: every
client waits.  The core hands such work over as ``Steps`` (``broker.core.admin.steps``:
a slice of ``SLICE`` items, or a batch of an operation, a step), which ``finish`` runs
here, letting the loop serve others between two steps; ``json_list`` writes a list out
a slice at a time.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web

from broker.core.admin import steps
from broker.core.admin.steps import SLICE

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.admin.steps import Steps

T = TypeVar("T")

__all__ = ["SLICE", "finish", "json_list", "ordered"]


async def finish(steps: Steps[T]) -> T:
    """Run ``steps`` to its end, letting the loop run between two steps (and waiting for
    the disk job a step says it waits for); its answer."""
    loop = asyncio.get_running_loop()
    try:
        while True:
            try:
                wait = next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if wait is None:
                await asyncio.sleep(0)
                continue
            resumed: asyncio.Future[None] = loop.create_future()
            wait.then(functools.partial(_resolve, resumed))
            await resumed
    finally:
        # A client that left (the task cancelled): the work's own clean-up runs now.
        steps.close()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def ordered(items: list[T], key: Callable[[T], Any]) -> list[T]:
    """``items`` sorted by ``key``, a slice at a time (``steps.ordered``)."""
    return await finish(steps.ordered(items, key))


async def json_list(
    request: web.Request,
    field: str,
    rows: list[Any],
    as_json: Callable[[Any], Any],
    after: dict[str, Any] | None = None,
) -> web.StreamResponse:
    """``{field: [as_json(row), ...]}`` written out a slice of rows at a time, then the
    fields of ``after``, if any."""
    response = web.StreamResponse(headers={"Content-Type": "application/json; charset=utf-8"})
    await response.prepare(request)
    await response.write(b'{"%s": [' % field.encode())
    # Fewer rows a step than ``SLICE``: a row made and encoded costs ~20 us.
    step = SLICE // 5
    for start in range(0, len(rows), step):
        chunk = json.dumps([as_json(row) for row in rows[start : start + step]])[1:-1]
        await response.write((", " if start else "").encode() + chunk.encode())
        await asyncio.sleep(0)
    # '"total": 5}' (or "}"): the object's fields after the list, and its end.
    rest = json.dumps(after or {})[1:]
    await response.write(b"]" + (b", " if after else b"") + rest.encode())
    await response.write_eof()
    return response
