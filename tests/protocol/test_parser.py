"""FrameParser: grammar, escaping, errors and limits, on hand-written frames."""

from __future__ import annotations

import pytest

from protocol import (
    V1_0,
    V1_1,
    V1_2,
    Frame,
    FrameParser,
    FrameTooLarge,
    MalformedFrame,
    StompError,
    UnknownCommand,
)


def parse(data: bytes, version: str = V1_2, **limits: int) -> list[Frame]:
    parser = FrameParser(**limits)
    parser.version = version
    parser.feed(data)
    out = []
    while (frame := parser.next_frame()) is not None:
        out.append(frame)
    return out


def parse_one(data: bytes, version: str = V1_2, **limits: int) -> Frame:
    frames = parse(data, version, **limits)
    assert len(frames) == 1, frames
    return frames[0]


# --- grammar -----------------------------------------------------------------------


def test_typical_send() -> None:
    body = bytes(range(256)) * 4
    data = b"SEND\ndestination:/queue/a\ncontent-length:1024\nreceipt:7\n\n" + body + b"\0"
    assert parse_one(data) == Frame(
        "SEND", {"destination": "/queue/a", "content-length": "1024", "receipt": "7"}, body
    )


def test_nul_terminated_body() -> None:
    assert parse_one(b"SEND\ndestination:/q\n\nhello\0") == Frame("SEND", {"destination": "/q"}, b"hello")


def test_frame_without_headers_or_body() -> None:
    assert parse_one(b"DISCONNECT\n\n\0") == Frame("DISCONNECT", {}, b"")


def test_content_length_body_may_hold_nul() -> None:
    frame = parse_one(b"SEND\ncontent-length:5\n\na\0b\0c\0")
    assert frame.body == b"a\0b\0c"


def test_content_length_zero() -> None:
    assert parse_one(b"SEND\ncontent-length:0\n\n\0").body == b""


def test_crlf_line_endings() -> None:
    frame = parse_one(b"SEND\r\ndestination:/q\r\nreceipt:1\r\n\r\nbody\r\n\0")
    assert frame == Frame("SEND", {"destination": "/q", "receipt": "1"}, b"body\r\n")


def test_mixed_line_endings() -> None:
    assert parse_one(b"SEND\r\na:1\nb:2\r\n\nx\0").headers == {"a": "1", "b": "2"}


def test_only_one_cr_is_stripped_as_part_of_crlf() -> None:
    assert parse_one(b"SEND\na:1\r\r\n\n\0", V1_0).headers == {"a": "1\r"}


def test_heartbeats_between_and_before_frames_are_skipped() -> None:
    data = b"\n\r\n\nSEND\n\nA\0\n\n\r\nSEND\n\nB\0\r\n"
    assert [f.body for f in parse(data)] == [b"A", b"B"]


def test_heartbeats_only() -> None:
    parser = FrameParser()
    parser.feed(b"\n\r\n\n")
    assert parser.next_frame() is None
    assert parser.buffered == 0


def test_crlf_heartbeat_split_across_reads() -> None:
    parser = FrameParser()
    parser.feed(b"\r")
    assert parser.next_frame() is None
    parser.feed(b"\nSEND\n\nx\0")
    assert parser.next_frame() == Frame("SEND", {}, b"x")


def test_many_frames_in_one_read() -> None:
    data = b"".join(b"SEND\nn:%d\n\n%d\0" % (i, i) for i in range(100))
    frames = parse(data)
    assert [f.headers["n"] for f in frames] == [str(i) for i in range(100)]


def test_value_holds_everything_after_the_first_colon() -> None:
    assert parse_one(b"SEND\nurl:http://x:80/a\n\n\0", V1_0).headers == {"url": "http://x:80/a"}
    assert parse_one(b"SEND\nurl:http://x:80/a\n\n\0", V1_2).headers == {"url": "http://x:80/a"}


def test_empty_value_and_blanks_kept() -> None:
    assert parse_one(b"SEND\na:\nb: x \n\n\0").headers == {"a": "", "b": " x "}


def test_repeated_header_first_wins() -> None:
    frame = parse_one(b"MESSAGE\nfoo:World\nfoo:Hello\nbar:1\n\n\0")
    assert frame.headers == {"foo": "World", "bar": "1"}
    assert list(frame.headers) == ["foo", "bar"]


def test_repeated_escaped_header_first_wins() -> None:
    assert parse_one(b"SEND\na\\cb:1\na\\cb:2\n\n\0").headers == {"a:b": "1"}


def test_repeated_content_length_first_wins() -> None:
    assert parse_one(b"SEND\ncontent-length:2\ncontent-length:5\n\nab\0").body == b"ab"


def test_utf8_headers() -> None:
    data = "SEND\ndestination:/queue/été\nnom:日本\n\n\0".encode()
    assert parse_one(data).headers == {"destination": "/queue/été", "nom": "日本"}


@pytest.mark.parametrize("command", ["CONNECT", "STOMP", "SEND", "MESSAGE", "ERROR", "CONNECTED", "NACK"])
def test_all_commands_accepted(command: str) -> None:
    assert parse_one(command.encode() + b"\n\n\0").command == command


def test_content_length_with_blanks_is_tolerated() -> None:
    assert parse_one(b"SEND\ncontent-length: 3\n\nabc\0").body == b"abc"


def test_body_after_content_length_is_exact() -> None:
    frames = parse(b"SEND\ncontent-length:1\n\nA\0SEND\n\nB\0")
    assert [f.body for f in frames] == [b"A", b"B"]


def test_buffered_counts_unconsumed_bytes() -> None:
    parser = FrameParser()
    parser.feed(b"SEND\n\nA\0SEND\n")
    assert parser.buffered == 13
    assert parser.next_frame() is not None
    assert parser.buffered == 5
    assert parser.next_frame() is None
    parser.feed(b"\nB\0")
    assert parser.next_frame() == Frame("SEND", {}, b"B")
    assert parser.buffered == 0


def test_large_body_in_small_reads() -> None:
    body = b"x" * 300_000
    data = b"SEND\ncontent-length:300000\n\n" + body + b"\0" + b"SEND\n\n" + body + b"\0"
    parser = FrameParser()
    out = []
    for i in range(0, len(data), 1000):
        parser.feed(data[i : i + 1000])
        while (frame := parser.next_frame()) is not None:
            out.append(frame.body)
    assert out == [body, body]


# --- escaping ----------------------------------------------------------------------

ESCAPED = b"SEND\nk\\c\\\\:a\\nb\\cc\\\\d\\re\n\n\0"


def test_unescaping_1_2() -> None:
    assert parse_one(ESCAPED, V1_2).headers == {"k:\\": "a\nb:c\\d\re"}


def test_unescaping_1_1_rejects_backslash_r() -> None:
    with pytest.raises(MalformedFrame, match=r"undefined escape sequence '\\\\r'"):
        parse(ESCAPED, V1_1)
    assert parse_one(b"SEND\nk\\c:a\\nb\\\\\n\n\0", V1_1).headers == {"k:": "a\nb\\"}


def test_no_unescaping_in_1_0() -> None:
    assert parse_one(ESCAPED, V1_0).headers == {"k\\c\\\\": "a\\nb\\cc\\\\d\\re"}


@pytest.mark.parametrize("command", [b"CONNECT", b"STOMP", b"CONNECTED"])
def test_connect_frames_are_never_unescaped(command: bytes) -> None:
    data = command + b"\nlogin:a\\c\npasscode:p\\t:x\\\n\n\0"
    assert parse_one(data, V1_2).headers == {"login": "a\\c", "passcode": "p\\t:x\\"}


def test_version_set_after_connect_applies_to_already_buffered_frames() -> None:
    parser = FrameParser()
    parser.feed(b"CONNECT\naccept-version:1.2\n\n\0SEND\na:b\\cc\n\n\0")
    assert parser.next_frame() == Frame("CONNECT", {"accept-version": "1.2"})
    parser.version = V1_2
    assert parser.next_frame() == Frame("SEND", {"a": "b:c"})


@pytest.mark.parametrize("version", [V1_1, V1_2])
@pytest.mark.parametrize("header", [b"a:b\\tc", b"a:b\\", b"a\\x:b", b"a:\\\\\\"])
def test_undefined_escape_is_fatal(version: str, header: bytes) -> None:
    with pytest.raises(MalformedFrame, match="header line 1") as info:
        parse(b"SEND\n" + header + b"\n\n\0", version)
    assert info.value.fatal


# --- errors ------------------------------------------------------------------------


def test_header_without_colon() -> None:
    with pytest.raises(MalformedFrame, match="header line 3 has no ':'"):
        parse(b"SEND\na:1\nb:2\nnocolon\n\n\0")


def test_header_without_colon_when_escaped() -> None:
    with pytest.raises(MalformedFrame, match="header line 2 has no ':'"):
        parse(b"SEND\na\\c:1\nnocolon\n\n\0")


@pytest.mark.parametrize("value", [b"abc", b"-1", b"", b"1.5", b"+3", b"0x10", b"\xd9\xa3", b"1_0"])
def test_bad_content_length(value: bytes) -> None:
    with pytest.raises(MalformedFrame, match="content-length"):
        parse(b"SEND\ncontent-length:" + value + b"\n\nabc\0")


def test_huge_content_length() -> None:
    with pytest.raises(FrameTooLarge, match="content-length"):
        parse(b"SEND\ncontent-length:" + b"9" * 5000 + b"\n\n")


def test_missing_nul_after_content_length_body() -> None:
    with pytest.raises(MalformedFrame, match="not followed by a NUL"):
        parse(b"SEND\ncontent-length:3\n\nabcd\0")


@pytest.mark.parametrize("command", [b"FOO", b"send", b" SEND", b"SEND ", b"\rSEND"])
def test_unknown_command(command: bytes) -> None:
    with pytest.raises(UnknownCommand, match="unknown command"):
        parse(command + b"\n\n\0")


def test_invalid_utf8() -> None:
    with pytest.raises(MalformedFrame, match="UTF-8"):
        parse(b"SEND\ndestination:/q\xff\n\n\0")


@pytest.mark.parametrize("version", [V1_0, V1_1, V1_2])
def test_nul_in_a_header_is_malformed_in_every_version(version: str) -> None:
    with pytest.raises(MalformedFrame, match="header line 2 holds a NUL byte") as info:
        parse(b"SEND\ndestination:/q\nx:a\0b\n\nbody\0", version)
    assert info.value.fatal


def test_nul_in_a_header_name_or_the_command_is_malformed() -> None:
    with pytest.raises(MalformedFrame, match="header line 1 holds a NUL"):
        parse(b"SEND\nx\0y:1\n\n\0")
    with pytest.raises(MalformedFrame, match="the command line holds a NUL"):
        parse(b"SE\0ND\nx:1\n\n\0")


def test_nul_in_an_unfinished_header_block_is_malformed_at_once() -> None:
    """A 1.0-style frame that ends at a NUL before its blank line never completes: it is
    answered now, not when the header limits run out."""
    parser = FrameParser()
    parser.feed(b"SEND\ndestination:/q\nx:a")
    assert parser.next_frame() is None
    parser.feed(b"\0")
    with pytest.raises(MalformedFrame, match="header line 2 holds a NUL"):
        parser.next_frame()


def test_nul_in_the_body_after_the_headers_is_still_the_frame_end() -> None:
    assert parse(b"SEND\nx:a\n\nb\0\nSEND\n\n\0") == [Frame("SEND", {"x": "a"}, b"b"), Frame("SEND", {}, b"")]


def test_errors_are_stomp_errors_with_summary() -> None:
    with pytest.raises(StompError) as info:
        parse(b"SEND\nx\n\n\0")
    assert info.value.summary == "malformed frame"


# --- limits ------------------------------------------------------------------------


def test_content_length_over_limit_raises_before_the_body_arrives() -> None:
    parser = FrameParser(max_frame_size=1000)
    parser.feed(b"SEND\ncontent-length:2000\n\n")
    with pytest.raises(FrameTooLarge, match="1000"):
        parser.next_frame()


def test_frame_at_the_limit_is_accepted() -> None:
    head = b"SEND\n\n"
    body = b"x" * (100 - len(head))
    assert parse_one(head + body + b"\0", max_frame_size=100).body == body
    with pytest.raises(FrameTooLarge):
        parse(head + body + b"x\0", max_frame_size=100)


def test_frame_without_nul_cannot_grow_the_buffer_without_bound() -> None:
    parser = FrameParser(max_frame_size=10_000)
    parser.feed(b"SEND\ndestination:/q\n\n")
    chunk = b"x" * 512
    with pytest.raises(FrameTooLarge, match="10000"):
        for _ in range(1000):
            parser.feed(chunk)
            assert parser.next_frame() is None
    assert parser.buffered <= 10_000 + len(chunk)


def test_endless_header_block_is_bounded() -> None:
    parser = FrameParser(max_frame_size=10_000, max_headers=100_000)
    parser.feed(b"SEND\n")
    with pytest.raises(FrameTooLarge):
        for i in range(10_000):
            parser.feed(b"h%d:v\n" % i)
            assert parser.next_frame() is None
    assert parser.buffered <= 10_000 + 20


def test_complete_oversized_frame_in_one_read() -> None:
    with pytest.raises(FrameTooLarge, match="maximum frame size of 100 bytes"):
        parse(b"SEND\n\n" + b"x" * 200 + b"\0", max_frame_size=100)


def test_too_many_headers() -> None:
    data = b"SEND\n" + b"".join(b"h%d:v\n" % i for i in range(4)) + b"\n\0"
    assert len(parse_one(data, max_headers=4).headers) == 4
    with pytest.raises(FrameTooLarge, match="limit of 3"):
        parse(data, max_headers=3)


def test_header_line_too_long() -> None:
    line = b"h:" + b"v" * 98
    assert parse_one(b"SEND\n" + line + b"\r\n\n\0", max_header_length=100).headers["h"] == "v" * 98
    with pytest.raises(FrameTooLarge, match="header line 2 is 101 bytes long, more than the limit of 100"):
        parse(b"SEND\na:b\n" + line + b"v\n\n\0", max_header_length=100)


def test_partial_header_line_too_long_raises_early() -> None:
    parser = FrameParser(max_header_length=100)
    parser.feed(b"SEND\nh:" + b"v" * 99)
    assert parser.next_frame() is None
    parser.feed(b"v")
    with pytest.raises(FrameTooLarge, match="limit of 100 bytes"):
        parser.next_frame()


def test_command_line_too_long_raises_before_its_end() -> None:
    parser = FrameParser(max_header_length=100)
    parser.feed(b"SEND" + b"x" * 200)
    with pytest.raises(FrameTooLarge, match="limit of 100 bytes"):
        parser.next_frame()
