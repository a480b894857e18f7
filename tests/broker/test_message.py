"""The message's fields are listed once: copies and both codecs follow the list."""

from __future__ import annotations

from dataclasses import fields

import pytest

from broker.core import message as m
from broker.core.message import FIELDS, Message
from broker.core.message_codecs import BadRecord, from_store, from_swap, swap_needle, to_store, to_swap

PLACES = {m.IN_KEY, m.IN_HEAD, m.AS_FLAG, m.AS_STRING, m.AS_HEADERS, m.AS_BODY}
PLACES |= {m.IMPLIED, m.IN_MARK, m.NOT_STORED}


def sample() -> Message:
    message = Message(
        7,
        "ID-x-7",
        "/queue/a",
        {"persistent": "true", "JMSXGroupID": "g", "colour": "blue:green"},
        b"body\0bytes",
        priority=9,
        expires=1_700_000_000_123,
        timestamp=1_700_000_000_000,
        persistent=True,
        group="g",
        content_length=True,
        origin="ID-session-1",
        redelivered=True,
        delivery_count=3,
    )
    message.store_size = 99
    return message


def state(message: Message) -> dict[str, object]:
    return {f.name: getattr(message, f.name) for f in FIELDS}


def test_every_field_says_where_the_message_store_keeps_it() -> None:
    assert [f.name for f in FIELDS][:5] == ["seq", "id", "destination", "headers", "body"]
    for f in FIELDS:
        assert f.metadata.get("stored") in PLACES, f"{f.name}: where does the message store keep it?"
    # Bookkeeping is never a constructor argument, so no codec carries it.
    assert {f.name for f in fields(Message) if not f.init} >= {"size", "meter", "holders", "store_size"}


def test_the_swap_record_carries_every_field() -> None:
    original = sample()
    assert state(from_swap(to_swap(original))) == state(original)


@pytest.mark.parametrize("name", ["colour", "x", "région", "with:colon", "back\\slash", "new\nline", "same"])
def test_a_swap_record_holds_the_needle_of_each_of_its_header_names(name: str) -> None:
    # An admin walk skips, undecoded, a swapped record without the needle of a header its
    # selector needs, so every record with that header must hold the needle: whatever the
    # name, and also where the same string object appears before it (marshal then writes
    # the name as a reference to that first one).
    for headers in ({"same": "same", name: "v"}, {"other": name, name: "v"}):
        record = to_swap(Message(1, "ID-1", "/queue/a", headers, b"x" * 100))
        assert swap_needle([name]) in record, headers
    both = to_swap(Message(1, "ID-1", "/queue/a", {"colour": "c", name: "v"}, b""))
    assert swap_needle(["colour", name]) in both
    assert swap_needle([]) is None


def test_the_store_record_carries_what_it_says_it_does() -> None:
    original = sample()
    back = from_store(original.seq, original.priority, to_store(original))
    for f in FIELDS:
        where = f.metadata["stored"]
        if where in (m.IN_MARK, m.NOT_STORED):
            assert getattr(back, f.name) == getattr(Message(0, "", "", {}, b""), f.name), f.name
        else:
            assert getattr(back, f.name) == getattr(original, f.name), f.name


def test_the_store_record_format_does_not_drift() -> None:
    """Format 1, as the first version wrote it: stores on disk must stay readable."""
    message = Message(5, "id", "/queue/q", {"k": "v"}, b"xy", expires=2, timestamp=3, content_length=True)
    assert to_store(message) == (
        b"\x01\x01" + (2).to_bytes(8) + (3).to_bytes(8) + (1).to_bytes(4)
        + b"\x00\x00\x00\x02id" + b"\x00\x00\x00\x08/queue/q" + b"\x00\x00\x00\x01k" + b"\x00\x00\x00\x01v"
        + b"xy"
    )  # fmt: skip


def test_a_record_from_another_format_is_refused() -> None:
    with pytest.raises(BadRecord, match="format 2"):
        from_store(1, 4, b"\x02" + to_store(sample())[1:])
    with pytest.raises(BadRecord, match="truncated"):
        from_store(1, 4, to_store(sample())[:30])


def test_copies_keep_the_payload_and_start_their_deliveries_afresh() -> None:
    original = sample()
    copy = original.copy_to(8, "ID-x-8", "/queue/b")
    assert (copy.seq, copy.id, copy.destination, copy.headers) == (8, "ID-x-8", "/queue/b", original.headers)
    assert (copy.redelivered, copy.delivery_count, copy.store_size, copy.holders) == (False, 0, 0, 0)
    assert copy.size == original.size and copy.origin == original.origin
    again = original.redelivery_copy()
    assert state(again) == state(original)
    assert (again.store_size, again.store_dest) == (original.store_size, original.store_dest)


def test_init_sets_every_slot_and_the_size() -> None:
    message = Message(1, "id", "/queue/q", {"a": "b", "c": "d"}, b"xyz")
    for f in fields(Message):
        if not f.init and f.name != "size":
            assert getattr(message, f.name) == f.default, f.name
    assert message.size == 3 + m.OBJECT_OVERHEAD + 2 * m.HEADER_OVERHEAD
    assert message.priority == m.DEFAULT_PRIORITY
