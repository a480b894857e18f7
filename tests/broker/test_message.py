"""The message's fields are listed once: copies and both codecs follow the list."""

from __future__ import annotations

import inspect
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.base import message as m
from broker.core.base.message import FIELDS, Message, find_header, header_block, headers_of
from broker.core.storage.message_codecs import (
    BadRecord,
    dispatched_record,
    from_store,
    from_swap,
    stored_deliveries,
    swap_needle,
    to_store,
    to_swap,
)
from protocol.frames import V1_2

PLACES = {m.IN_KEY, m.IN_HEAD, m.AS_FLAG, m.AS_STRING, m.AS_HEADERS, m.AS_BODY}
PLACES |= {m.IMPLIED, m.IN_MARK, m.NOT_STORED}


def sample(fifo: bool = False) -> Message:
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
        fifo=fifo,
    )
    message.store_size = 99
    return message


def state(message: Message) -> dict[str, object]:
    return {f.name: getattr(message, f.name) for f in FIELDS}


def test_every_field_says_where_the_message_store_keeps_it() -> None:
    assert [f.name for f in FIELDS][:5] == ["seq", "id", "destination", "headers", "body"]
    for f in FIELDS:
        assert f.stored in PLACES, f"{f.name}: where does the message store keep it?"
    # The list is the constructor's: a parameter cannot be added without placing it.
    assert [f.name for f in FIELDS] == list(inspect.signature(Message).parameters)
    # Bookkeeping is never a constructor argument, so no codec carries it.
    assert not {f.name for f in FIELDS} & {"size", "meter", "holders", "store_size", "arrived", "in_log"}


@pytest.mark.parametrize("fifo", [False, True])
def test_the_swap_record_carries_every_field(fifo: bool) -> None:
    original = sample(fifo)
    back = from_swap(to_swap(original))
    assert state(back) == state(original)
    assert (back.level, back.priority) == (m.FIFO_LEVEL if fifo else 9, 9)


@pytest.mark.parametrize("name", ["colour", "x", "région", "with:colon", "back\\slash", "new\nline", "same"])
def test_a_swap_record_holds_the_needle_of_each_of_its_header_names(name: str) -> None:
    # An admin walk skips, undecoded, a swapped record without the needle of a header its
    # selector needs, so every record with that header must hold the needle: whatever the
    # name (escaped in the header block), first or not, and beside values that hold it.
    for headers in ({"same": "same", name: "v"}, {"other": name, name: "v"}, {name: name}):
        record = to_swap(Message(1, "ID-1", "/queue/a", headers, b"x" * 100))
        assert swap_needle([name]) in record, headers
    both = to_swap(Message(1, "ID-1", "/queue/a", {"colour": "c", name: "v"}, b""))
    assert swap_needle(["colour", name]) in both
    assert swap_needle([]) is None


@pytest.mark.parametrize("fifo", [False, True])
def test_the_store_record_carries_what_it_says_it_does(fifo: bool) -> None:
    original = sample(fifo)
    # The key holds the level: its priority, or FIFO_LEVEL (the priority in the record).
    back = from_store(original.seq, original.level, to_store(original))
    assert (back.level, back.priority, back.fifo) == (original.level, 9, fifo)
    for f in FIELDS:
        where = f.stored
        if where in (m.IN_MARK, m.NOT_STORED):
            assert getattr(back, f.name) == getattr(Message(0, "", "", {}, b""), f.name), f.name
        else:
            assert getattr(back, f.name) == getattr(original, f.name), f.name


def test_the_store_record_format_does_not_drift() -> None:
    """Format 2, as it is written now: stores on disk must stay readable."""
    message = Message(
        5, "id", "/queue/q", {"k": "v", "a\nb": "c:d"}, b"xy", expires=2, timestamp=3, content_length=True
    )
    assert to_store(message) == (
        b"\x02\x01" + (2).to_bytes(8) + (3).to_bytes(8) + (2).to_bytes(4) + (8).to_bytes(4) + (14).to_bytes(4)
        + b"id" + b"/queue/q" + b"k:v\na\\nb:c\\cd\n"
        + b"xy"
    )  # fmt: skip


# Format 1, as the first version wrote it (each header's name and value on its own).
FORMAT_1 = (
    b"\x01\x01" + (2).to_bytes(8) + (3).to_bytes(8) + (3).to_bytes(4)
    + b"\x00\x00\x00\x02id" + b"\x00\x00\x00\x08/queue/q"
    + b"\x00\x00\x00\x01k" + b"\x00\x00\x00\x01v"
    + b"\x00\x00\x00\x03a\nb" + b"\x00\x00\x00\x03c:d"
    + b"\x00\x00\x00\x0bJMSXGroupID" + b"\x00\x00\x00\x01g"
    + b"xy"
)  # fmt: skip


def test_a_format_1_record_is_still_read() -> None:
    back = from_store(5, 4, FORMAT_1)
    assert (back.seq, back.id, back.destination, back.body, back.priority) == (5, "id", "/queue/q", b"xy", 4)
    assert (back.expires, back.timestamp, back.content_length, back.persistent) == (2, 3, True, True)
    assert back.headers == {"k": "v", "a\nb": "c:d", "JMSXGroupID": "g"}
    assert back.group == "g"
    # Read back and written again, it is the same message in format 2.
    assert state(from_store(5, 4, to_store(back))) == state(back)


@pytest.mark.parametrize("headers", [{}, {"JMSXGroupID": "g"}, {"a": "b", "JMSXGroupID": "g\\h"}])
def test_a_format_2_record_keeps_the_header_block_and_the_group(headers: dict[str, str]) -> None:
    message = Message(3, "ID-é", "/queue/ü", headers, b"", persistent=True, group=headers.get("JMSXGroupID"))
    back = from_store(3, 4, to_store(message))
    assert state(back) == state(message)
    assert back.header_block == message.header_block


@pytest.mark.parametrize("content_length", [False, True])
def test_a_record_that_says_its_dispatch_reads_back_the_same_message(content_length: bool) -> None:
    message = Message(
        3, "ID-x-3", "/queue/a", {"k": "v"}, b"b", persistent=True, content_length=content_length
    )
    record = to_store(message)
    marked = dispatched_record(record)
    # One bit of the flags byte, nothing else.
    assert len(marked) == len(record)
    assert [i for i, (a, b) in enumerate(zip(record, marked, strict=True)) if a != b] == [1]
    assert state(from_store(3, 4, marked)) == state(from_store(3, 4, record))
    assert (stored_deliveries(record), stored_deliveries(marked)) == (0, 1)
    assert stored_deliveries(FORMAT_1) == stored_deliveries(b"") == 0


def test_a_record_from_another_format_is_refused() -> None:
    with pytest.raises(BadRecord, match="format 3"):
        from_store(1, 4, b"\x03" + to_store(sample())[1:])
    with pytest.raises(BadRecord, match="format None"):
        from_store(1, 4, b"")
    for record in (to_store(sample()), FORMAT_1):
        with pytest.raises(BadRecord, match=r"truncated|malformed"):
            from_store(1, 4, record[:30])
        with pytest.raises(BadRecord, match=r"truncated|malformed"):
            from_store(1, 4, record[:10])


def test_arrival_order_keeps_the_priority_and_copies_take_their_own_destination_s_order() -> None:
    message = Message(1, "ID-1", "/queue/a", {}, b"", priority=8)
    message.arrival_order()
    assert (message.level, message.priority, message.fifo) == (m.FIFO_LEVEL, 8, True)
    assert message.wire(V1_2)[0].endswith(b"priority:8\n")
    assert message.get("JMSPriority") == 8
    copy = message.copy_to(0, "", "/queue/b")
    assert (copy.level, copy.priority, copy.fifo) == (8, 8, False)
    again = message.redelivery_copy()
    assert (again.level, again.priority, again.fifo) == (m.FIFO_LEVEL, 8, True)


def test_copies_keep_the_payload_and_start_their_deliveries_afresh() -> None:
    original = sample()
    copy = original.copy_to(8, "ID-x-8", "/queue/b")
    assert (copy.seq, copy.id, copy.destination, copy.headers) == (8, "ID-x-8", "/queue/b", original.headers)
    assert (copy.redelivered, copy.delivery_count, copy.store_size, copy.holders) == (False, 0, 0, 0)
    assert copy.size == original.size and copy.origin == original.origin
    again = original.redelivery_copy()
    assert state(again) == state(original)
    assert (again.store_size, again.store_dest) == (original.store_size, original.store_dest)


def test_a_copy_takes_each_field_as_the_field_list_says() -> None:
    original = sample()
    copy = original.copy_to(8, "ID-x-8", "/queue/b")
    for f in FIELDS:
        assert f.copied in (m.GIVEN, m.KEPT, m.BY_FLAGS)
        if f.copied == m.KEPT:
            assert getattr(copy, f.name) == getattr(original, f.name), f.name
    assert sorted(f.name for f in FIELDS if f.copied == m.GIVEN) == sorted(m._GIVEN_ORDER)


def slots_of(cls: type) -> tuple[str, ...]:
    """A class's slots: its ``__slots__``, or a compiled class's attributes (setup.py's
    build; mypyc lays them out as slots and drops ``__slots__``)."""
    return tuple(getattr(cls, "__slots__", None) or cls.__mypyc_attrs__)  # type: ignore[attr-defined]


def test_init_sets_every_slot_and_the_size() -> None:
    message = Message(1, "id", "/queue/q", {"a": "b", "c": "d"}, b"xyz")
    for name in slots_of(Message):
        getattr(message, name)
    assert (message.meter, message.holders, message.arrived, message.store_size, message.store_dest) == (
        None, 0, 0, 0, 0
    )  # fmt: skip
    assert not message.in_log and not message.redelivered and message.group is None
    assert message.header_block == b"a:b\nc:d\n"
    assert message.size == 3 + len(b"a:b\nc:d\n") + m.OBJECT_OVERHEAD
    assert message.priority == m.DEFAULT_PRIORITY


def test_a_held_message_is_charged_no_less_than_the_objects_it_keeps() -> None:
    """Issue 17: a message in RAM costs its body, its header block and at most ~300 bytes
    more; the meter's charge (``size``) covers every object it keeps alive that is its own."""
    headers = {"app": "x", "correlation-id": "c-1"}
    message = Message(123_456, "ID-boot-123456", "/queue/q", headers, b"b" * 100)
    message.timestamp = message.arrived = 1_700_000_000_000
    assert not hasattr(message, "__dict__") and len(slots_of(Message)) <= 16
    gc_head = 16
    own: list[object] = [message, message.body, message.header_block]
    if not m.INLINE_INTS:
        own += [message.seq, message.timestamp]
    assert sum(map(sys.getsizeof, own)) + gc_head <= message.size
    beyond = message.size - len(message.body) - len(message.header_block)
    assert beyond == m.OBJECT_OVERHEAD <= 320
    # Shared, not its own: the id's prefix (one per boot), the destination's name.
    assert type(message.id_prefix) is m.IdPrefix and message.id == "ID-boot-123456"
    assert Message(7, "ID-boot-7", "/queue/q", {}, b"").id_prefix is message.id_prefix


# Names and values that need escaping (':', LF, CR, backslash) as often as not.
_TEXT = st.text(alphabet=st.sampled_from("ab:\n\r\\é日"), max_size=6)


@given(st.dictionaries(_TEXT, _TEXT, max_size=5))
def test_any_headers_come_back_from_their_block(headers: dict[str, str]) -> None:
    block = header_block(headers)
    assert headers_of(block) == headers
    assert block.count(b"\n") == len(headers)
    for name, value in headers.items():
        assert find_header(block, name) == value


def test_the_header_block_reads_back_every_header_as_sent() -> None:
    headers = {"a": "1", "k:\\": "a\nb:c\\d\re", "JMSXGroupID": "g", "empty": "", "é": "日本"}
    block = header_block(headers)
    assert headers_of(block) == headers and headers_of(b"") == {}
    for name, value in headers.items():
        assert find_header(block, name) == value
    # A name is found at the start of a line only, never inside a value or another name.
    assert find_header(header_block({"xa": "b:a:c", "y": "a:"}), "a") is None
    message = Message(3, "id", "/queue/q", headers, b"", group="g")
    assert message.headers == headers and message.group == "g" and message.get("k:\\") == "a\nb:c\\d\re"
    assert (message.get("JMSXGroupID"), message.get("JMSMessageID"), message.get("nope")) == ("g", "id", None)


def test_the_wire_is_the_frame_each_version_expects() -> None:
    message = Message(9, "ID-b-9", "/queue/q", {"plain": "v", "odd": "a:b\\c\rd"}, b"x", timestamp=5)
    shared = b"MESSAGE\nmessage-id:ID-b-9\ndestination:/queue/q\ntimestamp:5\nexpires:0\npriority:4\n"
    assert message.wire("1.2") == (shared + b"plain:v\nodd:a\\cb\\\\c\\rd\n", b"\n")
    assert message.wire("1.1") == (shared + b"plain:v\nodd:a\\cb\\\\c\rd\n", b"\n")
    assert message.wire("1.0") == (shared + b"plain:v\nodd:a:b\\c d\n", b"\n")
    # An id or destination that needs escaping is escaped as each version does.
    odd = Message(1, "ID:b:1", "/queue/a:b", {}, b"\0", timestamp=5)
    assert odd.wire("1.2") == (
        b"MESSAGE\nmessage-id:ID\\cb\\c1\ndestination:/queue/a\\cb\ntimestamp:5\nexpires:0\npriority:4\n",
        b"content-length:1\n\n",
    )
    assert odd.wire("1.0")[0].startswith(b"MESSAGE\nmessage-id:ID:b:1\ndestination:/queue/a:b\n")
    # The cache is per version and per message: another message gets its own frame.
    other = message.copy_to(10, "ID-b-10", "/queue/r")
    assert other.wire("1.2")[0].startswith(b"MESSAGE\nmessage-id:ID-b-10\ndestination:/queue/r\n")
    assert message.wire("1.2")[0].startswith(shared)
