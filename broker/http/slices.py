"""Work over every destination, connection or subscription, done in slices on the loop.

With 100,000 destinations or 19,000 connections, building one list of all of them, or
sorting it, or writing it out as JSON, holds the event loop for tenths of a second: every
client waits.  The admin service hands such work over as ``Steps`` (chores,
``broker.core.base.chores``: a slice of ``SLICE`` items, or a batch of an operation, a
step), which ``finish`` gives the engine's chores to run, between other clients' work
and in one time budget with the broker's other chores, and waits for; ``json_list``
writes a list out a slice at a time.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web

from broker.core.base.chores import SLICE
from store.api import Failed

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.chores import Chores, Steps
    from store.api import Outcome

T = TypeVar("T")

__all__ = ["SLICE", "finish", "json_list"]


async def finish(chores: Chores, work: Steps[T]) -> T:
    """``work`` run by ``chores`` to its end: its answer (or what it raised).  A caller
    that goes away (its task cancelled) stops it: its own clean-up runs then."""
    answer: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    chore = chores.add(work, functools.partial(_answer, answer))
    try:
        return await answer
    finally:
        chore.cancel()


def _answer(future: asyncio.Future[T], outcome: Outcome[T]) -> None:
    if future.done():
        return
    if isinstance(outcome, Failed):
        future.set_exception(outcome.error)
    else:
        future.set_result(outcome.value)


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
