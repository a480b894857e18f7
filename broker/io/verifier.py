"""Slow password checks (hashes) off the event loop, a few at a time.

A scrypt check costs about a tenth of a second of CPU, so a CONNECT that needs one must
not be answered on the loop: a flood of wrong passwords would stall every client.  The
connection pauses its reading, awaits ``run`` (a worker thread does the check), then
hands the CONNECT to the engine with the verdict (broker/io/connection.py).  At most
``SLOTS`` checks run at once, each in one of as many threads; further CONNECTs wait their
turn here, not in the executor's queue, and a connection that closes meanwhile is
dropped when its turn comes.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

#: Concurrent checks: each scrypt check holds 32 MiB (n=2**15, r=8) and a CPU.
SLOTS: Final = 2


class Verifier:
    __slots__ = ("_executor", "_slots")

    def __init__(self, slots: int = SLOTS) -> None:
        self._slots = asyncio.Semaphore(slots)
        self._executor = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="stompd-login")

    async def run(self, check: Callable[[], object], wanted: Callable[[], bool]) -> object:
        """``check()`` in a worker thread; None without running it if, once its turn
        has come, ``wanted()`` is false (the connection has gone)."""
        async with self._slots:
            if not wanted():
                return None
            return await asyncio.get_running_loop().run_in_executor(self._executor, check)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
