"""What the broker may ask of a temp store (and of the worker that runs its jobs).

Jobs run on the worker's thread; each job's outcome comes back through the worker's
``post`` as a value, ``Ok`` or ``Failed``, that the waiting code must look at: a
failure is never only logged while someone waits for the result (a cursor for its
page-in, a queue for its disk scan).  Keys are ``store.keys.message_key`` keys;
values are opaque bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeAlias, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Ok(Generic[T]):
    """A job that ran to the end, and what it returned."""

    value: T


@dataclass(frozen=True, slots=True)
class Failed:
    """A job that raised: what it raised (the waiting code decides: retry, give up, report)."""

    error: BaseException


#: What a job's ``done`` receives: narrow it (``isinstance(outcome, Failed)``) before use.
Outcome: TypeAlias = Ok[T] | Failed


class TempStore(Protocol):
    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None: ...

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]: ...

    def delete_range(self, start: bytes, stop: bytes) -> int: ...

    @property
    def held_bytes(self) -> int:
        """Bytes of records whose write failed, kept in RAM (and read from there) until a
        retry writes them; read on the worker thread, after a job."""
        ...

    def retry(self) -> bool:
        """Write what a failed write left held, if a retry is due; True if nothing is held."""
        ...

    def close(self) -> None: ...


class Worker(Protocol):
    pending: int

    def submit(self, job: Callable[[], T], done: Callable[[Outcome[T]], None]) -> None: ...

    def close(self, timeout: float = 30.0) -> None: ...
