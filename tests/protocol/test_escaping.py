"""escape / unescape per version."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import V1_0, V1_1, V1_2, MalformedFrame, escape, escape_mode, escape_name, unescape


@pytest.mark.parametrize(
    ("version", "raw", "escaped"),
    [
        (V1_2, "a:b\nc\\d\re", "a\\cb\\nc\\\\d\\re"),
        (V1_1, "a:b\nc\\d\re", "a\\cb\\nc\\\\d\re"),
        (V1_2, "\\n", "\\\\n"),
        (V1_2, "plain", "plain"),
    ],
)
def test_escape(version: str, raw: str, escaped: str) -> None:
    assert escape(raw, version) == escaped
    assert unescape(escaped, version) == raw


def test_fast_paths_return_the_same_object() -> None:
    value = "no specials here"
    assert escape(value, V1_2) is value
    assert unescape(value, V1_2) is value


def test_1_0_has_no_escaping() -> None:
    assert escape("a:b\\c", V1_0) == "a:b\\c"
    assert unescape("a\\cb\\t", V1_0) == "a\\cb\\t"


def test_1_0_replaces_what_it_cannot_express() -> None:
    assert escape("a\nb\rc", V1_0) == "a b c"
    assert escape_name("a:b\n", V1_0) == "a_b "
    assert escape_name("a:b", V1_2) == "a\\cb"


@pytest.mark.parametrize("value", ["\\t", "a\\", "\\r\\x", "\\\\\\"])
def test_undefined_escapes(value: str) -> None:
    with pytest.raises(MalformedFrame, match=r"escape sequence|lone backslash"):
        unescape(value, V1_1)


def test_backslash_r_is_defined_only_in_1_2() -> None:
    assert unescape("\\r", V1_2) == "\r"
    with pytest.raises(MalformedFrame, match=r"STOMP 1\.1 defines only"):
        unescape("\\r", V1_1)


def test_escape_mode() -> None:
    assert escape_mode("CONNECT", V1_2) == V1_0
    assert escape_mode("CONNECTED", V1_1) == V1_0
    assert escape_mode("SEND", V1_2) == V1_2


@given(st.text())
def test_round_trip_1_2(value: str) -> None:
    assert unescape(escape(value, V1_2), V1_2) == value


@given(st.text())
def test_escaped_1_2_has_no_special_characters(value: str) -> None:
    escaped = escape(value, V1_2)
    assert not {":", "\n", "\r"} & set(escaped)
