"""What selector operators mean on runtime values; compiled selectors call these.

A value is None (NULL: the header is absent), a bool, an int or float, or a str; any
other type is treated as having no usable meaning.  Every function here returns None for
UNKNOWN and never raises, whatever the message carries.

Coercions follow ActiveMQ's STOMP behaviour (``convert_string_expressions:``): STOMP
headers are always strings, so a string meets a number by being parsed as one, and meets
a boolean by being "true" or "false" in any case.  A string that does not parse makes the
comparison UNKNOWN.  Two strings only compare for (in)equality, as JMS specifies.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

# The only characters a numeric header may use: Java's Integer/Double.valueOf syntax
# without its extras (whitespace, "NaN", "Infinity", hex, type suffixes), which no
# producer sends as a header.  Within them, int() and float() accept exactly that syntax.
_NUMERIC_CHARS = "0123456789+-.eE"


def to_number(value: object) -> int | float | None:
    """``value`` as a number, parsing strings; None for anything else, bools and NaN included."""
    if isinstance(value, str):
        try:
            if value.isascii() and value.isdigit():  # the usual numeric header, checked first
                return int(value)
            if not value.isascii() or value.strip(_NUMERIC_CHARS):
                return None
            if "." in value or "e" in value or "E" in value:
                return float(value)
            return int(value)
        except ValueError:  # a misplaced sign, dot or exponent; or more digits than int() takes
            return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value:
        return value
    return None


def to_boolean(value: object) -> bool | None:
    """``value`` as a boolean: a bool, or the string "true"/"false" in any case."""
    if value is True or value is False:
        return value
    if isinstance(value, str):
        lowered = value.lower()
        if lowered == "true":
            return True
        if lowered == "false":
            return False
    return None


def equals(left: object, right: object) -> bool | None:
    """``left = right``."""
    if left is None or right is None:
        return None
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    if isinstance(left, bool) or isinstance(right, bool):
        left_bool = to_boolean(left)
        right_bool = to_boolean(right)
        if left_bool is None or right_bool is None:
            return None
        return left_bool is right_bool
    left_number = to_number(left)
    right_number = to_number(right)
    if left_number is None or right_number is None:
        return None
    return left_number == right_number


def order(left: object, right: object) -> int | None:
    """The sign of ``left - right`` for ``<``, ``<=``, ``>``, ``>=``, if they are ordered."""
    if isinstance(left, str) and isinstance(right, str):
        return None
    left_number = to_number(left)
    right_number = to_number(right)
    if left_number is None or right_number is None:
        return None
    return (left_number > right_number) - (left_number < right_number)


def conjunction(*truths: bool | None) -> bool | None:
    """SQL ``AND`` of evaluated operands: FALSE beats UNKNOWN beats TRUE."""
    if False in truths:
        return False
    return None if None in truths else True


def disjunction(*truths: bool | None) -> bool | None:
    """SQL ``OR`` of evaluated operands: TRUE beats UNKNOWN beats FALSE."""
    if True in truths:
        return True
    return None if None in truths else False


def negate(value: object) -> int | float | None:
    number = to_number(value)
    return None if number is None else -number


_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def _arithmetic(
    operation: Callable[[Any, Any], int | float], *, divides: bool
) -> Callable[[object, object], int | float | None]:
    def apply(left: object, right: object) -> int | float | None:
        left_number = to_number(left)
        right_number = to_number(right)
        if left_number is None or right_number is None or (divides and not right_number):
            return None
        # Beyond 64 bits (where Java would wrap) an int becomes a float, so nested products
        # cannot grow without bound; a float overflow, or inf - inf's NaN, is UNKNOWN.
        try:
            result = operation(left_number, right_number)
            if isinstance(result, int) and not _LONG_MIN <= result <= _LONG_MAX:
                result = float(result)
        except (OverflowError, ValueError):
            return None
        return None if result != result else result

    return apply


add = _arithmetic(operator.add, divides=False)
subtract = _arithmetic(operator.sub, divides=False)
multiply = _arithmetic(operator.mul, divides=False)
#: Always a float, as ActiveMQ's ArithmeticExpression divides as doubles.
divide = _arithmetic(operator.truediv, divides=True)
#: Java's ``%`` on doubles: the result takes the dividend's sign, unlike Python's ``%``.
modulo = _arithmetic(math.fmod, divides=True)
