"""Admin work done a bounded step at a time, without an event loop in the core.

A piece of work is a generator (``Steps``): each ``next`` runs one step, a slice of a
list or one batch of an operation, and yields what the driver must wait for before the
next: None (only let the loop serve others), or a ``Wait`` that a disk job resumes.
Its return value is the work's answer.  The driver is the edge's
(``broker.http.slices.finish`` awaits between steps); the core never holds the loop for
more than a step, however many destinations, connections or messages there are.

A method that returns ``Steps`` checks its arguments before it returns (so a refusal
is raised at the call, not at the first step), then hands back a generator.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

T = TypeVar("T")
R = TypeVar("R")

#: Items per step of a list: a millisecond or two of work each.
SLICE: Final = 500


class Wait:
    """A job under way (a disk read): the driver waits for ``resume`` before the next step."""

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


Steps: TypeAlias = Generator[Wait | None, None, T]


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
            yield None
    return out


def ordered(items: list[T], key: Callable[[T], Any]) -> Steps[list[T]]:
    """``items`` sorted by ``key``: each slice sorted alone, then merged a slice at a time
    (one ``sort`` of them all would hold the loop as long as it takes)."""
    runs = []
    for start in range(0, len(items), SLICE):
        runs.append(sorted(items[start : start + SLICE], key=key))
        yield None
    out: list[T] = []
    for count, item in enumerate(heapq.merge(*runs, key=key), 1):
        out.append(item)
        if count % SLICE == 0:
            yield None
    return out
