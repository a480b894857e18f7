from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.core.base.message import Message
from broker.core.storage.cursor import Cursor


def msg(seq: int, priority: int = 4) -> Message:
    return Message(seq, f"ID-{seq}", "/queue/q", {}, b"x", priority=priority)


@given(st.lists(st.integers(0, 9), max_size=60))
def test_pop_is_priority_then_fifo(priorities: list[int]) -> None:
    cursor = Cursor()
    for seq, prio in enumerate(priorities):
        cursor.push(msg(seq, prio))
    popped = []
    while (m := cursor.pop()) is not None:
        popped.append((m.priority, m.seq))
    assert popped == sorted(((p, s) for s, p in enumerate(priorities)), key=lambda t: (-t[0], t[1]))
    assert cursor.count == 0 and cursor.mem_bytes == 0


@given(st.lists(st.integers(0, 9), min_size=1, max_size=40), st.data())
def test_lazy_remove_and_returned_keep_order(priorities: list[int], data: st.DataObject) -> None:
    cursor = Cursor()
    messages = [msg(seq, prio) for seq, prio in enumerate(priorities)]
    for m in messages:
        cursor.push(m)
    taken = data.draw(st.sets(st.sampled_from(messages), max_size=len(messages)))
    for m in taken:
        cursor.remove(m)
    returned = data.draw(
        st.sets(st.sampled_from(sorted(taken, key=lambda m: m.seq)) if taken else st.nothing())
    )
    for m in sorted(returned, key=lambda m: m.seq, reverse=True):
        cursor.push_returned(m)
    expected = sorted(
        (m for m in messages if m not in taken or m in returned), key=lambda m: (-m.priority, m.seq)
    )
    assert list(cursor) == expected
    assert cursor.count == len(expected)
    got = []
    while (m := cursor.pop()) is not None:
        got.append(m)
    assert got == expected
