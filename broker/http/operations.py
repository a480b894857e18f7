"""Long admin operations (count, move, copy, remove, purge) as pollable records.

A POST starts one and waits up to ``wait`` seconds for it: done by then, the answer
is its result (200); still running, the answer is its state so far (202, with a
``Location`` to poll, ``GET /api/v1/operations/{id}?wait=S``).  Progress is the
operation's own counters (``scanned``, ``matched``, ``moved``...), updated by the
broker between batches, so a client can show how far a move over a deep queue got.
``DELETE`` on an operation asks it to stop after its current batch.

Bounded: at most ``MAX_RUNNING`` at once (more is a 429), and the last ``KEEP_FINISHED``
finished ones are remembered for polling.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from broker.core.admin.errors import AdminError
from broker.core.admin.views import Progress
from broker.http.statuses import status_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

log = logging.getLogger("stompd.http")

MAX_RUNNING = 16
KEEP_FINISHED = 100
#: What each kind of operation calls the messages it changed (a count changes none).
APPLIED = {"move": "moved", "copy": "copied", "remove": "removed", "purge": "removed", "count": None}

RUNNING = "running"
DONE = "done"
FAILED = "failed"
CANCELLED = "cancelled"


class TooBusy(AdminError):
    code = "too_many_operations"


class Operation:
    def __init__(
        self,
        op_id: str,
        kind: str,
        destination: str,
        *,
        target: str | None = None,
        selector: str | None = None,
        limit: int | None = None,
    ) -> None:
        self.id = op_id
        self.kind = kind
        self.destination = destination
        self.target = target
        self.selector = selector
        self.limit = limit
        self.progress = Progress()
        self.state = RUNNING
        self.error: dict[str, Any] | None = None
        self.started = time.time()
        self.finished: float | None = None
        self.done = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def to_json(self) -> dict[str, Any]:
        progress = self.progress
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "destination": self.destination,
        }
        if self.target is not None:
            out["target"] = self.target
        if self.kind != "purge":
            out["selector"] = self.selector
        if self.kind in ("move", "copy", "remove"):
            out["max"] = self.limit
        out["scanned"] = progress.scanned
        out["matched"] = progress.matched
        applied = APPLIED[self.kind]
        if applied is not None:
            out[applied] = progress.applied
        out.update(progress.extra)
        out["total"] = progress.total
        end = self.finished if self.finished is not None else time.time()
        out["started"] = self.started
        out["finished"] = self.finished
        out["elapsed_ms"] = round((end - self.started) * 1000, 1)
        out["error"] = self.error
        return out


class Operations:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._all: OrderedDict[str, Operation] = OrderedDict()

    def __iter__(self) -> Iterator[Operation]:
        return iter(list(self._all.values()))

    def get(self, op_id: str) -> Operation | None:
        return self._all.get(op_id)

    def start(self, operation: Operation, begin: Callable[[Progress], Awaitable[None]]) -> Operation:
        """Run ``begin(progress)``; its synchronous errors (404, 501, ...) reach the caller."""
        running = sum(1 for op in self._all.values() if op.state == RUNNING)
        if running >= MAX_RUNNING:
            raise TooBusy(f"{running} admin operations are running; wait for one to finish")
        work = begin(operation.progress)
        self._all[operation.id] = operation
        self._trim()
        operation.task = asyncio.ensure_future(self._run(operation, work))
        return operation

    def new_id(self) -> str:
        return f"op-{next(self._ids)}"

    async def _run(self, operation: Operation, work: Awaitable[None]) -> None:
        try:
            await work
            operation.state = CANCELLED if operation.progress.cancelled else DONE
        except asyncio.CancelledError:
            operation.state = CANCELLED
        except AdminError as exc:
            operation.state = FAILED
            operation.error = {"status": status_of(exc), "code": exc.code, "message": str(exc)}
        except Exception as exc:
            log.error("admin operation %s (%s) failed", operation.id, operation.kind, exc_info=exc)
            operation.state = FAILED
            operation.error = {"status": 500, "code": "internal", "message": "internal error (logged)"}
        finally:
            operation.finished = time.time()
            operation.done.set()

    @staticmethod
    async def wait(operation: Operation, seconds: float) -> None:
        if seconds > 0 and operation.state == RUNNING:
            try:
                await asyncio.wait_for(operation.done.wait(), seconds)
            except TimeoutError:
                pass

    def cancel(self, operation: Operation) -> None:
        operation.progress.cancelled = True

    def _trim(self) -> None:
        finished = [op_id for op_id, op in self._all.items() if op.state != RUNNING]
        for op_id in finished[: max(len(finished) - KEEP_FINISHED, 0)]:
            del self._all[op_id]

    async def close(self) -> None:
        """Server shutdown: stop what runs (each stops between batches)."""
        tasks = []
        for operation in self._all.values():
            if operation.task is not None and not operation.task.done():
                operation.progress.cancelled = True
                operation.task.cancel()
                tasks.append(operation.task)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
