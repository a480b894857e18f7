"""The one way background work is sliced (broker/core/base/chores.py): every chore's steps
in one line, a slice ended by its units or by its time, whichever comes first, the
chore that ended it sent to the back; a chore that waits set aside until what it waits
for is done; answers and failures given to whoever asked; a chore stopped when nobody
wants its answer.  Time is a clock the test moves, never a sleep."""

from __future__ import annotations

import logging

import pytest

from broker.core.base.chores import BUDGET, STEP, Chores, Steps, Wait
from store.api import Failed, Ok, Outcome


class Ticks:
    """A perf counter the test drives: each step of a chore here moves it on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def driven(chores: Chores) -> list[int]:
    """Give ``chores`` a wake, as the edge does; the wakes it asked for."""
    woken: list[int] = []
    chores.wake = lambda: woken.append(1)
    return woken


def stepping(
    log: list[str], name: str, steps: int, cost: int = 1, ticks: Ticks | None = None, took: float = 0.0
) -> Steps[str]:
    """``steps`` steps, each noted in ``log``, each costing ``cost`` units and ``took`` seconds."""
    for i in range(steps):
        log.append(f"{name}{i}")
        if ticks is not None:
            ticks.now += took
        yield cost
    return name


def slices(chores: Chores, log: list[str]) -> list[list[str]]:
    """Run ``chores`` slice by slice; what each slice that did something did."""
    out = []
    while True:
        start = len(log)
        more = chores.run()
        if log[start:]:
            out.append(log[start:])
        if not more:
            return out


def test_a_slice_ends_after_its_units() -> None:
    chores = Chores(budget=4)
    driven(chores)
    log: list[str] = []
    chores.add(stepping(log, "t", 10))
    assert slices(chores, log) == [["t0", "t1", "t2", "t3"], ["t4", "t5", "t6", "t7"], ["t8", "t9"]]


def test_a_slice_ends_after_its_time_whatever_its_units() -> None:
    ticks = Ticks()
    chores = Chores(budget=1_000_000, seconds=0.002)
    chores.timer = ticks
    driven(chores)
    log: list[str] = []
    # Steps of 0.7 ms: the third takes the slice past 2 ms, and ends it.
    chores.add(stepping(log, "t", 8, ticks=ticks, took=0.0007))
    assert slices(chores, log) == [["t0", "t1", "t2"], ["t3", "t4", "t5"], ["t6", "t7"]]


def test_a_slice_of_cheap_steps_ends_on_its_units_before_its_time() -> None:
    ticks = Ticks()
    chores = Chores(budget=3, seconds=0.002)
    chores.timer = ticks
    driven(chores)
    log: list[str] = []
    chores.add(stepping(log, "t", 5, ticks=ticks, took=0.0001))
    assert slices(chores, log) == [["t0", "t1", "t2"], ["t3", "t4"]]


def test_chores_take_turns_a_slice_each_admin_work_among_them() -> None:
    """An admin operation's step is sized to be a slice: it and a teardown of cheap steps
    go in turn, each slice one's, so neither holds the other back."""
    ticks = Ticks()
    chores = Chores(budget=BUDGET, seconds=0.002)
    chores.timer = ticks
    driven(chores)
    log: list[str] = []
    chores.add(stepping(log, "teardown.", 2 * BUDGET + 10, cost=1, ticks=ticks, took=0.000001))
    chores.add(stepping(log, "move.", 3, cost=STEP, ticks=ticks, took=0.001))
    done = slices(chores, log)
    owners = [{entry.split(".")[0] for entry in part} for part in done]
    assert owners == [{"teardown"}, {"move"}, {"teardown"}, {"move"}, {"teardown", "move"}]
    assert [len(part) for part in done] == [BUDGET, 1, BUDGET, 1, 11]


def test_a_slow_step_ends_the_slice_and_the_next_slice_is_another_s() -> None:
    """An admin step that runs long (5 ms: a batch of moves) is not cut, but the slice is
    over after it: the next one starts with the teardown that waited."""
    ticks = Ticks()
    chores = Chores(budget=BUDGET, seconds=0.002)
    chores.timer = ticks
    driven(chores)
    log: list[str] = []
    chores.add(stepping(log, "move.", 2, cost=1, ticks=ticks, took=0.005))
    chores.add(stepping(log, "teardown.", 3, cost=1, ticks=ticks, took=0.0001))
    assert slices(chores, log) == [["move.0"], ["teardown.0", "teardown.1", "teardown.2", "move.1"]]


def test_a_chore_that_waits_is_set_aside_and_comes_back_at_the_end_of_the_line() -> None:
    chores = Chores(budget=2)
    woken = driven(chores)
    log: list[str] = []
    read = Wait()

    def reading() -> Steps[str]:
        log.append("asked")
        yield read
        log.append("read")
        yield 1
        return "page"

    answers: list[Outcome[str]] = []
    chores.add(reading(), answers.append)
    chores.add(stepping(log, "t", 4))
    assert woken == [1]
    assert chores.run()  # asks for its read (a unit), then the other goes on
    assert log == ["asked", "t0"]
    assert chores.run()
    assert log == ["asked", "t0", "t1", "t2"]
    # The other one ends: nothing is ready, no slice is asked for until the read is back.
    assert not chores.run()
    assert log[-1] == "t3"
    assert len(woken) == 1
    read.resume()
    assert len(woken) == 2
    assert not chores.run()
    assert log[-1] == "read"
    assert answers == [Ok("page")]


def test_a_wait_already_done_when_yielded_costs_a_unit_and_the_chore_goes_on() -> None:
    chores = Chores(budget=3)
    driven(chores)
    log: list[str] = []

    def inline() -> Steps[None]:
        for i in range(5):
            done = Wait()
            done.resume()  # an inline worker: the job is done as it is asked for
            log.append(f"r{i}")
            yield done

    chores.add(inline())
    assert slices(chores, log) == [["r0", "r1", "r2"], ["r3", "r4"]]


def test_an_answer_is_the_return_value_or_what_was_raised_and_a_failure_nobody_asked_for_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chores = Chores()
    driven(chores)

    def failing() -> Steps[None]:
        yield 1
        raise ValueError("no such thing")

    answers: list[Outcome[object]] = []
    chores.add(failing(), answers.append)
    with caplog.at_level(logging.ERROR, logger="stompd.engine"):
        chores.run_all()
        assert caplog.records == []
        chores.add(failing())
        chores.run_all()
    (answer,) = answers
    assert isinstance(answer, Failed) and str(answer.error) == "no such thing"
    assert [record.getMessage() for record in caplog.records] == ["a background task of the broker failed"]


@pytest.mark.parametrize("when", ["ready", "waiting"])
def test_a_cancelled_chore_stops_its_clean_up_runs_and_nobody_is_answered(when: str) -> None:
    chores = Chores(budget=1)
    driven(chores)
    read = Wait()
    cleaned: list[str] = []

    def walk() -> Steps[str]:
        try:
            yield 1
            yield read
            yield 1
        finally:
            cleaned.append("closed")
        return "never"

    answers: list[Outcome[str]] = []
    chore = chores.add(walk(), answers.append)
    chores.run()  # its first step
    if when == "waiting":
        chores.run()  # it asks for the read
        assert not chores
    chore.cancel()
    assert cleaned == ["closed"] and chore.over
    read.resume()
    chores.run_all()
    assert answers == []


def test_a_chore_cancelled_by_its_own_step_is_closed_after_it() -> None:
    chores = Chores()
    driven(chores)
    cleaned: list[str] = []
    chore_box: list[object] = []

    def walk() -> Steps[None]:
        try:
            chore_box[0].cancel()  # type: ignore[attr-defined]
            yield 1
            yield 1
        finally:
            cleaned.append("closed")

    answers: list[Outcome[None]] = []
    chore_box.append(chores.add(walk(), answers.append))
    chores.run_all()
    assert cleaned == ["closed"] and answers == []


def test_without_a_wake_a_chore_runs_as_soon_as_it_is_ready() -> None:
    """A core driven by a test has no loop to come back on: at once when added, and on
    when what it waits for is done."""
    chores = Chores(budget=1)
    read = Wait()
    log: list[str] = []

    def reading() -> Steps[None]:
        log.append("asked")
        yield read
        log.append("read")
        yield 1
        log.append("done")

    chores.add(reading())
    assert log == ["asked"]
    read.resume()
    assert log == ["asked", "read", "done"]
