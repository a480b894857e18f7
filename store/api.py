"""What the broker may ask of a temp store (and of the worker that runs its jobs).

Jobs run on the worker's thread; results come back through the worker's ``post``.
Keys are ``store.keys.message_key`` keys; values are opaque bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

T = TypeVar("T")


class TempStore(Protocol):
    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None: ...

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]: ...

    def delete_range(self, start: bytes, stop: bytes) -> int: ...

    def close(self) -> None: ...


class Worker(Protocol):
    pending: int

    def submit(
        self,
        job: Callable[[], T],
        done: Callable[[T], None],
        failed: Callable[[BaseException], None] | None = None,
    ) -> None: ...

    def close(self, timeout: float = 30.0) -> None: ...
