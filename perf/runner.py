"""One run: split the work over workers, start them together, decide when it is over.

With --processes 1 the single worker runs on a thread of this process (cheap to start,
easy to debug); with more, each worker is a spawned process with its own event loop,
so producers and consumers use more than one core.  Either way the workers and this
coordinator talk only through the shared `Board` and, at the end, one result each.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from perf import board as B
from perf.report import RunInfo, Summary, summarize
from perf.workload import Worker, WorkerPlan, WorkerResult

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Coroutine

    from perf.settings import Settings

POLL_S = 0.05
START_DELAY_S = 0.05  # lets every worker see the start time before it arrives
SPAWN_TIMEOUT_S = 30.0  # a spawned worker imports Python and uvloop before it connects


def plan_workers(settings: Settings, run_id: int) -> list[WorkerPlan]:
    """Deal producers, then consumers, round-robin over the workers.

    With 2 processes and 1 -> 1, the producer and the consumer land in different
    processes, which is what spreads the tool's own work over two cores.
    """
    roles = [("p", n) for n in range(settings.producers)] + [("c", n) for n in range(settings.consumers)]
    count = max(1, min(settings.processes, len(roles)))
    plans = []
    for slot in range(count):
        mine = roles[slot::count]
        plans.append(
            WorkerPlan(
                slot=slot,
                run_id=run_id,
                producers=tuple(n for kind, n in mine if kind == "p"),
                consumers=tuple(n for kind, n in mine if kind == "c"),
                settings=settings,
            )
        )
    return plans


def _event_loop_runner(kind: str) -> Callable[[Coroutine[Any, Any, WorkerResult]], WorkerResult]:
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if kind != "asyncio":
        try:
            import uvloop

            loop_factory = uvloop.new_event_loop
        except ImportError:
            if kind == "uvloop":
                raise
    import asyncio

    def run(coro: Coroutine[Any, Any, WorkerResult]) -> WorkerResult:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coro)

    return run


def run_worker(plan: WorkerPlan, board: B.Board, loop: str, parent_pid: int | None = None) -> WorkerResult:
    try:
        return _event_loop_runner(loop)(Worker(plan, board, parent_pid).run())
    except BaseException:
        board.set_worker(plan.slot, B.STATE, B.FAILED)
        raise
    finally:
        if board.get_worker(plan.slot, B.STATE) != B.FAILED:
            board.set_worker(plan.slot, B.STATE, B.FINISHED)


def _process_main(plan: WorkerPlan, board: B.Board, loop: str, parent_pid: int, results: Any) -> None:
    # Ctrl-C reaches the whole process group; only the parent decides how to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        results.put((plan.slot, run_worker(plan, board, loop, parent_pid)))
    except BaseException as exc:
        results.put((plan.slot, f"worker {plan.slot} failed: {exc!r}"))


class _Workers:
    """Thread or processes, behind one interface: start, alive, results, stop."""

    def __init__(self, plans: list[WorkerPlan], board: B.Board, loop: str) -> None:
        self.plans = plans
        self._results: Any
        self._procs: list[multiprocessing.process.BaseProcess] = []
        self._thread: threading.Thread | None = None
        if len(plans) == 1:
            self._results = queue.Queue()
            self._thread = threading.Thread(
                target=self._thread_main, args=(plans[0], board, loop), name="stompd-perf-worker", daemon=True
            )
        else:
            # spawn, not fork: the caller may have threads (a test's broker, say), and a
            # forked child of a threaded process can deadlock on a lock held at the fork.
            ctx = multiprocessing.get_context("spawn")
            self._results = ctx.Queue()
            self._procs = [
                ctx.Process(
                    target=_process_main,
                    args=(plan, board, loop, os.getpid(), self._results),
                    name=f"stompd-perf-worker-{plan.slot}",
                    daemon=True,
                )
                for plan in plans
            ]

    def _thread_main(self, plan: WorkerPlan, board: B.Board, loop: str) -> None:
        try:
            self._results.put((plan.slot, run_worker(plan, board, loop)))
        except BaseException as exc:
            self._results.put((plan.slot, f"worker {plan.slot} failed: {exc!r}"))

    def start(self) -> None:
        if self._thread is not None:
            self._thread.start()
        for proc in self._procs:
            proc.start()

    def dead(self) -> list[int]:
        """Slots whose process ended without reporting (killed, crashed in C)."""
        return [slot for slot, proc in enumerate(self._procs) if proc.exitcode not in (None, 0)]

    def collect(self, timeout: float, errors: list[str]) -> list[WorkerResult]:
        results: dict[int, WorkerResult] = {}
        deadline = time.monotonic() + timeout
        # Read before joining: a child blocks in exit until its queued result is read.
        while len(results) < len(self.plans) and time.monotonic() < deadline:
            try:
                slot, result = self._results.get(timeout=0.2)
            except queue.Empty:
                if self.dead() and len(results) + len(self.dead()) >= len(self.plans):
                    break
                continue
            if isinstance(result, str):
                errors.append(result)
                results[slot] = WorkerResult(slot=slot)
            else:
                results[slot] = result
        errors.extend(f"worker {p.slot} did not report" for p in self.plans if p.slot not in results)
        return [results[slot] for slot in sorted(results)]

    def stop(self) -> None:
        for proc in self._procs:
            proc.join(5)
            if proc.is_alive():
                proc.terminate()  # our own child; it ignored the stop flag
                proc.join(5)
        if self._thread is not None:
            self._thread.join(5)


class Progress:
    """The once-a-second line on stderr."""

    def __init__(self, out: TextIO | None) -> None:
        self.out = out
        self._last = (0.0, 0, 0)

    def show(self, elapsed: float, sent: int, received: int, errors: int, phase: str) -> None:
        if self.out is None:
            return
        t0, sent0, received0 = self._last
        dt = max(elapsed - t0, 1e-9)
        self._last = (elapsed, sent, received)
        print(
            f"[{elapsed:7.1f}s] {phase:<9} sent {sent:>11,} ({(sent - sent0) / dt:>9,.0f}/s)  "
            f"received {received:>11,} ({(received - received0) / dt:>9,.0f}/s)  errors {errors}",
            file=self.out,
            flush=True,
        )


def run(settings: Settings, progress: TextIO | None = sys.stderr, loop: str = "auto") -> Summary:
    run_id = random.getrandbits(32) or 1
    plans = plan_workers(settings, run_id)
    board = B.Board(len(plans))
    workers = _Workers(plans, board, loop)
    info = RunInfo(start_ns=time.monotonic_ns())
    results: list[WorkerResult] = []
    previous = (
        signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    )
    if previous is not None:
        # SIGTERM (a benchmark's timeout) ends the run like Ctrl-C: workers stop, figures so far.
        signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        workers.start()
        try:
            _coordinate(settings, board, workers, info, Progress(progress if settings.progress else None))
        except KeyboardInterrupt:
            info.errors.append("interrupted")
        board.set(B.STOP, 1)
        info.end_ns = info.end_ns or time.monotonic_ns()
        results = workers.collect(SPAWN_TIMEOUT_S + settings.timeout, info.errors)
    finally:
        board.set(B.STOP, 1)
        workers.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return summarize(settings, results, info)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _coordinate(
    settings: Settings, board: B.Board, workers: _Workers, info: RunInfo, progress: Progress
) -> None:
    # 1. Everyone connected (and, except in backlog mode, subscribed).
    deadline = time.monotonic() + SPAWN_TIMEOUT_S + settings.connect_timeout
    while not all(state >= B.READY for state in board.states()):
        if workers.dead():
            info.errors.append(f"worker(s) {workers.dead()} died while connecting")
            return
        if time.monotonic() > deadline:
            info.errors.append("workers did not get ready in time")
            return
        time.sleep(0.005)
    if all(state == B.FAILED for state in board.states()):
        return

    # 2. Start together, then watch.
    info.start_ns = time.monotonic_ns() + int(START_DELAY_S * 1e9)
    board.set(B.START_NS, info.start_ns)
    last_activity = time.monotonic()
    last_counts = (-1, -1, -1)
    # No producers: consumers only drain what is there (counted as foreign), until
    # --duration or until nothing arrives for --timeout.
    drain_until = None
    if settings.producers == 0 and settings.duration is not None:
        drain_until = time.monotonic() + START_DELAY_S + settings.warmup + settings.duration
    next_progress = time.monotonic() + 1.0
    while True:
        time.sleep(POLL_S)
        now = time.monotonic()
        states = board.states()
        sent, received, distinct = board.total(B.SENT), board.total(B.RECEIVED), board.total(B.DISTINCT)
        producers_done = all(state >= B.PRODUCERS_DONE for state in states)
        counts = (sent, received, board.total(B.FOREIGN))
        if counts != last_counts:
            last_counts = counts
            last_activity = now
        if now >= next_progress:
            next_progress += 1.0
            phase = "sending" if not producers_done else "draining"
            elapsed = (time.monotonic_ns() - info.start_ns) / 1e9
            progress.show(elapsed, sent, received, board.total(B.ERRORS), phase)
        if workers.dead():
            info.errors.append(f"worker(s) {workers.dead()} died")
            break
        if any(state == B.FAILED for state in states):
            break
        if producers_done:
            if settings.backlog and not board.get(B.CONSUMERS_GO):
                board.set(B.CONSUMERS_GO, time.monotonic_ns())
                info.consumers_go_ns = board.get(B.CONSUMERS_GO)
                last_activity = now
            if settings.producers and distinct >= settings.expected(sent):
                break
            if drain_until is not None and now >= drain_until:
                break
        if now - last_activity > settings.timeout:
            # After the producers: the stragglers are not coming.  Before: the broker
            # accepts nothing (flow control that never lifts, say); that is an error.
            if not producers_done:
                info.stalled = True
                info.errors.append(f"stalled: nothing sent or received for {settings.timeout:g} s")
            break
    info.end_ns = time.monotonic_ns()
    elapsed = (info.end_ns - info.start_ns) / 1e9
    progress.show(elapsed, board.total(B.SENT), board.total(B.RECEIVED), board.total(B.ERRORS), "done")
