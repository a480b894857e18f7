"""The tool's own frame splitter: same frames whatever the chunking."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perf.frames import FrameError, FrameSplitter, encode, escape, header

STREAM = (
    b"\n"  # a heart-beat
    + b"CONNECTED\nversion:1.2\n\n\0"
    + b"MESSAGE\ndestination:/queue/a\ncontent-length:5\n\nab\0cd\0\n\n"  # NUL inside, EOLs after
    + b"RECEIPT\r\nreceipt-id:r1\r\n\r\n\0"  # CRLF
    + b"MESSAGE\ndestination:/queue/a\n\nno length\0"
)


def _split(chunks: list[bytes]) -> list[tuple[bytes, bytes, bytes]]:
    splitter = FrameSplitter()
    out: list[tuple[bytes, bytes, bytes]] = []
    for chunk in chunks:
        out.extend((f.command, f.head, f.body) for f in splitter.feed(chunk))
    return out


def test_whole_stream() -> None:
    frames = _split([STREAM])
    assert [f[0] for f in frames] == [b"CONNECTED", b"MESSAGE", b"RECEIPT", b"MESSAGE"]
    assert frames[1][2] == b"ab\0cd"
    assert header(frames[2][1], b"receipt-id") == b"r1"
    assert frames[3][2] == b"no length"


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_chunking_does_not_matter(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    assert _split(chunks) == _split([STREAM])


def test_byte_at_a_time() -> None:
    assert _split([STREAM[i : i + 1] for i in range(len(STREAM))]) == _split([STREAM])


def test_header_lookup_takes_the_first_and_keeps_escapes() -> None:
    head = b"MESSAGE\nack:ID\\c1\nack:second\nmessage-id:m"
    assert header(head, b"ack") == b"ID\\c1"
    assert header(head, b"message-id") == b"m"
    assert header(head, b"missing") is None


def test_garbage_after_a_body_is_an_error() -> None:
    with pytest.raises(FrameError):
        FrameSplitter().feed(b"MESSAGE\ncontent-length:1\n\nab\0")


def test_encode_escapes_by_version() -> None:
    assert escape("a:b\nc", "1.0") == "a:b\nc"
    assert escape("a:b\nc\\", "1.2") == "a\\cb\\nc\\\\"
    assert encode("SEND", {"destination": "/queue/a:b"}, b"x") == b"SEND\ndestination:/queue/a\\cb\n\nx\0"
    # CONNECT is never escaped (1.2 "Value Encoding").
    assert encode("CONNECT", {"passcode": "p:w"}) == b"CONNECT\npasscode:p:w\n\n\0"
