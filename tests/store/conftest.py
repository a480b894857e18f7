"""Fixtures for the store contract suite: every store test runs on each database the
stores are built on, LevelDB in a temporary directory and ``store.memory`` (as
nats-server runs its store tests on its file and memory stores)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from store.api import Batch
from store.database import Database
from store.leveldb import LevelDB
from store.memory import MemoryDatabase, memory_message_store
from store.persistent import MessageStore

DATABASES = ["memory", "leveldb"]


def run_now(callback: Callable[[], None]) -> None:
    """``post`` for tests: run the callback on the writer thread at once."""
    callback()


class Opened:
    """A message store with its committer running, on ``kind``'s database, reopened at will."""

    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path
        #: The memory store's database outlives each store opened on it, as files do.
        self.memory = MemoryDatabase() if kind == "memory" else None
        self.errors: list[BaseException] = []
        self.store = self._open()

    def database(self) -> Database:
        """The database under the store (a new handle on the files, for LevelDB)."""
        return self.memory if self.memory is not None else LevelDB(self.path, sync=True)

    def _open(self) -> MessageStore:
        if self.memory is not None:
            return memory_message_store(self.memory)
        store = MessageStore.open(self.path)
        store.start_committer(run_now, self.errors.append)
        return store

    def apply(self, batch: Batch) -> None:
        self.store.submit(batch)
        committer = self.store.committer
        assert committer is not None
        assert committer.flush_wait(10)  # type: ignore[attr-defined]

    @contextmanager
    def batch(self) -> Iterator[Batch]:
        """A batch for builders, written (and durable) when the block ends."""
        batch = Batch()
        yield batch
        self.apply(batch)

    def reopen(self) -> MessageStore:
        self.store.close()
        self.store = self._open()
        return self.store

    def close(self) -> None:
        self.store.close()


@pytest.fixture(params=DATABASES)
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opened]:
    handle = Opened(request.param, tmp_path / "store")
    try:
        yield handle
    finally:
        handle.close()
    assert handle.errors == []


@pytest.fixture(params=DATABASES)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """An empty database of each kind (LevelDB opened lazily, as the temp store's is)."""
    db: Database = MemoryDatabase() if request.param == "memory" else LevelDB(tmp_path / "db", lazy=True)
    yield db
    db.close()
