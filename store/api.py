"""Everything the broker may ask of the stores: the one way in from ``broker.core``.

Three stores stand behind this API, each with a LevelDB implementation and one in
memory (``store.memory``: unit tests, tools, a broker without a data directory):

* ``MessageStore``: persistent messages, durable subscriptions, scheduled jobs and the
  counters recovery reads.  Writes are built into a ``Batch`` and handed to ``submit``;
  ``on_durable`` runs once the batch is durable (the LevelDB store posts it to the
  broker's loop; the memory store runs it at once).  Reads see every batch submitted.
* ``TempStore``: swapped-out records, keyed by (log, priority, sequence).
* ``Worker``: runs jobs off the event loop; each job's outcome comes back through the
  worker's ``post`` as a value, ``Ok`` or ``Failed``, that the waiting code must look
  at: a failure is never only logged while someone waits for the result (a cursor
  for its page-in, a queue for its disk scan).

Records are opaque bytes here: what a message looks like is the broker's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeAlias, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

T = TypeVar("T")

#: Priorities 0-9: every per-priority count has this many entries.
LEVELS = 10


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


class Batch:
    """Writes to submit together: the last operation on a key wins, in call order.

    A value of None is a delete.  Builders append to one ``Batch`` so that, say, two
    acks of one shared message (a refcount put, then its delete) compose correctly,
    which two plain (puts, deletes) lists applied deletes-first would not.
    """

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: dict[bytes, bytes | None] = {}

    def put(self, key: bytes, value: bytes) -> None:
        self.ops[key] = value

    def delete(self, key: bytes) -> None:
        self.ops[key] = None

    @property
    def puts(self) -> list[tuple[bytes, bytes]]:
        return [(k, v) for k, v in self.ops.items() if v is not None]

    @property
    def deletes(self) -> list[bytes]:
        return [k for k, v in self.ops.items() if v is None]

    def __len__(self) -> int:
        return len(self.ops)


# -- what recovery reads ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DestinationRecord:
    id: int
    kind: str
    name: str
    #: Stored messages per priority (index = priority) and their value bytes.
    counts: tuple[int, ...]
    bytes: int


@dataclass(frozen=True, slots=True)
class SubscriptionRecord:
    """A durable subscription as stored: the broker's ``data`` beside its name."""

    id: int
    client_id: str
    name: str
    data: bytes
    #: Messages owed per priority (pages with ``page_subscription_marked``).
    pending: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Recovery:
    destinations: list[DestinationRecord]
    subscriptions: list[SubscriptionRecord]
    #: Removed subscriptions whose pointers are still to release (``pointers`` + ``ack_shared``).
    draining: list[int]
    next_seq: int
    scheduled_count: int
    scheduled_bytes: int
    next_due_ms: int | None
    used_bytes: int


# -- the stores --------------------------------------------------------------------------


class MessageStore(Protocol):
    """Persistent messages (``store.persistent`` documents the keyspaces).

    Builders (the methods taking a ``Batch``) and the counters belong to one thread,
    the broker's; reads (``page_*``, ``pointers``, ``scheduled``) run on any thread,
    normally the worker's, and see every batch submitted so far.
    """

    @property
    def used_bytes(self) -> int:
        """Value bytes stored (messages and scheduled jobs): what ``storeUsage`` meters."""
        ...

    def recover(self) -> Recovery: ...

    def submit(self, batch: Batch, on_durable: Callable[[], None] | None = None) -> None:
        """Write ``batch`` (batches are written whole and in order); ``on_durable`` once it is."""

    def claim(self, seq: int) -> None:
        """``seq`` (handed out by the broker) is in use: no restart hands it out again."""

    def pending_of(self, sub_id: int) -> tuple[int, ...]: ...

    # builders
    def add_destination(self, batch: Batch, kind: str, name: str) -> int: ...

    def remove_destination(self, batch: Batch, dest_id: int) -> None:
        """Forget a destination that holds no message (its record and counters), so that
        recovery does not bring it back; ValueError if the store still counts messages."""

    def add_messages(
        self, batch: Batch, dest_id: int, messages: Iterable[tuple[int, int, bytes]]
    ) -> None: ...

    def remove_messages(
        self, batch: Batch, dest_id: int, messages: Iterable[tuple[int, int, int]], *, marks: bool = True
    ) -> None: ...

    def mark_dispatched(
        self, batch: Batch, dest_id: int, priority: int, seq: int, deliveries: int
    ) -> None: ...

    def put_subscription(self, batch: Batch, client_id: str, name: str, data: bytes) -> int: ...

    def remove_subscription(self, batch: Batch, client_id: str, name: str) -> int | None: ...

    def add_shared(
        self, batch: Batch, dest_id: int, priority: int, seq: int, value: bytes, sub_ids: Sequence[int]
    ) -> None: ...

    def ack_shared(self, batch: Batch, sub_id: int, refs: Iterable[tuple[int, int, int]]) -> None: ...

    def mark_pointer(
        self, batch: Batch, sub_id: int, dest_id: int, priority: int, seq: int, deliveries: int
    ) -> None: ...

    def add_scheduled(self, batch: Batch, due_ms: int, seq: int, value: bytes) -> None: ...

    def remove_scheduled(self, batch: Batch, due_ms: int, seq: int, size: int) -> None: ...

    # reads
    def page_marked(
        self, dest_id: int, priority: int, lo_seq: int, hi_seq: int, limit: int
    ) -> list[tuple[int, bytes, int]]: ...

    def page_subscription_marked(
        self, sub_id: int, priority: int, lo_seq: int, hi_seq: int, limit: int
    ) -> list[tuple[int, int, bytes, int]]: ...

    def pointers(self, sub_id: int, limit: int) -> list[tuple[int, int, int]]: ...

    def scheduled(
        self, until_ms: int, limit: int, after: tuple[int, int] | None = None
    ) -> list[tuple[int, int, bytes]]: ...


class TempStore(Protocol):
    """Swapped-out records, each under (log, priority, sequence): a range read of one
    log's level yields sequence order, which is the order a cursor dispatches in.

    A write that fails is kept in RAM (and read from there) until a retry writes it,
    so what was handed to ``put`` is never lost.
    """

    def put(self, records: Iterable[tuple[int, int, int, bytes]]) -> None:
        """Write (log, priority, seq, record) records."""

    def read(
        self, log: int, priority: int, lo: int, hi: int, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (seq, record) of ``log`` at ``priority`` with lo <= seq <= hi, in order."""
        ...

    def read_values(self, log: int, priority: int, lo: int, hi: int, limit: int | None = None) -> list[bytes]:
        """``read`` without the sequences (a record that holds its own: a walk over a deep log)."""
        ...

    def delete(self, records: Iterable[tuple[int, int, int]], size: int = 0) -> None:
        """Delete (log, priority, seq) records; ``size``: the record bytes they held, if
        known (what the store's clean-up of consumed records is paced by)."""

    def delete_below(self, log: int, priority: int, seq: int) -> int:
        """Delete ``log``'s records at ``priority`` below ``seq``; the record bytes freed."""
        ...

    def delete_log(self, log: int) -> int:
        """Delete every record of ``log``; the record bytes freed."""
        ...

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


@dataclass(frozen=True, slots=True)
class Stores:
    """What a broker core runs over: ``store.memory.memory_stores()`` or the LevelDB ones."""

    messages: MessageStore
    temp: TempStore
    worker: Worker
