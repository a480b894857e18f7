"""encode_frame / encode_headers: exact bytes for each version."""

from __future__ import annotations

import pytest

from protocol import FRAME_END, HEARTBEAT, V1_0, V1_1, V1_2, Frame, FrameParser, encode_frame, encode_headers


def test_basic_frame() -> None:
    frame = Frame("MESSAGE", {"destination": "/queue/a", "message-id": "7"}, b"hi")
    assert encode_frame(frame, V1_2) == b"MESSAGE\ndestination:/queue/a\nmessage-id:7\n\nhi\0\n"


def test_frame_without_headers() -> None:
    assert encode_frame(Frame("RECEIPT"), V1_2) == b"RECEIPT\n\n\0\n"


def test_headers_keep_dict_order() -> None:
    frame = Frame("SEND", {"z": "1", "a": "2", "m": "3"})
    assert encode_frame(frame, V1_2) == b"SEND\nz:1\na:2\nm:3\n\n\0\n"


def test_escaping_1_2() -> None:
    frame = Frame("MESSAGE", {"message-id": "ID:host-1", "k\\": "a\nb\rc"})
    assert encode_frame(frame, V1_2) == b"MESSAGE\nmessage-id:ID\\chost-1\nk\\\\:a\\nb\\rc\n\n\0\n"


def test_escaping_1_1_leaves_cr() -> None:
    frame = Frame("MESSAGE", {"message-id": "ID:host-1", "k\\": "a\nb\rc"})
    assert encode_frame(frame, V1_1) == b"MESSAGE\nmessage-id:ID\\chost-1\nk\\\\:a\\nb\rc\n\n\0\n"


def test_1_0_writes_values_raw() -> None:
    frame = Frame("MESSAGE", {"message-id": "ID:host-1", "path": "c:\\x"})
    assert encode_frame(frame, V1_0) == b"MESSAGE\nmessage-id:ID:host-1\npath:c:\\x\n\n\0\n"


def test_1_0_cannot_be_made_to_inject_header_lines() -> None:
    frame = Frame("MESSAGE", {"evil": "x\ncontent-length:0", "a:b": "c\r"}, b"body")
    encoded = encode_frame(frame, V1_0)
    assert encoded == b"MESSAGE\nevil:x content-length:0\na_b:c \n\nbody\0\n"
    parser = FrameParser()
    parser.feed(encoded)
    assert parser.next_frame() == Frame("MESSAGE", {"evil": "x content-length:0", "a_b": "c "}, b"body")


@pytest.mark.parametrize("command", ["CONNECT", "STOMP", "CONNECTED"])
def test_connect_frames_are_never_escaped(command: str) -> None:
    frame = Frame(command, {"passcode": "a:b\\c", "server": "stompd/1.0"})
    assert encode_frame(frame, V1_2) == command.encode() + b"\npasscode:a:b\\c\nserver:stompd/1.0\n\n\0\n"


def test_nul_in_body_adds_content_length() -> None:
    frame = Frame("MESSAGE", {"destination": "/q"}, b"a\0b")
    assert encode_frame(frame, V1_2) == b"MESSAGE\ndestination:/q\ncontent-length:3\n\na\0b\0\n"
    assert frame.headers == {"destination": "/q"}


def test_existing_content_length_is_kept() -> None:
    frame = Frame("MESSAGE", {"content-length": "3", "destination": "/q"}, b"a\0b")
    assert encode_frame(frame, V1_2) == b"MESSAGE\ncontent-length:3\ndestination:/q\n\na\0b\0\n"


def test_body_without_nul_gets_no_content_length() -> None:
    assert encode_frame(Frame("SEND", {}, b"abc"), V1_2) == b"SEND\n\nabc\0\n"


@pytest.mark.parametrize("length", ["4", "x", "-3", ""])
def test_wrong_content_length_is_a_caller_bug(length: str) -> None:
    with pytest.raises(ValueError, match="does not match the 3-byte body"):
        encode_frame(Frame("SEND", {"content-length": length}, b"abc"), V1_2)


def test_sentinel_characters_in_headers_are_escaped_correctly() -> None:
    frame = Frame("MESSAGE", {"a\x00:": "\x01\n"})
    assert encode_frame(frame, V1_2) == b"MESSAGE\na\x00\\c:\x01\\n\n\n\0\n"


def test_encode_headers_from_pairs_and_dict() -> None:
    pairs = [("subscription", "s:1"), ("ack", "2")]
    assert encode_headers(pairs, V1_2) == b"subscription:s\\c1\nack:2\n"
    assert encode_headers(dict(pairs), V1_2) == b"subscription:s\\c1\nack:2\n"
    assert encode_headers(iter(pairs), V1_0) == b"subscription:s:1\nack:2\n"
    assert encode_headers([], V1_2) == b""


def test_encode_headers_builds_a_parsable_frame() -> None:
    wire = b"MESSAGE\n" + encode_headers({"destination": "/q\n"}, V1_2) + b"\nbody\0"
    parser = FrameParser()
    parser.version = V1_2
    parser.feed(wire)
    assert parser.next_frame() == Frame("MESSAGE", {"destination": "/q\n"}, b"body")


def test_unknown_version() -> None:
    with pytest.raises(ValueError, match="unknown STOMP version"):
        encode_frame(Frame("SEND", {"a": "b"}), "2.0")


def test_heartbeat() -> None:
    assert HEARTBEAT == b"\n"


def test_every_frame_ends_with_nul_and_eol_as_activemq_writes_them() -> None:
    # PHP's stomp extension needs the EOL after the NUL to find frames that arrive together.
    assert FRAME_END == b"\0\n"
    frames = [Frame("RECEIPT", {"receipt-id": "1"}), Frame("MESSAGE", {"a": "b"}, b"x\0y"), Frame("ERROR")]
    wire = b"".join(encode_frame(frame, V1_2) for frame in frames)
    assert wire.count(FRAME_END) == 3
    parser = FrameParser()
    parser.version = V1_2
    parser.feed(wire)
    assert [parser.next_frame() for _ in frames] == [
        Frame("RECEIPT", {"receipt-id": "1"}),
        Frame("MESSAGE", {"a": "b", "content-length": "3"}, b"x\0y"),
        Frame("ERROR"),
    ]
    assert parser.next_frame() is None
    assert parser.buffered == 0
