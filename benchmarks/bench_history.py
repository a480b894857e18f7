"""The destinations' history ring (issue 29): its memory per destination, and how long a
sampling pass holds the loop.

    python benchmarks/bench_history.py                          # 10,000 queues and 10,000 topics
    python benchmarks/bench_history.py --destinations 10000,100000 --kinds queue

A script that prints figures, not a test.  The core is driven in this process, as the
tests drive it (in-memory stores, the clock set by the script): a SEND of one small
message to each of N destinations (queues: it stays there, depth 1; topics: dispatched to
one wildcard subscriber on them all), then the broker's sampling on its clock.  Figures:

  ring bytes/dest     what the first pass allocated (``tracemalloc``: the rings and their
                      holders), divided by N; and the same as charged to memoryUsage
                      (``Destinations.charged``).  ``total MB`` is that times N.
  RSS MB              the process's resident memory before and after the first pass
                      (another run of it, without tracemalloc).
  after K passes      what K more passes allocated and kept (0: nothing per sample), and
                      what is charged then per destination (``--passes 370``: the rings
                      have wrapped; the topics, idle for an hour, have given theirs back).
  pass ms, slices     one pass, done the way the broker does it, a chore slice at a time
                      (``Chores.run``), timed on the CPU clock: the whole pass, the
                      number of slices, the longest slice (how long it holds the loop).
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from broker.core.base.chores import Chores  # noqa: E402
from broker.core.base.clock import Clock  # noqa: E402
from broker.core.base.history import INTERVAL_MS, NARROW_BYTES, SLOTS, WIDE_BYTES  # noqa: E402
from broker.core.base.settings import CoreSettings  # noqa: E402
from broker.core.engine import Engine  # noqa: E402
from protocol.frames import Frame  # noqa: E402
from store.memory import memory_stores  # noqa: E402

START_MS = 1_800_000_000_000


class NullOutbox:
    def push(self, parts: tuple[bytes, ...]) -> None: ...
    def hold(self) -> None: ...
    def release(self) -> None: ...
    def drop_held(self) -> None: ...
    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def close(self) -> None: ...
    def fail(self, exc: BaseException) -> None:
        raise exc


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * 4096 / 1e6


def engine_with(n: int, kind: str) -> Engine:
    engine = Engine(CoreSettings(memory_limit=16 << 30), clock=Clock(START_MS), stores=memory_stores())
    session = engine.open_session(NullOutbox())
    engine.handle(session, Frame("CONNECT", {"accept-version": "1.2"}, b""))
    if kind == "topic":
        # A subscriber to them all (auto ack): used topics, kept while idle.
        engine.handle(session, Frame("SUBSCRIBE", {"destination": "/topic/hist.>", "id": "1"}, b""))
    for i in range(n):
        engine.handle(session, Frame("SEND", {"destination": f"/{kind}/hist.{i}"}, b"x"))
        if i % 1000 == 999:
            engine.flush()
    engine.flush()
    return engine


def next_pass(engine: Engine) -> None:
    engine.clock.ms += INTERVAL_MS
    engine.tick()


def resident(n: int, kind: str) -> tuple[float, float]:
    """RSS before and after the first pass, in a fresh process (this one's freed memory
    would be reused by the rings and hide them)."""
    out = subprocess.run(
        [sys.executable, __file__, "--rss-of", f"{kind}:{n}"], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), float(out[1])


def print_resident(what: str) -> None:
    kind, n = what.split(":")
    engine = engine_with(int(n), kind)
    gc.collect()
    before = rss_mb()
    next_pass(engine)
    gc.collect()
    print(before, rss_mb())


def memory(n: int, kind: str, passes: int) -> dict[str, float]:
    engine = engine_with(n, kind)
    gc.collect()
    charged = engine.destinations.charged
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    next_pass(engine)  # a core with no loop: the pass runs to its end at once
    first = tracemalloc.take_snapshot()
    allocated = sum(stat.size_diff for stat in first.compare_to(before, "filename"))
    charged_first = engine.destinations.charged - charged
    with_history = sum(1 for q in (*engine.queues.values(), *engine.router.topics.values()) if q.history)
    assert with_history == n, (with_history, n)
    for _ in range(passes):
        next_pass(engine)
    gc.collect()
    later = tracemalloc.take_snapshot()
    kept = sum(stat.size_diff for stat in later.compare_to(first, "filename"))
    tracemalloc.stop()
    return {
        "traced": allocated / n,
        "charged": charged_first / n,
        "charged_later": (engine.destinations.charged - charged) / n,
        "kept": kept,
    }


def timing(n: int, kind: str) -> dict[str, float]:
    engine = engine_with(n, kind)
    next_pass(engine)  # the rings are made: time a pass as every later one is
    chores = Chores()
    engine.chores = engine.sampler.chores = chores
    chores.wake = lambda: None
    engine.clock.ms += INTERVAL_MS
    engine.sampler.tick()
    slices, longest, total = 0, 0.0, 0.0
    more = True
    while more:
        started = time.thread_time()
        more = chores.run()
        took = time.thread_time() - started
        slices += 1
        total += took
        longest = max(longest, took)
    return {"pass_ms": total * 1000, "slices": slices, "longest_ms": longest * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--destinations", default="10000", help="comma-separated counts (default 10000)")
    parser.add_argument("--kinds", default="queue,topic")
    parser.add_argument("--passes", type=int, default=20, help="later passes for 'after K passes'")
    parser.add_argument("--rss-of", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_of:
        print_resident(args.rss_of)
        return
    print(
        f"ring: {SLOTS} samples x 3 counts x 2 bytes = {NARROW_BYTES} bytes with its array header "
        f"({WIDE_BYTES} once a count needs 32 bits)"
    )
    print(
        f"{'kind':<6} {'N':>8} {'ring B/dest':>11} {'charged B/dest':>14} {'total MB':>9} "
        f"{'RSS MB before -> after':>23} {'after K: kept, charged B/dest':>30} {'pass ms':>8} {'slices':>7} "
        f"{'longest ms':>10}"
    )
    for kind in args.kinds.split(","):
        for n in (int(x) for x in args.destinations.split(",")):
            mem = memory(n, kind, args.passes)
            rss_before, rss_after = resident(n, kind)
            cpu = timing(n, kind)
            print(
                f"{kind:<6} {n:>8,} {mem['traced']:>11,.0f} {mem['charged']:>14,.0f} "
                f"{mem['traced'] * n / 1e6:>9.1f} {rss_before:>10.1f} -> {rss_after:<10.1f} "
                f"{mem['kept']:>14,} B {mem['charged_later']:>13,.0f} {cpu['pass_ms']:>8.1f} "
                f"{cpu['slices']:>7} {cpu['longest_ms']:>10.2f}"
            )
    print(
        f"(K = {args.passes} later passes; 'kept': what they allocated and kept, in bytes; past {SLOTS} the "
        "rings have wrapped, and a destination with nothing in it for an hour has given its ring back)"
    )


if __name__ == "__main__":
    main()
