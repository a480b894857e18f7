"""Per-destination policies in the engine: each destination's own maxPageSize."""

from __future__ import annotations

from broker.core.base.clock import Clock
from broker.core.base.settings import CoreSettings, DestinationPolicy
from broker.core.engine import Engine
from store.api import Stores
from store.memory import memory_message_store
from store.temp import TempStore
from store.worker import DeferredWorker
from tests.broker.harness import Peer
from tests.broker.support import CountingStore, bodies, send

KB = 1024


class PageCounter(CountingStore):
    def __init__(self) -> None:
        super().__init__()
        self.pages = 0

    def range(self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False):  # type: ignore[no-untyped-def]
        self.pages += 1
        return super().range(start, stop, limit, keys_only=keys_only)


def pages_to_drain(destination: str) -> int:
    def policies(kind: str, name: str) -> DestinationPolicy:
        return DestinationPolicy(page_size=10 if name.startswith("SMALL") else None)

    store = PageCounter()
    core = CoreSettings(memory_limit=64 * KB, page_size=50, policies=policies)
    stores = Stores(messages=memory_message_store(), temp=TempStore(store), worker=DeferredWorker())
    engine = Engine(core, Clock(1_000_000), stores=stores)
    send(Peer(engine), destination, 300)
    swapped = engine.queues[destination].cursor.disk_total
    assert swapped > 200
    before = store.pages
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": destination, "id": "1"})
    assert bodies(consumer) == list(range(300))
    return store.pages - before


def test_a_destination_pages_in_its_own_max_page_size() -> None:
    small, other = pages_to_drain("/queue/SMALL.q"), pages_to_drain("/queue/OTHER.q")
    # Over 200 swapped messages: pages of 10 against the default entry's 50.
    assert small >= 20 and other <= 6, (small, other)
