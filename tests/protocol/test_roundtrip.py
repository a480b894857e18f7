"""Property tests: parse(encode(frame)) == frame, however the bytes are split."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import Frame, FrameParser, MalformedFrame, StompError, encode_frame
from tests.protocol.strategies import streams, versioned_frames, versions


def parse_all(data: bytes | list[bytes], version: str) -> list[Frame]:
    parser = FrameParser()
    parser.version = version
    chunks = [data] if isinstance(data, bytes) else data
    out = []
    for chunk in chunks:
        parser.feed(chunk)
        while (frame := parser.next_frame()) is not None:
            out.append(frame)
    assert parser.buffered == 0
    return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[a:b] for a, b in pairwise(points)]


def to_crlf(encoded: bytes) -> bytes:
    """The same frame with every header line ending in CRLF."""
    head_end = encoded.index(b"\n\n") + 2
    return encoded[:head_end].replace(b"\n", b"\r\n") + encoded[head_end:]


@given(versioned_frames())
def test_round_trip(case: tuple[str, Frame]) -> None:
    version, frame = case
    assert parse_all(encode_frame(frame, version), version) == [frame]


@given(versioned_frames())
def test_round_trip_with_crlf_line_endings(case: tuple[str, Frame]) -> None:
    version, frame = case
    assert parse_all(to_crlf(encode_frame(frame, version)), version) == [frame]


@given(versioned_frames())
def test_one_byte_at_a_time(case: tuple[str, Frame]) -> None:
    version, frame = case
    data = encode_frame(frame, version)
    assert parse_all([data[i : i + 1] for i in range(len(data))], version) == [frame]


@settings(max_examples=60)
@given(streams(), st.lists(st.integers(min_value=0), max_size=20))
def test_stream_split_anywhere(case: tuple[str, list[tuple[Frame, bytes, bool]]], cuts: list[int]) -> None:
    """Frames with heart-beats before them, CRLF or LF lines, fed in chunks of any size."""
    version, items = case
    stream = b"".join(
        eol + (to_crlf(encode_frame(frame, version)) if crlf else encode_frame(frame, version))
        for frame, eol, crlf in items
    )
    expected = [frame for frame, _, _ in items]
    assert parse_all(stream, version) == expected
    assert parse_all(split(stream, cuts), version) == expected


@given(versioned_frames(), st.integers(min_value=0), st.lists(st.integers(min_value=0), max_size=5))
def test_nul_anywhere_in_the_command_or_headers_is_malformed(
    case: tuple[str, Frame], at: int, cuts: list[int]
) -> None:
    """However it arrives, and in every version: never a frame with a NUL in its head."""
    version, frame = case
    data = encode_frame(frame, version)
    head_end = data.index(b"\n\n")
    at %= head_end + 1
    while 0x80 <= data[at] < 0xC0:  # not inside a UTF-8 sequence
        at += 1
    bad = data[:at] + b"\0" + data[at:]
    with pytest.raises(MalformedFrame, match="NUL byte"):
        parse_all(split(bad, cuts), version)


_TOKENS = [
    b"SEND",
    b"MESSAGE",
    b"CONNECT",
    b"SEND\n",
    b"\n",
    b"\r\n",
    b"\r",
    b":",
    b"\0",
    b"\\",
    b"\\c",
    b"\\t",
    b"content-length:",
    b"content-length:3\n",
    b"5",
    b"-1",
    b"a",
    b"\xff",
    b"\xc3\xa9",
]
_fuzz_bytes = st.one_of(
    st.binary(max_size=300), st.lists(st.sampled_from(_TOKENS), max_size=40).map(b"".join)
)


@settings(max_examples=300)
@given(versions, _fuzz_bytes, st.lists(st.integers(min_value=0), max_size=5))
def test_arbitrary_bytes_parse_or_raise_a_stomp_error(version: str, data: bytes, cuts: list[int]) -> None:
    parser = FrameParser(max_frame_size=200, max_headers=5, max_header_length=50)
    parser.version = version
    try:
        for chunk in split(data, cuts):
            parser.feed(chunk)
            while (frame := parser.next_frame()) is not None:
                assert isinstance(frame, Frame)
                assert isinstance(frame.body, bytes)
    except StompError as exc:
        assert str(exc)
