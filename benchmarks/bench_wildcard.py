"""A wildcard queue consumer over many queues (issue 37 item 2): how long the loop is held.

    python benchmarks/bench_wildcard.py                    # 10,000 queues
    python benchmarks/bench_wildcard.py --queues 100000 --watchers 1000

A script that prints figures, not a test.  The engine alone (in-memory stores), driven as
the edge drives it: each frame handled, then the chores' slices run one at a time with
the edge's timer (``Chores.timer``), each slice timed.  Figures, each the longest of its
kind, in ms of wall time:

  subscribe      handling the SUBSCRIBE (its RECEIPT) and starting it, before any slice.
  slice          the longest slice of the chore that joins the existing queues, and the
                 longest less what the cyclic collector took in it (it runs when it will:
                 a full collection over 10,000 queues' objects is itself tens of ms).
  joined s       how long it took, slices and the time between them left out.
  make queue     a SEND that makes a queue matched by --watchers wildcard consumers
                 (a trie walk: no look at the consumers that do not match).
  ack            an ACK of a prefetch-1 consumer over --queues queues, which offers the
                 credit back to its queues in turn from the next one.
  unsubscribe    UNSUBSCRIBE of the consumer over --queues queues (its RECEIPT).
  leave slice    the longest slice of the chore in which it then leaves those queues.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker.app import tune_gc
from broker.core.base.clock import Clock
from broker.core.base.settings import CoreSettings
from broker.core.engine import Engine
from protocol import Frame, FrameParser
from store.memory import memory_stores


class Outbox:
    def __init__(self) -> None:
        self.parser = FrameParser()

    def push(self, parts: tuple[bytes, ...]) -> None:
        self.parser.feed(b"".join(parts))

    def frames(self) -> list[Frame]:
        out = []
        while (frame := self.parser.next_frame()) is not None:
            out.append(frame)
        return out

    def hold(self) -> None: ...
    def release(self) -> None: ...
    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def close(self) -> None: ...


def handle(engine: Engine, session: object, command: str, headers: dict[str, str]) -> float:
    """One frame as the edge handles it (then its flush and disk jobs): ms."""
    start = time.perf_counter()
    engine.handle(session, Frame(command, headers, b""))  # type: ignore[arg-type]
    engine.flush()
    engine.disk.worker.run(engine.after_io)  # type: ignore[attr-defined]
    return (time.perf_counter() - start) * 1000


class Collections:
    """Time the cyclic collector took (it runs when it will, in any slice)."""

    def __init__(self) -> None:
        self.ms = 0.0
        self._start = 0.0
        gc.callbacks.append(self._phase)

    def _phase(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.ms += (time.perf_counter() - self._start) * 1000


COLLECTIONS = Collections()


def slices(engine: Engine) -> tuple[float, float, float]:
    """Run the chores a slice at a time: the longest slice, the longest less the collector's
    time in it, and their sum, ms."""
    longest = own = total = 0.0
    while True:
        before = COLLECTIONS.ms
        start = time.perf_counter()
        more = engine.chores.run()
        took = (time.perf_counter() - start) * 1000
        longest = max(longest, took)
        own = max(own, took - (COLLECTIONS.ms - before))
        total += took
        if not more:
            return longest, own, total


def main() -> None:
    arguments = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    arguments.add_argument("--queues", type=int, default=10_000)
    arguments.add_argument("--watchers", type=int, default=1_000)
    options = arguments.parse_args()
    tune_gc()  # as the broker's process does
    engine = Engine(CoreSettings(), clock=Clock(1_000_000), stores=memory_stores())
    engine.chores.wake = lambda: None
    engine.chores.timer = time.perf_counter
    outbox = Outbox()
    session = engine.open_session(outbox)
    handle(engine, session, "CONNECT", {"accept-version": "1.2"})
    for n in range(options.queues):
        handle(engine, session, "SEND", {"destination": f"/queue/W.{n}"})
    slices(engine)
    outbox.frames()
    subscribe = handle(
        engine,
        session,
        "SUBSCRIBE",
        {"destination": "/queue/W.>", "id": "w", "ack": "client-individual", "activemq.prefetchSize": "1"},
    )
    longest, own, joined = slices(engine)
    frames = [frame for frame in outbox.frames() if frame.command == "MESSAGE"]
    assert len(frames) == 1, len(frames)
    ack = 0.0
    for _ in range(20):
        ack = max(ack, handle(engine, session, "ACK", {"id": frames[-1].headers["ack"]}))
        frames = [frame for frame in outbox.frames() if frame.command == "MESSAGE"]
        assert len(frames) == 1, len(frames)
    unsubscribe = handle(engine, session, "UNSUBSCRIBE", {"id": "w"})
    _, leave_own, left = slices(engine)
    # Many wildcard consumers, one queue made that matches one of them.
    for n in range(options.watchers):
        handle(engine, session, "SUBSCRIBE", {"destination": f"/queue/V.{n}.>", "id": f"v{n}"})
    slices(engine)
    make = max(handle(engine, session, "SEND", {"destination": f"/queue/V.{n}.new"}) for n in range(100))
    outbox.frames()
    print(f"queues {options.queues:,}, wildcard consumers {options.watchers:,}")
    print(f"subscribe      {subscribe:8.2f} ms")
    print(f"slice          {longest:8.2f} ms (longest; {own:.2f} ms less the cyclic collector's time in it)")
    print(f"joined s       {joined / 1000:8.3f} s (the slices' sum)")
    print(f"make queue     {make:8.2f} ms (longest of 100)")
    print(f"ack            {ack:8.2f} ms (longest of 20)")
    print(f"unsubscribe    {unsubscribe:8.2f} ms")
    print(f"leave slice    {leave_own:8.2f} ms (longest, less the cyclic collector's; {left:.1f} ms in all)")


if __name__ == "__main__":
    main()
