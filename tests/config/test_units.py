from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from config.units import InvalidSize, format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("64 mb", 64 << 20),
        ("64mb", 64 << 20),
        ("64MB", 64 << 20),
        ("1gb", 1 << 30),
        ("1 GB", 1 << 30),
        ("512 kb", 512 << 10),
        ("100", 100),
        ("100 b", 100),
        ("2g", 2 << 30),
        ("1.5 mb", 3 << 19),
        ("4 MiB", 4 << 20),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "mb", "-1 mb", "1 pb", "ten", "1.3 b", "64 m b"])
def test_bad_sizes_say_what_is_accepted(text: str) -> None:
    with pytest.raises(InvalidSize, match=r"size|bytes"):
        parse_size(text)


@given(st.integers(0, 1 << 45))
def test_format_then_parse_round_trips(n: int) -> None:
    assert parse_size(format_size(n)) == n


@given(st.text(max_size=12))
def test_anything_parses_or_raises_invalid_size(text: str) -> None:
    try:
        assert parse_size(text) >= 0
    except InvalidSize:
        pass


@given(
    st.integers(0, 1 << 40),
    st.sampled_from([("", 1), (" ms", 1), ("s", 1000), (" min", 60_000), (" h", 3_600_000)]),
)
def test_durations_are_milliseconds(n: int, unit: tuple[str, int]) -> None:
    suffix, factor = unit
    assert parse_duration(f"{n}{suffix}") == n * factor


@pytest.mark.parametrize("text", ["", "-1", "10 years", "1.0001 s", "s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(InvalidSize, match=r"duration|milliseconds"):
        parse_duration(text)
