"""Random sequences of builders against what is actually stored: counters, refcounts and
pointers always agree with the records, before and after a reopen."""

from __future__ import annotations

from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from store import keys
from store.api import Batch
from store.memory import MemoryDatabase
from store.persistent import MessageStore


class StoreModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.db = MemoryDatabase()
        self.store = MessageStore(self.db, seq_block=5)
        self.queue_messages: list[tuple[int, int, int, int]] = []
        self.subs: list[int] = []
        self.names = 0
        batch = Batch()
        self.queues = [self.store.add_destination(batch, "queue", f"q{i}") for i in range(2)]
        self.topic = self.store.add_destination(batch, "topic", "t")
        self.apply(batch)

    def apply(self, batch: Batch) -> None:
        self.db.write(batch.puts, batch.deletes)

    @rule(data=st.data(), n=st.integers(1, 4))
    def add_queue_messages(self, data: st.DataObject, n: int) -> None:
        dest = data.draw(st.sampled_from(self.queues))
        batch = Batch()
        rows = [
            (data.draw(st.integers(0, 9)), seq, b"v" * data.draw(st.integers(0, 20)))
            for seq in self.store.reserve_sequences(n)
        ]
        self.store.add_messages(batch, dest, rows)
        self.apply(batch)
        self.queue_messages.extend((dest, p, s, len(v)) for p, s, v in rows)

    @precondition(lambda self: self.queue_messages)
    @rule(data=st.data())
    def remove_queue_message(self, data: st.DataObject) -> None:
        dest, priority, seq, size = self.queue_messages.pop(
            data.draw(st.integers(0, len(self.queue_messages) - 1))
        )
        batch = Batch()
        self.store.remove_messages(batch, dest, [(priority, seq, size)])
        self.apply(batch)

    @precondition(lambda self: self.queue_messages)
    @rule(data=st.data(), size=st.integers(0, 20))
    def rewrite_queue_message(self, data: st.DataObject, size: int) -> None:
        index = data.draw(st.integers(0, len(self.queue_messages) - 1))
        dest, priority, seq, old = self.queue_messages[index]
        batch = Batch()
        self.store.replace_message(batch, dest, priority, seq, old, b"w" * size)
        self.apply(batch)
        self.queue_messages[index] = (dest, priority, seq, size)

    @rule()
    def subscribe(self) -> None:
        batch = Batch()
        self.names += 1
        self.subs.append(self.store.put_subscription(batch, "client", f"s{self.names}", b"sel"))
        self.apply(batch)

    @precondition(lambda self: self.subs)
    @rule(data=st.data(), size=st.integers(0, 20), priority=st.integers(0, 9))
    def publish(self, data: st.DataObject, size: int, priority: int) -> None:
        owed = data.draw(st.lists(st.sampled_from(self.subs), min_size=1, unique=True))
        (seq,) = self.store.reserve_sequences(1)
        batch = Batch()
        self.store.add_shared(batch, self.topic, priority, seq, b"t" * size, owed)
        self.apply(batch)

    @precondition(lambda self: self.subs)
    @rule(data=st.data(), acks=st.integers(1, 3))
    def ack(self, data: st.DataObject, acks: int) -> None:
        """Acks by one or two subscribers in one batch, duplicates included."""
        batch = Batch()
        for sub in data.draw(st.lists(st.sampled_from(self.subs), min_size=1, max_size=2)):
            refs = self.store.pointers(sub, acks)
            self.store.ack_shared(batch, sub, refs + refs[:1])
        self.apply(batch)

    @precondition(lambda self: self.subs)
    @rule(data=st.data(), drain_now=st.booleans())
    def unsubscribe(self, data: st.DataObject, drain_now: bool) -> None:
        sub = data.draw(st.sampled_from(self.subs))
        self.subs.remove(sub)
        name = next(s.name for s in self.store.recover().subscriptions if s.id == sub)
        batch = Batch()
        draining = self.store.remove_subscription(batch, "client", name)
        self.apply(batch)
        if drain_now and draining is not None:
            self.drain(draining)

    def drain(self, sub: int) -> None:
        while refs := self.store.pointers(sub, 2):
            batch = Batch()
            self.store.ack_shared(batch, sub, refs)
            self.apply(batch)

    @rule()
    def reopen(self) -> None:
        before = self.store.recover()
        self.store = MessageStore(self.db, seq_block=5)
        after = self.store.recover()
        assert sorted(after.destinations, key=repr) == sorted(before.destinations, key=repr)
        assert sorted(after.subscriptions, key=repr) == sorted(before.subscriptions, key=repr)
        assert sorted(after.draining) == sorted(before.draining)
        assert after.next_seq >= before.next_seq
        for sub in after.draining:
            self.drain(sub)
        assert self.store.recover().draining == []

    @invariant()
    def counters_match_the_records(self) -> None:
        counts: Counter[tuple[int, int]] = Counter()
        sizes: Counter[int] = Counter()
        for key, value in self.db.range(b"m", b"n"):
            dest, priority, _ = keys.unpack_message_key(key)
            counts[(dest, priority)] += 1
            sizes[dest] += len(value)
        for dest in [*self.queues, self.topic]:
            counters = self.store.counters(dest)
            assert counters.counts == [counts[(dest, p)] for p in range(10)]
            assert counters.bytes == sizes[dest]
        assert self.store.used_bytes == sum(sizes.values())

    @invariant()
    def refcounts_match_the_pointers(self) -> None:
        owed: Counter[bytes] = Counter()
        pending: Counter[tuple[int, int]] = Counter()
        for key, dest in self.db.range(b"r", b"s"):
            sub, level, seq = int.from_bytes(key[1:5]), key[5], key[6:]
            owed[dest + bytes([level]) + seq] += 1
            pending[(sub, 9 - level)] += 1
        refs = {key[1:]: int.from_bytes(value[:4]) for key, value in self.db.range(b"n", b"o")}
        assert refs == dict(owed)
        topic = keys.log_prefix(self.topic)
        topic_bodies = {key[1:] for key, _ in self.db.range(topic, keys.prefix_end(topic))}
        assert topic_bodies == set(refs)
        for sub in {s for s, _ in pending} | set(self.subs):
            assert self.store.pending_of(sub) == tuple(pending[(sub, p)] for p in range(10))


StoreModel.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestStoreModel = StoreModel.TestCase
