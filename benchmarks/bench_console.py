"""What the console's new passes cost the event loop with many destinations and connections.

The engine of ``bench_metrics.py`` (``--destinations``, half queues and half topics, a
consumer and three messages each), with ``--connections`` more connections (every tenth
another broker's duplex bridge) and ``--durables`` offline durable subscriptions made as
the console makes them (``SubscriptionAdmin.create``), each owed three messages.  Then each
pass as the admin server runs it, a step at a time (one step per slice of the engine's
chores): the destinations' list (a topic's depth now counts what its offline durables are
owed), a destination's producers (the connections that sent to it), the network bridges
(the far ends of duplex bridges found among the connections), and the connections' list
for comparison.  Prints, per pass, the total and the longest single step in wall
milliseconds, medians of ``--repeat`` passes, the cyclic collector off (``--gc`` on).

Run: ``python benchmarks/bench_console.py [--destinations 100000] [--connections 10000]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_metrics import CountingOutbox, build

from broker.core.admin.service import AdminService
from protocol.frames import Frame

if TYPE_CHECKING:
    from broker.core.engine import Engine


def steps_of(work: Any) -> tuple[float, float]:
    """(total, longest step) in ms of running ``work`` to its end: the thread's CPU time,
    so that a busy machine's other processes do not count (wall time on an idle one)."""
    clock = time.thread_time if CPU else time.perf_counter
    longest = total = 0.0
    while True:
        started = clock()
        try:
            next(work)
        except StopIteration:
            spent = (clock() - started) * 1000
            return total + spent, max(longest, spent)
        spent = (clock() - started) * 1000
        total += spent
        longest = max(longest, spent)


#: Step times are CPU time (``--wall``: wall time).
CPU = True


def more(engine: Engine, connections: int, durables: int) -> None:
    for i in range(connections):
        session = engine.open_session(CountingOutbox())
        headers = {"accept-version": "1.2"}
        if i % 10 == 0:
            headers.update({"stompd.network": f"remote-{i}", "stompd.networkDuplex": "true"})
        engine.handle(session, Frame("CONNECT", headers))
        engine.handle(session, Frame("SEND", {"destination": f"/queue/bench.{2 * (i % 50)}"}, b"x"))
    for i in range(durables):
        topic = f"/topic/bench.{2 * i + 1}"
        # Made by a subscriber that leaves (as the console's Create makes one, offline).
        subscriber = engine.open_session(CountingOutbox())
        engine.handle(subscriber, Frame("CONNECT", {"accept-version": "1.2", "client-id": f"client-{i}"}))
        durable = {"destination": topic, "id": "d", "activemq.subscriptionName": "durable"}
        engine.handle(subscriber, Frame("SUBSCRIBE", durable))
        engine.close_session(subscriber)
        producer = engine.open_session(CountingOutbox())
        engine.handle(producer, Frame("CONNECT", {"accept-version": "1.2"}))
        for _ in range(3):
            engine.handle(producer, Frame("SEND", {"destination": topic, "persistent": "true"}, b"y" * 100))
        engine.close_session(producer)
    engine.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--destinations", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--durables", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gc", action="store_true", help="leave the cyclic collector on")
    parser.add_argument("--wall", action="store_true", help="wall time, not the thread's CPU time")
    parser.add_argument("--only", help="the passes whose label starts with this")
    args = parser.parse_args()
    global CPU
    CPU = not args.wall
    started = time.perf_counter()
    engine = build(args.destinations)
    more(engine, args.connections, args.durables)
    admin = AdminService(engine, dict)
    print(
        f"built {args.destinations:,} destinations, {len(engine.sessions):,} connections, "
        f"{args.durables:,} offline durables in {time.perf_counter() - started:.1f} s"
    )
    if not args.gc:
        gc.disable()
    passes = {
        "destinations (topics' depth with durables owed)": admin.destinations.every,
        "a queue's producers": lambda: admin.queues.producers("/queue/bench.0", {}),
        "network (duplex bridges' far ends)": admin.network,
        "connections (for comparison)": admin.connections.every,
    }
    print(f"{'pass':<50} {'in all ms':>10} {'longest step ms':>16}")
    for label, make in passes.items():
        if args.only and not label.startswith(args.only):
            continue
        runs = [steps_of(make()) for _ in range(args.repeat)]
        total = statistics.median(r[0] for r in runs)
        longest = statistics.median(r[1] for r in runs)
        print(f"{label:<50} {total:>10.1f} {longest:>16.2f}")


if __name__ == "__main__":
    main()
