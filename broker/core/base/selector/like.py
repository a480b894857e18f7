"""Translates a LIKE pattern into an anchored regular expression, once, at compile time."""

from __future__ import annotations

import re

_ESCAPABLE = frozenset("%_")


def like_regex(pattern: str, escape: str | None) -> re.Pattern[str]:
    """A regex whose ``fullmatch`` says whether a string is LIKE ``pattern``.

    ``%`` is any run of characters and ``_`` any one character.  As in ActiveMQ's
    LikeExpression, the escape character only escapes a following ``%``, ``_`` or
    itself; anywhere else it stands for itself.
    """
    segments: list[list[str]] = [[]]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        following = pattern[index + 1] if index + 1 < len(pattern) else ""
        if char == escape and following and (following in _ESCAPABLE or following == escape):
            segments[-1].append(re.escape(following))
            index += 2
            continue
        if char == "%":
            if segments[-1] or len(segments) == 1:
                segments.append([])
        elif char == "_":
            segments[-1].append(".")
        else:
            segments[-1].append(re.escape(char))
        index += 1
    return re.compile(_join(["".join(segment) for segment in segments]), re.DOTALL)


def _join(segments: list[str]) -> str:
    if len(segments) == 1:
        return segments[0]
    head, *middles, tail = segments
    # Every segment has a fixed length, so taking each middle segment at its leftmost
    # occurrence never loses a match.  The atomic groups commit to that choice, which keeps
    # patterns like '%a%a%a%b' linear instead of backtracking exponentially.
    return head + "".join(f"(?>.*?{middle})" for middle in middles) + ".*" + tail
