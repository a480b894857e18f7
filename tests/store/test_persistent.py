"""The persistent store's contract: order, counters, recovery, subscriptions, schedule, errors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from store import keys
from store.api import Batch
from store.database import Database
from store.errors import StoreCorrupt, StoreError
from store.persistent import MessageStore
from tests.store.conftest import Opened


def queue(opened: Opened, name: str = "q") -> int:
    with opened.batch() as batch:
        return opened.store.add_destination(batch, "queue", name)


def put(opened: Opened, dest: int, messages: list[tuple[int, int, bytes]]) -> None:
    with opened.batch() as batch:
        opened.store.add_messages(batch, dest, messages)


def drain(store: MessageStore, dest: int, page: int = 7) -> list[tuple[int, int]]:
    """Every (priority, seq) of ``dest`` in dispatch order, paging as a cursor does."""
    out: list[tuple[int, int]] = []
    for priority in range(9, -1, -1):
        lo = 0
        while rows := store.page(dest, priority, lo, page):
            out.extend((priority, seq) for seq, _ in rows)
            lo = rows[-1][0] + 1
    return out


def test_pages_in_priority_then_fifo_order(opened: Opened) -> None:
    dest = queue(opened)
    other = queue(opened, "other")
    rng = random.Random(1)
    messages = [(rng.randrange(10), seq, b"v%d" % seq) for seq in opened.store.reserve_sequences(200)]
    put(opened, dest, messages)
    put(opened, other, [(9, 10_000, b"elsewhere")])
    assert drain(opened.store, dest) == sorted(((p, s) for p, s, _ in messages), key=lambda m: (-m[0], m[1]))
    top = max(p for p, _, _ in messages)
    first = [s for p, s, _ in messages if p == top]
    assert opened.store.page(dest, top, first[1], 2) == [(s, b"v%d" % s) for s in first[1:3]]


def test_delete_and_counters_survive_reopen(opened: Opened) -> None:
    dest = queue(opened)
    seqs = opened.store.reserve_sequences(30)
    put(opened, dest, [(seq % 3, seq, b"x" * (seq % 7 + 1)) for seq in seqs])
    gone = [(seq % 3, seq, seq % 7 + 1) for seq in seqs[:12]]
    with opened.batch() as batch:
        opened.store.remove_messages(batch, dest, gone)
    left = seqs[12:]
    expected_counts = [sum(1 for s in left if s % 3 == p) for p in range(10)]
    expected_bytes = sum(s % 7 + 1 for s in left)
    assert opened.store.counters(dest).counts == expected_counts
    store = opened.reopen()
    (recovered,) = store.recover().destinations
    assert (recovered.id, recovered.kind, recovered.name) == (dest, "queue", "q")
    assert list(recovered.counts) == expected_counts
    assert recovered.bytes == expected_bytes == store.used_bytes
    assert sorted(s for _, s in drain(store, dest)) == list(left)


class CountingDB:
    """A database that counts what is read from it, and whether any message was."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.path = db.path
        self.rows = 0
        self.gets = 0
        self.message_rows = 0

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        rows = self.db.range(start, stop, limit, keys_only=keys_only)
        self.rows += len(rows)
        self.message_rows += sum(1 for k, v in rows if k.startswith(keys.MESSAGE) and v)
        return rows

    def get(self, key: bytes) -> bytes | None:
        self.gets += 1
        return self.db.get(key)

    def write(self, puts: object = (), deletes: object = ()) -> None:
        raise AssertionError("recovery must not write")

    def close(self) -> None:
        self.db.close()


def test_recovery_reads_records_and_counters_not_messages(opened: Opened) -> None:
    dests = [queue(opened, f"q{i}") for i in range(3)]
    body = b"m" * 100
    for chunk in range(50):
        seqs = opened.store.reserve_sequences(1000)
        dest = dests[chunk % 3]
        put(opened, dest, [(seq % 10, seq, body) for seq in seqs])
    opened.close()
    counting = CountingDB(opened.database())
    store = MessageStore(counting)  # type: ignore[arg-type]
    recovery = store.recover()
    assert sum(sum(d.counts) for d in recovery.destinations) == 50_000
    assert recovery.used_bytes == 50_000 * len(body)
    assert counting.message_rows == 0
    # A handful of records however many messages: g, 3 d, 3 c, nothing else.
    assert counting.rows + counting.gets < 20
    store.close()


def test_sequences_never_repeat_across_reopen(opened: Opened) -> None:
    dest = queue(opened)
    opened.store.seq_block = 50
    used: list[int] = []
    for _ in range(4):
        for size in (1, 30, 70):
            seqs = opened.store.reserve_sequences(size)
            put(opened, dest, [(4, seq, b"") for seq in seqs])
            used.extend(seqs)
        store = opened.reopen()
        store.seq_block = 50
        assert store.recover().next_seq > max(used)
    assert len(set(used)) == len(used)


def test_a_message_rewritten_in_place_keeps_its_place_and_its_count(opened: Opened) -> None:
    dest = queue(opened)
    put(opened, dest, [(4, 1, b"first"), (4, 2, b"second")])
    with opened.batch() as batch:
        opened.store.replace_message(batch, dest, 4, 1, 5, b"first, delivered twice")
    store = opened.reopen()
    assert store.page(dest, 4, 0, 10) == [(1, b"first, delivered twice"), (2, b"second")]
    assert store.counters(dest).counts[4] == 2
    assert store.used_bytes == len(b"first, delivered twice") + 6


def test_dispatch_marks_keep_the_delivery_count_across_reopen(opened: Opened) -> None:
    dest = queue(opened)
    seqs = opened.store.reserve_sequences(4)
    put(opened, dest, [(4, seq, b"m") for seq in seqs])
    with opened.batch() as batch:
        opened.store.mark_dispatched(batch, dest, 4, seqs[1], 1)
        opened.store.mark_dispatched(batch, dest, 4, seqs[2], 3)
        opened.store.mark_dispatched(batch, dest, 4, seqs[3], 300)
    with opened.batch() as batch:
        opened.store.mark_dispatched(batch, dest, 4, seqs[2], 4)  # dispatched once more
    store = opened.reopen()
    rows = store.page_marked(dest, 4, seqs[0], seqs[-1], 10)
    assert [(seq, deliveries) for seq, _, deliveries in rows] == list(zip(seqs, [0, 1, 4, 300], strict=True))
    # The first format's mark was empty: one delivery.
    x_key = b"x" + keys.message_key(dest, 4, seqs[0])[1:]
    with opened.batch() as batch:
        batch.put(x_key, b"")
    assert store.page_marked(dest, 4, seqs[0], seqs[0], 1)[0][2] == 1


def test_a_durable_subscribers_pointer_keeps_its_delivery_count(opened: Opened) -> None:
    topic = queue(opened, "t")
    with opened.batch() as batch:
        sub = opened.store.put_subscription(batch, "client", "sub", b"")
    (seq,) = opened.store.reserve_sequences(1)
    with opened.batch() as batch:
        opened.store.add_shared(batch, topic, 4, seq, b"m", [sub])
    assert opened.store.page_subscription_marked(sub, 4, 0, seq, 10) == [(seq, topic, b"m", 0)]
    with opened.batch() as batch:
        opened.store.mark_pointer(batch, sub, topic, 4, seq, 2)
    store = opened.reopen()
    assert store.page_subscription_marked(sub, 4, 0, seq, 10) == [(seq, topic, b"m", 2)]


def test_builders_refuse_an_unknown_destination(opened: Opened) -> None:
    with pytest.raises(KeyError, match="no destination 99"):
        opened.store.add_messages(Batch(), 99, [(4, 1, b"")])


def test_destination_ids_are_stable_and_removable(opened: Opened) -> None:
    q = queue(opened, "a")
    with opened.batch() as batch:
        t = opened.store.add_destination(batch, "topic", "a")
    assert t != q and opened.store.add_destination(Batch(), "queue", "a") == q
    put(opened, q, [(4, 1, b"x")])
    with pytest.raises(ValueError, match="still has messages"):
        opened.store.remove_destination(Batch(), q)
    with opened.batch() as batch:
        opened.store.remove_messages(batch, q, [(4, 1, 1)])
    with opened.batch() as batch:
        opened.store.remove_destination(batch, q)
    store = opened.reopen()
    assert store.destination_id("queue", "a") is None
    assert [d.name for d in store.recover().destinations] == ["a"]
    assert store.destination_id("topic", "a") == t
    assert store.add_destination(Batch(), "queue", "a") > t


def test_durable_subscription_records(opened: Opened) -> None:
    with opened.batch() as batch:
        sub = opened.store.put_subscription(batch, "client-1", "sub", b"/topic/a|price > 3")
        other = opened.store.put_subscription(batch, "client-1", "other", b"/topic/b")
    with opened.batch() as batch:
        assert opened.store.put_subscription(batch, "client-1", "sub", b"/topic/a") == sub
    store = opened.reopen()
    recovered = {(s.client_id, s.name): (s.id, s.data) for s in store.recover().subscriptions}
    assert recovered == {("client-1", "sub"): (sub, b"/topic/a"), ("client-1", "other"): (other, b"/topic/b")}
    with opened.batch() as batch:
        assert store.remove_subscription(batch, "client-1", "sub") is None
        assert store.remove_subscription(batch, "client-1", "missing") is None
    store = opened.reopen()
    assert [s.name for s in store.recover().subscriptions] == ["other"]
    with pytest.raises(ValueError, match="NUL"):
        store.put_subscription(Batch(), "bad\0id", "x", b"")


def subscriptions(opened: Opened, *names: str) -> list[int]:
    with opened.batch() as batch:
        return [opened.store.put_subscription(batch, "c", name, b"") for name in names]


def test_one_copy_serves_every_subscriber_and_goes_with_the_last_ack(opened: Opened) -> None:
    with opened.batch() as batch:
        topic = opened.store.add_destination(batch, "topic", "t")
    a, b, c = subscriptions(opened, "a", "b", "c")
    body = b"shared" * 100
    with opened.batch() as batch:
        opened.store.add_shared(batch, topic, 7, 1, body, [a, b, c])
    with opened.batch() as batch:
        opened.store.add_shared(batch, topic, 7, 2, b"only-c", [c])
    assert opened.store.used_bytes == len(body) + 6
    with opened.batch() as batch:
        opened.store.ack_shared(batch, a, [(topic, 7, 1)])
    with opened.batch() as batch:  # a duplicate: no effect
        opened.store.ack_shared(batch, a, [(topic, 7, 1)])
    store = opened.reopen()
    recovery = store.recover()
    assert {s.name: s.pending[7] for s in recovery.subscriptions} == {"a": 0, "b": 1, "c": 2}
    assert store.page(topic, 7, 0, 10) == [(1, body), (2, b"only-c")]
    assert store.page_subscription(c, 7, 0, 10) == [(1, topic, body), (2, topic, b"only-c")]
    assert store.page_subscription(a, 7, 0, 10) == []
    # Two acks of one message composed into one batch: the refcount's put, then its delete.
    with opened.batch() as batch:
        store.ack_shared(batch, b, [(topic, 7, 1)])
        store.ack_shared(batch, c, [(topic, 7, 1)])
    assert store.page(topic, 7, 0, 10) == [(2, b"only-c")]
    assert store.used_bytes == 6
    with opened.batch() as batch:
        opened.store.ack_shared(batch, c, [(topic, 7, 2)])
    store = opened.reopen()
    assert store.used_bytes == 0 and store.recover().destinations[0].counts == (0,) * 10
    # No message, refcount or pointer left behind.
    assert {key[:1] for key, _ in store.db.range(b"", b"\xff")} == {b"g", b"d", b"c", b"s", b"p"}


def test_unsubscribe_releases_pending_messages_even_across_a_restart(opened: Opened) -> None:
    with opened.batch() as batch:
        topic = opened.store.add_destination(batch, "topic", "t")
    gone, stays = subscriptions(opened, "gone", "stays")
    seqs = opened.store.reserve_sequences(25)
    for seq in seqs:
        with opened.batch() as batch:
            opened.store.add_shared(batch, topic, seq % 10, seq, b"x", [gone, stays])
    for seq in seqs[:5]:
        with opened.batch() as batch:
            opened.store.add_shared(batch, topic, seq % 10, seq + 1000, b"y", [gone])
    with opened.batch() as batch:
        assert opened.store.remove_subscription(batch, "c", "gone") == gone
    store = opened.reopen()
    assert store.recover().draining == [gone]
    assert [s.name for s in store.recover().subscriptions] == ["stays"]
    while rows := store.pointers(gone, 4):
        with opened.batch() as batch:
            store.ack_shared(batch, gone, rows)
    store = opened.reopen()
    recovery = store.recover()
    assert recovery.draining == []
    assert sum(recovery.destinations[0].counts) == 25
    assert store.used_bytes == 25
    assert sum(len(store.page_subscription(stays, p, 0, 100)) for p in range(10)) == 25


def test_a_subscription_pages_its_messages_across_destinations_in_order(opened: Opened) -> None:
    with opened.batch() as batch:
        t1 = opened.store.add_destination(batch, "topic", "a.1")
        t2 = opened.store.add_destination(batch, "topic", "a.2")
    (sub,) = subscriptions(opened, "wild")
    for seq in range(1, 11):
        with opened.batch() as batch:
            opened.store.add_shared(batch, (t1, t2)[seq % 2], 4, seq, b"%d" % seq, [sub])
    rows = opened.store.page_subscription(sub, 4, 3, 4)
    assert rows == [(seq, (t1, t2)[seq % 2], b"%d" % seq) for seq in range(3, 7)]
    assert opened.store.pointers(sub, 2) == [((t1, t2)[1], 4, 1), (t1, 4, 2)]


def test_scheduled_entries_come_back_in_due_order(opened: Opened) -> None:
    entries = [(5_000, 3), (1_000, 9), (5_000, 1), (3_000, 2)]
    for due, seq in entries:
        with opened.batch() as batch:
            opened.store.add_scheduled(batch, due, seq, b"s%d" % seq)
    store = opened.reopen()
    recovery = store.recover()
    assert (recovery.scheduled_count, recovery.scheduled_bytes, recovery.next_due_ms) == (4, 8, 1_000)
    assert store.scheduled(4_999, 10) == [(1_000, 9, b"s9"), (3_000, 2, b"s2")]
    assert [seq for _, seq, _ in store.scheduled(10**12, 10)] == [9, 2, 1, 3]
    with opened.batch() as batch:
        opened.store.remove_scheduled(batch, 1_000, 9, 2)
    assert store.next_due() == 3_000 and store.used_bytes == 6


# -- a store that cannot be opened: a clear error naming the path ------------------


def filled(path: Path) -> None:
    store = MessageStore.open(path)
    batch = Batch()
    dest = store.add_destination(batch, "queue", "q")
    store.add_messages(batch, dest, [(4, seq, b"x" * 200) for seq in store.reserve_sequences(5000)])
    store.db.write(batch.puts, batch.deletes)
    store.db.compact()  # type: ignore[attr-defined]
    store.close()


def test_a_garbled_current_file_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "store"
    filled(path)
    (path / "CURRENT").write_text("MANIFEST-999999\n")
    with pytest.raises(StoreCorrupt, match=str(path)):
        MessageStore.open(path)


def test_overwritten_tables_are_an_error_not_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    filled(path)
    tables = list(path.glob("*.ldb"))
    assert tables
    for table in tables:
        table.write_bytes(b"\xa5" * table.stat().st_size)
    with pytest.raises(StoreError, match=str(path)):
        MessageStore.open(path)


def test_a_regular_file_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    path.write_text("not a database")
    with pytest.raises(StoreError, match=str(path)):
        MessageStore.open(path)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (b"g", None, "global record is missing"),
        (b"g", b"\x07" + bytes(12), "format 7"),
        (b"c\x00\x00\x00\x01", b"short", "5-byte record"),
        (b"c\x00\x00\x00\x63", bytes(88), "no record"),
        (b"d\x00\x00\x00\x01", b"\x01\x09queue", "malformed destination"),
    ],
)
def test_records_this_version_did_not_write_are_corrupt(
    opened: Opened, key: bytes, value: bytes | None, message: str
) -> None:
    dest = queue(opened)
    put(opened, dest, [(4, seq, b"x" * 200) for seq in opened.store.reserve_sequences(50)])
    opened.close()
    db = opened.database()
    db.write(puts=[] if value is None else [(key, value)], deletes=[key] if value is None else [])
    with pytest.raises(StoreCorrupt, match=message) as raised:
        MessageStore(db)
    assert str(db.path) in str(raised.value)
    db.close()
