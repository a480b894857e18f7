"""Work too big for one turn of the event loop, done in slices between other clients' work.

Every piece of background work of the core is a chore, and every chore is ``Steps``: a
generator that does its work a step at a time and yields, after each step, what that step
cost, in units of about one subscription torn down (a few microseconds), or a ``Wait``: a
job under way (a disk read, a RECEIPT) that must be done before its next step.  Its return
value is its answer.  The chores: a connection's teardown, a topic's fan-out past
``FAN_OUT_STEP`` subscribers, gc's and the history sampler's passes over the destinations,
a STOMP queue browser's walk, and everything the admin service does that grows with the
broker (a list built and sorted, a move over a queue, a batch at a time).

``Chores.run`` does one slice: steps of the chores that are ready, in turn, until
``budget`` units are spent or, with a ``timer`` (the edge passes a perf counter in),
``seconds`` have gone, whichever comes first.  The chore whose step ended the slice goes
to the back of the line, so the next slice starts with another: a long teardown does not
hold a fan-out or an admin move back, nor the other way round.  A chore that waits is set
aside until its ``Wait`` is resumed, then joins the back of the line.  The edge calls
``run`` again (``wake`` asks it to) until no chore is ready.

A step is never cut: one that costs more than a slice (an admin step, a batch of up to a
thousand messages, is sized to be about one) ends the slice it is in.

Without a ``wake`` (the core driven by a test, with no event loop to come back on) a
chore runs as soon as it is ready: to its end, or to what it waits for, when it is added,
and on from there when that is done.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Final, Generic, TypeAlias, TypeVar

from store.api import Failed, Ok

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from store.api import Outcome

log = logging.getLogger("stompd.engine")

T = TypeVar("T")
R = TypeVar("R")

#: Units of work per slice: about 1-2 ms of it on this project's reference machine.
BUDGET: Final = 256
#: The longest a slice goes on with a ``timer``: as long as a connection's turn
#: (broker/io/connection.py ``TURN_SECONDS``), so no other client waits longer for either.
SECONDS: Final = 0.002
#: What a step sized to be a slice costs (a ``SLICE`` of a list, an admin operation's batch).
STEP: Final = BUDGET
#: Items per step of a list: a millisecond or two of work each.
SLICE: Final = 500


class Wait:
    """A job under way (a disk read, a RECEIPT): the chore that yields it goes on once
    ``resume`` is called (at once, if it was before the chore yielded it)."""

    __slots__ = ("_then", "done")

    def __init__(self) -> None:
        self.done = False
        self._then: Callable[[], None] | None = None

    def resume(self) -> None:
        self.done = True
        then, self._then = self._then, None
        if then is not None:
            then()

    def then(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once resumed (now, if it has been)."""
        if self.done:
            callback()
        else:
            self._then = callback


#: A chore: each step yields its cost (units) or a ``Wait``; it returns its answer.
Steps: TypeAlias = Generator[int | Wait, None, T]

_READY: Final = 0
_RUNNING: Final = 1
_WAITING: Final = 2
_OVER: Final = 3


class Chore(Generic[T]):
    """One piece of work in the line (``Chores.add``), and who wants its answer."""

    __slots__ = ("_answer", "_chores", "_state", "_steps")

    def __init__(self, chores: Chores, steps: Steps[T], answer: Callable[[Outcome[T]], None] | None) -> None:
        self._chores = chores
        self._steps = steps
        self._answer = answer
        self._state = _READY

    @property
    def over(self) -> bool:
        return self._state == _OVER

    def cancel(self) -> None:
        """Stop it: nobody wants its answer any more (the HTTP client left).  Its clean-up
        (the generator's ``finally``) runs now, or after its step if it is running."""
        state = self._state
        self._state = _OVER
        if state in (_READY, _WAITING):
            # A ready one is passed over when the line reaches it; a waiting one is not
            # put back when what it waits for is done.
            self._close()
        # _RUNNING: ``Chores.run`` closes it once its step is over.

    def _close(self) -> None:
        try:
            self._steps.close()
        except Exception:
            log.exception("a background task of the broker failed as it was stopped")

    def _end(self, outcome: Outcome[T]) -> None:
        self._state = _OVER
        answer = self._answer
        if answer is None:
            if isinstance(outcome, Failed):
                # A bug in one chore must not stop the others, nor the loop.
                log.error("a background task of the broker failed", exc_info=outcome.error)
            return
        try:
            answer(outcome)
        except Exception:
            log.exception("a background task's answer could not be given")

    def _resumed(self) -> None:
        if self._state == _WAITING:
            self._state = _READY
            self._chores._line_up(self)


class Chores:
    __slots__ = ("_asked", "_ready", "_running", "budget", "seconds", "timer", "turn", "wake")

    def __init__(self, budget: int = BUDGET, seconds: float = SECONDS) -> None:
        self._ready: deque[Chore[Any]] = deque()
        self._running = False
        #: ``wake`` was called and its ``run`` has not come yet.
        self._asked = False
        self.budget = budget
        self.seconds = seconds
        #: Set by the edge: seconds of a monotonic clock (``time.perf_counter``), read
        #: between steps to end a slice after ``seconds`` (None: slices are counted only).
        self.timer: Callable[[], float] | None = None
        #: Slices run so far: a chore that keeps a fact between steps knows from this when
        #: other clients' work may have changed it.
        self.turn = 0
        #: Set by the edge: ask for ``run`` to be called soon (None: run chores at once).
        self.wake: Callable[[], object] | None = None

    def __bool__(self) -> bool:
        """Some chore is ready to go on."""
        return bool(self._ready)

    def add(self, steps: Steps[T], answer: Callable[[Outcome[T]], None] | None = None) -> Chore[T]:
        """Run ``steps`` between other clients' work; ``answer`` gets its outcome (``Ok``
        with its return value, or ``Failed``; None: a failure is logged)."""
        chore = Chore(self, steps, answer)
        self._line_up(chore)
        return chore

    def _line_up(self, chore: Chore[Any]) -> None:
        self._ready.append(chore)
        if self._running:
            return  # ``run`` says there is more
        if self.wake is None:
            self.run_all()
        elif not self._asked:
            self._asked = True
            self.wake()

    def run(self) -> bool:
        """One slice of work; True if some is ready (call again soon)."""
        self._asked = False
        self.turn += 1
        self._running = True
        try:
            self._slice()
        finally:
            self._running = False
        more = bool(self._ready)
        # The edge calls again on True: no ``wake`` is needed meanwhile.
        self._asked = more
        return more

    def _slice(self) -> None:
        ready = self._ready
        budget = self.budget
        timer = self.timer
        deadline = timer() + self.seconds if timer is not None else 0.0
        spent = 0
        while ready:
            chore = ready[0]
            if chore._state != _READY:
                ready.popleft()  # cancelled while it stood in line
                continue
            chore._state = _RUNNING
            try:
                step = next(chore._steps)
            except StopIteration as end:
                ready.popleft()
                if chore._state == _RUNNING:  # else cancelled by its own last step
                    chore._end(Ok(end.value))
                continue
            except Exception as exc:
                ready.popleft()
                if chore._state == _RUNNING:
                    chore._end(Failed(exc))
                continue
            if chore._state == _OVER:
                # Cancelled by its own step (say, the connection it browses for closed).
                ready.popleft()
                chore._close()
                continue
            chore._state = _READY
            if isinstance(step, Wait):
                # Asking for a job is a unit of work; a Wait resumed already (a RECEIPT) no wait.
                spent += 1
                if not step.done:
                    ready.popleft()
                    chore._state = _WAITING
                    step.then(chore._resumed)
            else:
                spent += step
            if spent >= budget or (timer is not None and timer() >= deadline):
                if ready and ready[0] is chore:
                    # Its turn is over: the others go first next time.
                    ready.rotate(-1)
                return

    def run_all(self) -> None:
        """Everything ready, now (a stop, or a core with no loop to come back on); what
        waits for a job goes on when that is done."""
        while self.run():
            pass


# -- steps that build a list a slice at a time --------------------------------------------


def value(result: T) -> Steps[T]:
    """Work that is done already: ``result``, in no step."""
    yield from ()
    return result


def collect(items: Iterable[T], make: Callable[[T], R]) -> Steps[list[R]]:
    """``make(item)`` for each of ``items`` (a list taken now: it may change meanwhile)."""
    out: list[R] = []
    for count, item in enumerate(list(items), 1):
        out.append(make(item))
        if count % SLICE == 0:
            yield STEP
    return out


def ordered(items: list[T], key: Callable[[T], Any]) -> Steps[list[T]]:
    """``items`` sorted by ``key``: each slice sorted alone, then merged a slice at a time
    (one ``sort`` of them all would hold the loop as long as it takes)."""
    runs = []
    for start in range(0, len(items), SLICE):
        runs.append(sorted(items[start : start + SLICE], key=key))
        yield STEP
    out: list[T] = []
    for count, item in enumerate(heapq.merge(*runs, key=key), 1):
        out.append(item)
        if count % SLICE == 0:
            yield STEP
    return out
