"""The store's workers: ``DeferredWorker``, which tests and tools drive, hands back its
outcomes as the server's ``IOWorker`` does, never on the stack of the code that asked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from store.api import Failed, Ok, Outcome
from store.worker import DeferredWorker, IOWorker


def test_a_job_waits_for_run_and_its_outcome_for_the_turn_that_posts_it() -> None:
    worker = DeferredWorker()
    ran: list[str] = []
    outcomes: list[Outcome[Any]] = []
    worker.submit(lambda: ran.append("a") or "a", outcomes.append)
    worker.submit(lambda: 1 // 0, outcomes.append)
    # Nothing runs inside submit, neither the job nor its outcome.
    assert ran == [] and outcomes == [] and worker.pending == 2
    turns: list[Callable[[], None]] = []
    assert worker.run(turns.append) == 2
    # The jobs ran; their outcomes wait for the turns they were posted to, as on the loop.
    assert ran == ["a"] and outcomes == [] and worker.pending == 2
    for turn in turns:
        turn()
    assert isinstance(outcomes[0], Ok) and outcomes[0].value == "a"
    assert isinstance(outcomes[1], Failed) and isinstance(outcomes[1].error, ZeroDivisionError)
    assert worker.pending == 0 and worker.failures == 1


def test_a_job_an_outcome_asks_for_runs_after_those_before_it_in_the_same_run() -> None:
    worker = DeferredWorker()
    order: list[str] = []

    def first_done(outcome: Outcome[Any]) -> None:
        order.append("first done")
        worker.submit(lambda: order.append("third"), lambda outcome: order.append("third done"))

    worker.submit(lambda: order.append("first"), first_done)
    worker.submit(lambda: order.append("second"), lambda outcome: order.append("second done"))
    assert worker.run(lambda turn: turn()) == 3
    assert order == ["first", "first done", "second", "second done", "third", "third done"]
    assert worker.pending == 0 and worker.run(lambda turn: turn()) == 0


def test_the_server_s_worker_hands_back_the_same_outcomes_through_its_post() -> None:
    posted: list[Callable[[], None]] = []
    arrived = threading.Event()

    def post(turn: Callable[[], None]) -> None:
        posted.append(turn)
        if len(posted) == 2:
            arrived.set()

    worker = IOWorker(post, name="stompd-store-test")
    outcomes: list[Outcome[Any]] = []
    try:
        worker.submit(lambda: "a", outcomes.append)
        worker.submit(lambda: 1 // 0, outcomes.append)
        assert arrived.wait(30)
    finally:
        worker.close()
    assert outcomes == [] and worker.pending == 2
    for turn in posted:
        turn()
    assert isinstance(outcomes[0], Ok) and outcomes[0].value == "a"
    assert isinstance(outcomes[1], Failed)
    assert worker.pending == 0 and worker.failures == 1
