"""Sizes as activemq.xml writes them: ``64 mb``, ``1gb``, ``512 KB``, ``1048576``.

ActiveMQ's ``MemoryPropertyEditor`` accepts a number with an optional ``b``/``kb``/
``mb``/``gb`` suffix, case-insensitive, with or without a space; units are binary
(1 kb = 1024 bytes).  We also accept ``k``/``m``/``g``/``t`` and ``tb``, since that is
what people type on a command line.
"""

from __future__ import annotations

import re
from fractions import Fraction

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?b?|[kmgt]i?b)?\s*$", re.IGNORECASE)
_FACTORS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class InvalidSize(ValueError):
    pass


def parse_size(text: str) -> int:
    """``"64 mb"`` -> 67108864.  Raises InvalidSize with a sentence saying what is accepted."""
    match = _SIZE.match(text)
    if match is None:
        raise InvalidSize(f"{text!r} is not a size: use a number of bytes, or a number with kb, mb or gb")
    number, unit = match.groups()
    factor = _FACTORS[(unit or "").lower()[:1]]
    value = float(number) * factor
    if value != int(value):
        raise InvalidSize(f"{text!r} is not a whole number of bytes")
    return int(value)


def format_size(n: int) -> str:
    for unit, factor in (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} b"


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h|d)?\s*$", re.IGNORECASE)
_MS = {"": 1, "ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration(text: str) -> int:
    """Milliseconds.  A plain number is milliseconds, as everywhere in activemq.xml
    (``redeliveryDelay="10000"``); ``10 s``, ``5 min``, ``1 h`` are accepted too."""
    match = _DURATION.match(text)
    if match is None:
        raise InvalidSize(f"{text!r} is not a duration: use milliseconds, or a number with ms, s, min or h")
    number, unit = match.groups()
    value = Fraction(number) * _MS[(unit or "").lower()]
    if value.denominator != 1:
        raise InvalidSize(f"{text!r} is not a whole number of milliseconds")
    return int(value)
