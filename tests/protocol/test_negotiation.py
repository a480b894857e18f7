"""Version and heart-beat negotiation."""

from __future__ import annotations

import re

import pytest

from protocol import (
    MalformedFrame,
    UnsupportedVersion,
    negotiate_heartbeat,
    negotiate_version,
    parse_heartbeat,
)


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "1.0"),
        ("1.0", "1.0"),
        ("1.1", "1.1"),
        ("1.0,1.1,1.2", "1.2"),
        ("1.2,1.0", "1.2"),
        ("1.0,1.1", "1.1"),
        ("1.1, 1.0", "1.1"),
        ("2.0,1.1", "1.1"),
    ],
)
def test_negotiate_version(accept: str | None, expected: str) -> None:
    assert negotiate_version(accept) == expected


@pytest.mark.parametrize("accept", ["2.0", "", "1.3,0.9", "1"])
def test_no_common_version(accept: str) -> None:
    with pytest.raises(UnsupportedVersion, match=re.escape("Supported protocol versions are 1.0,1.1,1.2")):
        negotiate_version(accept)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, (0, 0)), ("0,0", (0, 0)), ("1000,500", (1000, 500)), (" 10 , 20 ", (10, 20))],
)
def test_parse_heartbeat(value: str | None, expected: tuple[int, int]) -> None:
    assert parse_heartbeat(value) == expected


@pytest.mark.parametrize("value", ["", "1", "1,2,3", "-1,0", "a,b", "1.5,2", "1,", "\u0661,2", "1_0,2"])
def test_parse_heartbeat_malformed(value: str) -> None:
    with pytest.raises(MalformedFrame, match="heart-beat"):
        parse_heartbeat(value)


@pytest.mark.parametrize(
    ("client", "server", "expected"),
    [
        ((0, 0), (5000, 5000), (0, 0)),
        ((1000, 0), (5000, 5000), (0, 5000)),
        ((0, 1000), (5000, 5000), (5000, 0)),
        ((10000, 20000), (5000, 5000), (20000, 10000)),
        ((1000, 1000), (0, 0), (0, 0)),
        ((1000, 1000), (0, 3000), (0, 3000)),
    ],
)
def test_negotiate_heartbeat(
    client: tuple[int, int], server: tuple[int, int], expected: tuple[int, int]
) -> None:
    assert negotiate_heartbeat(client, server) == expected
