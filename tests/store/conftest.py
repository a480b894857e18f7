"""Fixtures for the persistent store: a real LevelDB in a temporary directory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from store.commit import Batch
from store.persistent import MessageStore


def run_now(callback: Callable[[], None]) -> None:
    """``post`` for tests: run the callback on the writer thread at once."""
    callback()


class Opened:
    """A store with a running committer, reopened at will."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[BaseException] = []
        self.store = self._open()

    def _open(self) -> MessageStore:
        store = MessageStore.open(self.path)
        store.start_committer(run_now, self.errors.append)
        return store

    def apply(self, batch: Batch) -> None:
        committer = self.store.committer
        assert committer is not None
        committer.submit_batch(batch)
        assert committer.flush_wait(10)

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


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Opened]:
    handle = Opened(tmp_path / "store")
    try:
        yield handle
    finally:
        handle.close()
    assert handle.errors == []
